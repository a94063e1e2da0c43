/* etcd-load: puts to etcd at a fixed number of connections, the shape of wire-load.c
 * (one thread, epoll, each connection one request in flight), for the add-cluster row of
 * tools/bench/compare.
 *
 * Usage: etcd-load HOST PORT CONNECTIONS SECONDS [VALUE_BYTES]
 *   Each call is etcd's gRPC `etcdserverpb.KV/Put` (what etcdctl and etcd's own benchmark
 *   send), over HTTP/2 without TLS, a new key per call (bench/<process>-<connection>-<n>) and a value
 *   of VALUE_BYTES (default 200) bytes. The HTTP/2 is the least a client needs (HPACK
 *   literals, the connection's window given back, SETTINGS and PING answered): no library,
 *   so that the load generator costs as little CPU as wire-load does. A put counts when
 *   its PutResponse arrived; a stream that ends without one stops the run.
 * Prints, like wire-load:
 *   etcd put: N connection(s) × depth 1, S s, CALLS calls
 *     R calls/s; latency p50 A ms, p99 B ms, p999 C ms
 * Exit status: 0 OK; 1 a put failed; 2 usage or connection
 * errors. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
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

#include "load.h"

#define MAX_CONNECTIONS 1024
#define BUFFER (16384u + 9u) /* one frame of the largest size a peer may send us (the default) */
#define MAX_VALUE 16000 /* one DATA frame: HTTP/2 frames are 16 KiB at most by default */

typedef struct {
  int fd;
  uint64_t next;
  uint32_t next_stream; /* odd, increasing: one HTTP/2 stream per put */
  uint32_t stream;      /* the put in flight */
  int got_reply;        /* its PutResponse arrived */
  double sent_at;
  int in_flight;
  uint8_t in[BUFFER];
  size_t have;
} Conn;

static const char *host;
static const char *port;
static uint8_t value[MAX_VALUE];
static int value_bytes = 200;

/* HTTP/2 frame header: 24-bit length, type, flags, 31-bit stream id. */
static size_t frame_header(uint8_t *out, size_t len, uint8_t type, uint8_t flags, uint32_t stream) {
  out[0] = (uint8_t)(len >> 16);
  out[1] = (uint8_t)(len >> 8);
  out[2] = (uint8_t)len;
  out[3] = type;
  out[4] = flags;
  out[5] = (uint8_t)(stream >> 24 & 0x7f);
  out[6] = (uint8_t)(stream >> 16);
  out[7] = (uint8_t)(stream >> 8);
  out[8] = (uint8_t)stream;
  return 9;
}

static void write_all(Conn *c, const uint8_t *out, size_t len) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = write(c->fd, out + done, len - done);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue; /* small frames: spin */
    if (n <= 0) die(2, "cannot send to etcd");
    done += (size_t)n;
  }
}

/* An HPACK string literal, not Huffman-coded (up to 126 bytes: a one-byte length). */
static size_t hpack_string(uint8_t *out, const char *s) {
  size_t len = strlen(s);
  if (len > 126) die(2, "a header longer than this tool writes (126 bytes)");
  out[0] = (uint8_t)len;
  memcpy(out + 1, s, len);
  return len + 1;
}

/* One Put as a gRPC call: HEADERS (HPACK with static-table names and literals, never
 * indexed, so that no dynamic table is needed), then DATA with the length-prefixed
 * PutRequest{key = 1, value = 2} and END_STREAM. */
static void send_next(Conn *c, int index) {
  uint8_t out[MAX_VALUE + 1024];
  size_t o = 0;
  uint8_t block[256];
  size_t b = 0;
  block[b++] = 0x83; /* :method POST */
  block[b++] = 0x86; /* :scheme http */
  block[b++] = 0x04; /* :path, literal value */
  b += hpack_string(block + b, "/etcdserverpb.KV/Put");
  char authority[128];
  snprintf(authority, sizeof authority, "%s:%s", host, port);
  block[b++] = 0x01; /* :authority, literal value */
  b += hpack_string(block + b, authority);
  block[b++] = 0x0f; /* content-type (static 31), literal value: 0x0f 0x10 */
  block[b++] = 0x10;
  b += hpack_string(block + b, "application/grpc");
  block[b++] = 0x00; /* te: trailers, literal name and value */
  b += hpack_string(block + b, "te");
  b += hpack_string(block + b, "trailers");
  uint32_t stream = c->next_stream;
  c->next_stream += 2;
  o += frame_header(out + o, b, 0x1, 0x4, stream); /* HEADERS, END_HEADERS */
  memcpy(out + o, block, b);
  o += b;
  char key[64];
  int key_len = snprintf(key, sizeof key, "bench/%ld-%d-%llu", (long)getpid(), index, (unsigned long long)c->next++);
  uint8_t message[MAX_VALUE + 128];
  size_t m = 0;
  message[m++] = 0x0a; /* key, field 1 */
  message[m++] = (uint8_t)key_len;
  memcpy(message + m, key, (size_t)key_len);
  m += (size_t)key_len;
  message[m++] = 0x12; /* value, field 2, varint length */
  for (uint32_t v = (uint32_t)value_bytes; ; v >>= 7) {
    if (v < 0x80) { message[m++] = (uint8_t)v; break; }
    message[m++] = (uint8_t)(v | 0x80);
  }
  memcpy(message + m, value, (size_t)value_bytes);
  m += (size_t)value_bytes;
  o += frame_header(out + o, m + 5, 0x0, 0x1, stream); /* DATA, END_STREAM */
  out[o++] = 0; /* not compressed */
  out[o++] = (uint8_t)(m >> 24);
  out[o++] = (uint8_t)(m >> 16);
  out[o++] = (uint8_t)(m >> 8);
  out[o++] = (uint8_t)m;
  memcpy(out + o, message, m);
  o += m;
  write_all(c, out, o);
  c->stream = stream;
  c->sent_at = now_ms();
  c->in_flight = 1;
}

/* Handles the buffered frames; returns 1 when the call in flight ended (a frame with
 * END_STREAM on its stream), 0 when more bytes are needed. A put counts only if a
 * PutResponse (a DATA frame) arrived on its stream: a refused call ends with trailers
 * alone (its grpc-status, which this tool does not decode) or with RST_STREAM, and stops
 * the run. EtcdLoadTests checks that etcd's revision grows by the puts counted. The send
 * side's windows are not tracked: one call of at most 16,000 bytes in flight per
 * connection stays within the 65,535 bytes a stream and a connection start with, and
 * etcd gives them back as it reads. */
static int take_response(Conn *c) {
  while (c->have >= 9) {
    size_t len = (size_t)c->in[0] << 16 | (size_t)c->in[1] << 8 | c->in[2];
    uint8_t type = c->in[3], flags = c->in[4];
    uint32_t stream = ((uint32_t)c->in[5] & 0x7f) << 24 | (uint32_t)c->in[6] << 16 | (uint32_t)c->in[7] << 8 | c->in[8];
    if (len + 9 > BUFFER) die(2, "a frame too large for this tool");
    if (c->have < len + 9) return 0;
    uint8_t reply[32];
    int ended = 0;
    if (type == 0x4 && !(flags & 0x1)) { /* SETTINGS: acknowledge */
      write_all(c, reply, frame_header(reply, 0, 0x4, 0x1, 0));
    } else if (type == 0x6 && !(flags & 0x1) && len == 8) { /* PING: answer */
      size_t r = frame_header(reply, 8, 0x6, 0x1, 0);
      memcpy(reply + r, c->in + 9, 8);
      write_all(c, reply, r + 8);
    } else if (type == 0x7) {
      die(2, "etcd sent GOAWAY");
    } else if (type == 0x3 && stream == c->stream) {
      die(1, "etcd reset a put's stream (RST_STREAM)");
    } else if (type == 0x0 && len > 0) { /* DATA: give the connection's window back */
      if (stream == c->stream && len > 5) c->got_reply = 1;
      size_t r = frame_header(reply, 4, 0x8, 0, 0);
      reply[r++] = (uint8_t)(len >> 24);
      reply[r++] = (uint8_t)(len >> 16);
      reply[r++] = (uint8_t)(len >> 8);
      reply[r++] = (uint8_t)len;
      write_all(c, reply, r);
    }
    if ((type == 0x0 || type == 0x1) && (flags & 0x1) && stream == c->stream) ended = 1;
    memmove(c->in, c->in + 9 + len, c->have - 9 - len);
    c->have -= 9 + len;
    if (ended) {
      if (!c->got_reply) die(1, "a put failed: its stream ended without a PutResponse");
      c->got_reply = 0;
      c->in_flight = 0;
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  load_program = "etcd-load";
  if (argc != 5 && argc != 6) {
    fprintf(stderr, "usage: etcd-load HOST PORT CONNECTIONS SECONDS [VALUE_BYTES]\n");
    return 2;
  }
  host = argv[1];
  port = argv[2];
  int connections = atoi(argv[3]);
  double seconds = atof(argv[4]);
  value_bytes = argc == 6 ? atoi(argv[5]) : 200;
  if (connections < 1 || connections > MAX_CONNECTIONS) die(2, "CONNECTIONS must be 1...1024");
  if (!(seconds > 0 && seconds <= 120)) die(2, "SECONDS must be in (0, 120]");
  if (value_bytes < 1 || value_bytes > MAX_VALUE) die(2, "VALUE_BYTES must be 1...16000");
  memset(value, 'v', (size_t)value_bytes);
  signal(SIGPIPE, SIG_IGN);

  Conn *conns = calloc((size_t)connections, sizeof(Conn));
  if (conns == NULL) die(2, "out of memory");
  int ep = epoll_create1(0);
  if (ep < 0) die(2, "epoll_create1 failed");
  for (int i = 0; i < connections; i++) {
    conns[i].fd = connect_to(host, port);
    conns[i].next_stream = 1;
    /* HTTP/2 without TLS, by prior knowledge (as gRPC clients speak to etcd): the preface
     * and an empty SETTINGS. */
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    uint8_t settings[9];
    write_all(&conns[i], (const uint8_t *)preface, sizeof preface - 1);
    write_all(&conns[i], settings, frame_header(settings, 0, 0x4, 0, 0));
    fcntl(conns[i].fd, F_SETFL, fcntl(conns[i].fd, F_GETFL) | O_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, conns[i].fd, &ev) != 0) die(2, "epoll_ctl failed");
  }
  Latencies latencies = latencies_new();
  double start = now_ms(), deadline = start + seconds * 1e3;
  int in_flight = 0;
  for (int i = 0; i < connections; i++) {
    send_next(&conns[i], i);
    in_flight++;
  }
  struct epoll_event events[MAX_CONNECTIONS];
  while (in_flight > 0) {
    if (now_ms() > deadline + 10e3) die(2, "responses did not arrive within 10 s of the end");
    int n = epoll_wait(ep, events, MAX_CONNECTIONS, 1000);
    for (int e = 0; e < n; e++) {
      int i = (int)events[e].data.u32;
      Conn *c = &conns[i];
      ssize_t got = read(c->fd, c->in + c->have, BUFFER - c->have);
      if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (got <= 0) die(2, "etcd closed a connection");
      c->have += (size_t)got;
      while (c->in_flight && take_response(c)) {
        double t = now_ms();
        record_latency(&latencies, t - c->sent_at);
        if (t < deadline) {
          send_next(c, i);
        } else {
          in_flight--;  /* done: what etcd sends it from now on is not read */
          epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
          break;
        }
      }
    }
  }
  double elapsed = (now_ms() - start) / 1e3;
  printf("etcd put: %d connection(s) × depth 1, %.1f s, %zu calls (C load generator)\n", connections, elapsed,
         latencies.count);
  print_latencies(&latencies, elapsed);
  return 0;
}
