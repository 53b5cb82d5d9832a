/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The client-side cache's rules (clusterpipe/cache.h): when a read is answered from the store
 * (cachestore.h), when its reply may go in, and what drops entries. The core calls it at four
 * points: a read's first send (a hit is answered there), a write's every send, a read's reply on a
 * command connection, and the changes of the cluster (an invalidation push, a slot that moved, a
 * node's connection closed).
 *
 * Why a reply may be stale, and what keeps it out. Each connection tracks the keys read on it
 * (CLIENT TRACKING ON, RESP3): the server pushes an invalidation on that connection after any
 * later change of such a key, behind the replies before it. (Under RESP2 the invalidations come
 * on a connection of their own, tracklink.h, in no order with the replies: the generations
 * below cover that too, and its failure is the closed connection's.) So a read answered on a
 * connection whose tracking has lasted since its send is current until its invalidation arrives,
 * except when something changed between the read's send and its reply that the connection's order
 * does not show: this client's own write sent meanwhile (on another connection, or earlier in a
 * retry), the slot moving to another node, the key invalidated by a push that came first. Each slot
 * has a generation, bumped by all of these; a read records its slot's generation when it is sent,
 * and its reply goes in only when the generation is the same and the node that answered is the
 * slot's owner in the map, without a redirect. A closed connection loses its tracking: the node's
 * entries go at once, before anything else is answered. One thread, the client's.
 */
#ifndef CLUSTERPIPE_CACHE_H
#define CLUSTERPIPE_CACHE_H

#include "clusterpipe/clusterpipe.h"
#include "lib/cache/cachestore.h"
#include "lib/proto/replyarena.h"

typedef struct cp__cache {
    cp__cstore store;
    cp_cache_stats stats;
    uint64_t silence_ns;    /* cp_cache_options.max_silence_ms */
    uint32_t gen[CP_SLOTS]; /* per slot: bumped by whatever may make a reply in flight stale */
} cp__cache;

/* A cache with o's bounds (defaults for zeros); NULL on OOM. */
cp__cache *cp__cache_new(const cp_cache_options *o);
void cp__cache_free(cp__cache *k);

/* A cacheable read of slot about to be sent for the first time, request bytes req[0..len): the
 * stored answer copied into arena a (a hit), or NULL (a miss, or out of memory: then it is sent,
 * and *gen is the slot's generation to hand back with its reply). */
redisReply *cp__cache_lookup(cp__cache *k, const char *req, size_t len, int slot,
                             cp__reply_arena *a, uint32_t *gen);

/* A cacheable read's reply r from node, sent at generation gen; owner: 1 when node serves its
 * slot per the map and the read was never redirected. Stored when nothing changed since. */
void cp__cache_took(cp__cache *k, const char *req, size_t len, int slot, uint32_t gen, int node,
                    int owner, const redisReply *r);

/* A command that may write is being sent: its slot's entries go (slot < 0: a keyless write, or
 * one for a chosen node: every entry). */
void cp__cache_wrote(cp__cache *k, int slot);

/* A push frame r from node's command connection: when it is an invalidation, the entries of the
 * keys it names go (a flush, a null list: the node's). */
void cp__cache_push(cp__cache *k, int node, const redisReply *r);

/* The keys an invalidation names, from node (a RESP2 tracking link's message, tracklink.h):
 * their entries go; anything but an array (a flush: null) drops the node's. */
void cp__cache_invalidated(cp__cache *k, int node, const redisReply *keys);

/* A slot changed owner in the client's map (a refresh, a MOVED): its entries go. */
void cp__cache_slot_moved(cp__cache *k, int slot);

/* Node's command connection is closing: what it served goes, its invalidations may be lost. */
void cp__cache_node_closed(cp__cache *k, int node);

#endif
