/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The per-thread event loop of the bench engine (worker.h): each worker thread owns an epoll
 * instance and its share of the clients (per master a lane: a cp_client + a cp_pipeline). This
 * file is the thread's life: its clients connected and warmed up, the gate, the loop that waits
 * (poller.c), lets the batches that ended go on (flight.c: each lane's next batch composed by
 * compose.c, run with cp_exec_async, its replies tallied by tally.c), closes each second
 * (seconds.c) and sweeps the library's timers every 10 ms, and the end of it all. The thread's
 * context (wctx.h) is one sub-struct per module.
 *
 * Ownership: a worker owns its clients, pipelines, batch metadata and epoll fd; the epoll fd
 * and the loop's scratch (the context's sub-structs, each freed by its module) are freed when
 * cp__worker_main returns, the rest by cp__worker_free.
 * Threads: see worker.h; everything non-atomic in a cp__worker is touched by its own thread
 * until pthread_join.
 */
#include "bench/worker.h"

#include "bench/compose.h"
#include "bench/flight.h"
#include "bench/poller.h"
#include "bench/tally.h"
#include "bench/target.h"
#include "util/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS 1000000000ull
#define SWEEP_NS 10000000ull /* how often library timers (I/O timeouts, retries) are checked */

/* ---- seconds -------------------------------------------------------------------------------- */

static void open_slot(cp__wctx *x, uint64_t sec) {
    x->time.slot = cp__sec_open(&x->w->ring, sec);
    x->time.cur_sec = sec;
}

/* Redirects followed in the second being closed: the library counts them per client, so the
 * second gets the growth of the sum since the last close (once a second, not per batch). */
static void slot_redirects(cp__wctx *x) {
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
    x->time.slot->moved = sum[0] - w->redirects_seen[0];
    x->time.slot->ask = sum[1] - w->redirects_seen[1];
    w->redirects_seen[0] = sum[0];
    w->redirects_seen[1] = sum[1];
}

static void close_seconds(cp__wctx *x, uint64_t now) {
    while (now >= x->time.start_ns + (x->time.cur_sec + 1) * NS) {
        slot_redirects(x);
        cp__sec_close(&x->w->ring, x->time.cur_sec + 1);
        open_slot(x, x->time.cur_sec + 1);
    }
}

/* ---- the loop ------------------------------------------------------------------------------- */

/* Runs library timers (I/O timeouts, retry rounds) that are due; starts lanes whose rate slot
 * came, and lanes waiting for keys once the run must stop. */
static void sweep(cp__wctx *x, uint64_t now) {
    int stop = cp__gate_stopping(x->w->gate) || (x->time.end_ns != 0 && now >= x->time.end_ns);
    cp__poller_timers(x, now);
    cp__flights_sweep(x, now, stop);
}

static void run_loop(cp__wctx *x) {
    uint64_t now = cp__now_ns();
    x->time.next_sweep = now + SWEEP_NS;
    cp__flights_start(x, now);
    while (x->sched.active > 0) {
        close_seconds(x, now);
        uint64_t wake = x->time.next_sweep;
        uint64_t sec_end = x->time.start_ns + (x->time.cur_sec + 1) * NS;
        if (sec_end < wake)
            wake = sec_end;
        if (x->poll.soonest != 0 && x->poll.soonest < wake)
            wake = x->poll.soonest;
        if (x->sched.next_start != 0 && x->sched.next_start < wake)
            wake = x->sched.next_start;
        int timeout = wake <= now ? 0 : (int)((wake - now + 999999) / 1000000);
        if (cp__poller_wait(x, timeout, &now) != 0)
            break;
        /* Next batches go out together after every reply of this wake-up was read, so each
         * server receives them in one burst and handles them in one pass of its event loop
         * instead of waking up once per lane (measured: fewer server wake-ups, less server
         * CPU per request). */
        cp__flights_finished(x, now);
        if (now >= x->time.next_sweep || (x->poll.soonest != 0 && now >= x->poll.soonest) ||
            (x->sched.next_start != 0 && now >= x->sched.next_start)) {
            sweep(x, now);
            if (now >= x->time.next_sweep)
                x->time.next_sweep = now + SWEEP_NS;
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

/* Appends a PING for the lane's master (cluster: the node of that address; a master the client
 * does not know by it gets a PING wherever the library sends one) or the proxy. */
static int warm_ping(cp__wctx *x, cp__client_state *cs, cp_pipeline *p) {
    const cp__run_spec *s = x->spec;
    if (s->map != NULL) {
        const cp__node_addr *m = &s->map->masters[cs->lane];
        for (int i = 0; i < cp_node_count(cs->c); i++) {
            cp_node_info ni;
            if (cp_node_get(cs->c, i, &ni) == 0 && ni.port == m->port &&
                strcmp(ni.host, m->host) == 0)
                return cp_append_node(p, i, "PING");
        }
    }
    return cp_append(p, "PING");
}

/* Connects lane cs and runs one untimed GET on its master (or the proxy), so its connection is
 * open and authenticated before the measured interval, and an unusable target fails here (the
 * lanes of a client together probe every master). */
static int setup_client(cp__wctx *x, cp__client_state *cs) {
    const cp__run_spec *s = x->spec;
    cp__worker *w = x->w;
    char ep[CP__HOST_MAX + 16];
    cp_options opt = CP_OPTIONS_INIT;
    if (s->mode == CP__TARGET_CLUSTER) {
        opt.seeds = s->seeds;
        opt.commands_from = s->commands;
        opt.read_from = s->read_from;
        opt.client_cache = s->client_cache;        /* the warm-up GET below is its first entry */
        if (s->cmds != NULL && s->cmds->any_other) /* MGET __key__ __otherkey__ and the like */
            opt.flags |= CP_OPT_SPLIT_MULTIKEY;
    } else {
        const cp__node_addr *a = &s->endpoints[cs->endpoint];
        snprintf(ep, sizeof(ep), strchr(a->host, ':') ? "[%s]:%d" : "%s:%d", a->host, a->port);
        opt.endpoint = ep;
    }
    cp__bench_target_options(s->target, &opt);
    if (s->io_timeout_ms > 0)
        opt.io_timeout_ms = s->io_timeout_ms;
    /* < 0: the library's default; 0: no retries (--retry-budget 0), the library's CP_RETRY_NONE */
    if (s->retry_budget_ms >= 0)
        opt.retry_budget_ms = s->retry_budget_ms > 0 ? s->retry_budget_ms : CP_RETRY_NONE;
    cs->c = cp_connect(&opt);
    if (cs->c == NULL)
        return setup_err(w, CP_ENOMEM, "%s%s", "out of memory", "");
    if (cs->c->err != 0)
        return setup_err(w, cs->c->err, "cannot reach %.60s: %.180s",
                         s->mode == CP__TARGET_CLUSTER ? "the cluster" : ep, cs->c->errstr);
    cs->x = x;
    cp__flight *fl = &cs->first;
    if (cp__flights_first(x, cs) != 0)
        return setup_err(w, CP_ENOMEM, "%s%s", "out of memory", "");

    /* The lane's master (cluster) or the proxy. A --command run sends a PING there instead of
     * a GET, so that the servers' count of each of its commands is the run's. */
    char key[CP__KEY_MAX_LEN];
    uint64_t probe = s->map != NULL ? s->probe_keys[cs->lane] : 0;
    int warm = 0;
    if (s->cmds != NULL) {
        warm = warm_ping(x, cs, fl->p) == 0;
    } else if (probe != UINT64_MAX) {
        size_t klen = cp__key_format(s->kf, probe, key);
        const char *argv[2] = {"GET", key};
        size_t lens[2] = {3, klen};
        warm = cp_append_argv(fl->p, 2, argv, lens) == 0;
    }
    int rc = warm > 0 ? cp_exec(fl->p) : 0;
    if (rc != 0)
        return setup_err(w, rc, "target not serving: %s%s", cp_pipeline_errstr(fl->p), "");
    for (size_t i = 0; i < cp_count(fl->p); i++) {
        const redisReply *r = cp_reply(fl->p, i);
        if (r != NULL && r->type == REDIS_REPLY_ERROR)
            return setup_err(w, CP_ESERVER, "target not serving: %s%s", r->str, "");
    }
    cp_pipeline_reset(fl->p);
    /* From here on the client runs on this worker's epoll, without ever blocking. */
    return cp__poller_attach(cs) == 0 ? 0 : setup_err(w, CP_EINVAL, "%s%s", "cp_attach failed", "");
}

static void setup_loop(cp__wctx *x) {
    cp__worker *w = x->w;
    const cp__run_spec *s = x->spec;
    int epoll_rc = cp__poller_open(x);
    int lanes_rc = cp__lanes_init(&x->ls, s, w->ncs);
    if (lanes_rc == 0)
        lanes_rc = cp__compose_init(x);
    if (lanes_rc == 0)
        lanes_rc = cp__tally_init(x);
    int sched_rc = cp__flights_init(x);
    if (epoll_rc != 0 || lanes_rc != 0 || sched_rc != 0) {
        setup_err(w, CP_ENOMEM, "%s%s", "cannot create the event loop", "");
        return;
    }
    for (int i = 0; i < w->nclients && w->setup_err == 0; i++) {
        cp__group *g = &w->groups[i];
        g->lane0 = i * x->ls.lanes;
        int rc = cp__group_init(&x->ls, g, w->first_client + i);
        if (rc != 0) {
            setup_err(w, rc, "%s%s", rc == CP_EINVAL ? "bad key distribution" : "out of memory",
                      "");
            break;
        }
        for (int l = 0; l < x->ls.lanes && w->setup_err == 0; l++) {
            cp__client_state *cs = &w->cs[g->lane0 + l];
            cs->g = g;
            cs->lane = l;
            cs->queue = &g->queue[l];
            cs->endpoint = s->nendpoints > 0 ? g->gindex % s->nendpoints : 0;
            if (setup_client(x, cs) == 0) {
                cp_get_stats(cs->c, &cs->base);
                cp_cache_get_stats(cs->c, &cs->cache_base);
            }
        }
    }
}

/* A client's cache counters over the measured interval into sum, and what it holds now. */
static void sum_cache(cp_cache_stats *sum, const cp__client_state *cs) {
    cp_cache_stats st;
    const cp_cache_stats *b = &cs->cache_base;
    cp_cache_get_stats(cs->c, &st);
    sum->hits += st.hits - b->hits;
    sum->misses += st.misses - b->misses;
    sum->stored += st.stored - b->stored;
    sum->not_stored += st.not_stored - b->not_stored;
    sum->invalidations += st.invalidations - b->invalidations;
    sum->dropped += st.dropped - b->dropped;
    sum->node_drops += st.node_drops - b->node_drops;
    sum->evictions += st.evictions - b->evictions;
    sum->entries += st.entries;
    sum->bytes += st.bytes;
}

/* The library's counters over the measured interval, summed over the worker's clients. */
static void sum_stats(cp__worker *w) {
    for (int i = 0; w->cs != NULL && i < w->ncs; i++) {
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
        sum_cache(&w->cache, cs);
    }
}

void *cp__worker_main(void *arg) {
    cp__worker *w = arg;
    const cp__run_spec *s = w->spec;
    cp__wctx x;
    memset(&x, 0, sizeof(x));
    x.w = w;
    x.spec = s;
    if (w->setup_err == 0)
        setup_loop(&x);
    else
        x.poll.epfd = -1;
    int abort = cp__gate_arrive(w->gate, &x.time.start_ns);
    if (!abort && w->setup_err == 0) {
        if (s->requests == 0 && !s->exact_cover)
            x.time.end_ns = x.time.start_ns + s->duration_ns;
        if (s->rate > 0)
            x.sched.rate_interval_ns = (uint64_t)((double)s->clients * 1e9 / s->rate);
        x.sched.active = w->ncs;
        open_slot(&x, 0);
        run_loop(&x);
        w->finish_ns = cp__now_ns();
        close_seconds(&x, w->finish_ns);
        slot_redirects(&x);
        cp__sec_close(&w->ring, x.time.cur_sec + 1);
    }
    sum_stats(w);
    /* The clients' hooks point into this frame and its epoll: they go first. */
    for (int i = 0; w->cs != NULL && i < w->ncs; i++) {
        cp_free(w->cs[i].c); /* ends what is still in flight (an aborted run): done callbacks */
        w->cs[i].c = NULL;
        cp__flights_drop(&x);        /* after the run: not accounted */
        cp__flights_free(&w->cs[i]); /* idle pipelines: freeing one touches no client */
    }
    cp__poller_close(&x);
    cp__compose_destroy(&x);
    cp__flights_destroy(&x);
    cp__tally_destroy(&x);
    cp__lanes_free(&x.ls);
    cp__sec_end(&w->ring);
    return NULL;
}

void cp__worker_init(cp__worker *w, const cp__run_spec *spec, cp__gate *gate, int index,
                     int first_client, int nclients) {
    w->spec = spec;
    w->gate = gate;
    w->index = index;
    w->first_client = first_client;
    w->nclients = nclients;
    w->ncs = nclients * spec->lanes;
    w->cs = calloc((size_t)w->ncs, sizeof(*w->cs));
    w->groups = calloc((size_t)nclients, sizeof(*w->groups));
    cp__hist_init(&w->acct.cache_hit);
    cp__hist_init(&w->acct.cache_miss);
    if (spec->cmds != NULL &&
        (w->acct.cmd = calloc((size_t)spec->cmds->n, sizeof(*w->acct.cmd))) != NULL)
        for (int k = 0; k < spec->cmds->n; k++)
            cp__hist_init(&w->acct.cmd[k].latency);
    if (w->cs == NULL || w->groups == NULL || (spec->cmds != NULL && w->acct.cmd == NULL)) {
        w->setup_err = CP_ENOMEM;
        snprintf(w->setup_errstr, sizeof(w->setup_errstr), "out of memory");
    }
}

void cp__worker_free(cp__worker *w) {
    for (int i = 0; w->cs != NULL && i < w->ncs; i++) {
        cp__client_state *cs = &w->cs[i];
        if (cs->c != NULL)
            cp_free(cs->c);
        cp__flights_free(cs);
    }
    free(w->cs);
    for (int i = 0; w->groups != NULL && i < w->nclients; i++)
        cp__group_free(&w->groups[i], w->spec->lanes);
    free(w->groups);
    free(w->acct.cmd);
    w->acct.cmd = NULL;
}
