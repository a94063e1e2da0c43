// glibc names the Swift Glibc module does not export: malloc_trim (malloc.h), statfs
// (sys/vfs.h), O_DIRECT (fcntl.h, named only under _GNU_SOURCE) and prctl (sys/prctl.h,
// variadic, which Swift cannot call).
#if defined(__linux__)
#include <fcntl.h>
#include <malloc.h>
#include <sys/prctl.h>
#include <sys/vfs.h>

/// Linux's O_DIRECT for open(2) and fcntl(F_SETFL): glibc defines __O_DIRECT for every
/// architecture, and O_DIRECT from it only under _GNU_SOURCE.
static inline int cse_o_direct(void) { return __O_DIRECT; }

/// Names the calling thread as /proc/PID/task/TID/comm, ps and perf show it (Linux keeps
/// the first 15 bytes).
static inline void cse_name_thread(const char *name) { prctl(PR_SET_NAME, (unsigned long)name, 0, 0, 0); }
#endif
