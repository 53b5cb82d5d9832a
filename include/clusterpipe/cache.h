/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The client-side cache; included by clusterpipe/clusterpipe.h (which defines CP_API, cp_client and
 * redisReply before it), not on its own.
 *
 * Opt-in: cp_options.client_cache points at these options (cluster mode only: at a single
 * endpoint the client is refused with CP_EINVAL). Under RESP3 each command connection then starts
 * with CLIENT TRACKING ON behind its HELLO 3; under RESP2 it is redirected (CLIENT TRACKING ON
 * REDIRECT) to a connection of its own per node subscribed to the invalidations, from when that
 * connection is up (docs/api.md). The reads of docs/commands.md's
 * "Client-side cache" list (GET, MGET and its per-slot parts, EXISTS, HGET, HMGET, HGETALL, ...)
 * are answered from the cache when it holds their exact request, without a round trip. The
 * servers' invalidations evict what they name. Entries a node served are dropped, before
 * any read is answered again, when its connection breaks or one of its slots moves (invalidations
 * may have been lost); this client's own writes drop their slot's entries when they are sent.
 * Transactions' reads, reads sent to replicas (read_from) and redirected reads never go in.
 * docs/api.md, "Client-side cache", says exactly what a read may and may not see.
 */
#ifndef CLUSTERPIPE_CACHE_PUBLIC_H
#define CLUSTERPIPE_CACHE_PUBLIC_H

typedef struct cp_cache_options {
    size_t max_entries; /* entries held at most; 0: CP_DEFAULT_CACHE_ENTRIES */
    size_t max_bytes;   /* bytes held at most (requests, replies, bookkeeping); 0: the default */
    /* A node not heard from for this long (no byte read from its connection) has its reads sent
     * to it instead of answered from its entries: a node that went silent without closing its
     * connection (a partition) may be missing invalidations, and the read shows whether it
     * still answers. It bounds how long an entry can be served after its invalidation was
     * lost. 0: CP_DEFAULT_CACHE_SILENCE_MS. */
    int max_silence_ms;
} cp_cache_options;

#define CP_DEFAULT_CACHE_ENTRIES 100000
#define CP_DEFAULT_CACHE_BYTES (64u << 20)
#define CP_DEFAULT_CACHE_SILENCE_MS 1000

/* Counters since the client was made, and what the cache holds now. */
typedef struct cp_cache_stats {
    uint64_t hits, misses;       /* cacheable reads answered here, and sent to a server */
    uint64_t stored, not_stored; /* misses whose replies went in, and did not (an error, a redirect,
                                    a change of their slot or node while they were out) */
    uint64_t invalidations;      /* keys named by the servers' invalidation pushes (a flush: 1) */
    uint64_t dropped;            /* entries dropped by invalidations, writes, lost connections
                                    and slot moves */
    uint64_t node_drops;         /* closed connections that took a node's entries with them */
    uint64_t evictions;          /* entries dropped to stay inside the bounds (LRU) */
    size_t entries, bytes;
    /* Nodes whose command connections track their reads now: the nodes whose entries may
     * answer. Under RESP3 a ready connection is; under RESP2 once its tracking link is up and
     * its REDIRECT confirmed, a round trip or two after the connection opens. */
    size_t tracked_nodes;
} cp_cache_stats;

/* 1 when command i of a finished pipeline was answered by the cache (a split MGET: every part
 * was), else 0. Its cp_timing then gives sent_ns == done_ns. An async command's cp_response
 * says the same in its cached field. */
CP_API int cp_reply_cached(const struct cp_pipeline *p, size_t i);

/* Zeros when the client has no cache. Never blocks. */
CP_API void cp_cache_get_stats(const cp_client *c, cp_cache_stats *out);

/* Drops every entry (the next reads go to the servers). Never blocks. */
CP_API void cp_cache_clear(cp_client *c);

#endif
