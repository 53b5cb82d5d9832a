/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The async API on a real cluster (Debian's redis-server) while it changes, through every loop
 * of tests/support/loopdrv.h (cp_loop, and libevent, libev, libuv when built) at once: each
 * scenario runs one worker per loop, each in a thread of its own with its own client and keys,
 * against the same cluster and the same fault (the main thread changes the topology), and every
 * assertion holds for each worker:
 *  a. 100 chains of SET v, SET v+1 (sent together), GET (must see v+1), INCR, while 250 slots
 *     migrate back and forth: every command done, no wrong or stale reply (one key's commands
 *     keep their order across MOVED and ASK), every INCR counted exactly once, MOVED and ASK seen.
 *  b. a master SIGSTOPped for 3 s: commands to the other masters keep completing meanwhile, none
 *     of the stopped master's does, and they finish once it resumes.
 *  c. a master killed (3 masters + 3 replicas): its replica takes over and the killed shard's
 *     commands complete again; no wrong reply.
 *  d. a black-holed seed (a listener whose accept backlog is full: SYNs go unanswered) first
 *     among the seeds: the map comes from the next seed once the connect timeout has passed, and
 *     every command completes.
 * In all four no library call takes longer than 10 ms, measured per call. The adapters call
 * into the library only through cp_on_ready and cp_on_timer, which the link wraps (-Wl,--wrap,
 * tests/CMakeLists.txt): every call an adapter makes is timed where it enters the library
 * (callbacks, and the commands they send, run inside it). cp_loop is the library's own, and
 * each cp_loop_run_once(l, 0) is timed as the one call it is (the wrap cannot be relied on
 * inside the library: it does not reach calls between its link-time-optimized objects). Each
 * worker's attach and first sends are timed around each call. What a call is held to is
 * tests/support/calltime.h's: its CPU time, and, when its thread slept in it, the time it kept
 * the loop (wall time less the wait for a CPU afterwards); a call whose thread never left the
 * CPU is longer on the clock than its CPU time only when the machine took the CPU away (a
 * hypervisor's steal, interrupts). A non-blocking send may sleep for microseconds on a socket
 * lock the server's side holds (see test_async.c). Under a sanitizer the bounds are not asserted
 * (calltime.h's CALLTIME_ASSERTED says why). The loops are turned without
 * waiting (loop_driver.run_nowait), with short sleeps between turns outside any call.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "asserts.h"
#include <pthread.h>

#include "clusterpipe/clusterpipe.h"
#include "calltime.h"
#include "fixture.h"
#include "testutil.h"
#include "loopdrv.h"
#include "util/clock.h"

#define CHAINS 100
#define COUNTERS 16
#define MAX_WORKERS 4 /* cp_loop and the three adapters */
/* A worker's calls into the library are more than this: the loop's, beyond the attach and first
 * sends (calltime_assert_never_blocked) */
#define MORE_CALLS_THAN (CHAINS + 10)

/* ---- every library call, timed ------------------------------------------------------------ */

static __thread calltime *tl_calls; /* the worker thread's; NULL elsewhere (nothing is timed) */

static void timed_begin(calltimer *t) {
    if (tl_calls != NULL)
        calltime_begin(tl_calls, t);
}

static void timed_end(calltimer *t) {
    if (tl_calls != NULL)
        calltime_end(tl_calls, t);
}

/* The library's entry points for loops, as the link wraps them. */
void __real_cp_on_ready(cp_client *c, int fd, int events);
void __real_cp_on_timer(cp_client *c);
void __wrap_cp_on_ready(cp_client *c, int fd, int events);
void __wrap_cp_on_timer(cp_client *c);

void __wrap_cp_on_ready(cp_client *c, int fd, int events) {
    calltimer t;
    timed_begin(&t);
    __real_cp_on_ready(c, fd, events);
    timed_end(&t);
}

void __wrap_cp_on_timer(cp_client *c) {
    calltimer t;
    timed_begin(&t);
    __real_cp_on_timer(c);
    timed_end(&t);
}

/* ---- a worker: one loop, one client, CHAINS chains of commands ------------------------------- */

typedef struct chain chain;

typedef struct worker {
    const loop_driver *d;
    int idx;
    void *loop;
    cp_client *c;
    pthread_t th;
    _Atomic int stop;
    int hot_lo, hot_hi; /* half the chains' keys are tagged into these slots (the moving ones) */
    int watch_lo, watch_hi; /* slots whose completions are counted apart (b, c) */
    chain *ch;
    uint64_t started_ns;
    /* results, read after the join (the atomics also while it runs) */
    long done, failed, unknown, wrong, stale, incrs_acked[COUNTERS];
    _Atomic long watched_done, other_done; /* completions in / outside [watch_lo, watch_hi] */
    _Atomic uint64_t first_done_ns;
    int running;                          /* its thread was started and not joined yet */
    int loop_left;                        /* what loop_free found left on the loop (0: nothing) */
    uint64_t turns, turn_ns, max_turn_ns; /* the loop's turns: the library's calls and its own */
    calltime calls;
    cp_stats stats;
    char first_problem[256];
    char first_unknown[160]; /* the first command that ended CP_UNKNOWN, and why */
} worker;

struct chain {
    worker *w;
    int idx;
    char key[48], counter[48];
    unsigned slot;
    long version;
    int step; /* 0: SETs out, 1: GET out, 2: INCR out */
    int sets_left;
    int sets_ok;
};

/* An assertion about one worker: a failure names its loop. */
#define WCHECK(w, cond)                                                                            \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fail_msg("%s: %s does not hold%s%s", (w)->d->name, #cond,                              \
                     (w)->first_problem[0] ? "; first problem: " : "", (w)->first_problem);        \
    } while (0)

static void problem(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(worker *w, const char *fmt, ...) {
    if (w->first_problem[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->first_problem, sizeof(w->first_problem), fmt, ap);
    va_end(ap);
}

static void next_step(chain *ch);

static void counted(chain *ch, const cp_response *r) {
    worker *w = ch->w;
    if (r->outcome == CP_DONE) {
        if (w->done++ == 0)
            atomic_store(&w->first_done_ns, cp__now_ns());
        if (ch->slot >= (unsigned)w->watch_lo && ch->slot <= (unsigned)w->watch_hi)
            atomic_fetch_add(&w->watched_done, 1);
        else
            atomic_fetch_add(&w->other_done, 1);
    } else if (r->outcome == CP_UNKNOWN) {
        if (w->unknown++ == 0)
            snprintf(w->first_unknown, sizeof(w->first_unknown), "%s: %s", ch->key, r->errstr);
    } else {
        w->failed++;
        problem(w, "%s: not executed: %s", ch->key, r->errstr);
    }
}

static void on_set(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    chain *ch = data;
    counted(ch, r);
    ch->sets_ok += r->outcome == CP_DONE;
    if (--ch->sets_left == 0) {
        ch->step = ch->sets_ok == 2 ? 1 : 0; /* both acknowledged: read v+1 back */
        next_step(ch);
    }
}

static void on_get(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    chain *ch = data;
    worker *w = ch->w;
    counted(ch, r);
    if (r->outcome == CP_DONE) {
        char want[96];
        snprintf(want, sizeof(want), "%s|%ld", ch->key, ch->version + 1);
        const redisReply *rep = r->reply;
        size_t klen = strlen(ch->key);
        if (rep->type == REDIS_REPLY_NIL) { /* a promoted replica without the write */
            w->stale++;
            problem(w, "%s: GET nil, want %s", ch->key, want);
        } else if (rep->type != REDIS_REPLY_STRING) {
            w->wrong++;
            problem(w, "%s: GET type %d", ch->key, rep->type);
        } else if (strcmp(rep->str, want) != 0) {
            /* an older version of this key: writes acknowledged by a master that died before
             * its replica had them (c); anything else is wrong */
            if (strncmp(rep->str, ch->key, klen) == 0 && rep->str[klen] == '|' &&
                atol(rep->str + klen + 1) < ch->version + 1)
                w->stale++;
            else
                w->wrong++;
            problem(w, "%s: GET %s, want %s", ch->key, rep->str, want);
        }
    }
    ch->step = 2;
    next_step(ch);
}

static void on_incr(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    chain *ch = data;
    counted(ch, r);
    if (r->outcome == CP_DONE && r->reply->type == REDIS_REPLY_INTEGER)
        ch->w->incrs_acked[ch->idx % COUNTERS]++;
    ch->version += 2;
    ch->step = 0;
    next_step(ch);
}

static void next_step(chain *ch) {
    worker *w = ch->w;
    if (atomic_load(&w->stop))
        return;
    int rc = 0;
    if (ch->step == 0) {
        ch->sets_left = 2;
        ch->sets_ok = 0;
        char v[96];
        snprintf(v, sizeof(v), "%s|%ld", ch->key, ch->version);
        rc = cp_async_command(w->c, on_set, ch, "SET %s %s", ch->key, v);
        snprintf(v, sizeof(v), "%s|%ld", ch->key, ch->version + 1);
        if (rc == 0)
            rc = cp_async_command(w->c, on_set, ch, "SET %s %s", ch->key, v);
    } else if (ch->step == 1) {
        rc = cp_async_command(w->c, on_get, ch, "GET %s", ch->key);
    } else {
        /* counters live in the chain's own slot too: they move with it */
        rc = cp_async_command(w->c, on_incr, ch, "INCR %s", ch->counter);
    }
    if (rc != 0)
        problem(w, "send refused: %s", cp_strerror(rc));
}

/* The key of chain i of worker w: in [lo, hi] for even i (the moving slots), anywhere for odd
 * i; the worker's index in the tag keeps the workers' keys apart. */
static void name_chain(worker *w, chain *ch, int i) {
    for (int t = 0;; t++) {
        char tag[32];
        snprintf(tag, sizeof(tag), "w%d.a%d.%d", w->idx, i, t);
        unsigned s = cp_keyslot(tag, strlen(tag));
        if (i % 2 == 0 && (s < (unsigned)w->hot_lo || s > (unsigned)w->hot_hi))
            continue;
        snprintf(ch->key, sizeof(ch->key), "{%s}:k", tag);
        snprintf(ch->counter, sizeof(ch->counter), "{%s}:c%d", tag, i % COUNTERS);
        ch->slot = s;
        return;
    }
}

static void *work(void *arg) {
    worker *w = arg;
    tl_calls = &w->calls;
    calltimer t0;
    w->started_ns = cp__now_ns();
    timed_begin(&t0);
    int rc = w->d->attach(w->loop, w->c); /* the map is read from here on */
    timed_end(&t0);
    if (rc != 0) {
        problem(w, "attach: %s", cp_strerror(rc));
        atomic_store(&w->stop, 1);
    }
    for (int i = 0; i < CHAINS && rc == 0; i++) {
        calltimer t;
        timed_begin(&t);
        next_step(&w->ch[i]);
        timed_end(&t);
    }
    while (!atomic_load(&w->stop) || cp_pending(w->c) > 0) {
        calltimer t;
        uint64_t turn0 = cp__now_ns();
        if (w->d->in_library) /* cp_loop_run_once: one call into the library */
            timed_begin(&t);
        w->d->run_nowait(w->loop);
        if (w->d->in_library)
            timed_end(&t);
        uint64_t took = cp__now_ns() - turn0;
        w->turn_ns += took;
        if (took > w->max_turn_ns)
            w->max_turn_ns = took;
        w->turns++;
        /* 1 ms: four workers waking 5,000 times a second each starved the servers of a loaded
         * 2-core machine (their cluster bus then timed out) */
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
    tl_calls = NULL;
    cp_get_stats(w->c, &w->stats);
    return NULL;
}

/* ---- a scenario's workers, one per loop ------------------------------------------------------ */

typedef struct crew {
    worker *w[MAX_WORKERS];
    size_t n;
} crew;

static crew the_crew; /* the running scenario's, so that a teardown after a failure ends it */

/* One worker per loop, each started in its thread: a client on seeds (NULL: the fixture's
 * masters), half its chains' keys in [hot_lo, hot_hi], whose completions are watched. */
static void start(crew *cr, cp_fixture *f, const char *seeds, int hot_lo, int hot_hi, int budget_ms,
                  int connect_ms) {
    memset(cr, 0, sizeof(*cr));
    for (size_t i = 0; i < n_loop_drivers && i < MAX_WORKERS; i++) {
        worker *w = calloc(1, sizeof(*w));
        assert_non_null(w);
        w->d = &loop_drivers[i];
        w->idx = (int)i;
        w->hot_lo = w->watch_lo = hot_lo;
        w->hot_hi = w->watch_hi = hot_hi;
        cp_options o = CP_OPTIONS_INIT;
        o.seeds = seeds != NULL ? seeds : f->endpoints;
        o.retry_budget_ms = budget_ms;
        o.io_timeout_ms = 10000; /* a stopped master's commands wait for it (b) */
        o.connect_timeout_ms = connect_ms;
        cp_test_protocol(&o);
        w->c = cp_client_new(&o);
        assert_non_null(w->c);
        assert_int_equal(w->c->err, 0);
        w->loop = w->d->loop_new();
        assert_non_null(w->loop);
        w->ch = calloc(CHAINS, sizeof(*w->ch));
        assert_non_null(w->ch);
        for (int k = 0; k < CHAINS; k++) {
            w->ch[k] = (chain){.w = w, .idx = k, .version = 1};
            name_chain(w, &w->ch[k], k);
        }
        cr->w[cr->n++] = w;
    }
    for (size_t i = 0; i < cr->n; i++) {
        assert_int_equal(pthread_create(&cr->w[i]->th, NULL, work, cr->w[i]), 0);
        cr->w[i]->running = 1;
    }
}

/* Stops every worker still running (each ends once its last command has), joins it, frees its
 * client and loop. */
static void stop_workers(crew *cr) {
    for (size_t i = 0; i < cr->n; i++)
        atomic_store(&cr->w[i]->stop, 1);
    for (size_t i = 0; i < cr->n; i++) {
        worker *w = cr->w[i];
        if (w->running) {
            pthread_join(w->th, NULL);
            w->running = 0;
        }
        cp_free(w->c);
        w->c = NULL;
        if (w->loop != NULL)
            w->loop_left = w->d->loop_free(w->loop);
        w->loop = NULL;
    }
}

/* The end of a scenario: every worker stopped and freed, and its figures printed. */
static void finish(crew *cr) {
    stop_workers(cr);
    for (size_t i = 0; i < cr->n; i++) {
        worker *w = cr->w[i];
        WCHECK(w, w->loop_left == 0);
        WCHECK(w, w->turns > 10); /* a count, not a rate: a loaded machine turns the loops slowly */
        char ct[256];
        print_message("%-8s %ld done, %ld failed, %ld unknown, %ld wrong, %ld stale; moved %llu "
                      "ask %llu clusterdown %llu refreshes %llu; %llu turns (mean %.3f ms, "
                      "longest %.2f ms), %s%s%s%s%s\n",
                      w->d->name, w->done, w->failed, w->unknown, w->wrong, w->stale,
                      (unsigned long long)w->stats.moved, (unsigned long long)w->stats.ask,
                      (unsigned long long)w->stats.clusterdown,
                      (unsigned long long)w->stats.refreshes, (unsigned long long)w->turns,
                      w->turns ? (double)w->turn_ns / (double)w->turns / 1e6 : 0.0,
                      (double)w->max_turn_ns / 1e6, calltime_str(&w->calls, ct, sizeof(ct)),
                      w->first_problem[0] ? ": " : "", w->first_problem,
                      w->first_unknown[0] ? "; first unknown: " : "", w->first_unknown);
    }
}

/* Also after a failed assertion (from the teardown): what still runs is stopped first. */
static void free_crew(crew *cr) {
    stop_workers(cr);
    for (size_t i = 0; i < cr->n; i++) {
        free(cr->w[i]->ch);
        free(cr->w[i]);
    }
    cr->n = 0;
}

static int teardown(void **state) {
    free_crew(&the_crew);
    return cp_fixture_teardown(state);
}

/* ---- the scenarios ----------------------------------------------------------------------- */

/* a. Slots 5211..5460 (master 0's highest) move to master 1 and back, twice. */
static void async_through_resharding(void **state) {
    cp_fixture *f = *state;
    crew *cr = &the_crew;
    start(cr, f, NULL, 5211, 5460, 8000, 2000);
    cp__sleep_ms(300);
    size_t m0 = cp_fixture_master(f, 0), m1 = cp_fixture_master(f, 1);
    char err[512];
    for (int round = 0; round < 4; round++) {
        int rc = round % 2 == 0 ? cp_topo_migrate_slots(f->topo, m0, m1, 250, err, sizeof(err))
                                : cp_topo_migrate_slots(f->topo, m1, m0, 250, err, sizeof(err));
        if (rc != 0)
            fail_msg("migrate: %s", err);
    }
    cp__sleep_ms(300);
    finish(cr);
    for (size_t i = 0; i < cr->n; i++) {
        worker *w = cr->w[i];
        WCHECK(w, w->done > 2000);
        WCHECK(w, w->failed == 0);
        WCHECK(w, w->unknown == 0);
        WCHECK(w, w->wrong == 0);
        WCHECK(w, w->stale == 0);
        WCHECK(w, w->stats.moved > 0);
        WCHECK(w, w->stats.ask > 0);
        /* every INCR once: the server's counters sum to the INCRs acknowledged */
        long sum_acked = 0, sum_server = 0;
        for (int k = 0; k < CHAINS; k++) {
            redisReply *r = cp_fixture_command(f, "GET %s", w->ch[k].counter);
            assert_non_null(r);
            if (r->type == REDIS_REPLY_STRING)
                sum_server += atol(r->str);
            freeReplyObject(r);
        }
        for (int k = 0; k < COUNTERS; k++)
            sum_acked += w->incrs_acked[k];
        WCHECK(w, sum_server == sum_acked);
        calltime_assert_never_blocked(&w->calls, MORE_CALLS_THAN, CALLTIME_ASSERTED, w->d->name);
    }
    free_crew(cr);
}

/* b. Master 0 stopped for 3 s: the others keep answering, its commands finish after. */
static void async_master_stopped(void **state) {
    cp_fixture *f = *state;
    crew *cr = &the_crew;
    start(cr, f, NULL, 0, 5460, 20000, 2000); /* "hot" = master 0's slots: watched */
    cp__sleep_ms(500);
    size_t m0 = cp_fixture_master(f, 0);
    char err[512];
    long other0[MAX_WORKERS], watched0[MAX_WORKERS], other1[MAX_WORKERS], watched1[MAX_WORKERS];
    assert_int_equal(cp_topo_kill(f->topo, m0, SIGSTOP, err, sizeof(err)), 0);
    cp__sleep_ms(300); /* what was in flight to it before the stop has settled */
    for (size_t i = 0; i < cr->n; i++) {
        other0[i] = atomic_load(&cr->w[i]->other_done);
        watched0[i] = atomic_load(&cr->w[i]->watched_done);
    }
    cp__sleep_ms(2700);
    for (size_t i = 0; i < cr->n; i++) {
        other1[i] = atomic_load(&cr->w[i]->other_done);
        watched1[i] = atomic_load(&cr->w[i]->watched_done);
    }
    /* The healthy masters' own answer time, from a plain client: tells a stalled server from a
     * stalled client when the figures above are low. */
    for (int k = 1; k <= 2; k++) {
        uint64_t p0 = cp__now_ns();
        redisContext *hc = cp_fixture_conn(f, cp_topo_proc(f->topo, cp_fixture_master(f, k))->port);
        redisReply *pong = hc != NULL ? redisCommand(hc, "PING") : NULL;
        print_message("master %d answered PING in %.1f ms while master 0 was stopped%s\n", k,
                      (double)(cp__now_ns() - p0) / 1e6, pong != NULL ? "" : " (no answer)");
        if (pong != NULL)
            freeReplyObject(pong);
    }
    assert_int_equal(cp_topo_kill(f->topo, m0, SIGCONT, err, sizeof(err)), 0);
    uint64_t resumed = cp__now_ns();
    /* Its commands complete once it runs again: soon, or once it has rejoined the cluster (a
     * master cut off for longer than cluster-node-timeout answers CLUSTERDOWN for a while,
     * and the client retries within its budget). */
    uint64_t again[MAX_WORKERS] = {0};
    size_t left = cr->n;
    for (uint64_t end = resumed + 15000000000ull; left > 0 && cp__now_ns() < end;) {
        cp__sleep_ms(20);
        for (size_t i = 0; i < cr->n; i++)
            if (again[i] == 0 && atomic_load(&cr->w[i]->watched_done) > watched1[i]) {
                again[i] = cp__now_ns();
                left--;
            }
    }
    finish(cr);
    for (size_t i = 0; i < cr->n; i++)
        print_message("%-8s while stopped: %ld other commands done, %ld of the stopped master's; "
                      "its commands completed again %.0f ms after SIGCONT\n",
                      cr->w[i]->d->name, other1[i] - other0[i], watched1[i] - watched0[i],
                      again[i] ? (double)(again[i] - resumed) / 1e6 : -1.0);
    for (size_t i = 0; i < cr->n; i++) {
        worker *w = cr->w[i];
        WCHECK(w, other1[i] - other0[i] > 500);    /* the healthy masters kept going */
        WCHECK(w, watched1[i] - watched0[i] == 0); /* nothing answered by a stopped process */
        WCHECK(w, again[i] != 0);                  /* and its commands completed after */
        WCHECK(w, w->failed == 0);
        WCHECK(w, w->wrong == 0);
        WCHECK(w, w->stale == 0);
        calltime_assert_never_blocked(&w->calls, MORE_CALLS_THAN, CALLTIME_ASSERTED, w->d->name);
    }
    free_crew(cr);
}

/* c. Master 1 killed: its replica takes over, the shard's commands complete again. */
static void async_master_killed(void **state) {
    cp_fixture *f = *state;
    crew *cr = &the_crew;
    start(cr, f, NULL, 5461, 10922, 10000, 2000); /* watched: master 1's slots */
    cp__sleep_ms(500);
    size_t m1 = cp_fixture_master(f, 1);
    char err[512];
    assert_int_equal(cp_topo_kill(f->topo, m1, SIGKILL, err, sizeof(err)), 0);
    uint64_t killed = cp__now_ns();
    /* Answers already on their way when it died are in by now; after this only a new master
     * (the replica, once promoted: cluster-node-timeout is 2 s) completes the shard's commands. */
    cp__sleep_ms(300);
    long watched0[MAX_WORKERS];
    uint64_t resumed[MAX_WORKERS] = {0};
    for (size_t i = 0; i < cr->n; i++)
        watched0[i] = atomic_load(&cr->w[i]->watched_done);
    size_t left = cr->n;
    for (uint64_t end = cp__now_ns() + 20000000000ull; left > 0 && cp__now_ns() < end;) {
        cp__sleep_ms(50);
        for (size_t i = 0; i < cr->n; i++)
            if (resumed[i] == 0 && atomic_load(&cr->w[i]->watched_done) > watched0[i]) {
                resumed[i] = cp__now_ns();
                left--;
            }
    }
    cp__sleep_ms(300); /* some more after the last one resumed */
    finish(cr);
    for (size_t i = 0; i < cr->n; i++) {
        worker *w = cr->w[i];
        if (resumed[i] != 0)
            print_message("%-8s the killed shard's commands resumed %.2f s after the kill\n",
                          w->d->name, (double)(resumed[i] - killed) / 1e9);
        WCHECK(w, resumed[i] != 0); /* the killed shard's commands run on its replica */
        WCHECK(w, w->wrong == 0);
        calltime_assert_never_blocked(&w->calls, MORE_CALLS_THAN, CALLTIME_ASSERTED, w->d->name);
    }
    free_crew(cr);
}

/* d. A listener that accepts nothing (backlog 0, filled: further SYNs are dropped) is the first
 * seed; the masters follow. Each client asks it for the map first, gives up on it after the
 * connect timeout and reads the map from the next seed; nothing waits for it meanwhile. */
static void async_black_holed_seed(void **state) {
    cp_fixture *f = *state;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_ge(lfd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t al = sizeof(a);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &al), 0);
    assert_int_equal(listen(lfd, 0), 0);
    int fill[4];
    for (int i = 0; i < 4; i++) { /* fill the backlog */
        fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(fill[i], (struct sockaddr *)&a, sizeof(a));
    }
    char seeds[1100];
    snprintf(seeds, sizeof(seeds), "127.0.0.1:%d,%s", ntohs(a.sin_port), f->endpoints);
    const int connect_ms = 500;
#define BH_DONE (5 * CHAINS)
    crew *cr = &the_crew;
    start(cr, f, seeds, 0, 16383, 10000, connect_ms);
    /* until every worker's chains have gone round a few times (BH_DONE commands) */
    for (uint64_t end = cp__now_ns() + 20000000000ull; cp__now_ns() < end;) {
        size_t there = 0;
        for (size_t i = 0; i < cr->n; i++)
            there += atomic_load(&cr->w[i]->watched_done) >= BH_DONE; /* all slots */
        if (there == cr->n)
            break;
        cp__sleep_ms(20);
    }
    finish(cr);
    for (size_t i = 0; i < cr->n; i++) {
        worker *w = cr->w[i];
        uint64_t first = atomic_load(&w->first_done_ns);
        if (first != 0)
            print_message("%-8s first answer %.0f ms after the attach\n", w->d->name,
                          (double)(first - w->started_ns) / 1e6);
        WCHECK(w, first != 0);
        /* the black-holed seed was asked first (seeds in order) and cost its connect timeout:
         * the scenario did exercise it */
        WCHECK(w, first - w->started_ns >= (uint64_t)connect_ms * 1000000ull * 9 / 10);
        WCHECK(w, w->done >= BH_DONE);
        WCHECK(w, w->failed == 0);
        WCHECK(w, w->unknown == 0);
        WCHECK(w, w->wrong == 0);
        WCHECK(w, w->stale == 0);
        calltime_assert_never_blocked(&w->calls, MORE_CALLS_THAN, CALLTIME_ASSERTED, w->d->name);
    }
    free_crew(cr);
    for (int i = 0; i < 4; i++)
        close(fill[i]);
    close(lfd);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    loop_drivers_announce();
    const char *only = getenv("CP_TEST_ONLY"); /* e.g. async_master_stopped */
    if (only != NULL)
        cmocka_set_test_filter(only);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(async_through_resharding, cp_fixture_setup_cluster3,
                                        teardown),
        cmocka_unit_test_setup_teardown(async_master_stopped, cp_fixture_setup_cluster3, teardown),
        cmocka_unit_test_setup_teardown(async_master_killed, cp_fixture_setup_cluster3x1, teardown),
        cmocka_unit_test_setup_teardown(async_black_holed_seed, cp_fixture_setup_cluster3,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
