/* wire-load: a lean load generator for the ChordStore protocol, in C (libprotobuf-c and
 * epoll, one thread), so that on a 2-core machine the load generator takes as little of
 * the CPU the server needs as redis-benchmark does for Redis.
 *
 * Usage: wire-load HOST PORT WORKLOAD CONNECTIONS SECONDS [STORES]
 *   WORKLOAD  add: AddChordset (one durable event each, a ~60-byte title);
 *             get: GetChordset of one chordset (added first);
 *             create: CreateStore of stores bench-0 ... bench-(STORES-1), then exit
 *             (SECONDS is ignored; stores that exist already are skipped).
 *   STORES    add and get: the calls go round stores bench-0 ... bench-(STORES-1)
 *             (created before, e.g. by the create workload); without it, to store default.
 * Each connection keeps one call in flight; with $WIRE_LOAD_CALLS set, the run also stops
 * after that many calls (filling stores to a given size). Calls carry the bearer token of
 * $CHORDSTORE_TOKEN or $CHORDSTORE_TOKEN_FILE (docs/SECURITY.md); with $WIRE_LOAD_TLS_CA
 * set, connections use TLS, trusting that certificate authority (PEM). Prints, like `chordstore bench wire`:
 *   wire WORKLOAD: N connection(s) × depth 1, S s, CALLS calls
 *     R calls/s; latency p50 A ms, p99 B ms, p999 C ms
 * Exit status: 0 OK; 1 a call failed (its status is printed); 2 usage or connection
 * errors. Framing: a 4-byte big-endian length, then one Frame (rpc.proto). */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "chordstore/v1/rpc.pb-c.h"
#include "../c-client/wire-io.h"
#include "load.h"

#define MAX_CONNECTIONS 1024
#define MAX_FRAME (4u * 1024u * 1024u)
#define BUFFER (64u * 1024u)

typedef struct {
  int fd;
  WireIO io;
  uint64_t next_call;
  double sent_at;
  int in_flight;
  uint8_t in[BUFFER];
  size_t have;
} Conn;

static const char *bearer = NULL; /* "Bearer <token>", or NULL */

/* Packs Frame{Call{id, method, request}} with its length prefix into out; returns its size. */
static size_t pack_call(uint8_t *out, size_t room, uint64_t id, const char *method,
                        const ProtobufCMessage *request, const char *store) {
  uint8_t payload[1024];
  size_t payload_len = protobuf_c_message_get_packed_size(request);
  if (payload_len > sizeof payload) die(2, "request too large");
  protobuf_c_message_pack(request, payload);
  Chordstore__V1__Call call = CHORDSTORE__V1__CALL__INIT;
  call.call_id = id;
  call.method = (char *)method;
  call.store = (char *)store;
  Chordstore__V1__Call__MetadataEntry authorization = CHORDSTORE__V1__CALL__METADATA_ENTRY__INIT;
  Chordstore__V1__Call__MetadataEntry *entries[1] = {&authorization};
  if (bearer != NULL) {
    authorization.key = "authorization";
    authorization.value = (char *)bearer;
    call.n_metadata = 1;
    call.metadata = entries;
  }
  call.payload.data = payload;
  call.payload.len = payload_len;
  Chordstore__V1__Frame frame = CHORDSTORE__V1__FRAME__INIT;
  frame.kind_case = CHORDSTORE__V1__FRAME__KIND_CALL;
  frame.call = &call;
  size_t len = chordstore__v1__frame__get_packed_size(&frame);
  if (len + 4 > room) die(2, "frame too large");
  out[0] = (uint8_t)(len >> 24);
  out[1] = (uint8_t)(len >> 16);
  out[2] = (uint8_t)(len >> 8);
  out[3] = (uint8_t)len;
  chordstore__v1__frame__pack(&frame, out + 4);
  return len + 4;
}

static const char *workload;
static uint8_t target[16];
static long stores = 0;      /* 0: store default */
static long next_store = 0;  /* the next store a call goes to (or create makes) */
static long max_calls = 0;   /* 0: no limit but the time */
static long sent = 0;

static void send_next(Conn *c, int index) {
  uint8_t out[2048];
  size_t len;
  char store[32] = "";
  if (stores > 0) snprintf(store, sizeof store, "bench-%ld", next_store++ % stores);
  c->next_call++;
  sent++;
  if (strcmp(workload, "create") == 0) {
    Chordstore__V1__CreateStoreRequest create = CHORDSTORE__V1__CREATE_STORE_REQUEST__INIT;
    create.name = store;
    len = pack_call(out, sizeof out, c->next_call, "chordstore.v1.ChordStore/CreateStore", &create.base, "");
  } else if (strcmp(workload, "add") == 0) {
    char title[128];
    snprintf(title, sizeof title, "bench %d-%" PRIu64 " xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", index,
             c->next_call);
    Chordstore__V1__AddChordsetRequest add = CHORDSTORE__V1__ADD_CHORDSET_REQUEST__INIT;
    add.title = title;
    len = pack_call(out, sizeof out, c->next_call, "chordstore.v1.ChordStore/AddChordset", &add.base, store);
  } else {
    Chordstore__V1__GetChordsetRequest get = CHORDSTORE__V1__GET_CHORDSET_REQUEST__INIT;
    get.chordset_id.data = target;
    get.chordset_id.len = 16;
    len = pack_call(out, sizeof out, c->next_call, "chordstore.v1.ChordStore/GetChordset", &get.base, store);
  }
  size_t done = 0;
  while (done < len) {
    ssize_t n = wire_write(&c->io, out + done, len - done);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue; /* tiny frames: spin */
    if (n <= 0) die(2, "cannot send a call");
    done += (size_t)n;
  }
  c->sent_at = now_ms();
  c->in_flight = 1;
}

/* The final Reply of the call in flight, if a whole frame is buffered: 1 done, 0 need more. */
static int take_reply(Conn *c, uint8_t **payload_out, size_t *payload_len) {
  for (;;) {
    if (c->have < 4) return 0;
    uint32_t len = (uint32_t)c->in[0] << 24 | (uint32_t)c->in[1] << 16 | (uint32_t)c->in[2] << 8 | c->in[3];
    if (len > MAX_FRAME || len + 4 > BUFFER) die(2, "a reply frame is too large for this tool");
    if (c->have < len + 4) return 0;
    Chordstore__V1__Frame *frame = chordstore__v1__frame__unpack(NULL, len, c->in + 4);
    if (frame == NULL) die(2, "unparseable frame");
    memmove(c->in, c->in + 4 + len, c->have - 4 - len);
    c->have -= 4 + len;
    if (frame->kind_case == CHORDSTORE__V1__FRAME__KIND_GO_AWAY) die(1, "the server sent GoAway");
    if (frame->kind_case != CHORDSTORE__V1__FRAME__KIND_REPLY || frame->reply->status == NULL ||
        frame->reply->call_id != c->next_call) {
      chordstore__v1__frame__free_unpacked(frame, NULL);
      continue;
    }
    if (frame->reply->status->code == 6 && strcmp(workload, "create") == 0) {
      /* ALREADY_EXISTS: made by an earlier run */
    } else if (frame->reply->status->code != 0) {
      fprintf(stderr, "wire-load: call failed: %" PRIu32 " %s\n", frame->reply->status->code,
              frame->reply->status->message);
      exit(1);
    }
    if (payload_out != NULL) {
      *payload_len = frame->reply->payload.len;
      *payload_out = malloc(*payload_len + 1);
      memcpy(*payload_out, frame->reply->payload.data, *payload_len);
    }
    chordstore__v1__frame__free_unpacked(frame, NULL);
    c->in_flight = 0;
    return 1;
  }
}

int main(int argc, char **argv) {
  load_program = "wire-load";
  if ((argc != 6 && argc != 7) ||
      (strcmp(argv[3], "add") != 0 && strcmp(argv[3], "get") != 0 && strcmp(argv[3], "create") != 0)) {
    fprintf(stderr, "usage: wire-load HOST PORT add|get|create CONNECTIONS SECONDS [STORES]\n");
    return 2;
  }
  workload = argv[3];
  if (argc == 7) {
    stores = atol(argv[6]);
    if (stores < 1 || stores > 10000000) die(2, "STORES must be 1...10000000");
  }
  if (strcmp(workload, "create") == 0 && stores == 0) die(2, "create needs STORES");
  if (getenv("WIRE_LOAD_CALLS") != NULL) max_calls = atol(getenv("WIRE_LOAD_CALLS"));
  int connections = atoi(argv[4]);
  double seconds = atof(argv[5]);
  if (connections < 1 || connections > MAX_CONNECTIONS) die(2, "CONNECTIONS must be 1...1024");
  if (!(seconds > 0 && seconds <= 120)) die(2, "SECONDS must be in (0, 120]");
  signal(SIGPIPE, SIG_IGN);

  Conn *conns = calloc((size_t)connections, sizeof(Conn));
  if (conns == NULL) die(2, "out of memory");
  bearer = wire_bearer(NULL);
  SSL_CTX *tls = getenv("WIRE_LOAD_TLS_CA") != NULL ? wire_tls_context(getenv("WIRE_LOAD_TLS_CA"), "wire-load") : NULL;
  for (int i = 0; i < connections; i++) {
    conns[i].fd = connect_to(argv[1], argv[2]);
    conns[i].io.fd = conns[i].fd;
    if (tls != NULL) wire_tls_start(&conns[i].io, tls, argv[1], "wire-load");
  }

  /* The chordset GetChordset reads: added first, blocking, on connection 0 (to store
   * bench-0 when STORES is given, which get then reads from). */
  if (strcmp(workload, "create") != 0) {
    const char *saved = workload;
    workload = "add";
    send_next(&conns[0], 0);
    uint8_t *payload = NULL;
    size_t payload_len = 0;
    while (!take_reply(&conns[0], &payload, &payload_len)) {
      ssize_t n = wire_read(&conns[0].io, conns[0].in + conns[0].have, BUFFER - conns[0].have);
      if (n <= 0) die(2, "the connection closed during set-up");
      conns[0].have += (size_t)n;
    }
    Chordstore__V1__CommandReply *reply = chordstore__v1__command_reply__unpack(NULL, payload_len, payload);
    if (reply == NULL || reply->event == NULL || reply->event->chordset_added == NULL ||
        reply->event->chordset_added->chordset == NULL || reply->event->chordset_added->chordset->id.len != 16)
      die(2, "the set-up AddChordset reply holds no chordset");
    memcpy(target, reply->event->chordset_added->chordset->id.data, 16);
    chordstore__v1__command_reply__free_unpacked(reply, NULL);
    free(payload);
    workload = saved;
    next_store = 0;
    sent = 0;
    if (strcmp(workload, "get") == 0) stores = stores > 0 ? 1 : 0;  /* the chordset is bench-0's */
  }

  int ep = epoll_create1(0);
  for (int i = 0; i < connections; i++) {
    fcntl(conns[i].fd, F_SETFL, fcntl(conns[i].fd, F_GETFL) | O_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev);
  }
  Latencies latencies = latencies_new();
  double start = now_ms(), deadline = start + seconds * 1e3;
  int in_flight = 0;
  for (int i = 0; i < connections; i++) {
    if (strcmp(workload, "create") == 0 && next_store >= stores) break;
    send_next(&conns[i], i);
    in_flight++;
  }
  struct epoll_event events[MAX_CONNECTIONS];
  while (in_flight > 0) {
    if (now_ms() > deadline + 10e3) die(2, "replies did not arrive within 10 s of the end");
    int n = epoll_wait(ep, events, MAX_CONNECTIONS, 1000);
    for (int e = 0; e < n; e++) {
      int i = (int)events[e].data.u32;
      Conn *c = &conns[i];
      /* TLS may hold decrypted bytes the socket no longer signals: read them all. */
      int drained = 0;
      do {
        ssize_t got = wire_read(&c->io, c->in + c->have, BUFFER - c->have);
        if (got < 0 && (errno == EAGAIN || errno == EINTR)) break;
        if (got <= 0) die(2, "the server closed a connection");
        c->have += (size_t)got;
        drained = 1;
      } while (wire_pending(&c->io) > 0 && c->have < BUFFER);
      if (!drained) continue;
      while (c->in_flight && take_reply(c, NULL, NULL)) {
        double t = now_ms();
        record_latency(&latencies, t - c->sent_at);
        int more = strcmp(workload, "create") == 0 ? next_store < stores : t < deadline;
        if (max_calls > 0 && sent >= max_calls) more = 0;
        if (more) send_next(c, i);
        else in_flight--;
      }
    }
  }
  double elapsed = (now_ms() - start) / 1e3;
  printf("wire %s: %d connection(s) × depth 1, %.1f s, %zu calls (C load generator)", workload,
         connections, elapsed, latencies.count);
  if (stores > 0) printf(", over %ld store(s)", stores);
  printf("\n");
  print_latencies(&latencies, elapsed);
  return 0;
}
