/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A blocking RESP connection to one server, over plain TCP or over TLS (the library's,
 * clusterpipe/tls.h): commands formatted as hiredis formats them and queued, written together at
 * the next reply, replies read with hiredis's reader. Each call waits at most the timeout given.
 * hiredis 0.14 has no TLS, hence this rather than a redisContext. Used by srcconn.h.
 */
#ifndef CLUSTERPIPE_MIGRATE_RESPCONN_H
#define CLUSTERPIPE_MIGRATE_RESPCONN_H

#include <hiredis/hiredis.h>
#include <stddef.h>

#include "clusterpipe/clusterpipe.h"

typedef struct cp__respconn cp__respconn;

/* How a call failed. */
typedef enum cp__rc_failure {
    CP__RC_OK = 0,
    CP__RC_EOF,     /* the server closed (or reset) the connection */
    CP__RC_TIMEOUT, /* no answer within the timeout */
    CP__RC_IO,      /* anything else: a refused connection, a TLS error, not RESP, ... */
} cp__rc_failure;

/* Connects to host:port, and with tls (tls->tls set: its tls_* fields) does the handshake, all
 * within timeout_ms. NULL with err ("cannot connect: ...", the TLS reason). */
cp__respconn *cp__rc_connect(const char *host, int port, const cp_options *tls, int timeout_ms,
                             char *err, size_t errlen);
void cp__rc_free(cp__respconn *c);

/* Queues a command (hiredis's format, or argv with lengths). 0, or -1 (a bad format, out of
 * memory). */
int cp__rc_appendf(cp__respconn *c, const char *fmt, ...);
int cp__rc_append_argv(cp__respconn *c, int argc, const char **argv, const size_t *argvlen);

/* Writes what is queued and reads the next reply into *out (the caller's, freeReplyObject; an
 * error reply is a reply). 0, or -1 (cp__rc_why, cp__rc_errstr): the connection is then unusable.
 */
int cp__rc_reply(cp__respconn *c, redisReply **out);

/* cp__rc_appendf and cp__rc_reply: the reply, or NULL on failure. */
redisReply *cp__rc_command(cp__respconn *c, const char *fmt, ...);

cp__rc_failure cp__rc_why(const cp__respconn *c);

/* Copies tls's TLS settings (tls, tls_ca_file, tls_cert_file, tls_key_file, tls_insecure,
 * tls_server_name) into o; tls NULL: none. */
void cp__rc_tls_into(cp_options *o, const cp_options *tls);
const char *cp__rc_errstr(const cp__respconn *c);

#endif
