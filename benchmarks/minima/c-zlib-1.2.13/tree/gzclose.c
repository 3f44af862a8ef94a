#include "gzguts.h"
int gzclose(file)
gzFile file;
{
return gzclose_w(file);
}
