/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Admin connections to our own redis-server and nutcracker processes: one libclusterpipe client
 * in single-endpoint mode (no slot routing, MOVED/ASK come back as replies) plus one pipeline
 * reused for every command. Going through the library rather than hiredis's synchronous API
 * means TLS (hiredis 0.14 has none), AUTH and timeouts work the same way for orchestration as
 * for any client. Used for readiness probes, cluster creation, slot migration and status; never
 * on a benchmark's hot path, and independent of the bench code.
 *
 * Ownership: a cp__adm is owned by the caller (cp__adm_free). Replies returned by cp__adm_cmd /
 * cp__adm_argv belong to the caller (cp_reply_free); replies seen through cp__adm_reply belong
 * to the connection until its next command. One thread per connection.
 *
 * Callers must ignore SIGPIPE (the CLI and the test fixture do): writing to a server that just
 * died would otherwise kill the process.
 */
#ifndef CLUSTERPIPE_ORCH_ADM_H
#define CLUSTERPIPE_ORCH_ADM_H

#include <stddef.h>

#include <hiredis/hiredis.h>

/* How to reach a server: all NULL means plain TCP without AUTH. Strings are borrowed. */
typedef struct cp__adm_sec {
    const char *password; /* AUTH password, or NULL */
    const char *tls_ca;   /* non-NULL: TLS, the server verified against this CA file */
    const char *tls_cert; /* client certificate (servers with tls-auth-clients yes), or NULL */
    const char *tls_key;  /* its key, or NULL */
} cp__adm_sec;

typedef struct cp__adm cp__adm;

/* Connects to host:port (and does the TLS handshake and AUTH) with timeout_ms for the connect
 * and for every later command. Returns the connection, or NULL with err set. Blocks. */
cp__adm *cp__adm_connect(const char *host, int port, const cp__adm_sec *sec, int timeout_ms,
                         char *err, size_t errlen);

/* Closes the connection and frees it. NULL is fine. */
void cp__adm_free(cp__adm *a);

/* Runs one command (hiredis format / argv with lengths, lens may be NULL for C strings). Returns
 * the reply (caller frees), or NULL when the command got no answer or the server answered with
 * an error reply; err then says which and cp__adm_last the code. Blocks up to the timeout. */
redisReply *cp__adm_cmd(cp__adm *a, char *err, size_t errlen, const char *fmt, ...);
redisReply *cp__adm_argv(cp__adm *a, int argc, const char **argv, const size_t *lens, char *err,
                         size_t errlen);

/* The CP_E* code of the last single command on a (cp__adm_cmd / _argv / _ok / _info): 0 when it
 * got a non-error reply, CP_ESERVER for an error reply, CP_EINVAL / CP_ENOMEM when it could not
 * be formatted, else the transport's code (CP_EIO, CP_ECONNECT, CP_ETIMEDOUT, ...). */
int cp__adm_last(const cp__adm *a);

/* Runs one command and discards a non-error reply. Returns 0 or a CP_E* code (as cp__adm_last)
 * with err. */
int cp__adm_ok(cp__adm *a, char *err, size_t errlen, const char *fmt, ...);

/* Pipelining: cp__adm_append queues commands (0, or CP_EINVAL when the format is bad, CP_ENOMEM
 * when memory runs out), cp__adm_flush sends them all before reading any answer and waits for
 * every one. Flush returns 0 when every command got a non-error reply, else the CP_E* code of the
 * first problem (as cp__adm_last) with it in err;
 * either way cp__adm_reply(a, k) gives reply k of the batch (NULL when it got none) until the
 * next command on a. */
int cp__adm_append(cp__adm *a, const char *fmt, ...);
int cp__adm_flush(cp__adm *a, char *err, size_t errlen);
const redisReply *cp__adm_reply(const cp__adm *a, size_t k);

/* Copies the value of `field` in an INFO text ("field:value\r\n") into out. 0 found, CP_EPROTO
 * not. */
int cp__info_field(const char *info, const char *field, char *out, size_t len);

/* Runs INFO section and copies the value of field into out. 0 found, CP_EPROTO when the answer
 * has no such field, or the command's code (as cp__adm_last); err set unless 0. */
int cp__adm_info(cp__adm *a, const char *section, const char *field, char *out, size_t len,
                 char *err, size_t errlen);

#endif /* CLUSTERPIPE_ORCH_ADM_H */
