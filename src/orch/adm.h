/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Admin connections to our own redis-server and nutcracker processes, over hiredis's synchronous
 * API (builds with hiredis 0.14 and 1.x). Used for readiness probes, cluster creation, slot
 * migration and status; never on a benchmark's hot path, and independent of libclusterpipe and
 * the bench code. A redisContext returned here is owned by the caller (redisFree); replies are
 * owned by the caller (freeReplyObject). One thread per context.
 *
 * Callers must ignore SIGPIPE (the CLI and the test fixture do): writing to a server that just
 * died would otherwise kill the process, as with any hiredis program.
 */
#ifndef CLUSTERPIPE_ORCH_ADM_H
#define CLUSTERPIPE_ORCH_ADM_H

#include <stddef.h>

#include <hiredis/hiredis.h>

/* Connects to host:port with a timeout used for the connect and every later command, and
 * authenticates with password when non-NULL. NULL with err set on failure. */
redisContext *cp__adm_connect(const char *host, int port, const char *password, int timeout_ms,
                              char *err, size_t errlen);

/* Runs one command. Returns the reply (caller frees), or NULL when the connection failed or the
 * server answered with an error reply; err then says which. */
redisReply *cp__adm_cmd(redisContext *c, char *err, size_t errlen, const char *fmt, ...);
redisReply *cp__adm_argv(redisContext *c, int argc, const char **argv, const size_t *lens,
                         char *err, size_t errlen);

/* Runs one command and discards a non-error reply. Returns 0 or -1 with err. */
int cp__adm_ok(redisContext *c, char *err, size_t errlen, const char *fmt, ...);

/* Copies the value of `field` in an INFO text ("field:value\r\n") into out. 0 found, -1 not. */
int cp__info_field(const char *info, const char *field, char *out, size_t len);

/* Runs INFO section and copies the value of field into out. 0 found, -1 (err set) otherwise. */
int cp__adm_info(redisContext *c, const char *section, const char *field, char *out, size_t len,
                 char *err, size_t errlen);

#endif /* CLUSTERPIPE_ORCH_ADM_H */
