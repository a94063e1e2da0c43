/* wire-io.h: what the C programs (chordstore-c, tools/bench/wire-load) share to reach a
 * ChordStore server: an optional TLS layer (OpenSSL) over the socket, and the bearer
 * token (docs/SECURITY.md) sent as the call metadata "authorization: Bearer <token>".
 * Header only: each program includes it once. */
#ifndef CHORDSTORE_WIRE_IO_H
#define CHORDSTORE_WIRE_IO_H

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A connection: its socket and, with TLS, its OpenSSL session. */
typedef struct {
  int fd;
  SSL *ssl;
} WireIO;

/* A TLS context trusting ca_file (PEM), or the system's roots when NULL; exits 2 on error. */
static inline SSL_CTX *wire_tls_context(const char *ca_file, const char *program) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == NULL) { fprintf(stderr, "%s: cannot make a TLS context\n", program); exit(2); }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  int ok = ca_file != NULL ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL) : SSL_CTX_set_default_verify_paths(ctx);
  if (ok != 1) { fprintf(stderr, "%s: cannot load the certificate authority %s\n", program, ca_file ? ca_file : "(system)"); exit(2); }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  return ctx;
}

/* Runs the TLS handshake on io->fd (blocking), checking that the server's certificate
 * names host (a DNS name, or an IP address); exits 2 on failure. */
static inline void wire_tls_start(WireIO *io, SSL_CTX *ctx, const char *host, const char *program) {
  io->ssl = SSL_new(ctx);
  unsigned char ip[16];
  int named;
  if (io->ssl == NULL) {
    named = 0;
  } else if (inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1) {
    named = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(io->ssl), host) == 1;
  } else {
    named = SSL_set_tlsext_host_name(io->ssl, host) == 1 && SSL_set1_host(io->ssl, host) == 1;
  }
  /* Without the host to check, the handshake would accept any certificate of the authority. */
  if (!named || SSL_set_fd(io->ssl, io->fd) != 1) {
    fprintf(stderr, "%s: cannot set up TLS for %s\n", program, host);
    exit(2);
  }
  if (SSL_connect(io->ssl) != 1) {
    long verify = SSL_get_verify_result(io->ssl);
    fprintf(stderr, "%s: TLS handshake with %s failed: %s\n", program, host,
            verify != X509_V_OK ? X509_verify_cert_error_string(verify) : ERR_reason_error_string(ERR_get_error()));
    exit(2);
  }
}

/* read(2) through TLS when on: >0 bytes, 0 end, -1 error (errno EAGAIN: try later). */
static inline ssize_t wire_read(WireIO *io, void *buf, size_t len) {
  if (io->ssl == NULL) return read(io->fd, buf, len);
  int n = SSL_read(io->ssl, buf, (int)(len > 1 << 30 ? 1 << 30 : len));
  if (n > 0) return n;
  int err = SSL_get_error(io->ssl, n);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) { errno = EAGAIN; return -1; }
  if (err == SSL_ERROR_ZERO_RETURN) return 0;
  errno = EIO;
  return -1;
}

/* write(2) through TLS when on: as wire_read. */
static inline ssize_t wire_write(WireIO *io, const void *buf, size_t len) {
  if (io->ssl == NULL) return write(io->fd, buf, len);
  int n = SSL_write(io->ssl, buf, (int)(len > 1 << 30 ? 1 << 30 : len));
  if (n > 0) return n;
  int err = SSL_get_error(io->ssl, n);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) { errno = EAGAIN; return -1; }
  errno = EIO;
  return -1;
}

/* Bytes TLS holds decrypted but not yet read (the socket may have none left). */
static inline int wire_pending(WireIO *io) { return io->ssl != NULL ? SSL_pending(io->ssl) : 0; }

/* The token: from the file named, else $CHORDSTORE_TOKEN, else $CHORDSTORE_TOKEN_FILE;
 * NULL if none. The result is "Bearer <token>" (static storage). */
static inline const char *wire_bearer(const char *token_file) {
  static char header[512];
  char token[400] = "";
  const char *file = token_file != NULL ? token_file : getenv("CHORDSTORE_TOKEN_FILE");
  const char *env = getenv("CHORDSTORE_TOKEN");
  if (token_file == NULL && env != NULL && env[0] != '\0') {
    snprintf(token, sizeof token, "%s", env);
  } else if (file != NULL && file[0] != '\0') {
    FILE *f = fopen(file, "r");
    if (f == NULL || fgets(token, sizeof token, f) == NULL) { fprintf(stderr, "cannot read a token from %s\n", file); exit(2); }
    fclose(f);
    token[strcspn(token, "\r\n")] = '\0';
  }
  if (token[0] == '\0') return NULL;
  snprintf(header, sizeof header, "Bearer %s", token);
  return header;
}

#endif
