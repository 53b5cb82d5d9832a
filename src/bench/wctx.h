/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The types of a worker thread: the worker as run.c sees it (cp__worker: worker.h says what
 * other threads may read of it and when), and its own context (cp__wctx), which only the
 * thread itself touches, with the types its modules share: the lanes
 * (struct cp__client_state), the batches in flight (cp__flight), and one sub-struct per module,
 * written by that module: the run's clock (worker.c), the epoll (poller.c), the schedule of
 * batches (flight.c), the composer's scratch (compose.c), the tally's counter table (tally.c).
 * Types only, no .c of its own. The cp__wctx lives in cp__worker_main's frame; each module
 * allocates its sub-struct in its _init (or _open) and frees it in its _destroy (or _close),
 * worker.c calls them. cp__wctx: one thread, the worker's.
 */
#ifndef CLUSTERPIPE_WCTX_H
#define CLUSTERPIPE_WCTX_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "bench/account.h"
#include "bench/gate.h"
#include "bench/lanes.h"
#include "bench/plan.h"
#include "bench/seconds.h"
#include "clusterpipe/clusterpipe.h"

typedef struct cp__client_state cp__client_state; /* a lane: one cp_client (below) */

typedef struct cp__worker {
    const cp__run_spec *spec;
    cp__gate *gate;
    int index;
    int first_client, nclients; /* global client indexes [first, first + n) */
    pthread_t tid;
    bool started; /* its thread was created (run.c) */

    cp__acct acct;     /* counts: live while running, totals after join */
    cp__sec_ring ring; /* per-second counters, merged by the main thread */

    /* results, read after join */
    int setup_err; /* CP_E* when connecting / warming up failed */
    char setup_errstr[256];
    cp_stats stats;
    cp_cache_stats cache; /* client-side cache: counters over the run, entries/bytes at its end */
    uint64_t finish_ns;
    uint64_t redirects_seen[2]; /* moved, ask summed over clients at the last second */
    cp__bench_event events[CP__BENCH_EVENTS]; /* its clients' lifecycle events (poller.c) */
    int nevents;
    uint64_t events_lost;

    cp__group *groups;    /* nclients entries: each client's key stream */
    cp__client_state *cs; /* ncs = nclients x lanes entries: the lanes, client by client */
    int ncs;
} cp__worker;

/* A lane is idle until its --rate slot, executing a batch, waiting for keys (its group's key
 * stream is blocked on a full lane), draining (stopped, open-loop batches still in flight), or
 * done. */
enum {
    CP__LANE_IDLE = 0,
    CP__LANE_EXEC = 1,
    CP__LANE_DONE = 2,
    CP__LANE_WAIT = 3,
    CP__LANE_DRAIN = 4
};

/* A batch in flight: its pipeline and what its commands are. Closed loop: the lane's one
 * flight, whose batch is a view of the lane's queue (valid until its next take). Open loop: any
 * number, each with a copy of its batch. */
typedef struct cp__flight {
    cp_pipeline *p;
    cp__reqbuf batch;
    uint16_t *cmdkeys;    /* MSET batches: keys of each of its commands, in order */
    uint64_t intended_ns; /* open loop: when the schedule sent it (latency counts from here) */
    int owned;            /* batch holds buffers of its own */
    struct cp__client_state *cs;
    struct cp__flight *next_free;
} cp__flight;

/* A lane: one cp_client and its pipeline. In cluster mode a client has one lane per master and
 * a lane's batches carry the keys the slot map places on its master (the library still routes
 * every command and follows redirects), so each master sees P requests in flight per lane and a
 * lane goes on as soon as its own master has answered. Batches spread over every master instead
 * wait for the slowest one, and the servers then idle between bursts: measured at depth 10,
 * 1.5x the throughput at 0.8x the servers' CPU per request. Proxy mode: one lane per client. */
struct cp__client_state {
    cp_client *c;
    cp__flight first;         /* closed loop's flight; open loop's first */
    cp__flight *free_flights; /* open loop: flights done, for reuse */
    int nfree;                /* how many (flight.c keeps a few) */
    int inflight;             /* open loop: flights running */
    size_t inflight_reqs;     /* ... and their requests (at most spec->max_inflight) */
    cp__group *g;
    int lane;     /* master index (cluster), 0 (proxy) */
    int endpoint; /* proxy: index into spec->endpoints */
    int state;
    uint64_t next_start_ns; /* --rate: when the next batch may start */
    cp__reqbuf *queue;      /* requests for the next batches: its group's queue[lane] */
    uint64_t timer_at;      /* the library's timer for this client (0: none) */
    struct cp__wctx *x;
    cp_stats base;             /* counters when the measured interval began */
    cp_cache_stats cache_base; /* the same of its client-side cache (zeros: none) */
};

/* worker.c: the run's clock. */
typedef struct cp__wtime {
    uint64_t start_ns, end_ns; /* end_ns: duration mode only */
    uint64_t cur_sec;          /* second being filled */
    cp__sec_slot *slot;        /* its counters: the tally adds each batch to them */
    uint64_t next_sweep;
} cp__wtime;

/* poller.c: the epoll the library's connections are registered with. */
typedef struct cp__wpoll {
    int epfd;
    uint64_t soonest; /* earliest library timer asked for since the last sweep (0: none) */
} cp__wpoll;

/* flight.c: which lane sends its next batch when. */
typedef struct cp__wsched {
    int active;    /* clients not done */
    int open_loop; /* --rate: batches go out on schedule, whatever the answers do */
    uint64_t rate_interval_ns;
    uint64_t next_start;          /* --rate: earliest slot of an idle lane (0: none) */
    struct cp__flight **finished; /* batches that ended in this wake-up (run_loop) */
    int nfinished, capfinished;
} cp__wsched;

/* compose.c: the command being composed. */
typedef struct cp__wcompose {
    char *valbuf;      /* values of the command being composed: largest size x keys per command */
    const char **argv; /* MSET's arguments (load with mset_keys > 1), a template's */
    size_t *argvlen;
    /* --command runs (NULL otherwise): the command's mixed arguments, the __tag__ and the
     * __otherkey__ keys of its request (keystride bytes each, prefix written once) */
    char *scratch, *tagbuf, *otherbuf;
    const char **other;
    size_t *otherlen;
} cp__wcompose;

/* tally.c: what the checks of --command replies remember. */
typedef struct cp__wtally {
    struct cp__ctr_entry *ctr; /* the counters' last replies (NULL: no counter template) */
} cp__wtally;

typedef struct cp__wctx {
    cp__worker *w;
    const cp__run_spec *spec;
    cp__lanes ls; /* the clients' key streams */
    cp__wtime time;
    cp__wpoll poll;
    cp__wsched sched;
    cp__wcompose comp;
    cp__wtally tally;
} cp__wctx;

#endif /* CLUSTERPIPE_WCTX_H */
