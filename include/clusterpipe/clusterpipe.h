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
 * Blocking: a client either runs on the caller's event loop (cp_attach, the adapters in
 * clusterpipe/adapters/, or the built-in cp_loop), where no call ever waits, or it is a
 * blocking client from cp_connect, whose cp_exec and cp_command wait for their answers. Each
 * call below says which it is. docs/async.md gives the event-loop contract.
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

/* CP_API marks every function libclusterpipe exports, and nothing else has it: the library is
 * built with -fvisibility=hidden, so libclusterpipe.so exports exactly the functions declared
 * here (the unit/exports test checks it) and its internal cp__ names stay inside it. The mark is
 * the same for the static library (hidden names link within one program as before), for C and
 * C++ consumers alike, and for a consumer built with hidden visibility itself: the declarations
 * stay default-visible, so its calls resolve to the library. */
#if defined(__GNUC__) || defined(__clang__)
#define CP_API __attribute__((visibility("default")))
#else
#define CP_API
#endif

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
    XX(ESERVER, -13, "server error reply")                                                         \
    XX(ELIMIT, -14, "too many commands queued or in flight")                                       \
    XX(ECANCELED, -15, "canceled: the client was freed")

typedef enum cp_errno {
#define CP__ERRNO_ENUM(name, value, msg) CP_##name = (value),
    CP_ERRNO_MAP(CP__ERRNO_ENUM)
#undef CP__ERRNO_ENUM
} cp_errno;

#define CP_ERRSTR_LEN 256

/* Returns a static description of a CP_E* code (never NULL; "unknown error" for other values). */
CP_API const char *cp_strerror(int code);

/* Returns the code's name, e.g. "CP_ETIMEDOUT" (never NULL; "CP_UNKNOWN" for other values). */
CP_API const char *cp_err_name(int code);

/* ---- hash slots ---------------------------------------------------------------------------- */

#define CP_SLOTS 16384

/* CRC16-XMODEM of `key`, or of its hash tag: the bytes between the first '{' and the first '}'
 * after it, when that is non-empty (Redis Cluster spec). Returns 0..16383. */
CP_API unsigned cp_keyslot(const char *key, size_t len);

/* ---- memory ---------------------------------------------------------------------------------- */

/* The functions every allocation of the library goes through: its clients, pipelines, buffers,
 * and the replies it hands out (cp_command, cp_take_reply, cp_reply_dup, cp_scan_next). libc's
 * until set. OpenSSL and c-ares (the resolver of host names) allocate with their own. */
typedef struct cp_allocators {
    void *(*malloc_fn)(size_t size);
    void *(*calloc_fn)(size_t nmemb, size_t size);
    void *(*realloc_fn)(void *ptr, size_t size);
    void (*free_fn)(void *ptr);
} cp_allocators;

/* Sets the allocator functions (a NULL: back to libc's), the previous ones written to *old when
 * old is not NULL. Process-wide, like hiredis's hiredisSetAllocators: call it before any client
 * exists and while no library call runs, and free what the library handed out under one set of
 * functions before setting another. 0, or CP_EINVAL when a field is NULL (nothing changes). */
CP_API int cp_set_allocators(const cp_allocators *a, cp_allocators *old);

/* Frees a reply the library handed out (cp_command, cp_take_reply, cp_reply_dup, cp_scan_next's
 * keys), with the library's free function. freeReplyObject frees it too only while neither
 * library's allocators were changed. NULL is ignored. */
CP_API void cp_reply_free(redisReply *r);

/* ---- replies: the types RESP3 adds, and their values (clusterpipe/reply.h) ----------------- */

#include "clusterpipe/reply.h"

/* A double's, integer's or boolean's value, or a number in text (RESP2's ZSCORE); else NAN. */
CP_API double cp_reply_double(const redisReply *r);

/* A verbatim string's format ("txt") into out with a NUL: 0, or CP_EINVAL for other types. */
CP_API int cp_reply_verbatim_format(const redisReply *r, char out[4]);

/* ---- client ---------------------------------------------------------------------------------- */

/* Options for cp_connect and cp_client_new. Zero means the default in every field, so
 * `cp_options o = {0};` (or CP_OPTIONS_INIT, the same) and setting what you need is always
 * right. A field that can mean "none" (no timeout, no retries, no limit) takes its negative
 * constant below for it; a negative value in a field that has no "none" is refused (CP_EINVAL).
 * Strings are copied; the struct can be discarded afterwards. */
#define CP_DEFAULT_CONNECT_TIMEOUT_MS 2000
#define CP_DEFAULT_IO_TIMEOUT_MS 5000
#define CP_DEFAULT_MAX_REDIRECTS 16
#define CP_DEFAULT_RETRY_BUDGET_MS 3000
#define CP_DEFAULT_MAX_PENDING 65536
#define CP_DEFAULT_BLOCKING_CONNS 8
#define CP_MAX_REDIRECTS 255

/* "None", where a field has it: CP_TIMEOUT_NONE in connect_timeout_ms and io_timeout_ms, no
 * timeout (in effect the longest an int holds, INT_MAX ms: 24.8 days); CP_RETRY_NONE in
 * retry_budget_ms, no retries (every error surfaces at once); CP_PENDING_UNLIMITED in
 * max_pending, no limit. */
#define CP_TIMEOUT_NONE (-1)
#define CP_RETRY_NONE (-1)
#define CP_PENDING_UNLIMITED (-1)

typedef struct cp_options {
    const char *seeds;      /* cluster mode: "host:port[,host:port...]" */
    const char *endpoint;   /* single-endpoint mode (twemproxy, plain redis): "host:port" */
    const char *username;   /* ACL user (NULL: AUTH with password only) */
    const char *password;   /* NULL: no AUTH */
    int connect_timeout_ms; /* per connection attempt, TLS handshake included. 0: the default,
                               CP_DEFAULT_CONNECT_TIMEOUT_MS (2000); CP_TIMEOUT_NONE (any
                               negative): none, an attempt lasts as long as the kernel's
                               connect does (a TLS handshake with a silent peer: unbounded) */
    int io_timeout_ms;      /* no progress on a connection with requests in flight for this long
                               closes it and ends its commands CP_UNKNOWN. 0: the default,
                               CP_DEFAULT_IO_TIMEOUT_MS (5000); CP_TIMEOUT_NONE (any negative):
                               none, a silent node holds its commands until its connection
                               breaks (for blocking commands, long scripts) */
    int max_redirects;      /* MOVED/ASK hops allowed per command, 1 to CP_MAX_REDIRECTS (255).
                               0: the default, CP_DEFAULT_MAX_REDIRECTS (16). No "none": the first
                               hop is always followed, later ones only within the retry budget;
                               negative or above the maximum: CP_EINVAL */
    int retry_budget_ms;    /* per batch (cp_exec, a loop turn's async commands): time allowed
                               for TRYAGAIN/CLUSTERDOWN/LOADING and reconnect retries with backoff
                               before a command is given up. 0: the default,
                               CP_DEFAULT_RETRY_BUDGET_MS (3000); CP_RETRY_NONE (any negative):
                               no retries (0 used to mean none: docs/api.md, "Changes") */
    unsigned flags;         /* CP_OPT_*; 0: none */
    /* TLS (Redis tls-port, tls-cluster yes): set tls = 1. The server's certificate is verified
     * against tls_ca_file (NULL: the system's CAs) and the host dialled (IP SAN or DNS name;
     * tls_server_name below names another), unless tls_insecure. A client certificate is sent when
     * tls_cert_file is set. */
    int tls; /* 0: plain TCP */
    const char *tls_ca_file;
    const char *tls_cert_file;
    const char *tls_key_file; /* NULL: the key is in tls_cert_file */
    int tls_insecure;         /* 0: verify */
    /* Commands queued or in flight at once on an event-loop client (async commands and
     * cp_exec_async pipelines); past it they are refused with CP_ELIMIT. 0: the default,
     * CP_DEFAULT_MAX_PENDING (65536); CP_PENDING_UNLIMITED (any negative): no limit. */
    int max_pending;
    /* Cluster mode: the server's command table (COMMAND, read once per client, about 100 KB)
     * is shared with this client, which then does not read its own. For a process with many
     * clients of one cluster. The table is immutable and reference counted: the other client
     * may be freed at any time, from any thread, but must be idle while this one is created.
     * NULL: read it. */
    const struct cp_client *commands_from;
    /* Cluster mode: where read-only commands go (CP_READ_*; docs/commands.md, "Replica
     * reads"). Anything but CP_READ_MASTER sends READONLY on every connection, right behind
     * AUTH. Ignored in single-endpoint mode. 0: CP_READ_MASTER. */
    int read_from;
    /* Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP,
     * XREAD and XREADGROUP with BLOCK) run on connections of their own, one command at a time
     * each, so that a command waiting on the server holds back no other: at most this many per
     * node, opened as needed and kept for reuse; past it they wait for one, in order. 0: the
     * default, CP_DEFAULT_BLOCKING_CONNS (8). No "none": negative is refused (CP_EINVAL).
     * docs/commands.md, "Blocking commands". */
    int blocking_conns;
    /* The protocol every connection speaks: 2 (RESP2) or 3 (RESP3: each connection starts with
     * HELLO 3, carrying the AUTH; a server that refuses it fails the connection with CP_EPROTO
     * and a message saying so). Replies then have RESP3's types (see "replies" above), and
     * the server may push frames unasked: cp_set_push_callback. 0: the default, 2. */
    int protocol;
    /* Host names (in seeds, endpoint, a slot map or a redirect) are resolved without blocking,
     * by c-ares on the client's loop, within the connect timeout (which counts from the start
     * of the resolution); numeric addresses are used as they are. prefer_ip orders the
     * addresses of a name that has both families (CP_PREFER_IP_*; each address is tried in
     * turn until one accepts). 0: CP_PREFER_IP_ANY, the resolver's order. */
    int prefer_ip;
    /* The DNS servers to ask, "ip[:port][,ip[:port]...]" (IPv6 as "[::1]:53"). NULL: the
     * system's (/etc/resolv.conf). The hosts file is read first either way. */
    const char *dns_servers;
    /* TLS: the name the server's certificate is verified against and sent as SNI, instead of
     * the host dialled (for a node announced by IP whose certificate names a DNS name). NULL:
     * the host dialled. */
    const char *tls_server_name;
    /* The client-side cache (clusterpipe/cache.h; cluster mode, either protocol), copied.
     * NULL: none. */
    const struct cp_cache_options *client_cache;
} cp_options;

/* prefer_ip: which family of a host name's addresses is tried first. The other family is still
 * tried when every preferred address refuses. */
typedef enum cp_prefer_ip {
    CP_PREFER_IP_ANY = 0, /* the resolver's order (the hosts file's, the DNS answer's) */
    CP_PREFER_IPV4,       /* IPv4 addresses first */
    CP_PREFER_IPV6        /* IPv6 addresses first */
} cp_prefer_ip;

/* read_from. Replicas may answer with data older than their master's, also older than this
 * client's own earlier writes; a pipeline's order per key holds only for reads on the master. */
typedef enum cp_read_from {
    CP_READ_MASTER = 0,       /* every command on the slot's master (the default) */
    CP_READ_REPLICA,          /* reads only on the slot's replicas: one that fails is replaced
                                 by another of the shard; with none left a read waits for one
                                 within the retry budget, then ends CP_NOT_EXECUTED
                                 (CP_ETOPOLOGY); never routed to the master (a MOVED is
                                 followed to the master it names) */
    CP_READ_REPLICA_PREFERRED /* reads on a replica while the shard has a usable one, else on
                                 the master; a read that fails on a replica goes to the master */
} cp_read_from;

/* Split MGET/MSET/DEL/EXISTS/UNLINK/TOUCH whose keys span slots into one sub-command per slot and
 * reassemble one reply. NOT atomic: part may run and part may not (see docs/pipeline.md). */
#define CP_OPT_SPLIT_MULTIKEY 0x1u

/* Every field zero, which is every field's default: the same as `cp_options o = {0};` ({} in
 * C++, where {0} warns under -Wextra). */
#ifdef __cplusplus
#define CP_OPTIONS_INIT                                                                            \
    {}
#else
#define CP_OPTIONS_INIT                                                                            \
    { 0 }
#endif

/* The public part of a client; the library allocates a larger private struct around it. */
typedef struct cp_client {
    int err;                    /* last CP_E* code, 0 if none */
    char errstr[CP_ERRSTR_LEN]; /* description of err */
} cp_client;

/* A blocking client: connects to the seeds (cluster mode: the first node or seed that answers
 * gives the slot map) or to the endpoint, and waits for it. Blocks up to the connect and I/O
 * timeouts per address tried. Returns a client that the caller frees with cp_free, or NULL only
 * when out of memory; on failure c->err is set and the client can only be freed. Its cp_exec and
 * cp_command block; it can be handed to an event loop later with cp_attach. */
CP_API cp_client *cp_connect(const cp_options *opt);

/* An event-loop client: checks the options and does no I/O (never blocks). Connections and the
 * slot map come once it is attached to a loop (cp_attach); commands sent before the map arrives
 * wait for it within the retry budget. NULL only when out of memory; bad options set c->err. */
CP_API cp_client *cp_client_new(const cp_options *opt);

/* Closes every connection and frees the client. Commands still queued or in flight end first:
 * each async callback is called once (outcome CP_NOT_EXECUTED or CP_UNKNOWN, err
 * CP_ECANCELED), as is each running cp_exec_async pipeline's. Pipelines made from the client
 * must be freed before it. Called from inside a callback, the free happens when the library
 * returns to the loop. Never blocks. */
CP_API void cp_free(cp_client *c);

/* 1 when connected in cluster mode, 0 in single-endpoint mode. */
CP_API int cp_is_cluster(const cp_client *c);

/* The keys of a command as c routes it (c NULL: the built-in table): at[i] is key i's argv index
 * (max written). Returns the key count, or CP_EINVAL for argc < 1. docs/api.md. */
CP_API int cp_command_keys(const cp_client *c, int argc, const char **argv, const size_t *argvlen,
                           int *at, int max);

/* Re-reads the slot map from any known node, then from the seeds. Blocks (a blocking client
 * only; CP_EINVAL on an event-loop client, which refreshes by itself). Returns 0 or CP_E*. */
CP_API int cp_refresh(cp_client *c);

/* Commands queued or in flight (async commands and commands of running pipelines); a
 * cp_scan_next_async call under way counts one. Never blocks. */
CP_API size_t cp_pending(const cp_client *c);

/* ---- push frames, scripts, events, the client-side cache: headers of their own -------------- */

#include "clusterpipe/push.h"
#include "clusterpipe/script.h"
#include "clusterpipe/event.h"
#include "clusterpipe/cache.h"

/* ---- nodes ----------------------------------------------------------------------------------- */

/* The nodes a client knows: every master and replica of its last slot map, and its seeds. A node
 * index is an int from 0 to cp_node_count() - 1, stable for the client's life (nodes are added,
 * never removed); -1 means none, and a call given a negative index refuses it as no such node.
 * Read-only; never blocks. */
#define CP_NODE_HOSTLEN 256
typedef enum cp_node_role {
    CP_NODE_MASTER = 0,
    CP_NODE_REPLICA,
    CP_NODE_OTHER /* a seed, or a node the last map no longer names */
} cp_node_role;

typedef struct cp_node_info {
    char host[CP_NODE_HOSTLEN];
    int port;
    cp_node_role role; /* per the last slot map */
    int master;        /* a replica's master (a node index), else -1 */
    int nslots;        /* slots it serves per the last map */
} cp_node_info;

CP_API int cp_node_count(const cp_client *c);
/* Node i. 0, or CP_EINVAL when there is no such node. */
CP_API int cp_node_get(const cp_client *c, int i, cp_node_info *out);
/* The slot ranges node i serves, as [first, last] pairs: up to max of them are written; returns
 * how many there are (0 for a replica), or CP_EINVAL. */
CP_API int cp_node_slots(const cp_client *c, int i, int (*ranges)[2], int max);

/* cp_command to one chosen node (by index), whatever the command's keys: no redirect is
 * followed and nothing is retried. NULL with c->err set on failure (CP_EINVAL: no such node). */
CP_API redisReply *cp_command_node(cp_client *c, int node, const char *fmt, ...);

/* cp_command to every master at once, the answers combined: DBSIZE summed, KEYS concatenated,
 * FLUSHALL / FLUSHDB / SCRIPT FLUSH / FUNCTION FLUSH|DELETE|RESTORE +OK when every master said
 * OK (else the first error), SCRIPT LOAD / FUNCTION LOAD the answer every master gave; any other
 * command an array of the masters' replies, in node order (INFO, CONFIG SET, PING ...). Those
 * named go to every master by themselves too, in cp_command, pipelines and async commands
 * (docs/commands.md). Blocks like cp_command. */
CP_API redisReply *cp_command_all(cp_client *c, const char *fmt, ...);

/* Runs one command and waits for its answer, following MOVED/ASK and retrying as a pipeline does
 * (it is a pipeline of one). Blocks: a blocking client only (an event-loop client gets NULL
 * with c->err CP_EINVAL). Returns the reply, which the caller frees with cp_reply_free, or
 * NULL with c->err set when the command did not end CP_DONE. An error reply from the server is
 * returned as a reply (type REDIS_REPLY_ERROR), not as NULL. */
CP_API redisReply *cp_command(cp_client *c, const char *fmt, ...);
CP_API redisReply *cp_command_argv(cp_client *c, int argc, const char **argv,
                                   const size_t *argvlen);

/* ---- cluster SCAN ---------------------------------------------------------------------------- *
 *
 * Every key of the cluster, in batches: SCAN on every master, with Redis's SCAN guarantee for
 * the whole cluster while slots migrate: a key present from the first call for a batch to the
 * last is returned at least once. A key may come more than once (drop repeats yourself), and a
 * key added or deleted meanwhile may or may not come. Slots that moved, or may have, during
 * their master's walk are listed again slot by slot at the masters serving them now (CLUSTER
 * GETKEYSINSLOT, MATCH and TYPE applied by the client). docs/commands.md, "Cluster SCAN", says
 * what holds and what does not (failover, interrupted resharding) and what it costs. A blocking
 * client asks for each batch with cp_scan_next, which waits; an event-loop client with
 * cp_scan_next_async, which never waits. */
typedef struct cp_scan cp_scan;

/* A new scan of the client's cluster (or of its endpoint, in single-endpoint mode: SCAN there,
 * Redis's own guarantee), on a blocking or an event-loop client. match: a glob pattern (NULL:
 * every key); count: SCAN's COUNT hint (<= 0: the server's default); type: SCAN's TYPE, e.g.
 * "hash" (NULL: any). Strings are copied. Does no I/O (never blocks). NULL when c is NULL or
 * out of memory (c->err CP_ENOMEM). Free with cp_scan_free, before the client. */
CP_API cp_scan *cp_scan_new(cp_client *c, const char *match, long count, const char *type);

/* The next batch, on a blocking client: blocks for one round trip or more (a SCAN to one master,
 * or the listing of some slots), bounded by the client's timeouts, and while a slot to list
 * again is still migrating by its retry budget (it pauses 1 to 64 ms between tries). Returns 1
 * with *keys a non-empty array reply of key strings (the caller frees it with cp_reply_free),
 * 0 when the scan is complete (*keys NULL), or a negative CP_E* code with c->err / c->errstr
 * set: a master that does not answer (CP_ETIMEDOUT, CP_ECONNECT, ...) or refuses a command
 * (CP_ESERVER) ends the call, never the scan short; calling again retries the step that failed.
 * CP_ETIMEDOUT also when a slot could not be listed whole for the retry budget (it stayed
 * half-migrated while its nodes kept migrating keys, or they disagree who serves it).
 * CP_EINVAL for a NULL keys, or on an event-loop client (use cp_scan_next_async). */
CP_API int cp_scan_next(cp_scan *s, redisReply **keys);

/* The answer to cp_scan_next_async, called once, from the loop's calls (cp_on_ready,
 * cp_on_timer) or from cp_free, never inside cp_scan_next_async itself. rc and keys mean what
 * cp_scan_next's return and *keys mean: 1 with keys a non-empty array the callback owns
 * (cp_reply_free), 0 when the scan is complete (keys NULL), a negative CP_E* with c->err /
 * c->errstr set (keys NULL; calling again retries the step that failed; also CP_ELIMIT when a
 * step's pipeline, up to about 1,100 commands, would pass max_pending: docs/commands.md);
 * CP_ECANCELED when the client is being freed (cp_free): the scan then takes only cp_scan_free,
 * which is safe also once cp_free has returned. The callback may call cp_scan_next_async again,
 * cp_scan_free, and cp_free. */
typedef void cp_scan_callback(cp_scan *s, int rc, redisReply *keys, void *privdata);

/* The next batch, on an event-loop client: never blocks. The step's commands go out as
 * cp_exec_async pipelines, the pause between listings of a slot still migrating waits for the
 * client's timer, and the slot map is re-read in-band; a stopped master costs its I/O timeout,
 * and holds back nothing else on the client. One call at a time per scan: it counts as one in
 * cp_pending until its callback, so cp_loop_run waits for it. Returns 0 (the callback will be
 * called once), or CP_EINVAL (cb NULL, a call of this scan under way, a blocking client or one
 * not on a loop, the client being freed); then it is never called. cp_scan_free with a call
 * under way ends it without its callback (its pipeline finishes on its own, as a freed running
 * pipeline does). */
CP_API int cp_scan_next_async(cp_scan *s, cp_scan_callback *cb, void *privdata);

/* What the scan did so far. Never blocks. */
typedef struct cp_scan_stats {
    uint64_t keys;         /* keys returned, repeats included */
    uint64_t scan_calls;   /* SCAN commands answered */
    uint64_t slots_reread; /* slots listed again, key by key, because they moved or might have */
    uint64_t keys_reread;  /* keys returned by those listings */
} cp_scan_stats;
CP_API void cp_scan_get_stats(const cp_scan *s, cp_scan_stats *out);

/* Frees the scan (NULL is fine), also from its callback or with a cp_scan_next_async call under
 * way (which then ends without its callback). Never blocks. */
CP_API void cp_scan_free(cp_scan *s);

/* Counters since cp_connect; the bench reads them to report redirects and retries. */
typedef struct cp_stats {
    uint64_t moved, ask, tryagain, clusterdown, loading, io_retries, refreshes;
    uint64_t command_tables; /* the server's COMMAND read (1: its key specs route commands) */
    uint64_t pushes;         /* push frames received on command connections (RESP3) */
    uint64_t resolved;       /* host names resolved to addresses (numeric addresses do not count) */
} cp_stats;
CP_API void cp_get_stats(const cp_client *c, cp_stats *out);

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
CP_API cp_pipeline *cp_pipeline_new(cp_client *c);
CP_API void cp_pipeline_free(cp_pipeline *p);

/* Forget commands and replies, keep the buffers for reuse. */
CP_API void cp_pipeline_reset(cp_pipeline *p);

/* Append one command (hiredis format string, argv, or an already formatted RESP command).
 * Arguments are copied. Return 0 or CP_ENOMEM / CP_EINVAL (an unparsable preformatted command). */
CP_API int cp_append(cp_pipeline *p, const char *fmt, ...);
CP_API int cp_append_argv(cp_pipeline *p, int argc, const char **argv, const size_t *argvlen);
CP_API int cp_append_formatted(cp_pipeline *p, const char *cmd, size_t len);

/* Append to every master (combined as cp_command_all says), or to one chosen node (no redirect,
 * no retry). 0, CP_ENOMEM, CP_EINVAL (no such node, a bad format, after exec). In a transaction
 * (after MULTI) both append as cp_append does: the unit goes to one node. */
CP_API int cp_append_all(cp_pipeline *p, const char *fmt, ...);
CP_API int cp_append_node(cp_pipeline *p, int node, const char *fmt, ...);

/* cp_append_argv for a caller that already computed the slot of the command's keys (with
 * cp_keyslot, to group commands by node, say): the library routes by `slot` instead of hashing
 * the keys again. It is trusted, not checked: under a wrong slot the command goes to that slot's
 * node, which answers MOVED (or runs it, when it serves the right slot too), and the command
 * follows the redirect like any other. Commands appended this way are never split. Ignored in
 * single-endpoint mode. Returns as cp_append_argv; CP_EINVAL for a slot above 16383. */
CP_API int cp_append_argv_slot(cp_pipeline *p, int argc, const char **argv, const size_t *argvlen,
                               unsigned slot);

/* Set CP_CMD_* flags on command i. Returns 0 or CP_EINVAL. */
CP_API int cp_set_flags(cp_pipeline *p, size_t i, unsigned flags);

/* Send every command and wait for every outcome. Blocks, bounded by the client's timeouts and
 * retry budget (a blocking client only: CP_EINVAL on an event-loop client). Returns 0 when every
 * command ended CP_DONE (error replies included), otherwise CP_EPARTIAL with the pipeline's errstr
 * describing the first failure; outcomes and replies are valid either way. A pipeline can be
 * executed once per reset. */
CP_API int cp_exec(cp_pipeline *p);

/* Number of commands appended. */
CP_API size_t cp_count(const cp_pipeline *p);

/* Reply to command i, owned by the pipeline until reset or free; NULL when there is none (a
 * command not executed for a client-side reason may still carry a locally made error reply). */
CP_API const redisReply *cp_reply(const cp_pipeline *p, size_t i);

/* Reply i as the caller's own copy (the pipeline forgets it): replies live in the pipeline's
 * arena until reset, so this copies the reply tree out. Free with cp_reply_free. NULL when
 * there is no reply, or out of memory. */
CP_API redisReply *cp_take_reply(cp_pipeline *p, size_t i);

CP_API cp_outcome cp_get_outcome(const cp_pipeline *p, size_t i);

/* When command i (CP_DONE) was first written and when the read carrying its answer completed,
 * CLOCK_MONOTONIC nanoseconds: each command's own latency, never a batch-wide stamp. Redirects
 * and retries are inside the interval. Returns 0, or CP_EINVAL when i is not CP_DONE. */
CP_API int cp_timing(const cp_pipeline *p, size_t i, uint64_t *sent_ns, uint64_t *done_ns);

/* The last error of the pipeline (0 / CP_E*) and its description. */
CP_API int cp_pipeline_err(const cp_pipeline *p);
CP_API const char *cp_pipeline_errstr(const cp_pipeline *p);

/* ---- event loops ---------------------------------------------------------------------------- *
 *
 * A client runs on any event loop through seven hooks. The library tells the loop what it wants,
 * as it changes (read or write interest per connection, one timer per client); the loop calls
 * cp_on_ready / cp_on_timer back. No call in this section, nor any async call, ever blocks:
 * connecting is non-blocking (the connect timeout is the timer), AUTH goes out as soon as the
 * socket connects, and the slot map is re-read in-band (one more command on a healthy
 * connection). A host name is resolved on the loop too (c-ares; its sockets come through the
 * same hooks as the connections' fds); numeric addresses are never resolved.
 * Ready-made hooks: clusterpipe/adapters/{libevent,libev,libuv}.h and cp_loop below. */

#define CP_EV_READ 0x1
#define CP_EV_WRITE 0x2

/* `loop` is the pointer given to cp_attach. `fd_data` is a slot per connection, NULL when it
 * first appears, for the adapter's own state (its event object); cleanup is the last call for
 * it: the fd is closed right after, so drop every registration and free what the slot holds.
 * set_timer (re)arms the client's one timer: fire once after `ms` milliseconds (0: as soon as
 * possible); -1 disarms it. A timer that fires early does no harm. detach is the last call for
 * the client on this loop (cp_free, or cp_attach to another loop), after every fd's cleanup:
 * drop its timer and free what the loop keeps for it. It may come from inside a callback of
 * the client (cp_free there takes effect as the loop's call returns); it may be NULL. */
typedef struct cp_event_ops {
    void (*add_read)(void *loop, cp_client *c, int fd, void **fd_data);
    void (*del_read)(void *loop, cp_client *c, int fd, void **fd_data);
    void (*add_write)(void *loop, cp_client *c, int fd, void **fd_data);
    void (*del_write)(void *loop, cp_client *c, int fd, void **fd_data);
    void (*cleanup)(void *loop, cp_client *c, int fd, void **fd_data);
    void (*set_timer)(void *loop, cp_client *c, long ms);
    void (*detach)(void *loop, cp_client *c);
} cp_event_ops;

/* Puts the client on a loop (or moves it from the one it was on: every registration is
 * cleaned up there first and made again here). `ops` must outlive the attachment. An
 * unconnected cluster client starts reading its slot map. Returns 0 or CP_EINVAL (ops NULL, or
 * called from inside a callback). */
CP_API int cp_attach(cp_client *c, const cp_event_ops *ops, void *loop);

/* The loop reports readiness (CP_EV_READ | CP_EV_WRITE; an error or hang-up is CP_EV_READ) on
 * one of the client's fds, or its timer firing. Callbacks run inside these calls. */
CP_API void cp_on_ready(cp_client *c, int fd, int events);
CP_API void cp_on_timer(cp_client *c);

/* ---- async commands ------------------------------------------------------------------------ */

/* What happened to one async command, given to its callback. `reply` lives until the callback
 * returns (copy it with cp_reply_dup to keep it); NULL when the server never answered. */
typedef struct cp_response {
    cp_outcome outcome;        /* CP_DONE, CP_NOT_EXECUTED or CP_UNKNOWN, as for pipelines */
    const redisReply *reply;   /* the answer (may be an error reply), or NULL */
    int err;                   /* when not CP_DONE: the CP_E* reason */
    const char *errstr;        /* ... and its description ("" when CP_DONE) */
    uint64_t sent_ns, done_ns; /* CLOCK_MONOTONIC: first write, and the read with the answer */
    int cached;                /* answered by the client-side cache (sent_ns == done_ns) */
} cp_response;

/* Called exactly once per command accepted, from cp_on_ready / cp_on_timer (or cp_free). It may
 * send new commands. */
typedef void cp_callback(cp_client *c, const cp_response *r, void *privdata);

/* Sends one command: routed by its keys' slot, following MOVED/ASK and retrying exactly as a
 * pipeline does, with the retry budget of the turn it is sent in (counted from the turn's first
 * command: the commands of one loop turn share a batch). Commands are in flight at once on every
 * node; bytes sent from callbacks and between loop turns go out in one write per node per turn;
 * commands for one key keep their order, also across redirects. An event-loop client only.
 * Returns 0 (the callback will be called), CP_ELIMIT (max_pending commands are queued or in
 * flight), CP_EINVAL (not attached, bad format), CP_ECROSSSLOT (keys of a command that cannot
 * be split span slots) or CP_ENOMEM; then the callback is never called. */
CP_API int cp_async_command(cp_client *c, cp_callback *cb, void *privdata, const char *fmt, ...);
CP_API int cp_async_command_argv(cp_client *c, cp_callback *cb, void *privdata, unsigned flags,
                                 int argc, const char **argv, const size_t *argvlen);

/* cp_async_command to every master, the answers combined as cp_command_all says (refused with
 * CP_ETOPOLOGY before the client's first map), or to one chosen node (CP_EINVAL: no such node),
 * whatever the keys. The callback is called once, as for any async command. */
CP_API int cp_async_command_all(cp_client *c, cp_callback *cb, void *privdata, const char *fmt,
                                ...);
CP_API int cp_async_command_node(cp_client *c, int node, cp_callback *cb, void *privdata,
                                 const char *fmt, ...);

/* A deep copy of a reply for the caller to keep (cp_reply_free). NULL on OOM or for NULL. */
CP_API redisReply *cp_reply_dup(const redisReply *r);

/* Runs pipeline p on an event-loop client without waiting: every command goes out now, each
 * gets its outcome as its node answers, and `done` is called once, after the last one (outcomes,
 * replies and cp_timing are then valid, as after cp_exec). Any number of pipelines of one client
 * may run at once, and async commands with them. Freeing a running pipeline detaches it: it
 * finishes on its own, without calling `done`. Returns 0, or CP_EINVAL (not an event-loop client,
 * or p ran since its last reset), CP_ELIMIT (its commands would pass max_pending), CP_ENOMEM;
 * then `done` is never called. */
typedef void cp_exec_callback(cp_pipeline *p, void *privdata);
CP_API int cp_exec_async(cp_pipeline *p, cp_exec_callback *done, void *privdata);

/* 1 while p runs (between cp_exec_async and its callback), else 0. */
CP_API int cp_running(const cp_pipeline *p);

/* ---- pub/sub ---------------------------------------------------------------------------------- *
 *
 * Subscriptions run on connections of their own (a subscribed connection answers nothing but
 * pub/sub frames), which the library opens, watches and re-opens itself: the command
 * connections never change mode, and SUBSCRIBE and its kin sent as commands are refused. An
 * event-loop client only. Pub/sub is at-most-once: a message published while a subscription is
 * being re-established is gone, and the CP_SUB_RESUBSCRIBED event says when that may have
 * happened. PUBLISH and SPUBLISH are ordinary commands. docs/async.md, "Pub/sub". */

typedef enum cp_sub_kind {
    CP_SUB_CHANNEL = 0, /* SUBSCRIBE: a channel, on one connection to any master (a cluster
                           delivers every PUBLISH to every node) */
    CP_SUB_PATTERN,     /* PSUBSCRIBE: a glob pattern, the same way */
    CP_SUB_SHARD        /* SSUBSCRIBE: a shard channel, at the master serving its slot
                           (SPUBLISH); followed there when the slot moves or fails over */
} cp_sub_kind;

typedef enum cp_sub_event {
    CP_SUB_MESSAGE = 0,  /* a message: channel and payload */
    CP_SUB_SUBSCRIBED,   /* the server confirmed the subscription, the first time */
    CP_SUB_RESUBSCRIBED, /* confirmed again after it was lost (its connection broke, its master
                            failed over, its slot moved): messages in between may be gone */
    CP_SUB_ENDED         /* its last event: cp_unsubscribe was confirmed (err 0), the server
                            refused it (CP_ESERVER, errstr its answer), or the client is being
                            freed (CP_ECANCELED); the subscription is gone after the callback */
} cp_sub_event;

/* What a subscription's callback gets; the strings live until it returns (not NUL-terminated:
 * use the lengths). */
typedef struct cp_sub_msg {
    cp_sub_event event;
    cp_sub_kind kind;
    const char *name; /* the subscription's channel or pattern */
    size_t name_len;
    const char *channel; /* CP_SUB_MESSAGE: the channel it was published on (a pattern's match) */
    size_t channel_len;
    const char *payload; /* CP_SUB_MESSAGE: the message */
    size_t payload_len;
    int err;            /* CP_SUB_ENDED: 0, or why */
    const char *errstr; /* ... and its description ("" when none) */
    int node;           /* the node whose connection carried it (cp_node_get), -1: none */
} cp_sub_msg;

/* Called from the loop's calls (cp_on_ready, cp_on_timer) and from cp_free, never inside
 * cp_subscribe or cp_unsubscribe. It may subscribe, unsubscribe, send commands and call
 * cp_free. */
typedef void cp_sub_callback(cp_client *c, const cp_sub_msg *m, void *privdata);

/* Subscribes to a channel, pattern or shard channel (name: len bytes, copied), each message and
 * event going to cb. Never blocks: the connection opens and the SUBSCRIBE goes out from the
 * loop. Returns 0 (cb will be called, at least CP_SUB_ENDED once), or CP_EINVAL (not an
 * event-loop client, cb NULL, an unknown kind, already subscribed to that name and kind, the
 * client being freed), CP_ENOMEM; then cb is never called. Subscriptions do not count in
 * cp_pending (cp_loop_run does not wait for them). */
CP_API int cp_subscribe(cp_client *c, cp_sub_kind kind, const char *name, size_t len,
                        cp_sub_callback *cb, void *privdata);

/* Ends a subscription: UNSUBSCRIBE (or PUNSUBSCRIBE, SUNSUBSCRIBE) goes out, and its callback
 * gets CP_SUB_ENDED once the server confirms (or at once, from the loop, when its connection is
 * down). Messages may still come before that. 0, or CP_EINVAL (no such subscription, or it is
 * already ending). Never blocks. */
CP_API int cp_unsubscribe(cp_client *c, cp_sub_kind kind, const char *name, size_t len);

/* ---- the built-in loop ----------------------------------------------------------------------- *
 *
 * poll(2) over any number of clients, for programs that have no loop of their own. */

typedef struct cp_loop cp_loop;

CP_API cp_loop *cp_loop_new(void); /* NULL when out of memory */

/* Frees the loop. Clients on it must be freed (or attached elsewhere) first. */
CP_API void cp_loop_free(cp_loop *l);

/* cp_attach with the loop's hooks. */
CP_API int cp_loop_attach(cp_loop *l, cp_client *c);

/* Waits up to timeout_ms (-1: until something happens) for readiness or a timer, then runs
 * what is ready. Returns the number of events handled (0: the wait timed out), or CP_EIO with
 * errno set when poll(2) fails for a reason that waiting cannot fix. */
CP_API int cp_loop_run_once(cp_loop *l, int timeout_ms);

/* Runs until no client on the loop has anything pending (cp_pending: commands, a cluster SCAN
 * call). Returns 0 or as cp_loop_run_once. */
CP_API int cp_loop_run(cp_loop *l);

#ifdef __cplusplus
}
#endif

#endif /* CLUSTERPIPE_CLUSTERPIPE_H */
