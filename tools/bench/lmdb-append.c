/* The storage layer's own ceiling on this disk: durable appends straight into liblmdb,
 * N events of 200 bytes with big-endian sequence keys (MDB_APPEND), K events per
 * transaction, fsync at every commit (LMDB's default).
 *
 *   cc -O2 -o lmdb-append tools/bench/lmdb-append.c $(pkg-config --cflags --libs lmdb)
 *   lmdb-append DIR EVENTS PER_TXN
 *
 * Prints events/s and the p50/p99 commit latency (one transaction). */
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

#define CHECK(call) do { int rc = (call); if (rc) { fprintf(stderr, "%s: %s\n", #call, mdb_strerror(rc)); return 1; } } while (0)

int main(int argc, char **argv) {
  if (argc != 4) { fprintf(stderr, "usage: %s DIR EVENTS PER_TXN\n", argv[0]); return 2; }
  long events = atol(argv[2]), per = atol(argv[3]);
  if (events < 1 || per < 1 || events > 10000000) { fprintf(stderr, "EVENTS 1..10000000, PER_TXN >= 1\n"); return 2; }
  MDB_env *env; MDB_dbi dbi; MDB_txn *txn;
  CHECK(mdb_env_create(&env));
  CHECK(mdb_env_set_mapsize(env, (size_t)1 << 32));
  CHECK(mdb_env_open(env, argv[1], 0, 0644));
  CHECK(mdb_txn_begin(env, NULL, 0, &txn));
  CHECK(mdb_dbi_open(txn, NULL, 0, &dbi));
  CHECK(mdb_txn_commit(txn));
  unsigned char value[200];
  memset(value, 0x5a, sizeof value);
  long txns = (events + per - 1) / per, done = 0;
  double *lat = malloc(sizeof(double) * txns), start = now();
  for (long t = 0; t < txns; t++) {
    double t0 = now();
    CHECK(mdb_txn_begin(env, NULL, 0, &txn));
    for (long i = 0; i < per && done < events; i++, done++) {
      unsigned char key[8];
      uint64_t seq = (uint64_t)done + 1;
      for (int b = 0; b < 8; b++) key[b] = (unsigned char)(seq >> (56 - 8 * b));
      MDB_val k = { sizeof key, key }, v = { sizeof value, value };
      CHECK(mdb_put(txn, dbi, &k, &v, MDB_APPEND));
    }
    CHECK(mdb_txn_commit(txn));
    lat[t] = now() - t0;
  }
  double elapsed = now() - start;
  qsort(lat, txns, sizeof(double), cmp);
  printf("lmdb-append: %ld events, %ld per transaction, durable\n", events, per);
  printf("  %.0f events/s; commit latency p50 %.3f ms, p99 %.3f ms; %.2f s\n", events / elapsed,
         lat[txns / 2] * 1e3, lat[(long)(txns * 0.99) < txns ? (long)(txns * 0.99) : txns - 1] * 1e3, elapsed);
  mdb_env_close(env);
  free(lat);
  return 0;
}
