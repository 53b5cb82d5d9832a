/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Worker threads of the bench engine: each thread owns an epoll instance and its share of the
 * clients (a cp_client + a cp_pipeline each), composes batches (pipeline depth x masters
 * commands), drives them with cp_exec_start / cp_exec_on_ready / cp_exec_on_timer, and accounts
 * every finished command: per-request latency from cp_timing, outcomes, verification of GET
 * replies. Routing, redirects and retries are entirely the library's.
 *
 * Syscalls are the cost that matters on loopback, so: fds are registered level-triggered with
 * EPOLLIN only, EPOLLOUT only while the library reports POLLOUT (a socket that would block),
 * and epoll_ctl is called only when a client's fd set or interest changes, or after something
 * failed (a connection the library closed and reopened may come back with the same number, and
 * closing an fd silently removes it from epoll). A batch then costs one send per node, one recv
 * per node (usually) and a share of one epoll_wait.
 *
 * Ownership: a worker owns its clients, pipelines, batch metadata and epoll fd, all freed by
 * cp__workers_free. Threads: see worker.h; everything non-atomic in a cp__worker is touched by
 * its own thread until pthread_join.
 */
#include "bench/worker.h"
#include "util/clock.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000ull
#define SWEEP_NS 10000000ull /* how often library timers (I/O timeouts, retries) are checked */
#define MAX_EVENTS 256

/* A lane is idle until its --rate slot, executing a batch, waiting for keys (its group's key
 * stream is blocked on a full lane), or done. */
enum { CS_IDLE = 0, CS_EXEC = 1, CS_DONE = 2, CS_WAIT = 3 };

/* Requests of a batch, or queued for a lane: key bytes (stride keystride) and what each is. */
typedef struct reqbuf {
    char *keys;
    uint8_t *keylen;
    uint16_t *slot; /* the key's slot (cluster): computed once for the lane, given to the library */
    uint8_t *isset; /* SET (1) or GET (0) */
    uint64_t *kidx; /* acked tracking only: key index, and the version the SET writes */
    uint32_t *kver; /* or the GET expects at least (acknowledged before it was sent) */
    size_t head;    /* a queue's first request (a batch always starts at 0) */
    size_t n;       /* requests, from head */
} reqbuf;

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
 * cap and a batch (see take). */
#define QUEUE_MAX 4096
#define QUEUE_MIN 256
#define QUEUE_BUDGET (32u << 20)

static size_t queue_cap(size_t batch, int lanes, size_t req_bytes) {
    size_t floor = batch * 4 > QUEUE_MIN ? batch * 4 : QUEUE_MIN;
    size_t fit = QUEUE_BUDGET / ((size_t)(lanes > 0 ? lanes : 1) * req_bytes * 2);
    size_t q = fit < QUEUE_MAX ? fit : QUEUE_MAX;
    return q > floor ? q : floor;
}

/* One generated request not placed yet: its lane's queue was full. */
typedef struct req {
    uint64_t idx;
    uint32_t version;
    uint16_t slot;
    uint8_t set;
    int lane;
} req;

/* load: keys are written in slot order within chunks of this many (see next_load_key): about 16
 * keys per slot, so MSETs carry up to 16 (measured at 10M keys: 1.07x the rate of 65,536-key
 * chunks). A chunk costs 8 bytes per key per client and 12 per worker thread, whatever --keys
 * is: about 23 MB with the default 8 clients on 2 threads. */
#define LOAD_CHUNK 262144

/* A bench client: one key stream (distribution, quota, ratio) feeding its lanes. */
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
    int lane0;              /* its lanes are w->cs[lane0 .. lane0 + lanes) */
    bool has_carry;
    req carry;
} cp__group;

/* A lane: one cp_client and its pipeline. In cluster mode a client has one lane per master and
 * a lane's batches carry the keys the slot map places on its master (the library still routes
 * every command and follows redirects), so each master sees P requests in flight per lane and a
 * lane goes on as soon as its own master has answered. Batches spread over every master instead
 * wait for the slowest one, and the servers then idle between bursts: measured at depth 10,
 * 1.5x the throughput at 0.8x the servers' CPU per request. Proxy mode: one lane per client. */
struct cp__client_state {
    cp_client *c;
    cp_pipeline *p;
    cp__group *g;
    int lane;     /* master index (cluster), 0 (proxy) */
    int endpoint; /* proxy: index into spec->endpoints */
    int state;
    uint64_t next_start_ns; /* --rate: when the next batch may start */
    reqbuf batch;           /* the batch executing: a view of the queue's buffers (take) */
    uint16_t *cmdkeys;      /* MSET batches: keys of each of its commands, in order */
    reqbuf queue;           /* requests for the next batches, from its client's key stream */
    struct pollfd *reg;     /* fds registered in epoll, with the events asked */
    int nreg, capreg;
    struct pollfd *cur; /* scratch for cp_client_pollfds */
    int capcur;
    unsigned fdgen; /* cp_client_fd_generation when last synced */
    cp_stats base;  /* counters when the measured interval began */
};

uint64_t cp__client_quota(uint64_t total, int clients, int client) {
    /* total * i / clients without overflow for any realistic total */
    unsigned __int128 a = (unsigned __int128)total * (unsigned)client / (unsigned)clients;
    unsigned __int128 b = (unsigned __int128)total * (unsigned)(client + 1) / (unsigned)clients;
    return (uint64_t)(b - a);
}

/* ---- per-thread context --------------------------------------------------------------------- */

/* A key's lane comes from a table of 64-slot blocks: masters own ranges of slots, so nearly every
 * block has one owner and 256 bytes answer nearly every key with one load from L1. A block with
 * several owners is marked and its keys are looked up in the slot map's own table. That 32 KiB
 * table alone was a cache miss on most keys at depth 50 (about half of lane_next's samples), and
 * a search of the map's runs of slots cost 36 instructions per key (callgrind). */
#define LANE_BLOCK_SHIFT 6
#define LANE_BLOCKS (CP_SLOTS >> LANE_BLOCK_SHIFT)
#define LANE_MIXED 0xff /* a block with several owners, or more lanes than a byte holds */

typedef struct wctx {
    cp__worker *w;
    const cp__run_spec *spec;
    int epfd;
    uint64_t start_ns, end_ns; /* end_ns: duration mode only */
    uint64_t cur_sec;          /* second being filled */
    cp__sec_slot *slot;
    uint64_t next_sweep;
    int active; /* clients not done */
    uint64_t rate_interval_ns;
    char *valbuf;      /* values of the command being composed: value_size x keys per command */
    const char **argv; /* MSET's arguments (load with mset_keys > 1) */
    size_t *argvlen;
    char *keybuf;                    /* the key being generated (prefix written once) */
    size_t keystride;                /* bytes per key in a lane's batch key buffer */
    size_t qcap;                     /* requests a lane may have queued (queue_cap) */
    int lanes;                       /* lanes per client */
    int *finished;                   /* lanes whose batch ended in this wake-up (run_loop) */
    uint8_t block_lane[LANE_BLOCKS]; /* lane per 64-slot block, or LANE_MIXED (slot_lane) */
    /* load's slot-order sort (next_load_key): per-slot counts, a chunk's slots and indexes */
    uint32_t *slot_count;
    uint16_t *chunk_slot, *sorted_slot;
    uint64_t *chunk_idx;
} wctx;

static void note_error(cp__worker *w, const char *fmt, const char *msg) {
    if (w->first_error[0] == '\0')
        snprintf(w->first_error, sizeof(w->first_error), fmt, msg);
}

/* Brings client cs's epoll registrations in line with its current fds (see the file comment for
 * why `force` exists). Never DELs: fds leave a client only by being closed, which already
 * removed them from epoll, and their numbers may already belong to someone else. */
static void resync(wctx *x, cp__client_state *cs, int idx, int force) {
    int n = cp_client_pollfds(cs->c, cs->cur, cs->capcur);
    if (n > cs->capcur) {
        struct pollfd *g = realloc(cs->cur, (size_t)n * sizeof(*g));
        struct pollfd *r = realloc(cs->reg, (size_t)n * sizeof(*r));
        if (g != NULL)
            cs->cur = g;
        if (r != NULL)
            cs->reg = r;
        if (g == NULL || r == NULL) {
            note_error(x->w, "%s", "out of memory registering fds");
            return;
        }
        cs->capcur = cs->capreg = n;
        n = cp_client_pollfds(cs->c, cs->cur, cs->capcur);
    }
    /* A connection opened or closed since the last sync: a closed fd left epoll silently and a
     * reopened one may have the same number, so everything is (re)added. */
    unsigned gen = cp_client_fd_generation(cs->c);
    if (gen != cs->fdgen) {
        cs->fdgen = gen;
        force = 1;
    }
    if (!force && n == cs->nreg) {
        int same = 1;
        for (int i = 0; i < n && same; i++)
            same = cs->cur[i].fd == cs->reg[i].fd && cs->cur[i].events == cs->reg[i].events;
        if (same)
            return;
    }
    for (int i = 0; i < n; i++) {
        int fd = cs->cur[i].fd, found = -1;
        for (int j = 0; j < cs->nreg; j++)
            if (cs->reg[j].fd == fd) {
                found = j;
                break;
            }
        if (!force && found >= 0 && cs->reg[found].events == cs->cur[i].events)
            continue;
        struct epoll_event ev = {0};
        ev.events = EPOLLIN | ((cs->cur[i].events & POLLOUT) ? EPOLLOUT : 0);
        ev.data.u64 = ((uint64_t)(uint32_t)idx << 32) | (uint32_t)fd;
        int op = found >= 0 && !force ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
        if (epoll_ctl(x->epfd, op, fd, &ev) != 0) {
            if (errno == EEXIST)
                epoll_ctl(x->epfd, EPOLL_CTL_MOD, fd, &ev);
            else if (errno == ENOENT)
                epoll_ctl(x->epfd, EPOLL_CTL_ADD, fd, &ev);
        }
    }
    memcpy(cs->reg, cs->cur, (size_t)n * sizeof(*cs->reg));
    cs->nreg = n;
}

/* Removes the client's fds from epoll (when it is done, or idle and poked by the server). */
static void unregister(wctx *x, cp__client_state *cs) {
    for (int j = 0; j < cs->nreg; j++)
        epoll_ctl(x->epfd, EPOLL_CTL_DEL, cs->reg[j].fd, NULL);
    cs->nreg = 0;
}

/* ---- seconds -------------------------------------------------------------------------------- */

static void open_slot(wctx *x, uint64_t sec) {
    cp__worker *w = x->w;
    /* The main thread merges each second within ~50 ms; wait if it is CP__RING behind. */
    while (sec >= atomic_load_explicit(&w->consumed, memory_order_acquire) + CP__RING) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    x->slot = &w->ring[sec % CP__RING];
    cp__hist_init(&x->slot->hist);
    x->slot->ops = x->slot->errors = x->slot->mismatches = 0;
    x->slot->gets = x->slot->misses = x->slot->stale = x->slot->moved = x->slot->ask = 0;
    x->cur_sec = sec;
}

/* Redirects followed in the second being closed: the library counts them per client, so the
 * second gets the growth of the sum since the last close (once a second, not per batch). */
static void slot_redirects(wctx *x) {
    cp__worker *w = x->w;
    uint64_t sum[2] = {0, 0};
    for (int i = 0; i < w->ncs; i++) {
        cp_stats st;
        if (w->cs[i].c == NULL)
            continue;
        cp_get_stats(w->cs[i].c, &st);
        sum[0] += st.moved - w->cs[i].base.moved;
        sum[1] += st.ask - w->cs[i].base.ask;
    }
    x->slot->moved = sum[0] - w->redirects_seen[0];
    x->slot->ask = sum[1] - w->redirects_seen[1];
    w->redirects_seen[0] = sum[0];
    w->redirects_seen[1] = sum[1];
}

static void close_seconds(wctx *x, uint64_t now) {
    while (now >= x->start_ns + (x->cur_sec + 1) * NS) {
        slot_redirects(x);
        atomic_store_explicit(&x->w->closed, x->cur_sec + 1, memory_order_release);
        open_slot(x, x->cur_sec + 1);
    }
}

/* ---- batches -------------------------------------------------------------------------------- */

static void record_mismatch(wctx *x, cp__client_state *cs, const char *key, size_t keylen,
                            const char *what) {
    cp__worker *w = x->w;
    w->mismatches++;
    x->slot->mismatches++;
    if (w->nmismatch >= CP__BENCH_MISMATCH_SAMPLES)
        return;
    cp__bench_mismatch *m = &w->mismatch[w->nmismatch++];
    memcpy(m->key, key, keylen);
    m->key[keylen] = '\0';
    m->slot = cp_keyslot(key, keylen);
    if (x->spec->map != NULL)
        cp__nodemap_key_node(x->spec->map, key, keylen, m->node, sizeof(m->node));
    else
        snprintf(m->node, sizeof(m->node), "%s:%d", x->spec->endpoints[cs->endpoint].host,
                 x->spec->endpoints[cs->endpoint].port);
    snprintf(m->what, sizeof(m->what), "%s", what);
}

/* Counters of one batch, added to the worker and the second once at its end: kept local, the
 * loop holds them in registers instead of storing through pointers every library call may
 * alias. */
typedef struct tally {
    uint64_t ops, errors, sets, gets, misses, checked, stale;
} tally;

/* A command (of `keys` keys: an MSET may carry several) that did not end with a reply, or ended
 * with an error reply. */
static void account_failure(cp__worker *w, cp_pipeline *p, cp_outcome oc, const redisReply *r,
                            uint64_t keys) {
    if (oc == CP_UNKNOWN) {
        w->unknown += keys;
        note_error(w, "%s", cp_pipeline_errstr(p));
        return;
    }
    w->failed += keys;
    if (oc == CP_DONE && r != NULL && r->type == REDIS_REPLY_ERROR) {
        w->error_replies++;
        note_error(w, "error reply: %s", r->str);
    } else {
        note_error(w, "%s",
                   r != NULL && r->type == REDIS_REPLY_ERROR ? r->str : cp_pipeline_errstr(p));
    }
}

/* Checks the value of GET number i of the batch against its key. */
static void verify_get(wctx *x, cp__client_state *cs, size_t i, const redisReply *r, tally *t) {
    const cp__run_spec *s = x->spec;
    const char *key = cs->batch.keys + i * x->keystride;
    size_t klen = cs->batch.keylen[i];
    t->checked++;
    if (r->type != REDIS_REPLY_STRING) {
        record_mismatch(x, cs, key, klen, "not a string");
        return;
    }
    uint32_t version = 0;
    cp__verify_result vr = cp__value_verify(s->vf, r->str, r->len, key, klen, &version);
    if (vr != CP__VERIFY_OK)
        record_mismatch(x, cs, key, klen, cp__verify_result_str(vr));
    else if (s->acked != NULL && version < cs->batch.kver[i])
        t->stale++;
}

/* Adds a batch's counters to the worker's totals, its second, and the live counters. */
static void add_tally(wctx *x, const tally *t) {
    cp__worker *w = x->w;
    if (t->errors > 0) {
        uint64_t now = cp__now_ns();
        if (w->first_fail_ns == 0)
            w->first_fail_ns = now;
        w->last_fail_ns = now;
    }
    w->ops += t->ops;
    w->sets += t->sets;
    w->gets += t->gets;
    w->misses += t->misses;
    w->checked += t->checked;
    w->stale += t->stale;
    x->slot->ops += t->ops;
    x->slot->errors += t->errors;
    x->slot->gets += t->gets;
    x->slot->misses += t->misses;
    x->slot->stale += t->stale;
    atomic_store_explicit(&w->live_ops, w->ops, memory_order_relaxed);
    atomic_store_explicit(&w->live_errors, w->failed + w->unknown, memory_order_relaxed);
    atomic_store_explicit(&w->live_mismatches, w->mismatches, memory_order_relaxed);
}

/* Accounts every command of the finished batch and resets the pipeline for the next one. */
static void finish_batch(wctx *x, cp__client_state *cs) {
    const cp__run_spec *s = x->spec;
    cp_pipeline *p = cs->p;
    cp__hist *hist = &x->slot->hist;
    size_t n = cp_count(p);
    tally t = {0};
    /* Replies parsed in one wake-up share their clock reading, and a batch's requests their
     * send's, so latencies come in runs of equal values: a run is one histogram update. */
    uint64_t run_ns = 0, run = 0;
    for (size_t i = 0; i < n; i++) {
        cp_outcome oc = cp_get_outcome(p, i);
        const redisReply *r = cp_reply(p, i);
        uint64_t keys = cs->cmdkeys != NULL ? cs->cmdkeys[i] : 1;
        if (oc != CP_DONE || r == NULL || r->type == REDIS_REPLY_ERROR) {
            account_failure(x->w, p, oc, r, keys);
            t.errors += keys;
            continue;
        }
        uint64_t sent, done;
        if (cp_timing(p, i, &sent, &done) == 0 && done >= sent) {
            if (done - sent != run_ns) {
                cp__hist_record_n_ns(hist, run_ns, run);
                run_ns = done - sent;
                run = 0;
            }
            run++;
        }
        if (cs->cmdkeys != NULL) { /* an MSET: load, no version tracking */
            t.ops += keys;
            t.sets += keys;
            continue;
        }
        t.ops++;
        if (cs->batch.isset[i]) {
            t.sets++;
            if (s->acked != NULL && r->type == REDIS_REPLY_STATUS) /* one writer per key */
                atomic_store_explicit(&s->acked[cs->batch.kidx[i]], cs->batch.kver[i],
                                      memory_order_relaxed);
            continue;
        }
        t.gets++;
        if (r->type == REDIS_REPLY_NIL)
            t.misses++;
        else if (s->verify)
            verify_get(x, cs, i, r, &t);
    }
    cp__hist_record_n_ns(hist, run_ns, run); /* the main thread merges the seconds' histograms */
    add_tally(x, &t);
    cp_pipeline_reset(p);
}

/* ---- key streams and lanes ------------------------------------------------------------------ */

/* The slot's lane per the slot map read at the start: its master, or lane 0 for a slot nobody
 * serves (the library then gets CLUSTERDOWN, or MOVED once someone does). */
static int map_lane(const wctx *x, unsigned slot) {
    int owner = x->lanes > 1 ? x->spec->map->owner[slot] : 0;
    return owner >= 0 ? owner : 0;
}

static int slot_lane(const wctx *x, unsigned slot) {
    int lane = x->block_lane[slot >> LANE_BLOCK_SHIFT];
    return lane != LANE_MIXED ? lane : map_lane(x, slot);
}

/* Fills x->block_lane from the slot map (a block is LANE_MIXED unless one lane owns all of it). */
static void lane_blocks(wctx *x) {
    for (unsigned b = 0; b < LANE_BLOCKS; b++) {
        unsigned first = b << LANE_BLOCK_SHIFT;
        int lane = x->lanes < LANE_MIXED ? map_lane(x, first) : LANE_MIXED;
        for (unsigned s = first + 1; s < first + (1u << LANE_BLOCK_SHIFT); s++)
            if (map_lane(x, s) != lane)
                lane = LANE_MIXED;
        x->block_lane[b] = (uint8_t)lane;
    }
}

/* Refills the group's load chunk: the next LOAD_CHUNK keys of its range, sorted by slot (a
 * counting sort), then grouped by lane keeping that order (a second, stable one). */
static void load_chunk(wctx *x, cp__group *g) {
    uint64_t left = g->quota - g->drawn;
    size_t n = left < LOAD_CHUNK ? (size_t)left : LOAD_CHUNK;
    uint32_t *count = x->slot_count;
    memset(count, 0, (CP_SLOTS + 1) * sizeof(*count));
    for (size_t i = 0; i < n; i++) {
        uint64_t idx = cp__keygen_next(&g->kg);
        size_t klen = cp__key_format_digits(x->spec->kf, idx, x->keybuf);
        x->chunk_slot[i] = (uint16_t)cp__key_slot(x->spec->kf, idx, x->keybuf, klen);
        x->chunk_idx[i] = idx;
        count[x->chunk_slot[i] + 1]++;
    }
    for (int s = 0; s < CP_SLOTS; s++) /* count[s]: where slot s's keys start */
        count[s + 1] += count[s];
    for (size_t i = 0; i < n; i++) {
        uint32_t pos = count[x->chunk_slot[i]]++;
        g->chunk[pos] = x->chunk_idx[i];
        x->sorted_slot[pos] = x->chunk_slot[i];
    }
    memset(g->lane_cur, 0, sizeof(g->lane_cur));
    for (size_t i = 0; i < n; i++)
        g->lane_cur[slot_lane(x, x->sorted_slot[i])]++;
    for (int l = 0, start = 0; l < x->lanes; l++) { /* lane_cur[l]: where lane l's keys start */
        int c = (int)g->lane_cur[l];
        g->lane_cur[l] = (uint32_t)start;
        start += c;
    }
    memcpy(g->lane_end, g->lane_cur, sizeof(g->lane_cur));
    for (size_t i = 0; i < n; i++)
        x->chunk_idx[g->lane_end[slot_lane(x, x->sorted_slot[i])]++] = g->chunk[i];
    memcpy(g->chunk, x->chunk_idx, n * sizeof(*g->chunk));
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
static uint64_t next_load_key(wctx *x, cp__group *g, int *lane) {
    if (g->left == 0)
        load_chunk(x, g);
    int l = g->turn; /* no `%` here: a division per key was a sixth of this function */
    while (g->lane_cur[l] == g->lane_end[l])
        l = l + 1 == x->lanes ? 0 : l + 1;
    g->turn = l + 1 == x->lanes ? 0 : l + 1;
    g->left--;
    *lane = l;
    return g->chunk[g->lane_cur[l]++];
}

/* The group's next request; its key is left in x->keybuf. */
static size_t generate(wctx *x, cp__group *g, req *r) {
    const cp__run_spec *s = x->spec;
    uint64_t n = g->issued++;
    int set = cp__ratio_is_set(n, s->ratio_set, s->ratio_get);
    int lane = -1; /* known for load's keys; else from the key's slot below */
    uint64_t idx = g->chunk != NULL ? next_load_key(x, g, &lane) : cp__keygen_next(&g->kg);
    uint32_t version = s->version;
    if (s->acked != NULL) { /* SETs only to this client's keys (engine.h), fresh versions */
        uint64_t c = (uint64_t)s->clients;
        if (set && idx % c != (uint64_t)g->gindex) {
            idx = idx - idx % c + (uint64_t)g->gindex;
            if (idx >= s->keys)
                idx -= c;
        }
        version =
            set ? x->w->next_version++ : atomic_load_explicit(&s->acked[idx], memory_order_relaxed);
    }
    size_t klen = cp__key_format_digits(s->kf, idx, x->keybuf);
    /* The key's slot, found once here (a per-master key's from its tag, any other's hashed): it
     * picks the lane, groups load's MSETs (compose_mset) and goes to the library with the
     * command (cp_append_argv_slot), which would otherwise hash the key again. Not needed for
     * GET and SET through a proxy. */
    unsigned slot =
        s->map != NULL || s->mset_keys > 1 ? cp__key_slot(s->kf, idx, x->keybuf, klen) : 0;
    *r = (req){.idx = idx,
               .version = version,
               .slot = (uint16_t)slot,
               .set = (uint8_t)set,
               .lane = lane >= 0 ? lane : slot_lane(x, slot)};
    return klen;
}

/* Moves n requests from src[si..] to dst[di..] (the ranges may overlap). */
static void move_reqs(const wctx *x, reqbuf *dst, size_t di, const reqbuf *src, size_t si,
                      size_t n) {
    memmove(dst->keys + di * x->keystride, src->keys + si * x->keystride, n * x->keystride);
    memmove(dst->keylen + di, src->keylen + si, n);
    memmove(dst->slot + di, src->slot + si, n * sizeof(*src->slot));
    memmove(dst->isset + di, src->isset + si, n);
    if (src->kidx != NULL) {
        memmove(dst->kidx + di, src->kidx + si, n * sizeof(*src->kidx));
        memmove(dst->kver + di, src->kver + si, n * sizeof(*src->kver));
    }
}

/* Appends a request to a queue (take keeps head + n within its buffers). */
static void push(wctx *x, reqbuf *q, const req *r, size_t klen) {
    size_t i = q->head + q->n++;
    memcpy(q->keys + i * x->keystride, x->keybuf, klen);
    q->keylen[i] = (uint8_t)klen;
    q->slot[i] = r->slot;
    q->isset[i] = r->set;
    if (q->kidx != NULL) {
        q->kidx[i] = r->idx;
        q->kver[i] = r->version;
    }
}

/* Runs the client's key stream until lane cs has a batch queued, the quota is spent, or a
 * request is for a lane whose queue is full (it waits in the carry: the stream keeps its order). */
static void fill(wctx *x, cp__client_state *cs) {
    cp__group *g = cs->g;
    size_t batch = x->spec->batch, cap = x->qcap;
    while (cs->queue.n < batch) {
        req r;
        size_t klen;
        if (g->has_carry) {
            r = g->carry;
            klen = cp__key_format_digits(x->spec->kf, r.idx, x->keybuf);
        } else if (g->issued < g->quota) {
            klen = generate(x, g, &r);
        } else {
            return;
        }
        cp__client_state *to = &x->w->cs[g->lane0 + r.lane];
        g->has_carry = to->queue.n == cap;
        if (g->has_carry) {
            g->carry = r;
            return;
        }
        push(x, &to->queue, &r, klen);
    }
}

/* Makes up to a batch of requests from the front of lane cs's queue its executing batch. The
 * batch is a view of the queue's buffers (no copy): they keep its requests until the lane's next
 * take, which comes after the batch finished, and only take moves requests. Before taking, the
 * rest moves to the front of the buffers once the taken prefix is at least as long as it: a move
 * then costs at most one request per request taken, even for a lane that stays full (a hot
 * master under zipf), and the queue touches about twice what it holds instead of cycling through
 * the whole buffer (4,096 requests is 70 KB or more per lane, more than the caches hold for 40
 * lanes). That step leaves head < n or head == 0, so through the take and the pushes up to the
 * next one head + n stays within the buffers' 2 x cap + batch. */
static void take(wctx *x, cp__client_state *cs) {
    reqbuf *q = &cs->queue;
    if (q->head > 0 && q->n <= q->head) {
        move_reqs(x, q, 0, q, q->head, q->n);
        q->head = 0;
    }
    size_t h = q->head, n = q->n < x->spec->batch ? q->n : x->spec->batch;
    cs->batch = (reqbuf){.keys = q->keys + h * x->keystride,
                         .keylen = q->keylen + h,
                         .slot = q->slot + h,
                         .isset = q->isset + h,
                         .kidx = q->kidx != NULL ? q->kidx + h : NULL,
                         .kver = q->kver != NULL ? q->kver + h : NULL,
                         .n = n};
    q->n -= n;
    q->head = h + n; /* not back to 0 when empty: pushes would overwrite the batch */
}

/* load: the batch as MSETs, each of the adjacent keys that share a slot (up to mset_keys). A
 * server then parses, looks up, executes and answers one command per group instead of one per
 * key. Returns the keys appended. */
static size_t compose_mset(wctx *x, cp__client_state *cs) {
    const cp__run_spec *s = x->spec;
    const reqbuf b = cs->batch;
    size_t vs = s->vf->value_size, ncmd = 0;
    for (size_t i = 0; i < b.n;) {
        int argc = 1;
        size_t j = i;
        x->argv[0] = "MSET";
        x->argvlen[0] = 4;
        while (j < b.n && b.slot[j] == b.slot[i] && j - i < (size_t)s->mset_keys) {
            const char *key = b.keys + j * x->keystride;
            char *val = x->valbuf + (j - i) * vs;
            cp__value_fill(s->vf, key, b.keylen[j], s->version, val);
            x->argv[argc] = key;
            x->argvlen[argc++] = b.keylen[j];
            x->argv[argc] = val;
            x->argvlen[argc++] = vs;
            j++;
        }
        if (cp_append_argv_slot(cs->p, argc, x->argv, x->argvlen, b.slot[i]) != 0) { /* OOM */
            note_error(x->w, "%s", "out of memory composing a batch");
            cs->batch.n = i;
            return i;
        }
        cs->cmdkeys[ncmd++] = (uint16_t)(j - i);
        i = j;
    }
    return b.n;
}

/* Appends lane cs's next batch to its pipeline (it becomes the executing batch). */
static size_t compose_batch(wctx *x, cp__client_state *cs) {
    const cp__run_spec *s = x->spec;
    take(x, cs);
    if (cs->cmdkeys != NULL)
        return compose_mset(x, cs);
    reqbuf b = cs->batch;
    for (size_t i = 0; i < b.n; i++) {
        const char *key = b.keys + i * x->keystride;
        size_t klen = b.keylen[i];
        int rc;
        if (b.isset[i]) {
            cp__value_fill(s->vf, key, klen, b.kver != NULL ? b.kver[i] : s->version, x->valbuf);
            const char *argv[3] = {"SET", key, x->valbuf};
            size_t lens[3] = {3, klen, s->vf->value_size};
            rc = cp_append_argv_slot(cs->p, 3, argv, lens, b.slot[i]);
        } else {
            const char *argv[2] = {"GET", key};
            size_t lens[2] = {3, klen};
            rc = cp_append_argv_slot(cs->p, 2, argv, lens, b.slot[i]);
        }
        if (rc != 0) { /* out of memory: run what is appended */
            note_error(x->w, "%s", "out of memory composing a batch");
            cs->batch.n = i;
            return i;
        }
    }
    return b.n;
}

static void lane_done(wctx *x, cp__client_state *cs) {
    cs->state = CS_DONE;
    unregister(x, cs);
    x->active--;
}

/* Decides what lane cs does next after a batch (or at the start): stop, wait for its rate slot
 * or for keys, or start the next batch; loops when a batch completes without any I/O. */
static void lane_next(wctx *x, cp__client_state *cs, uint64_t now) {
    cp__group *g = cs->g;
    int idx = (int)(cs - x->w->cs);
    for (;;) {
        int stop = atomic_load_explicit(&x->w->sync->stop, memory_order_relaxed);
        if (stop || (x->end_ns != 0 && now >= x->end_ns)) {
            lane_done(x, cs);
            return;
        }
        if (x->rate_interval_ns != 0) {
            cs->next_start_ns = x->start_ns + g->sent * x->rate_interval_ns;
            if (now < cs->next_start_ns) {
                cs->state = CS_IDLE;
                return;
            }
        }
        fill(x, cs);
        if (cs->queue.n == 0) {
            if (g->issued >= g->quota && !g->has_carry)
                lane_done(x, cs);
            else
                cs->state = CS_WAIT; /* another lane's queue is full: it frees the stream */
            return;
        }
        if (compose_batch(x, cs) == 0) {
            lane_done(x, cs);
            return;
        }
        g->sent += cs->batch.n;
        cs->state = CS_EXEC;
        int rc = cp_exec_start(cs->p);
        if (rc == 0) {
            resync(x, cs, idx, cp_pipeline_err(cs->p) != 0);
            return;
        }
        finish_batch(x, cs);
        now = cp__now_ns();
    }
}

/* After lane cs finished a batch: its next one, then any lane of its client that was waiting
 * for the key stream (which cs just moved). */
static void advance(wctx *x, cp__client_state *cs, uint64_t now) {
    lane_next(x, cs, now);
    cp__group *g = cs->g;
    for (int again = 1; again;) {
        again = 0;
        for (int l = 0; l < x->lanes; l++) {
            cp__client_state *o = &x->w->cs[g->lane0 + l];
            if (o->state != CS_WAIT)
                continue;
            lane_next(x, o, now);
            again |= o->state != CS_WAIT;
        }
    }
}

/* Runs library timers (I/O timeouts, retry rounds) that are due, for every executing lane;
 * starts lanes whose rate slot came, and lanes waiting for keys once the run must stop. */
static void sweep(wctx *x, uint64_t now) {
    cp__worker *w = x->w;
    int stop = atomic_load_explicit(&w->sync->stop, memory_order_relaxed) ||
               (x->end_ns != 0 && now >= x->end_ns);
    for (int i = 0; i < w->ncs; i++) {
        cp__client_state *cs = &w->cs[i];
        if ((cs->state == CS_IDLE && x->rate_interval_ns != 0 && now >= cs->next_start_ns) ||
            (cs->state == CS_WAIT && stop)) {
            advance(x, cs, now);
            continue;
        }
        if (cs->state != CS_EXEC || cp_exec_timeout_ms(cs->p) != 0)
            continue;
        if (cp_exec_on_timer(cs->p) == 1) {
            finish_batch(x, cs);
            advance(x, cs, cp__now_ns());
        } else {
            resync(x, cs, i, cp_pipeline_err(cs->p) != 0);
        }
    }
}

/* An event on a client that is not executing: data or a close on an idle connection. Stop
 * watching that fd until the next batch, or level-triggered epoll would spin on it. */
static void idle_event(wctx *x, cp__client_state *cs, int fd) {
    int n = cp_client_pollfds(cs->c, cs->cur, cs->capcur);
    for (int i = 0; i < n && i < cs->capcur; i++)
        if (cs->cur[i].fd == fd) {
            epoll_ctl(x->epfd, EPOLL_CTL_DEL, fd, NULL);
            break;
        }
    for (int j = 0; j < cs->nreg; j++)
        if (cs->reg[j].fd == fd) {
            cs->reg[j] = cs->reg[--cs->nreg];
            break;
        }
}

static void run_loop(wctx *x) {
    cp__worker *w = x->w;
    struct epoll_event evs[MAX_EVENTS];
    uint64_t now = cp__now_ns();
    x->next_sweep = now + SWEEP_NS;
    for (int i = 0; i < w->ncs; i++)
        if (w->cs[i].state == CS_IDLE)
            advance(x, &w->cs[i], now);
    while (x->active > 0) {
        close_seconds(x, now);
        uint64_t wake = x->next_sweep;
        uint64_t sec_end = x->start_ns + (x->cur_sec + 1) * NS;
        if (sec_end < wake)
            wake = sec_end;
        int timeout = wake <= now ? 0 : (int)((wake - now + 999999) / 1000000);
        int n = epoll_wait(x->epfd, evs, MAX_EVENTS, timeout);
        if (n < 0 && errno != EINTR) {
            note_error(w, "epoll_wait: %s", strerror(errno));
            break;
        }
        now = cp__now_ns();
        int nfinished = 0;
        for (int k = 0; k < n; k++) {
            int idx = (int)(evs[k].data.u64 >> 32);
            int fd = (int)(uint32_t)evs[k].data.u64;
            cp__client_state *cs = &w->cs[idx];
            if (cs->state != CS_EXEC) {
                idle_event(x, cs, fd);
                continue;
            }
            if (cp_exec_on_ready(cs->p, fd, (short)evs[k].events) == 1) {
                finish_batch(x, cs);
                cs->state = CS_IDLE;
                x->finished[nfinished++] = idx;
            } else {
                resync(x, cs, idx, cp_pipeline_err(cs->p) != 0);
            }
        }
        /* Next batches go out together after every reply of this wake-up was read, so each
         * server receives them in one burst and handles them in one pass of its event loop
         * instead of waking up once per lane (measured: fewer server wake-ups, less server
         * CPU per request). */
        for (int k = 0; k < nfinished; k++)
            advance(x, &w->cs[x->finished[k]], now);
        if (now >= x->next_sweep) {
            sweep(x, now);
            x->next_sweep = now + SWEEP_NS;
        }
    }
}

/* ---- setup ---------------------------------------------------------------------------------- */

static int setup_err(cp__worker *w, int code, const char *fmt, const char *a, const char *b) {
    if (w->setup_err == 0) {
        w->setup_err = code;
        snprintf(w->setup_errstr, sizeof(w->setup_errstr), fmt, a, b);
    }
    return code;
}

static int reqbuf_alloc(wctx *x, reqbuf *b, size_t n) {
    b->keys = malloc(n * x->keystride);
    b->keylen = malloc(n);
    b->slot = malloc(n * sizeof(*b->slot));
    b->isset = malloc(n);
    if (x->spec->acked != NULL) {
        b->kidx = malloc(n * sizeof(*b->kidx));
        b->kver = malloc(n * sizeof(*b->kver));
        if (b->kidx == NULL || b->kver == NULL)
            return CP_ENOMEM;
    }
    return b->keys != NULL && b->keylen != NULL && b->slot != NULL && b->isset != NULL ? 0
                                                                                       : CP_ENOMEM;
}

static void reqbuf_free(reqbuf *b) {
    free(b->keys);
    free(b->keylen);
    free(b->slot);
    free(b->isset);
    free(b->kidx);
    free(b->kver);
}

/* Connects lane cs and runs one untimed GET on its master (or the proxy), so its connection is
 * open and authenticated before the measured interval, and an unusable target fails here (the
 * lanes of a client together probe every master). */
static int setup_client(wctx *x, cp__client_state *cs) {
    const cp__run_spec *s = x->spec;
    cp__worker *w = x->w;
    char ep[CP__HOST_MAX + 16];
    cp_options opt = CP_OPTIONS_INIT;
    if (s->mode == CP__TARGET_CLUSTER) {
        opt.seeds = s->seeds;
    } else {
        const cp__node_addr *a = &s->endpoints[cs->endpoint];
        snprintf(ep, sizeof(ep), strchr(a->host, ':') ? "[%s]:%d" : "%s:%d", a->host, a->port);
        opt.endpoint = ep;
    }
    cp__bench_target_options(s->target, &opt);
    if (s->io_timeout_ms > 0)
        opt.io_timeout_ms = s->io_timeout_ms;
    if (s->retry_budget_ms >= 0)
        opt.retry_budget_ms = s->retry_budget_ms;
    cs->c = cp_connect(&opt);
    if (cs->c == NULL)
        return setup_err(w, CP_ENOMEM, "%s%s", "out of memory", "");
    if (cs->c->err != 0)
        return setup_err(w, cs->c->err, "cannot reach %.60s: %.180s",
                         s->mode == CP__TARGET_CLUSTER ? "the cluster" : ep, cs->c->errstr);
    cs->p = cp_pipeline_new(cs->c);
    cs->capcur = cs->capreg = 16;
    cs->cur = calloc(16, sizeof(*cs->cur));
    cs->reg = calloc(16, sizeof(*cs->reg));
    if (s->mset_keys > 1)
        cs->cmdkeys = malloc(s->batch * sizeof(*cs->cmdkeys));
    if (cs->p == NULL || reqbuf_alloc(x, &cs->queue, 2 * x->qcap + s->batch) != 0 ||
        cs->cur == NULL || cs->reg == NULL || (s->mset_keys > 1 && cs->cmdkeys == NULL))
        return setup_err(w, CP_ENOMEM, "%s%s", "out of memory", "");

    /* The lane's master (cluster) or the proxy. */
    char key[CP__KEY_MAX_LEN];
    uint64_t probe = s->map != NULL ? s->probe_keys[cs->lane] : 0;
    int warm = 0;
    if (probe != UINT64_MAX) {
        size_t klen = cp__key_format(s->kf, probe, key);
        const char *argv[2] = {"GET", key};
        size_t lens[2] = {3, klen};
        warm = cp_append_argv(cs->p, 2, argv, lens) == 0;
    }
    int rc = warm > 0 ? cp_exec(cs->p) : 0;
    if (rc != 0)
        return setup_err(w, rc, "target not serving: %s%s", cp_pipeline_errstr(cs->p), "");
    for (size_t i = 0; i < cp_count(cs->p); i++) {
        const redisReply *r = cp_reply(cs->p, i);
        if (r != NULL && r->type == REDIS_REPLY_ERROR)
            return setup_err(w, CP_ESERVER, "target not serving: %s%s", r->str, "");
    }
    cp_pipeline_reset(cs->p);
    return 0;
}

static void *worker_main(void *arg) {
    cp__worker *w = arg;
    const cp__run_spec *s = w->spec;
    wctx x;
    memset(&x, 0, sizeof(x));
    x.w = w;
    x.spec = s;
    x.epfd = epoll_create1(EPOLL_CLOEXEC);
    size_t per_cmd = s->mset_keys > 1 ? (size_t)s->mset_keys : 1; /* keys per command, at most */
    x.valbuf = malloc(s->vf->value_size * per_cmd + 1);
    x.argv = malloc((1 + 2 * per_cmd) * sizeof(*x.argv));
    x.argvlen = malloc((1 + 2 * per_cmd) * sizeof(*x.argvlen));
    x.keystride = cp__key_max_len(s->kf, s->keys);
    size_t req_bytes = x.keystride + 4; /* a queued request: key, length, slot, SET or GET */
    if (s->acked != NULL)
        req_bytes += sizeof(uint64_t) + sizeof(uint32_t); /* kidx, kver */
    x.qcap = queue_cap(s->batch, w->ncs, req_bytes);
    x.keybuf = malloc(x.keystride);
    x.lanes = s->lanes;
    lane_blocks(&x);
    x.finished = malloc((size_t)(w->ncs > 0 ? w->ncs : 1) * sizeof(*x.finished));
    if (x.epfd < 0 || x.valbuf == NULL || x.argv == NULL || x.argvlen == NULL || x.keybuf == NULL ||
        x.finished == NULL)
        setup_err(w, CP_ENOMEM, "%s%s", "cannot create the event loop", "");
    else /* keys are generated in place: only the digits change */
        memcpy(x.keybuf, s->kf->prefix, s->kf->prefix_len);
    for (int i = 0; i < w->nclients && w->setup_err == 0; i++) {
        cp__group *g = &w->groups[i];
        g->gindex = w->first_client + i;
        g->lane0 = i * x.lanes;
        if (cp__keygen_init(&g->kg, &s->dist, s->keys, s->seed, (uint64_t)g->gindex,
                            (uint64_t)s->clients) != 0) {
            setup_err(w, CP_EINVAL, "%s%s", "bad key distribution", "");
            break;
        }
        if (s->exact_cover && x.lanes > 1) { /* load into a cluster: slot order */
            g->quota = cp__keygen_share(&g->kg);
            if ((g->chunk = malloc(LOAD_CHUNK * sizeof(*g->chunk))) == NULL ||
                (x.slot_count == NULL &&
                 (x.slot_count = malloc((CP_SLOTS + 1) * sizeof(*x.slot_count))) == NULL) ||
                (x.chunk_slot == NULL &&
                 (x.chunk_slot = malloc(LOAD_CHUNK * sizeof(*x.chunk_slot))) == NULL) ||
                (x.sorted_slot == NULL &&
                 (x.sorted_slot = malloc(LOAD_CHUNK * sizeof(*x.sorted_slot))) == NULL) ||
                (x.chunk_idx == NULL &&
                 (x.chunk_idx = malloc(LOAD_CHUNK * sizeof(*x.chunk_idx))) == NULL)) {
                setup_err(w, CP_ENOMEM, "%s%s", "out of memory", "");
                break;
            }
        } else if (s->exact_cover)
            g->quota = cp__keygen_share(&g->kg);
        else if (s->requests > 0)
            g->quota = cp__client_quota(s->requests, s->clients, g->gindex);
        else
            g->quota = UINT64_MAX;
        for (int l = 0; l < x.lanes && w->setup_err == 0; l++) {
            cp__client_state *cs = &w->cs[g->lane0 + l];
            cs->g = g;
            cs->lane = l;
            cs->endpoint = s->nendpoints > 0 ? g->gindex % s->nendpoints : 0;
            if (setup_client(&x, cs) == 0)
                cp_get_stats(cs->c, &cs->base);
        }
    }

    cp__run_sync *sy = w->sync;
    pthread_mutex_lock(&sy->mu);
    sy->arrived++;
    pthread_cond_broadcast(&sy->cv);
    while (!sy->go)
        pthread_cond_wait(&sy->cv, &sy->mu);
    int abort = sy->abort;
    x.start_ns = sy->start_ns;
    pthread_mutex_unlock(&sy->mu);
    if (!abort && w->setup_err == 0) {
        if (s->requests == 0 && !s->exact_cover)
            x.end_ns = x.start_ns + s->duration_ns;
        if (s->rate > 0)
            x.rate_interval_ns = (uint64_t)((double)s->clients * 1e9 / s->rate);
        x.active = w->ncs;
        for (int i = 0; i < w->ncs; i++)
            resync(&x, &w->cs[i], i, 1);
        open_slot(&x, 0);
        run_loop(&x);
        w->finish_ns = cp__now_ns();
        close_seconds(&x, w->finish_ns);
        slot_redirects(&x);
        atomic_store_explicit(&w->closed, x.cur_sec + 1, memory_order_release);
    }
    for (int i = 0; i < w->ncs; i++) {
        cp__client_state *cs = &w->cs[i];
        if (cs->c == NULL)
            continue;
        cp_stats st;
        cp_get_stats(cs->c, &st);
        w->stats.moved += st.moved - cs->base.moved;
        w->stats.ask += st.ask - cs->base.ask;
        w->stats.tryagain += st.tryagain - cs->base.tryagain;
        w->stats.clusterdown += st.clusterdown - cs->base.clusterdown;
        w->stats.loading += st.loading - cs->base.loading;
        w->stats.io_retries += st.io_retries - cs->base.io_retries;
        w->stats.refreshes += st.refreshes - cs->base.refreshes;
    }
    if (x.epfd >= 0)
        close(x.epfd);
    free(x.valbuf);
    free(x.argv);
    free(x.argvlen);
    free(x.keybuf);
    free(x.finished);
    free(x.slot_count);
    free(x.chunk_slot);
    free(x.sorted_slot);
    free(x.chunk_idx);
    atomic_store_explicit(&w->done, 1, memory_order_release);
    return NULL;
}

/* ---- main-thread side ----------------------------------------------------------------------- */

static int workers_start(const cp__run_spec *spec, cp__run_sync *sync, cp__worker **out) {
    int n = spec->threads;
    *out = NULL;
    cp__worker *w = calloc((size_t)n, sizeof(*w));
    if (w == NULL)
        return CP_ENOMEM;
    atomic_store(&sync->stop, 0);
    pthread_mutex_init(&sync->mu, NULL);
    pthread_cond_init(&sync->cv, NULL);
    sync->started = sync->arrived = sync->go = sync->abort = 0;
    int first = 0;
    for (int t = 0; t < n; t++) {
        w[t].spec = spec;
        w[t].sync = sync;
        w[t].index = t;
        w[t].next_version = 2; /* load writes version 1 */
        w[t].first_client = first;
        w[t].nclients = cp__clients_of_thread(spec->clients, n, t);
        first += w[t].nclients;
        w[t].ncs = w[t].nclients * spec->lanes;
        w[t].cs = calloc((size_t)w[t].ncs, sizeof(*w[t].cs));
        w[t].groups = calloc((size_t)w[t].nclients, sizeof(*w[t].groups));
        if (w[t].cs == NULL || w[t].groups == NULL) {
            w[t].setup_err = CP_ENOMEM;
            snprintf(w[t].setup_errstr, sizeof(w[t].setup_errstr), "out of memory");
        }
    }
    *out = w;
    for (int t = 0; t < n; t++) {
        if (pthread_create(&w[t].tid, NULL, worker_main, &w[t]) != 0)
            return CP_ENOMEM; /* the caller still calls ready/go(abort)/join/free */
        w[t].started = true;
        sync->started++;
    }
    return 0;
}

static int workers_ready(cp__worker *w, int n, cp__run_sync *sync, char *err, size_t errlen) {
    pthread_mutex_lock(&sync->mu);
    while (sync->arrived < sync->started)
        pthread_cond_wait(&sync->cv, &sync->mu);
    pthread_mutex_unlock(&sync->mu);
    for (int t = 0; t < n; t++)
        if (w[t].setup_err != 0) {
            snprintf(err, errlen, "%s", w[t].setup_errstr);
            return w[t].setup_err;
        }
    return 0;
}

static void workers_go(cp__run_sync *sync, int abort) {
    pthread_mutex_lock(&sync->mu);
    sync->abort = abort;
    sync->start_ns = cp__now_ns();
    sync->go = 1;
    pthread_cond_broadcast(&sync->cv);
    pthread_mutex_unlock(&sync->mu);
}

static int poll_seconds(cp__worker *w, int n, uint64_t *next, cp__sec_slot *scratch,
                        void (*on_second)(void *ud, uint64_t sec, const cp__sec_slot *sum),
                        void *ud) {
    for (;;) {
        uint64_t s = *next;
        int ready = 1, any = 0, all_done = 1;
        for (int t = 0; t < n; t++) {
            int done = atomic_load_explicit(&w[t].done, memory_order_acquire);
            uint64_t closed = atomic_load_explicit(&w[t].closed, memory_order_acquire);
            all_done &= done;
            if (closed > s)
                any = 1;
            else if (!done)
                ready = 0;
        }
        if (!ready || !any)
            return all_done;
        cp__hist_init(&scratch->hist);
        scratch->ops = scratch->errors = scratch->mismatches = 0;
        scratch->gets = scratch->misses = scratch->stale = scratch->moved = scratch->ask = 0;
        for (int t = 0; t < n; t++) {
            if (atomic_load_explicit(&w[t].closed, memory_order_acquire) <= s)
                continue;
            const cp__sec_slot *sl = &w[t].ring[s % CP__RING];
            cp__hist_merge(&scratch->hist, &sl->hist);
            scratch->ops += sl->ops;
            scratch->errors += sl->errors;
            scratch->mismatches += sl->mismatches;
            scratch->gets += sl->gets;
            scratch->misses += sl->misses;
            scratch->stale += sl->stale;
            scratch->moved += sl->moved;
            scratch->ask += sl->ask;
        }
        for (int t = 0; t < n; t++)
            atomic_store_explicit(&w[t].consumed, s + 1, memory_order_release);
        if (on_second != NULL)
            on_second(ud, s, scratch);
        *next = s + 1;
    }
}

static void workers_join(cp__worker *w, int n) {
    for (int t = 0; t < n; t++)
        if (w[t].started) {
            pthread_join(w[t].tid, NULL);
            w[t].started = false;
        }
}

int cp__run_execute(const cp__run_spec *spec, const cp__run_hooks *h, cp__worker **out,
                    uint64_t *start_ns, char *err, size_t errlen) {
    cp__run_sync *sync = calloc(1, sizeof(*sync));
    cp__sec_slot *scratch = malloc(sizeof(*scratch));
    int n = spec->threads, rc;
    *out = NULL;
    *start_ns = 0;
    if (sync == NULL || scratch == NULL) {
        free(sync);
        free(scratch);
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    rc = workers_start(spec, sync, out);
    if (rc != 0)
        snprintf(err, errlen, "cannot start %d worker threads", n);
    if (*out == NULL) {
        free(sync);
        free(scratch);
        return rc;
    }
    int rc2 = workers_ready(*out, n, sync, err, errlen);
    if (rc == 0)
        rc = rc2;
    if (rc == 0 && h->before_go != NULL)
        h->before_go(h->ud);
    workers_go(sync, rc != 0);
    *start_ns = sync->start_ns;
    if (rc == 0) {
        uint64_t next = 0, last_tick = sync->start_ns;
        for (;;) {
            struct timespec ts = {0, 20000000};
            nanosleep(&ts, NULL);
            if (h->cancel != NULL && *h->cancel)
                atomic_store(&sync->stop, 1);
            /* Always merged, even without a callback: workers reuse slots only once consumed. */
            poll_seconds(*out, n, &next, scratch, h->on_second, h->ud);
            uint64_t now = cp__now_ns();
            if (h->tick != NULL && now - last_tick >= h->tick_ns) {
                uint64_t ops = 0, errs = 0, mism = 0;
                for (int t = 0; t < n; t++) {
                    ops += atomic_load_explicit(&(*out)[t].live_ops, memory_order_relaxed);
                    errs += atomic_load_explicit(&(*out)[t].live_errors, memory_order_relaxed);
                    mism += atomic_load_explicit(&(*out)[t].live_mismatches, memory_order_relaxed);
                }
                h->tick(h->ud, now - sync->start_ns, ops, errs, mism);
                last_tick = now;
            }
            int done = 1;
            for (int t = 0; t < n; t++)
                done &= atomic_load_explicit(&(*out)[t].done, memory_order_acquire);
            if (done)
                break;
        }
        workers_join(*out, n);
        poll_seconds(*out, n, &next, scratch, h->on_second, h->ud);
    } else {
        workers_join(*out, n);
    }
    pthread_mutex_destroy(&sync->mu);
    pthread_cond_destroy(&sync->cv);
    free(sync);
    free(scratch);
    return rc;
}

void cp__workers_free(cp__worker *w, int n) {
    if (w == NULL)
        return;
    for (int t = 0; t < n; t++) {
        for (int i = 0; w[t].cs != NULL && i < w[t].ncs; i++) {
            cp__client_state *cs = &w[t].cs[i];
            cp_pipeline_free(cs->p);
            if (cs->c != NULL)
                cp_free(cs->c);
            reqbuf_free(&cs->queue);
            free(cs->cmdkeys);
            free(cs->cur);
            free(cs->reg);
        }
        free(w[t].cs);
        for (int i = 0; w[t].groups != NULL && i < w[t].nclients; i++)
            free(w[t].groups[i].chunk);
        free(w[t].groups);
    }
    free(w);
}
