/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The client-side cache's store: replies to read requests, found by the request's exact bytes,
 * bounded by entries and by bytes, the least recently used evicted first. It knows nothing of
 * connections or the cluster: each entry carries what the cache (cache.h) drops it by: its slot,
 * the node that answered it, and its request's first key (or that it has several keys). No I/O;
 * one thread, its client's.
 *
 * An entry is one allocation: the request's bytes, then its reply laid out flat (the reply
 * object, element arrays and strings in one block, pointers into it), so that its size is known
 * exactly and the bound counts every byte the store holds for it. (The hash table and the
 * per-slot heads, made at the first put, are not counted: CP_SLOTS pointers and one or two
 * pointers per entry.)
 */
#ifndef CLUSTERPIPE_CACHESTORE_H
#define CLUSTERPIPE_CACHESTORE_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "clusterpipe/clusterpipe.h"

typedef struct cp__centry cp__centry;

typedef struct cp__cstore {
    cp__centry **buckets; /* hash chains by the request's hash; nbuckets a power of two */
    size_t nbuckets;
    cp__centry *mru, *lru;  /* the recency list, most recently used first */
    cp__centry **by_slot;   /* [CP_SLOTS]: each slot's entries (NULL until the first put) */
    size_t nentries, bytes; /* what it holds now: bytes counts each entry's whole block */
    size_t max_entries, max_bytes;
    uint64_t evictions; /* entries dropped to stay inside the bounds */
} cp__cstore;

/* An empty store bounded by max_entries and max_bytes (both > 0). No allocation yet. */
void cp__cstore_init(cp__cstore *s, size_t max_entries, size_t max_bytes);

/* Frees every entry and the tables. The store is empty (and still usable) after it: as
 * cp__cstore_init left it, with the same bounds and evictions back at 0. */
void cp__cstore_free(cp__cstore *s);

/* The hash a request's bytes are found by (computed once by the caller, used for get and put). */
uint64_t cp__cstore_hash(const char *req, size_t len);

/* The reply stored for exactly these request bytes, made the most recently used; NULL when none.
 * It lives until the entry is dropped: the caller copies it before the store is touched again. */
const redisReply *cp__cstore_get(cp__cstore *s, const char *req, size_t len, uint64_t hash);

/* Stores reply r for the request (replacing an entry of the same bytes), with what it is dropped
 * by: slot (0..CP_SLOTS-1), node (the answering node's index), key (its first key) and multikey
 * (1 when the request names more than one key: dropped by any key of its slot). Evicts the least
 * recently used entries until both bounds hold. 0 when stored, 1 when not (an entry this size
 * would not fit in max_bytes alone), CP_ENOMEM. r is copied (the caller keeps it); on 1 and on
 * CP_ENOMEM an entry of the same bytes is dropped (its reply is older than r), the others stay. A
 * table that cannot grow for lack of memory is kept as it is (longer chains), not an error. */
int cp__cstore_put(cp__cstore *s, const char *req, size_t len, uint64_t hash, int slot, int node,
                   const char *key, size_t keylen, int multikey, const redisReply *r);

/* Drops the entries of slot whose first key is key, and its multi-key ones. Returns how many. */
size_t cp__cstore_drop_key(cp__cstore *s, int slot, const char *key, size_t keylen);

/* Drops every entry of slot; of node; every entry. Each returns how many it dropped. */
size_t cp__cstore_drop_slot(cp__cstore *s, int slot);
size_t cp__cstore_drop_node(cp__cstore *s, int node);
size_t cp__cstore_clear(cp__cstore *s);

#endif
