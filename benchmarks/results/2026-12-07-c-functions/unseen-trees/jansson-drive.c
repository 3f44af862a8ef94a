#include <stdio.h>
#include <stdlib.h>
#include <jansson.h>
int main(void)
{
    json_error_t error;
    json_t *root = json_loads("{\"a\": [1, 2.5, \"x\"], \"b\": null}", 0, &error);
    char *out = json_dumps(root, JSON_SORT_KEYS);
    printf("%s\n", out);
    free(out);
    json_decref(root);
    return 0;
}
