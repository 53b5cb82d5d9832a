/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Key streams and lane queues (see lanes.h): every client's requests are generated in its
 * stream's order and placed in the queue of the lane (master) that serves the key's slot; load
 * writes each client's range in slot order, chunk by chunk. This is the bench's hot path with
 * the event loop (worker.c): one request costs a key generation, a slot, a table look-up for its
 * lane and a copy into the queue.
 *
 * Ownership: a group owns its queues and load chunk (cp__group_free); a cp__lanes owns the key
 * buffer and load's sort scratch (cp__lanes_free). One worker thread only.
 */
#include "bench/lanes.h"

#include <stdlib.h>
#include <string.h>

/* Requests a lane may have queued, from its client's key stream. Random keys reach the lanes
 * unevenly: how far one lane's share runs ahead of the others is a random walk, and once a lane's
 * queue is full the stream stops (it keeps its order) and the other lanes go out short or wait.
 * A walk reaches a bound of Q after about Q^2 keys and then keeps touching it, so the larger Q,
 * the rarer short batches. Measured at depth 50 (the servers' GETs per read(), 50 at best):
 * Q = 256: 45.6, 1,024: 47.5, 4,096: 48.7, 16,384: 48.8; redis-benchmark 49.4. Short batches
 * cost the servers a read, a write and an event-loop pass for fewer requests, and leave them
 * idle sooner. A lane may queue QUEUE_MAX requests, and fewer when a thread has so many lanes
 * that their queues would pass QUEUE_BUDGET bytes, but never fewer than 4 batches or QUEUE_MIN
 * (with 4 requests at depth 1 the stream stopped for three batches in four): memory stays
 * bounded whatever the key distribution's skew and --keys are. A queue's buffers hold twice its
 * cap and a batch (see cp__lanes_take). */
#define QUEUE_MAX 4096
#define QUEUE_MIN 256
#define QUEUE_BUDGET (32u << 20)

static size_t queue_cap(size_t batch, int lanes, size_t req_bytes) {
    size_t floor = batch * 4 > QUEUE_MIN ? batch * 4 : QUEUE_MIN;
    size_t fit = QUEUE_BUDGET / ((size_t)(lanes > 0 ? lanes : 1) * req_bytes * 2);
    size_t q = fit < QUEUE_MAX ? fit : QUEUE_MAX;
    return q > floor ? q : floor;
}

/* load: keys are written in slot order within chunks of this many (see next_load_key): about 16
 * keys per slot, so MSETs carry up to 16 (measured at 10M keys: 1.07x the rate of 65,536-key
 * chunks). A chunk costs 8 bytes per key per client and 12 per worker thread, whatever --keys
 * is: about 23 MB with the default 8 clients on 2 threads. */
#define LOAD_CHUNK 262144

/* A key's lane comes from a table of 64-slot blocks: masters own ranges of slots, so nearly every
 * block has one owner and 256 bytes answer nearly every key with one load from L1. A block with
 * several owners is marked and its keys are looked up in the slot map's own table. That 32 KiB
 * table alone was a cache miss on most keys at depth 50 (about half of lane_next's samples), and
 * a search of the map's runs of slots cost 36 instructions per key (callgrind). */
#define LANE_MIXED 0xff /* a block with several owners, or more lanes than a byte holds */

/* A request buffer's arrays share one block, widest elements first so each is aligned: an
 * open-loop flight of one request then costs the bench one block here, not six (issue 45). */
int cp__reqbuf_alloc(const cp__lanes *ls, cp__reqbuf *b, size_t n) {
    const cp__keyfmt *kf = ls->spec->kf;
    size_t batch = ls->spec->batch;
    size_t nver = ls->spec->acked != NULL ? n : 0;
    size_t bytes = n * sizeof(*b->kidx) + nver * sizeof(*b->kver) + n * sizeof(*b->slot) + n +
                   batch + batch * ls->keystride;
    char *m = malloc(bytes);
    b->kidx = (uint64_t *)(void *)m;
    if (m == NULL)
        return CP_ENOMEM;
    m += n * sizeof(*b->kidx);
    b->kver = nver > 0 ? (uint32_t *)(void *)m : NULL;
    m += nver * sizeof(*b->kver);
    b->slot = (uint16_t *)(void *)m;
    m += n * sizeof(*b->slot);
    b->op = (uint8_t *)m;
    m += n;
    b->keylen = (uint8_t *)m;
    m += batch;
    b->keys = m;
    for (size_t i = 0; i < batch; i++) /* only the digits change (cp__key_format_digits) */
        memcpy(b->keys + i * ls->keystride, kf->prefix, kf->prefix_len);
    return 0;
}

void cp__reqbuf_free(cp__reqbuf *b) {
    free(b->kidx); /* the block of every array */
    b->kidx = NULL;
}

/* The slot's lane per the slot map read at the start: its master, or lane 0 for a slot nobody
 * serves (the library then gets CLUSTERDOWN, or MOVED once someone does). */
static int map_lane(const cp__lanes *ls, unsigned slot) {
    int owner = ls->lanes > 1 ? ls->spec->map->owner[slot] : 0;
    return owner >= 0 ? owner : 0;
}

static int slot_lane(const cp__lanes *ls, unsigned slot) {
    int lane = ls->block_lane[slot >> CP__LANE_BLOCK_SHIFT];
    return lane != LANE_MIXED ? lane : map_lane(ls, slot);
}

/* Fills ls->block_lane from the slot map (a block is LANE_MIXED unless one lane owns all of it). */
static void lane_blocks(cp__lanes *ls) {
    for (unsigned b = 0; b < CP__LANE_BLOCKS; b++) {
        unsigned first = b << CP__LANE_BLOCK_SHIFT;
        int lane = ls->lanes < LANE_MIXED ? map_lane(ls, first) : LANE_MIXED;
        for (unsigned s = first + 1; s < first + (1u << CP__LANE_BLOCK_SHIFT); s++)
            if (map_lane(ls, s) != lane)
                lane = LANE_MIXED;
        ls->block_lane[b] = (uint8_t)lane;
    }
}

/* Refills the group's load chunk: the next LOAD_CHUNK keys of its range, sorted by slot (a
 * counting sort), then grouped by lane keeping that order (a second, stable one). */
static void load_chunk(cp__lanes *ls, cp__group *g) {
    uint64_t left = g->quota - g->drawn;
    size_t n = left < LOAD_CHUNK ? (size_t)left : LOAD_CHUNK;
    uint32_t *count = ls->slot_count;
    memset(count, 0, (CP_SLOTS + 1) * sizeof(*count));
    for (size_t i = 0; i < n; i++) {
        uint64_t idx = cp__keygen_next(&g->kg);
        size_t klen = cp__key_format_digits(ls->spec->kf, idx, ls->keybuf);
        ls->chunk_slot[i] = (uint16_t)cp__key_slot(ls->spec->kf, idx, ls->keybuf, klen);
        ls->chunk_idx[i] = idx;
        count[ls->chunk_slot[i] + 1]++;
    }
    for (int s = 0; s < CP_SLOTS; s++) /* count[s]: where slot s's keys start */
        count[s + 1] += count[s];
    for (size_t i = 0; i < n; i++) {
        uint32_t pos = count[ls->chunk_slot[i]]++;
        g->chunk[pos] = ls->chunk_idx[i];
        ls->sorted_slot[pos] = ls->chunk_slot[i];
    }
    memset(g->lane_cur, 0, sizeof(g->lane_cur));
    for (size_t i = 0; i < n; i++)
        g->lane_cur[slot_lane(ls, ls->sorted_slot[i])]++;
    for (int l = 0, start = 0; l < ls->lanes; l++) { /* lane_cur[l]: where lane l's keys start */
        int c = (int)g->lane_cur[l];
        g->lane_cur[l] = (uint32_t)start;
        start += c;
    }
    memcpy(g->lane_end, g->lane_cur, sizeof(g->lane_cur));
    for (size_t i = 0; i < n; i++)
        ls->chunk_idx[g->lane_end[slot_lane(ls, ls->sorted_slot[i])]++] = g->chunk[i];
    memcpy(g->chunk, ls->chunk_idx, n * sizeof(*g->chunk));
    g->drawn += n;
    g->left = n;
}

/* load's next key. Each client's keys are a contiguous range whose slots are random; written in
 * slot order instead (within chunks of LOAD_CHUNK keys, so memory stays constant), consecutive
 * SETs on a master touch neighbouring slots and the server's per-slot bookkeeping (slot owner
 * and migration arrays, the slot's key list) stays in cache: measured 3.8-4.0 instead of 4.5-4.8
 * us of server CPU per key. Keys of one slot are then adjacent in their lane's queue, and
 * compose_mset sends them as one MSET. The lanes take turns, so that every master keeps
 * working. Every key is still written once. */
static uint64_t next_load_key(cp__lanes *ls, cp__group *g, int *lane) {
    if (g->left == 0)
        load_chunk(ls, g);
    int l = g->turn; /* no `%` here: a division per key was a sixth of this function */
    while (g->lane_cur[l] == g->lane_end[l])
        l = l + 1 == ls->lanes ? 0 : l + 1;
    g->turn = l + 1 == ls->lanes ? 0 : l + 1;
    g->left--;
    *lane = l;
    return g->chunk[g->lane_cur[l]++];
}

/* The group's next request. `templated` is a constant where this is inlined (cp__lanes_fill):
 * a --command run picks the request's template from the schedule, a GET/SET run SET or GET from
 * the ratio, each without testing which it is. */
static inline __attribute__((always_inline)) void generate(cp__lanes *ls, cp__group *g, cp__req *r,
                                                           const int templated) {
    const cp__run_spec *s = ls->spec;
    uint64_t n = g->issued++;
    int op = templated ? (int)cp__cmdset_pick(s->cmds, n)
                       : cp__ratio_is_set(n, s->ratio_set, s->ratio_get);
    int set = !templated && op; /* version tracking: GET/SET runs only (engine.c) */
    int lane = -1;              /* known for load's keys; else from the key's slot below */
    uint64_t idx = g->chunk != NULL ? next_load_key(ls, g, &lane) : cp__keygen_next(&g->kg);
    uint32_t version = s->version;
    if (s->acked != NULL) { /* SETs only to this client's keys (config.h), fresh versions */
        uint64_t c = (uint64_t)s->clients;
        if (set && idx % c != (uint64_t)g->gindex) {
            idx = idx - idx % c + (uint64_t)g->gindex;
            if (idx >= s->keys)
                idx -= c;
        }
        version =
            set ? ls->next_version++ : atomic_load_explicit(&s->acked[idx], memory_order_relaxed);
    }
    /* The key's slot, found once here (a per-master key's from its tag, any other's hashed from
     * the key written out): it picks the lane, groups load's MSETs (compose_mset) and goes to
     * the library with the command (cp_append_argv_slot), which would otherwise hash the key
     * again. Not needed for GET and SET through a proxy. */
    unsigned slot = 0;
    if (s->map != NULL || s->mset_keys > 1) {
        size_t klen = s->kf->ntags != 0 ? 0 : cp__key_format_digits(s->kf, idx, ls->keybuf);
        slot = cp__key_slot(s->kf, idx, ls->keybuf, klen);
    }
    *r = (cp__req){.idx = idx,
                   .version = version,
                   .slot = (uint16_t)slot,
                   .op = (uint8_t)op,
                   .lane = lane >= 0 ? lane : slot_lane(ls, slot)};
}

/* Moves n requests from src[si..] to dst[di..] (the ranges may overlap); not their keys. */
static void move_reqs(cp__reqbuf *dst, size_t di, const cp__reqbuf *src, size_t si, size_t n) {
    memmove(dst->kidx + di, src->kidx + si, n * sizeof(*src->kidx));
    memmove(dst->slot + di, src->slot + si, n * sizeof(*src->slot));
    memmove(dst->op + di, src->op + si, n);
    if (src->kver != NULL)
        memmove(dst->kver + di, src->kver + si, n * sizeof(*src->kver));
}

void cp__reqbuf_copy(const cp__lanes *ls, cp__reqbuf *dst, const cp__reqbuf *src) {
    move_reqs(dst, 0, src, 0, src->n);
    memcpy(dst->keys, src->keys, src->n * ls->keystride);
    memcpy(dst->keylen, src->keylen, src->n);
    dst->head = 0;
    dst->n = src->n;
}

/* Appends a request to a queue (take keeps head + n within its buffers). */
static void push(cp__reqbuf *q, const cp__req *r) {
    size_t i = q->head + q->n++;
    q->kidx[i] = r->idx;
    q->slot[i] = r->slot;
    q->op[i] = r->op;
    if (q->kver != NULL)
        q->kver[i] = r->version;
}

static inline __attribute__((always_inline)) void fill(cp__lanes *ls, cp__group *g, int lane,
                                                       const int templated) {
    size_t batch = ls->spec->batch, cap = ls->qcap;
    while (g->queue[lane].n < batch) {
        cp__req r;
        if (g->has_carry) {
            r = g->carry;
        } else if (g->issued < g->quota) {
            generate(ls, g, &r, templated);
        } else {
            return;
        }
        cp__reqbuf *to = &g->queue[r.lane];
        g->has_carry = to->n == cap;
        if (g->has_carry) {
            g->carry = r;
            return;
        }
        push(to, &r);
    }
}

/* One test per call (a batch), not per request: fill is inlined twice. */
void cp__lanes_fill(cp__lanes *ls, cp__group *g, int lane) {
    if (ls->spec->cmds != NULL)
        fill(ls, g, lane, 1);
    else
        fill(ls, g, lane, 0);
}

/* Takes up to a batch of requests from the front of a lane's queue as its executing batch. The
 * batch is a view of the queue's buffers (no copy): they keep its requests until the lane's next
 * take, which comes after the batch finished, and only take moves requests. Its keys are
 * written now, into the queue's key slots, which every take reuses (cache-warm): queued as
 * bytes, each key was written to the queue's cold tail and read back from it a queue later,
 * about 5% of the client's CPU per GET at depth 10 in store misses. Before taking, the
 * rest moves to the front of the buffers once the taken prefix is at least as long as it: a move
 * then costs at most one request per request taken, even for a lane that stays full (a hot
 * master under zipf), and the queue touches about twice what it holds instead of cycling through
 * the whole buffer (4,096 requests is 45 KB per lane, more than the caches hold for 40
 * lanes). That step leaves head < n or head == 0, so through the take and the pushes up to the
 * next one head + n stays within the buffers' 2 x cap + batch. */
void cp__lanes_take(const cp__lanes *ls, cp__reqbuf *q, cp__reqbuf *batch) {
    if (q->head > 0 && q->n <= q->head) {
        move_reqs(q, 0, q, q->head, q->n);
        q->head = 0;
    }
    size_t h = q->head, n = q->n < ls->spec->batch ? q->n : ls->spec->batch;
    for (size_t i = 0; i < n; i++)
        q->keylen[i] = (uint8_t)cp__key_format_digits(ls->spec->kf, q->kidx[h + i],
                                                      q->keys + i * ls->keystride);
    *batch = (cp__reqbuf){.keys = q->keys,
                          .keylen = q->keylen,
                          .kidx = q->kidx + h,
                          .slot = q->slot + h,
                          .op = q->op + h,
                          .kver = q->kver != NULL ? q->kver + h : NULL,
                          .n = n};
    q->n -= n;
    q->head = h + n; /* not back to 0 when empty: pushes would overwrite the batch */
}

int cp__lanes_init(cp__lanes *ls, const cp__run_spec *s, int thread_lanes) {
    memset(ls, 0, sizeof(*ls));
    ls->spec = s;
    ls->keystride = cp__key_max_len(s->kf, s->keys);
    size_t req_bytes = sizeof(uint64_t) + 3; /* a queued request: key index, slot, its op */
    if (s->acked != NULL)
        req_bytes += sizeof(uint32_t); /* kver */
    ls->qcap = queue_cap(s->batch, thread_lanes, req_bytes);
    ls->lanes = s->lanes;
    ls->next_version = 2; /* load writes version 1 */
    lane_blocks(ls);
    ls->keybuf = malloc(ls->keystride);
    if (ls->keybuf == NULL)
        return CP_ENOMEM;
    memcpy(ls->keybuf, s->kf->prefix, s->kf->prefix_len); /* only the digits change */
    return 0;
}

void cp__lanes_free(cp__lanes *ls) {
    free(ls->keybuf);
    free(ls->slot_count);
    free(ls->chunk_slot);
    free(ls->sorted_slot);
    free(ls->chunk_idx);
}

int cp__group_init(cp__lanes *ls, cp__group *g, int gindex) {
    const cp__run_spec *s = ls->spec;
    g->gindex = gindex;
    if (cp__keygen_init(&g->kg, &s->dist, s->keys, s->seed, (uint64_t)gindex,
                        (uint64_t)s->clients) != 0)
        return CP_EINVAL;
    /* __otherkey__: a stream of its own (another seed), so the requests' keys stay those of a
     * run without it */
    if (s->cmds != NULL && s->cmds->any_other &&
        cp__keygen_init(&g->okg, &s->dist, s->keys, s->seed ^ 0x6f746865726b6579ull,
                        (uint64_t)gindex, (uint64_t)s->clients) != 0)
        return CP_EINVAL;
    if (s->exact_cover && ls->lanes > 1) { /* load into a cluster: slot order */
        g->quota = cp__keygen_share(&g->kg);
        if ((g->chunk = malloc(LOAD_CHUNK * sizeof(*g->chunk))) == NULL ||
            (ls->slot_count == NULL &&
             (ls->slot_count = malloc((CP_SLOTS + 1) * sizeof(*ls->slot_count))) == NULL) ||
            (ls->chunk_slot == NULL &&
             (ls->chunk_slot = malloc(LOAD_CHUNK * sizeof(*ls->chunk_slot))) == NULL) ||
            (ls->sorted_slot == NULL &&
             (ls->sorted_slot = malloc(LOAD_CHUNK * sizeof(*ls->sorted_slot))) == NULL) ||
            (ls->chunk_idx == NULL &&
             (ls->chunk_idx = malloc(LOAD_CHUNK * sizeof(*ls->chunk_idx))) == NULL))
            return CP_ENOMEM;
    } else if (s->exact_cover)
        g->quota = cp__keygen_share(&g->kg);
    else if (s->requests > 0)
        g->quota = cp__client_quota(s->requests, s->clients, gindex);
    else
        g->quota = UINT64_MAX;
    g->queue = calloc((size_t)ls->lanes, sizeof(*g->queue));
    if (g->queue == NULL)
        return CP_ENOMEM;
    for (int l = 0; l < ls->lanes; l++) {
        size_t n = 2 * ls->qcap + s->batch;
        cp__reqbuf *q = &g->queue[l];
        if (cp__reqbuf_alloc(ls, q, n) != 0)
            return CP_ENOMEM;
        /* Written once now: how deep a queue runs is a random walk (above), whose farthest
         * point only grows, so pages first touched at its new depths made the process's RSS
         * creep for the whole run (by 500 KB a minute in a 10-minute soak, issue 45). The
         * buffers are the queue's bound: resident from the start, they stay as they are. */
        memset(q->kidx, 0, n * sizeof(*q->kidx));
        memset(q->slot, 0, n * sizeof(*q->slot));
        memset(q->op, 0, n);
        if (q->kver != NULL)
            memset(q->kver, 0, n * sizeof(*q->kver));
    }
    return 0;
}

void cp__group_free(cp__group *g, int lanes) {
    free(g->chunk);
    for (int l = 0; g->queue != NULL && l < lanes; l++)
        cp__reqbuf_free(&g->queue[l]);
    free(g->queue);
}
