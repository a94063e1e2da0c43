// glibc names the Swift Glibc module does not export: malloc_trim (malloc.h), statfs
// (sys/vfs.h) and O_DIRECT (fcntl.h, named only under _GNU_SOURCE).
#if defined(__linux__)
#include <fcntl.h>
#include <malloc.h>
#include <sys/vfs.h>

/// Linux's O_DIRECT for open(2) and fcntl(F_SETFL): glibc defines __O_DIRECT for every
/// architecture, and O_DIRECT from it only under _GNU_SOURCE.
static inline int cse_o_direct(void) { return __O_DIRECT; }
#endif
