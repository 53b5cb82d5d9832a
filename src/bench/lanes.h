/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Key streams and lane queues of the bench workers (private to src/bench/): each client (a
 * cp__group) draws its requests from its own key stream (distribution, quota, SET:GET ratio or
 * the --command schedule; load: its range of keys in slot order) and places each in the queue of
 * the lane that serves the key's slot (one lane per master in cluster mode, one in proxy mode); a
 * lane takes its next batch from the front of its queue. A cp__lanes is the per-thread part: the
 * key being generated, the slot-to-lane table, load's sort scratch, the next SET version.
 *
 * Ownership: cp__lanes_init / cp__lanes_free and cp__group_init / cp__group_free pair up; a
 * group owns its queues and load chunk. A batch taken from a queue is a view of the queue's
 * buffers, valid until the lane's next take. Threads: everything here belongs to one worker
 * thread; the spec is shared read-only, acked versions are read and bumped with relaxed atomics.
 */
#ifndef CLUSTERPIPE_LANES_H
#define CLUSTERPIPE_LANES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/keyspace.h"
#include "bench/nodes.h"
#include "bench/plan.h"

/* Requests queued for a lane, or of a batch: each one's key index and what it is. A queue holds
 * no key bytes (an index is a third of a key's, and the queue's tail is cold memory, see
 * lanes.c); a take writes its batch's keys (stride keystride) into the queue's key slots, and a
 * batch's keys are those. */
typedef struct cp__reqbuf {
    char *keys; /* a batch's keys (a queue: its last batch's), each behind the key prefix */
    uint8_t *keylen;
    uint64_t *kidx; /* the key's index */
    uint16_t *slot; /* the key's slot (cluster): computed once for the lane, given to the library */
    uint8_t *op;    /* SET (1) or GET (0); --command runs: the template's index */
    uint32_t *kver; /* acked tracking only: the version the SET writes, or the GET expects at
                     * least (acknowledged before it was sent) */
    size_t head;    /* a queue's first request (a batch always starts at 0) */
    size_t n;       /* requests, from head */
} cp__reqbuf;

/* One generated request not placed yet: its lane's queue was full. */
typedef struct cp__req {
    uint64_t idx;
    uint32_t version;
    uint16_t slot;
    uint8_t op; /* as cp__reqbuf.op */
    int lane;
} cp__req;

/* A bench client: one key stream (distribution, quota, ratio) feeding its lanes' queues. */
typedef struct cp__group {
    int gindex; /* global client index */
    cp__keygen kg;
    /* load (next_load_key): the current chunk's key indexes, lane by lane in slot order; lane l
     * has chunk[lane_cur[l] .. lane_end[l]) left; turn: the lane whose turn it is */
    uint64_t *chunk;
    uint32_t lane_cur[CP__NODES_MAX], lane_end[CP__NODES_MAX];
    size_t left;
    int turn;
    uint64_t drawn;         /* load: keys taken from kg so far */
    uint64_t quota, issued; /* requests generated */
    uint64_t sent;          /* requests started by its lanes (--rate) */
    uint32_t rate_turn; /* --rate: the lane (mod lanes) that the next round of slots starts at */
    int lane0;          /* the worker's lanes [lane0, lane0 + lanes) are this client's */
    cp__reqbuf *queue;  /* lanes entries: each lane's queue (owned) */
    bool has_carry;
    cp__req carry;
    cp__keygen okg; /* --command with __otherkey__: the stream of those keys (last: cold) */
} cp__group;

/* A key's lane comes from a table of 64-slot blocks (see lanes.c). */
#define CP__LANE_BLOCK_SHIFT 6
#define CP__LANE_BLOCKS (CP_SLOTS >> CP__LANE_BLOCK_SHIFT)

/* The per-thread part of the key streams. */
typedef struct cp__lanes {
    const cp__run_spec *spec;
    char *keybuf;                        /* the key being generated (prefix written once) */
    size_t keystride;                    /* bytes per key in a queue's key buffer */
    size_t qcap;                         /* requests a lane may have queued (see lanes.c) */
    int lanes;                           /* lanes per client */
    uint32_t next_version;               /* acked tracking: next SET version of this thread */
    uint8_t block_lane[CP__LANE_BLOCKS]; /* lane per 64-slot block, or a marker (slot_lane) */
    /* load's slot-order sort (next_load_key): per-slot counts, a chunk's slots and indexes */
    uint32_t *slot_count;
    uint16_t *chunk_slot, *sorted_slot;
    uint64_t *chunk_idx;
} cp__lanes;

/* Prepares a thread's streams for spec s, with thread_lanes lanes in the thread (their queues
 * share a memory budget). Returns 0 or CP_ENOMEM; cp__lanes_free is safe either way. */
int cp__lanes_init(cp__lanes *ls, const cp__run_spec *s, int thread_lanes);
void cp__lanes_free(cp__lanes *ls);

/* Prepares client gindex's stream (g zeroed by the caller, lane0 set): its key generator, quota
 * and lane queues. Returns 0, CP_EINVAL (bad key distribution) or CP_ENOMEM; cp__group_free is
 * safe either way. */
int cp__group_init(cp__lanes *ls, cp__group *g, int gindex);
void cp__group_free(cp__group *g, int lanes);

/* Runs the client's key stream until its lane `lane` has a batch queued, the quota is spent, or
 * a request is for a lane whose queue is full (it waits in the carry: the stream keeps its
 * order). */
void cp__lanes_fill(cp__lanes *ls, cp__group *g, int lane);

/* Makes up to a batch of requests from the front of queue q the executing *batch (a view of
 * q's buffers, its keys written now, valid until the next take from q). */
void cp__lanes_take(const cp__lanes *ls, cp__reqbuf *q, cp__reqbuf *batch);

/* A request buffer of its own for n requests and a batch's keys (0 or CP_ENOMEM; free with
 * cp__reqbuf_free even after a failure), and a copy of a batch into one (src->n <= a batch): an
 * open-loop batch in flight outlives its lane's next take. */
int cp__reqbuf_alloc(const cp__lanes *ls, cp__reqbuf *b, size_t n);
void cp__reqbuf_free(cp__reqbuf *b);
void cp__reqbuf_copy(const cp__lanes *ls, cp__reqbuf *dst, const cp__reqbuf *src);

#endif /* CLUSTERPIPE_LANES_H */
