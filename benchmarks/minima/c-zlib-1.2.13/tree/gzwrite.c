#include "gzguts.h"
int gz_init(state)
gz_statep state;
{
state->out = malloc(state->want);
state->size = state->want;
}
int gz_comp(state)
gz_statep state;
{
state->size == 0 && gz_init(state)
;
}
int gzclose_w(file)
gzFile file;
{
gz_statep state;
state = (gz_statep)file;
gz_comp(state)
;
free(state->out);
}
