#include "zlib.h"
#include <stdlib.h>
#define GZBUFSIZE 8192
typedef struct {
unsigned size;
unsigned want;
unsigned char *out;
} gz_state;
typedef gz_state *gz_statep;
