#include <stdio.h>
#include "cJSON.h"
char settings[] =
"{\"profile\":{\"name\":\"default\"}}";
int main()
{
cJSON *root = cJSON_Parse(settings);
cJSON *profile = cJSON_GetObjectItemCaseSensitive(root, "profile");
cJSON *name = cJSON_GetObjectItemCaseSensitive(profile, "name");
char *wanted =
cJSON_GetStringValue(profile);
printf("renaming profile %s\n", cJSON_GetStringValue(name));
fflush(stdout);
cJSON_SetValuestring(name, wanted);
}
