// glibc functions the Swift Glibc module does not export: malloc_trim (malloc.h) and
// statfs (sys/vfs.h).
#if defined(__linux__)
#include <malloc.h>
#include <sys/vfs.h>
#endif
