/* SPDX-License-Identifier: BSD-3-Clause
 *
 * TLS on a socket of the caller's: a header of its own, beside clusterpipe/clusterpipe.h.
 *
 * For a program that speaks to a server in a way no client command does (a replica's stream,
 * say) and wants the same TLS as the client's connections: cp_options' tls_ca_file,
 * tls_cert_file, tls_key_file, tls_insecure and tls_server_name mean what they mean for a client
 * (its other fields are not read). The caller connects the socket, runs the handshake whenever
 * the socket is ready as asked, then reads and writes through the session; it still owns the
 * socket and closes it after cp_tls_free. Non-blocking sockets are expected; a blocking one makes
 * every call block. One thread per session. docs/api.md, "TLS on your own socket".
 */
#ifndef CLUSTERPIPE_TLS_PUBLIC_H
#define CLUSTERPIPE_TLS_PUBLIC_H

#include <sys/types.h>

#include "clusterpipe/clusterpipe.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cp_tls cp_tls;

/* A client session on connected socket fd, verifying the server's certificate against host (or
 * o->tls_server_name) unless o->tls_insecure. NULL with the reason in err (a CA or certificate
 * file that does not load, out of memory). */
CP_API cp_tls *cp_tls_new(const cp_options *o, int fd, const char *host, char *err, size_t errlen);

/* One step of the handshake: 1 done, 0 call again once the socket is readable (*want_read 1) or
 * writable (0), -1 with the reason in err (a certificate that does not verify names it). */
CP_API int cp_tls_handshake(cp_tls *t, int *want_read, char *err, size_t errlen);

/* After the handshake: bytes moved (> 0), 0 when the peer closed (read only), -EAGAIN when the
 * socket would block, -EIO with the reason in err. */
CP_API ssize_t cp_tls_read(cp_tls *t, void *buf, size_t len, char *err, size_t errlen);
CP_API ssize_t cp_tls_write(cp_tls *t, const void *buf, size_t len, char *err, size_t errlen);

/* Bytes already decrypted and waiting in the session: poll(2) does not see them, so read them
 * before waiting for the socket again. */
CP_API size_t cp_tls_pending(const cp_tls *t);

/* Sends close_notify when it can without waiting, frees the session. NULL is ignored. */
CP_API void cp_tls_free(cp_tls *t);

#ifdef __cplusplus
}
#endif

#endif
