/* SPDX-License-Identifier: BSD-3-Clause
 *
 * libclusterpipe: a Redis Cluster client whose pipelines route every command by hash slot, write
 * to every node before reading any, return replies in append order, and stay correct while slots
 * migrate and masters fail over. The same calls talk to a single endpoint (twemproxy or one plain
 * redis-server), so one program can measure both architectures.
 *
 * Threads: a cp_client and the pipelines made from it belong to one thread at a time. The
 * library keeps no mutable globals; use one client per thread.
 *
 * Errors: functions return 0 on success or a negative CP_E* code; the client (and pipeline) also
 * keep the last error in `err` and a readable `errstr`. The library never prints and never exits.
 *
 * Replies are hiredis `redisReply` objects (hiredis.h), owned as documented per function.
 */
#ifndef CLUSTERPIPE_CLUSTERPIPE_H
#define CLUSTERPIPE_CLUSTERPIPE_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CP_VERSION_MAJOR 0
#define CP_VERSION_MINOR 1
#define CP_VERSION_PATCH 0

/* ---- error codes --------------------------------------------------------------------------- */

/* Every code once: name, value and message (cp_strerror's text), the way libuv's UV_ERRNO_MAP
 * keeps its table. XX(NAME, value, "message") gives CP_NAME = value. Values never change. */
#define CP_ERRNO_MAP(XX)                                                                           \
    XX(OK, 0, "success")                                                                           \
    XX(ENOMEM, -1, "out of memory")                                                                \
    XX(EINVAL, -2, "invalid argument")                                                             \
    XX(ECONNECT, -3, "could not connect")                                                          \
    XX(EIO, -4, "socket I/O error")                                                                \
    XX(ECLOSED, -5, "connection closed by peer")                                                   \
    XX(ETIMEDOUT, -6, "timed out")                                                                 \
    XX(EPROTO, -7, "protocol error")                                                               \
    XX(EAUTH, -8, "authentication failed")                                                         \
    XX(ETOPOLOGY, -9, "no usable cluster topology")                                                \
    XX(EREDIRECT, -10, "too many redirects")                                                       \
    XX(ECROSSSLOT, -11, "keys in different slots")                                                 \
    XX(EPARTIAL, -12, "some commands did not complete")                                            \
    XX(ESERVER, -13, "server error reply")

typedef enum cp_errno {
#define CP__ERRNO_ENUM(name, value, msg) CP_##name = (value),
    CP_ERRNO_MAP(CP__ERRNO_ENUM)
#undef CP__ERRNO_ENUM
} cp_errno;

#define CP_ERRSTR_LEN 256

/* Returns a static description of a CP_E* code (never NULL; "unknown error" for other values). */
const char *cp_strerror(int code);

/* Returns the code's name, e.g. "CP_ETIMEDOUT" (never NULL; "CP_UNKNOWN" for other values). */
const char *cp_err_name(int code);

/* ---- hash slots ---------------------------------------------------------------------------- */

#define CP_SLOTS 16384

/* CRC16-XMODEM of `key`, or of its hash tag: the bytes between the first '{' and the first '}'
 * after it, when that is non-empty (Redis Cluster spec). Returns 0..16383. */
unsigned cp_keyslot(const char *key, size_t len);

/* ---- client ---------------------------------------------------------------------------------- */

/* Options for cp_connect. Start from CP_OPTIONS_INIT and set what you need. Strings are copied
 * by cp_connect; the struct can be discarded afterwards. */
#define CP_MAX_REDIRECTS 255

typedef struct cp_options {
    const char *seeds;      /* cluster mode: "host:port[,host:port...]" */
    const char *endpoint;   /* single-endpoint mode (twemproxy, plain redis): "host:port" */
    const char *username;   /* ACL user (NULL: AUTH with password only) */
    const char *password;   /* NULL: no AUTH */
    int connect_timeout_ms; /* per connection attempt */
    int io_timeout_ms;      /* no progress on a connection with requests in flight for this long
                               closes it and ends its commands CP_UNKNOWN */
    int max_redirects;      /* MOVED/ASK hops allowed per command, at most CP_MAX_REDIRECTS
                               (<= 0: the default, 16; above the maximum cp_connect fails
                               CP_EINVAL). The first hop is always followed, later ones only
                               within the retry budget */
    int retry_budget_ms;    /* per cp_exec: time allowed for TRYAGAIN/CLUSTERDOWN/LOADING and
                               reconnect retries with backoff before a command is given up */
    unsigned flags;         /* CP_OPT_* */
    /* TLS (Redis tls-port, tls-cluster yes): set tls = 1. The server's certificate is verified
     * against tls_ca_file (NULL: the system's CAs) and the address connected to (IP SAN or DNS
     * name), unless tls_insecure. A client certificate is sent when tls_cert_file is set. */
    int tls;
    const char *tls_ca_file;
    const char *tls_cert_file;
    const char *tls_key_file; /* NULL: the key is in tls_cert_file */
    int tls_insecure;
} cp_options;

/* Split MGET/MSET/DEL/EXISTS/UNLINK/TOUCH whose keys span slots into one sub-command per slot and
 * reassemble one reply. NOT atomic: part may run and part may not (see docs/pipeline.md). */
#define CP_OPT_SPLIT_MULTIKEY 0x1u

#define CP_OPTIONS_INIT                                                                            \
    { NULL, NULL, NULL, NULL, 2000, 5000, 16, 3000, 0u, 0, NULL, NULL, NULL, 0 }

/* The public part of a client; the library allocates a larger private struct around it. */
typedef struct cp_client {
    int err;                    /* last CP_E* code, 0 if none */
    char errstr[CP_ERRSTR_LEN]; /* description of err */
} cp_client;

/* Connects to the seeds (cluster mode: the first seed that answers gives the slot map) or to the
 * endpoint. Blocks up to the connect timeout per address tried. Returns a client that the caller
 * frees with cp_free, or NULL only when out of memory; on failure c->err is set and the client
 * can only be freed. */
cp_client *cp_connect(const cp_options *opt);

/* Closes every connection and frees the client. Pipelines made from it must be freed first. */
void cp_free(cp_client *c);

/* 1 when connected in cluster mode, 0 in single-endpoint mode. */
int cp_is_cluster(const cp_client *c);

/* Re-reads the slot map from any known node, then from the seeds. Blocks. Returns 0 or CP_E*. */
int cp_refresh(cp_client *c);

/* Runs one command and waits for its answer, following MOVED/ASK and retrying as a pipeline does
 * (it is a pipeline of one). Returns the reply, which the caller frees with freeReplyObject, or
 * NULL with c->err set when the command did not end CP_DONE. An error reply from the server is
 * returned as a reply (type REDIS_REPLY_ERROR), not as NULL. */
redisReply *cp_command(cp_client *c, const char *fmt, ...);
redisReply *cp_command_argv(cp_client *c, int argc, const char **argv, const size_t *argvlen);

/* Counters since cp_connect; the bench reads them to report redirects and retries. */
typedef struct cp_stats {
    uint64_t moved, ask, tryagain, clusterdown, loading, io_retries, refreshes;
} cp_stats;
void cp_get_stats(const cp_client *c, cp_stats *out);

/* ---- pipelines ---------------------------------------------------------------------------------
 */

/* What happened to one command. */
typedef enum cp_outcome {
    CP_PENDING = 0,      /* appended, cp_exec not run yet */
    CP_DONE = 1,         /* the server answered; the reply may be an error reply */
    CP_NOT_EXECUTED = 2, /* never written, or refused (MOVED/ASK/TRYAGAIN/CLUSTERDOWN/LOADING,
                            CROSSSLOT) and not retried: safe to retry */
    CP_UNKNOWN = 3       /* written, then the connection broke before the answer */
} cp_outcome;

/* Per-command flags for cp_set_flags. */
#define CP_CMD_IDEMPOTENT 0x1u /* may be re-sent after its outcome became unknown */

typedef struct cp_pipeline cp_pipeline;

/* A new empty pipeline on client c. Returns NULL when out of memory. Free with cp_pipeline_free
 * before freeing the client. */
cp_pipeline *cp_pipeline_new(cp_client *c);
void cp_pipeline_free(cp_pipeline *p);

/* Forget commands and replies, keep the buffers for reuse. */
void cp_pipeline_reset(cp_pipeline *p);

/* Append one command (hiredis format string, argv, or an already formatted RESP command).
 * Arguments are copied. Return 0 or CP_ENOMEM / CP_EINVAL (an unparsable preformatted command). */
int cp_append(cp_pipeline *p, const char *fmt, ...);
int cp_append_argv(cp_pipeline *p, int argc, const char **argv, const size_t *argvlen);
int cp_append_formatted(cp_pipeline *p, const char *cmd, size_t len);

/* cp_append_argv for a caller that already computed the slot of the command's keys (with
 * cp_keyslot, to group commands by node, say): the library routes by `slot` instead of hashing
 * the keys again. It is trusted, not checked: under a wrong slot the command goes to that slot's
 * node, which answers MOVED (or runs it, when it serves the right slot too), and the command
 * follows the redirect like any other. Commands appended this way are never split. Ignored in
 * single-endpoint mode. Returns as cp_append_argv; CP_EINVAL for a slot above 16383. */
int cp_append_argv_slot(cp_pipeline *p, int argc, const char **argv, const size_t *argvlen,
                        unsigned slot);

/* Set CP_CMD_* flags on command i. Returns 0 or CP_EINVAL. */
int cp_set_flags(cp_pipeline *p, size_t i, unsigned flags);

/* Send every command and wait for every outcome. Blocks, bounded by the client's timeouts and
 * retry budget. Returns 0 when every command ended CP_DONE (error replies included), otherwise
 * CP_EPARTIAL with the pipeline's errstr describing the first failure; outcomes and replies are
 * valid either way. A pipeline can be executed once per reset. */
int cp_exec(cp_pipeline *p);

/* Number of commands appended. */
size_t cp_count(const cp_pipeline *p);

/* Reply to command i, owned by the pipeline until reset or free; NULL when there is none (a
 * command not executed for a client-side reason may still carry a locally made error reply). */
const redisReply *cp_reply(const cp_pipeline *p, size_t i);

/* Reply i as the caller's own copy (the pipeline forgets it): replies live in the pipeline's
 * arena until reset, so this copies the reply tree out. Free with freeReplyObject. NULL when
 * there is no reply, or out of memory. */
redisReply *cp_take_reply(cp_pipeline *p, size_t i);

cp_outcome cp_get_outcome(const cp_pipeline *p, size_t i);

/* When command i (CP_DONE) was first written and when the read carrying its answer completed,
 * CLOCK_MONOTONIC nanoseconds: each command's own latency, never a batch-wide stamp. Redirects
 * and retries are inside the interval. Returns 0, or CP_EINVAL when i is not CP_DONE. */
int cp_timing(const cp_pipeline *p, size_t i, uint64_t *sent_ns, uint64_t *done_ns);

/* The last error of the pipeline (0 / CP_E*) and its description. */
int cp_pipeline_err(const cp_pipeline *p);
const char *cp_pipeline_errstr(const cp_pipeline *p);

/* ---- event-driven execution ------------------------------------------------------------------ *
 *
 * For programs that drive many clients from one event loop (the clusterpipe bench does). cp_exec
 * is exactly this loop over poll(2):
 *
 *     done = cp_exec_start(p);
 *     while (!done) {
 *         wait until one of cp_client_pollfds(c) is ready, or cp_exec_timeout_ms(p) passes;
 *         for each ready fd: done = cp_exec_on_ready(p, fd, revents);
 *         if (!done) done = cp_exec_on_timer(p);
 *     }
 *     rc = cp_exec_result(p);
 *
 * None of these blocks, except that connecting a node not connected yet waits up to the connect
 * timeout. Only one pipeline per client may be executing at a time. */

/* Routes every command and writes what the sockets take. Returns 1 when every command already
 * has an outcome, 0 when events are needed, CP_EINVAL when p was executed since its last reset. */
int cp_exec_start(cp_pipeline *p);

/* Reacts to readiness of one of the client's fds (revents as poll reports them: POLLIN, POLLOUT,
 * POLLHUP, POLLERR; an fd not of this client is ignored). Returns 1 when done, else 0. */
int cp_exec_on_ready(cp_pipeline *p, int fd, short revents);

/* Runs I/O timeouts and retry rounds that are due. Returns 1 when done, else 0. */
int cp_exec_on_timer(cp_pipeline *p);

/* Milliseconds until cp_exec_on_timer has work (0: now), or -1 when no timer is pending. */
int cp_exec_timeout_ms(const cp_pipeline *p);

/* After completion: 0 when every command ended CP_DONE, else CP_EPARTIAL (as cp_exec). */
int cp_exec_result(cp_pipeline *p);

/* The client's open connections: fd, and events POLLIN (always, to notice a close) | POLLOUT
 * (while output is pending). Fills at most max entries and returns how many there are; the set
 * changes when connections open or close, so re-read it after every call above. */
int cp_client_pollfds(cp_client *c, struct pollfd *fds, int max);

/* A counter that changes whenever one of the client's connections opens or closes. An event loop
 * that registered the fds of cp_client_pollfds (epoll) re-reads them when it changed: a closed
 * fd leaves epoll silently, and a reopened connection may get the same number. */
unsigned cp_client_fd_generation(const cp_client *c);

#ifdef __cplusplus
}
#endif

#endif /* CLUSTERPIPE_CLUSTERPIPE_H */
