typedef struct cJSON
{
struct cJSON *child;
char *valuestring;
} cJSON;
typedef int cJSON_bool;
cJSON *cJSON_Parse(char *);
cJSON *cJSON_GetObjectItemCaseSensitive(cJSON *, char *);
char *cJSON_GetStringValue(cJSON *);
char* cJSON_SetValuestring(cJSON *, char *);
