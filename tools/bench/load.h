/* load.h: what the load generators of tools/bench/compare (wire-load.c, etcd-load.c)
 * share: the clock, exiting with a message, connecting, and the latency report. Header
 * only: each program includes it once and sets load_program first. */
#ifndef CHORDSTORE_BENCH_LOAD_H
#define CHORDSTORE_BENCH_LOAD_H

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The program's name, the prefix of its messages. */
static const char *load_program = "load";

/* The monotonic clock, in milliseconds. */
static inline double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Prints "PROGRAM: what" and exits with code (1 a call failed, 2 usage or connection). */
static inline void die(int code, const char *what) {
  fprintf(stderr, "%s: %s\n", load_program, what);
  exit(code);
}

/* A connected TCP socket to host:port with TCP_NODELAY; exits 2 when there is none. */
static inline int connect_to(const char *host, const char *port) {
  struct addrinfo hints, *list, *ai;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host, port, &hints, &list) != 0) die(2, "cannot resolve the server's address");
  int fd = -1;
  for (ai = list; ai != NULL && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(list);
  if (fd < 0) die(2, "cannot connect to the server");
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static inline int compare_doubles(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The latencies of the calls answered so far, in milliseconds: an array that grows. */
typedef struct {
  double *values;
  size_t count, cap;
} Latencies;

/* Room for a million calls to start with; exits 2 when there is no memory. */
static inline Latencies latencies_new(void) {
  Latencies l = {.values = malloc((1 << 20) * sizeof(double)), .count = 0, .cap = 1 << 20};
  if (l.values == NULL) die(2, "out of memory");
  return l;
}

/* Records one call's latency, growing the array when it is full. */
static inline void record_latency(Latencies *l, double ms) {
  if (l->count == l->cap) {
    l->cap *= 2;
    l->values = realloc(l->values, l->cap * sizeof(double));
    if (l->values == NULL) die(2, "out of memory");
  }
  l->values[l->count++] = ms;
}

/* Sorts the latencies and prints "  R calls/s; latency p50 A ms, p99 B ms, p999 C ms",
 * the line tools/bench/compare reads. */
static inline void print_latencies(Latencies *l, double elapsed) {
  size_t count = l->count;
  double *latencies = l->values;
  qsort(latencies, count, sizeof(double), compare_doubles);
#define LOAD_PCT(p) (count ? latencies[(size_t)((double)(count - 1) * (p) / 100.0)] : 0.0)
  printf("  %.0f calls/s; latency p50 %.3f ms, p99 %.3f ms, p999 %.3f ms\n", (double)count / elapsed,
         LOAD_PCT(50), LOAD_PCT(99), LOAD_PCT(99.9));
#undef LOAD_PCT
}

#endif
