#include <string.h>
#include <stdlib.h>
#include "cJSON.h"
char *cJSON_GetStringValue(cJSON *item)
{
return item->valuestring;
}
typedef struct
{
void *(*allocate)(size_t);
} internal_hooks;
internal_hooks global_hooks = { malloc };
cJSON *cJSON_New_Item(internal_hooks *hooks)
{
cJSON* node = hooks->allocate(sizeof(cJSON));
return node;
}
typedef struct
{
char *content;
size_t offset;
internal_hooks hooks;
} parse_buffer;
#define buffer_at_offset(buffer) (buffer->content + buffer->offset)
char* cJSON_SetValuestring(cJSON *object, char *valuestring)
{
if (strlen(valuestring) <= strlen(object->valuestring))
;
}
cJSON_bool parse_string(cJSON *item, parse_buffer *input_buffer)
{
char *input_pointer = buffer_at_offset(input_buffer) + 1;
char *input_end = buffer_at_offset(input_buffer) + 1;
char *output_pointer;
char *output;
size_t allocation_length;
while (*input_end != '"')
input_end++;
allocation_length = input_end - buffer_at_offset(input_buffer);
output = input_buffer->hooks.allocate(allocation_length);
output_pointer = output;
while (input_pointer < input_end)
*output_pointer++ = *input_pointer++;
*output_pointer = '\0';
item->valuestring = output;
input_buffer->offset = input_end - input_buffer->content;
input_buffer->offset++;
}
cJSON_bool parse_value(cJSON *item, parse_buffer *input_buffer);
cJSON_bool parse_object(cJSON *item, parse_buffer *input_buffer);
cJSON *cJSON_ParseWithOpts(char *value)
{
parse_buffer buffer = { 0 };
cJSON *item;
buffer.content = value;
buffer.hooks = global_hooks;
item = cJSON_New_Item(&global_hooks);
parse_value(item, &buffer)
;
return item;
}
cJSON *cJSON_Parse(char *value)
{
return cJSON_ParseWithOpts(value);
}
cJSON_bool parse_value(cJSON *item, parse_buffer *input_buffer)
{
if (buffer_at_offset(input_buffer)[0] == '"')
return parse_string(item, input_buffer);
return parse_object(item, input_buffer);
}
cJSON_bool parse_object(cJSON *item, parse_buffer *input_buffer)
{
cJSON *head;
cJSON *current_item;
cJSON *new_item = cJSON_New_Item(&(input_buffer->hooks));
current_item = head = new_item;
input_buffer->offset++;
parse_string(current_item, input_buffer)
;
current_item->valuestring = NULL;
input_buffer->offset++;
parse_value(current_item, input_buffer)
;
item->child = head;
}
cJSON *get_object_item(cJSON *object)
{
cJSON *current_element;
current_element = object->child;
return current_element;
}
cJSON *cJSON_GetObjectItemCaseSensitive(cJSON *object, char *string)
{
return get_object_item(object);
}
