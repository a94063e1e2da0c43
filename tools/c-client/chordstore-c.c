/* chordstore-c: a minimal ChordStore client in C (libprotobuf-c), showing that the wire
 * protocol (proto/chordstore/v1/rpc.proto) is language-neutral.
 *
 * Usage: chordstore-c [--store NAME] [--token-file FILE] [--tls | --tls-ca FILE] HOST PORT TITLE
 * Sends Health, AddChordset{title} and ListChordsets{CREATED}, calls 1, 2 and 3, and
 * prints their results. With --store, every call names that store (Call.store); without
 * it, the calls go to store "default". Every call carries the bearer token (metadata
 * "authorization: Bearer <token>") from --token-file, $CHORDSTORE_TOKEN or
 * $CHORDSTORE_TOKEN_FILE. --tls connects with TLS trusting the system's authorities,
 * --tls-ca FILE trusting that one. Exit status: 0 OK; 1 a call ended with a non-OK status
 * (or the server sent GoAway); 2 usage, connection or protocol errors.
 *
 * Framing: each frame is a 4-byte big-endian length N, then N bytes of one Frame. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "chordstore/v1/rpc.pb-c.h"
#include "wire-io.h"

#define MAX_FRAME (4u * 1024u * 1024u) /* refuse frames longer than 4 MiB */

static void die(int code, const char *what) {
  fprintf(stderr, "chordstore-c: %s\n", what);
  exit(code);
}

/* Reads exactly len bytes (looping over partial reads). 0 = OK, -1 = EOF or error. */
static WireIO io = {-1, NULL};

static int read_full(int fd, uint8_t *buf, size_t len) {
  (void)fd;
  while (len > 0) {
    ssize_t n = wire_read(&io, buf, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

static int write_full(int fd, const uint8_t *buf, size_t len) {
  (void)fd;
  while (len > 0) {
    ssize_t n = wire_write(&io, buf, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Writes one frame: 4-byte big-endian length, then the serialized Frame. */
static int write_frame(int fd, const Chordstore__V1__Frame *frame) {
  size_t len = chordstore__v1__frame__get_packed_size(frame);
  if (len > MAX_FRAME) return -1;
  uint8_t *buf = malloc(4 + len);
  if (buf == NULL) return -1;
  buf[0] = (uint8_t)(len >> 24);
  buf[1] = (uint8_t)(len >> 16);
  buf[2] = (uint8_t)(len >> 8);
  buf[3] = (uint8_t)len;
  chordstore__v1__frame__pack(frame, buf + 4);
  int rc = write_full(fd, buf, 4 + len);
  free(buf);
  return rc;
}

/* Reads one frame; NULL on EOF, I/O error, a length over MAX_FRAME or unparseable
 * bytes (*why says which). Free the result with chordstore__v1__frame__free_unpacked. */
static Chordstore__V1__Frame *read_frame(int fd, const char **why) {
  uint8_t head[4];
  if (read_full(fd, head, 4) != 0) {
    *why = "connection closed by the server";
    return NULL;
  }
  uint32_t len = (uint32_t)head[0] << 24 | (uint32_t)head[1] << 16 |
                 (uint32_t)head[2] << 8 | (uint32_t)head[3];
  if (len > MAX_FRAME) {
    *why = "frame longer than 4 MiB";
    return NULL;
  }
  uint8_t *buf = malloc(len > 0 ? len : 1);
  if (buf == NULL) {
    *why = "out of memory";
    return NULL;
  }
  Chordstore__V1__Frame *frame = NULL;
  if (read_full(fd, buf, len) != 0)
    *why = "connection closed inside a frame";
  else if ((frame = chordstore__v1__frame__unpack(NULL, len, buf)) == NULL)
    *why = "unparseable frame";
  free(buf);
  return frame;
}

/* Sends Call{call_id, method, payload = request} and waits for its final Reply. Exits 1
 * on a non-OK status or GoAway, 2 on connection or protocol errors. Returns the response
 * (free with protobuf_c_message_free_unpacked). */
/* The store every call names (Call.store); "" is store "default". */
static const char *store_name = "";
/* "Bearer <token>", or NULL to send none. */
static const char *bearer = NULL;

static ProtobufCMessage *call(int fd, uint64_t call_id, const char *method,
                              const ProtobufCMessage *request,
                              const ProtobufCMessageDescriptor *response_type) {
  uint8_t *payload = malloc(protobuf_c_message_get_packed_size(request) + 1);
  if (payload == NULL) die(2, "out of memory");
  Chordstore__V1__Call c = CHORDSTORE__V1__CALL__INIT;
  c.call_id = call_id;
  c.method = (char *)method;
  c.store = (char *)store_name;
  Chordstore__V1__Call__MetadataEntry authorization = CHORDSTORE__V1__CALL__METADATA_ENTRY__INIT;
  Chordstore__V1__Call__MetadataEntry *entries[1] = {&authorization};
  if (bearer != NULL) {
    authorization.key = "authorization";
    authorization.value = (char *)bearer;
    c.n_metadata = 1;
    c.metadata = entries;
  }
  c.payload.data = payload;
  c.payload.len = protobuf_c_message_pack(request, payload);
  Chordstore__V1__Frame out = CHORDSTORE__V1__FRAME__INIT;
  out.kind_case = CHORDSTORE__V1__FRAME__KIND_CALL;
  out.call = &c;
  int rc = write_frame(fd, &out);
  free(payload);
  if (rc != 0) die(2, "cannot send a frame");

  /* A unary call gets one Reply with payload and status; tolerate the payload coming
   * first in a Reply of its own, as in a streaming call. */
  Chordstore__V1__Frame *data = NULL;
  for (;;) {
    const char *why = NULL;
    Chordstore__V1__Frame *in = read_frame(fd, &why);
    if (in == NULL) die(2, why);
    if (in->kind_case == CHORDSTORE__V1__FRAME__KIND_GO_AWAY) {
      Chordstore__V1__Status *s = in->go_away->status;
      fprintf(stderr, "error: %" PRIu32 " %s\n", s ? s->code : 14u,
              s ? s->message : "go away");
      chordstore__v1__frame__free_unpacked(in, NULL);
      exit(1);
    }
    if (in->kind_case != CHORDSTORE__V1__FRAME__KIND_REPLY || in->reply->call_id != call_id) {
      chordstore__v1__frame__free_unpacked(in, NULL); /* not ours: ignore */
      continue;
    }
    Chordstore__V1__Reply *reply = in->reply;
    if (reply->status == NULL) { /* a message without the end of the call */
      if (data != NULL) chordstore__v1__frame__free_unpacked(data, NULL);
      data = in;
      continue;
    }
    if (reply->status->code != 0) {
      fprintf(stderr, "error: %" PRIu32 " %s\n", reply->status->code, reply->status->message);
      chordstore__v1__frame__free_unpacked(in, NULL);
      if (data != NULL) chordstore__v1__frame__free_unpacked(data, NULL);
      exit(1);
    }
    ProtobufCBinaryData bytes = reply->payload;
    if (bytes.len == 0 && data != NULL) bytes = data->reply->payload;
    static const uint8_t empty[1];
    ProtobufCMessage *response = protobuf_c_message_unpack(
        response_type, NULL, bytes.len, bytes.len > 0 ? bytes.data : empty);
    chordstore__v1__frame__free_unpacked(in, NULL);
    if (data != NULL) chordstore__v1__frame__free_unpacked(data, NULL);
    if (response == NULL) die(2, "unparseable response payload");
    return response;
  }
}

/* Formats a 16-byte id as 8-4-4-4-12 lowercase hex (other lengths: plain hex). */
static const char *uuid_text(ProtobufCBinaryData id, char out[64]) {
  size_t o = 0;
  for (size_t i = 0; i < id.len && o + 3 < 64; i++) {
    if (id.len == 16 && (i == 4 || i == 6 || i == 8 || i == 10)) out[o++] = '-';
    o += (size_t)snprintf(out + o, 64 - o, "%02x", id.data[i]);
  }
  out[o] = '\0';
  return out;
}

static int connect_to(const char *host, const char *port) {
  struct addrinfo hints, *list, *ai;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(host, port, &hints, &list);
  if (rc != 0) {
    fprintf(stderr, "chordstore-c: %s:%s: %s\n", host, port, gai_strerror(rc));
    exit(2);
  }
  int fd = -1, err = 0;
  for (ai = list; ai != NULL && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) err = errno;
    else if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      err = errno;
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(list);
  if (fd < 0) {
    fprintf(stderr, "chordstore-c: cannot connect to %s:%s: %s\n", host, port, strerror(err));
    exit(2);
  }
  return fd;
}

int main(int argc, char **argv) {
  const char *token_file = NULL, *ca_file = NULL;
  int tls = 0;
  while (argc > 1 && strncmp(argv[1], "--", 2) == 0) {
    if (strcmp(argv[1], "--tls") == 0) {
      tls = 1;
      argv += 1;
      argc -= 1;
      continue;
    }
    if (argc < 3) break;
    if (strcmp(argv[1], "--store") == 0) store_name = argv[2];
    else if (strcmp(argv[1], "--token-file") == 0) token_file = argv[2];
    else if (strcmp(argv[1], "--tls-ca") == 0) { ca_file = argv[2]; tls = 1; }
    else break;
    argv += 2;
    argc -= 2;
  }
  if (argc != 4) {
    fprintf(stderr, "usage: chordstore-c [--store NAME] [--token-file FILE] [--tls | --tls-ca FILE] HOST PORT TITLE\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN); /* a closed connection is a write error, not a signal */
  bearer = wire_bearer(token_file);
  int fd = connect_to(argv[1], argv[2]);
  io.fd = fd;
  if (tls) wire_tls_start(&io, wire_tls_context(ca_file, "chordstore-c"), argv[1], "chordstore-c");
  char id[64];

  Chordstore__V1__HealthRequest health = CHORDSTORE__V1__HEALTH_REQUEST__INIT;
  Chordstore__V1__HealthReply *h = (Chordstore__V1__HealthReply *)call(
      fd, 1, "chordstore.v1.ChordStore/Health", &health.base,
      &chordstore__v1__health_reply__descriptor);
  printf("server: %s protocol %" PRIu32 "\n", h->server, h->protocol_version);
  chordstore__v1__health_reply__free_unpacked(h, NULL);

  Chordstore__V1__AddChordsetRequest add = CHORDSTORE__V1__ADD_CHORDSET_REQUEST__INIT;
  add.title = argv[3];
  Chordstore__V1__CommandReply *r = (Chordstore__V1__CommandReply *)call(
      fd, 2, "chordstore.v1.ChordStore/AddChordset", &add.base,
      &chordstore__v1__command_reply__descriptor);
  Chordstore__V1__EventEnvelope *e = r->event;
  if (e == NULL || e->event_case != CHORDSTORE__V1__EVENT_ENVELOPE__EVENT_CHORDSET_ADDED ||
      e->chordset_added->chordset == NULL) {
    chordstore__v1__command_reply__free_unpacked(r, NULL);
    die(2, "AddChordset: the reply's event is not a ChordsetAdded");
  }
  Chordstore__V1__Chordset *added = e->chordset_added->chordset;
  printf("added %s at index %" PRIu32 " (event %" PRIu64 ")\n", uuid_text(added->id, id),
         added->index, e->sequence);
  chordstore__v1__command_reply__free_unpacked(r, NULL);

  Chordstore__V1__ListChordsetsRequest list = CHORDSTORE__V1__LIST_CHORDSETS_REQUEST__INIT;
  list.order = CHORDSTORE__V1__CHORDSET_ORDER__CHORDSET_ORDER_CREATED;
  list.limit = 0;
  Chordstore__V1__ChordsetList *l = (Chordstore__V1__ChordsetList *)call(
      fd, 3, "chordstore.v1.ChordStore/ListChordsets", &list.base,
      &chordstore__v1__chordset_list__descriptor);
  for (size_t i = 0; i < l->n_chordsets; i++) {
    Chordstore__V1__Chordset *c = l->chordsets[i];
    printf("%" PRIu32 " %s %s\n", c->index, uuid_text(c->id, id), c->title);
  }
  chordstore__v1__chordset_list__free_unpacked(l, NULL);

  close(fd);
  return 0;
}
