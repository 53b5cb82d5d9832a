/* SPDX-License-Identifier: BSD-3-Clause
 *
 * TLS for connections (OpenSSL): a context per client built from the caller's CA bundle and
 * optional client certificate, a handshake run in non-blocking steps, and non-blocking
 * read/write that report "would block" the way the socket calls do. hiredis 0.14
 * (Debian 12) has no TLS, so the library does its own; RESP parsing is unchanged.
 * A context is owned by its client; an SSL session by its connection. One thread.
 */
#ifndef CLUSTERPIPE_TLS_H
#define CLUSTERPIPE_TLS_H

#include <stddef.h>
#include <sys/types.h>

struct ssl_st;
struct ssl_ctx_st;

typedef struct cp__tlsopts {
    const char *ca_file;   /* PEM bundle to verify servers; NULL with insecure */
    const char *cert_file; /* client certificate (tls-auth-clients), or NULL */
    const char *key_file;  /* its key, or NULL */
    int insecure;          /* 1: do not verify the server's certificate */
} cp__tlsopts;

/* A client context (TLS 1.2+), or NULL with a reason in err. Free with cp__tls_ctx_free. */
struct ssl_ctx_st *cp__tls_ctx_new(const cp__tlsopts *o, char *err, size_t errlen);
void cp__tls_ctx_free(struct ssl_ctx_st *ctx);

/* A client session on connected socket fd, verifying the certificate against `host` (an IP
 * address or a DNS name: the host dialled, or cp_options.tls_server_name) unless the context is
 * insecure; NULL with a reason in err. The handshake is then run by cp__tls_step whenever the
 * socket is ready as it asked: 1 when done, 0 when it must wait (*want_read: 1 to read, 0 to
 * write), -1 with a reason in err. The owner bounds it with the connect timeout. Free the session
 * with cp__tls_free. */
struct ssl_st *cp__tls_start(struct ssl_ctx_st *ctx, int fd, const char *host, char *err,
                             size_t errlen);
int cp__tls_step(struct ssl_st *s, const char *host, int *want_read, char *err, size_t errlen);

/* Non-blocking I/O: bytes moved (> 0), 0 when the peer closed (read only), -EAGAIN when the
 * socket would block, or -EIO (reason in err). */
ssize_t cp__tls_write(struct ssl_st *s, const void *buf, size_t len, char *err, size_t errlen);
ssize_t cp__tls_read(struct ssl_st *s, void *buf, size_t len, char *err, size_t errlen);

/* Bytes decrypted and not yet read (poll(2) does not see them). */
size_t cp__tls_pending(const struct ssl_st *s);

void cp__tls_free(struct ssl_st *s);

#endif
