#include <stdio.h>
#include <string.h>
#include "lz4.h"
int main(void)
{
    char src[4096], packed[8192], back[4096];
    for (int i = 0; i < 4096; i++) src[i] = (char)('a' + i % 7);
    int n = LZ4_compress_default(src, packed, sizeof src, sizeof packed);
    int m = LZ4_decompress_safe(packed, back, n, sizeof back);
    printf("packed %d back %d same %d\n", n > 0, m, memcmp(src, back, sizeof src) == 0);
    return 0;
}
