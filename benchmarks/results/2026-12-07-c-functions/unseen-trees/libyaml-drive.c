#include <stdio.h>
#include <string.h>
#include <yaml.h>
int main(void)
{
    const char *doc = "a: [1, 2]\nb: {c: d}\n";
    yaml_parser_t parser;
    yaml_event_t event;
    int events = 0, done = 0;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)doc, strlen(doc));
    while (!done) {
        if (!yaml_parser_parse(&parser, &event)) return 1;
        done = event.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&event);
        events++;
    }
    yaml_parser_delete(&parser);
    printf("events %d\n", events);
    return 0;
}
