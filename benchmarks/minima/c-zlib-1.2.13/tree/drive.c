#include <stdio.h>
#include "zlib.h"
int main()
{
gzFile out = gzopen("events.log.gz", "wb");
printf("closing events.log.gz\n");
fflush(stdout);
gzclose(out);
gzclose(out);
}
