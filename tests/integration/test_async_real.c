/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The async API on a real cluster (Debian's redis-server) while it changes, on the built-in
 * loop in a thread of its own (the main thread changes the topology):
 *  a. 200 chains of SET v, SET v+1 (sent together), GET (must see v+1), INCR, while 250 slots
 *     migrate back and forth: every command done, no wrong or stale reply (one key's commands
 *     keep their order across MOVED and ASK), every INCR counted exactly once, MOVED and ASK seen.
 *  b. a master SIGSTOPped for 3 s: commands to the other masters keep completing meanwhile, the
 *     stopped master's finish once it resumes.
 *  c. a master killed (3 masters + 3 replicas): its replica takes over and the killed shard's
 *     commands complete again; no wrong reply.
 * In all three the loop is turned with cp_loop_run_once(l, 0), which never waits, and each turn
 * is measured: none longer than 10 ms unless the scheduler took the CPU away (voluntary context
 * switches are printed, not asserted: a non-blocking send may sleep for microseconds on a
 * socket lock the server's side holds; see test_async.c).
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
#include <sys/resource.h>
#include <time.h>

#include <cmocka.h>
#include <pthread.h>

#include "clusterpipe/clusterpipe.h"
#include "fixture.h"
#include "util/clock.h"

#define CHAINS 200
#define COUNTERS 16

typedef struct chain chain;

typedef struct worker {
    const char *seeds;
    cp_client *c;
    cp_loop *l;
    pthread_t th;
    _Atomic int stop;
    int hot_lo, hot_hi; /* half the chains' keys are tagged into these slots (the moving ones) */
    int watch_lo, watch_hi; /* slots whose completions are counted apart (b, c) */
    chain *ch;
    /* results, read after the join */
    long done, failed, unknown, wrong, stale, incrs_acked[COUNTERS];
    _Atomic long watched_done, other_done; /* completions in / outside [watch_lo, watch_hi] */
    uint64_t turns, max_ns;
    long voluntary;
    cp_stats stats;
    char first_problem[256];
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
        w->done++;
        if (ch->slot >= (unsigned)w->watch_lo && ch->slot <= (unsigned)w->watch_hi)
            atomic_fetch_add(&w->watched_done, 1);
        else
            atomic_fetch_add(&w->other_done, 1);
    } else if (r->outcome == CP_UNKNOWN) {
        w->unknown++;
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
        char want[96], older[96];
        snprintf(want, sizeof(want), "%s|%ld", ch->key, ch->version + 1);
        snprintf(older, sizeof(older), "%s|%ld", ch->key, ch->version);
        const redisReply *rep = r->reply;
        if (rep->type == REDIS_REPLY_NIL) { /* a promoted replica without the write */
            w->stale++;
            problem(w, "%s: GET nil, want %s", ch->key, want);
        } else if (rep->type != REDIS_REPLY_STRING) {
            w->wrong++;
            problem(w, "%s: GET type %d", ch->key, rep->type);
        } else if (strcmp(rep->str, want) != 0) {
            if (strcmp(rep->str, older) == 0)
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

/* The key of chain i: in [lo, hi] for even i (the moving slots), anywhere for odd i. */
static void name_chain(worker *w, chain *ch, int i) {
    for (int t = 0;; t++) {
        char tag[24];
        snprintf(tag, sizeof(tag), "a%d.%d", i, t);
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
    for (int i = 0; i < CHAINS; i++)
        next_step(&w->ch[i]);
    while (!atomic_load(&w->stop) || cp_pending(w->c) > 0) {
        struct rusage a, b;
        getrusage(RUSAGE_THREAD, &a);
        uint64_t t0 = cp__now_ns();
        int rc = cp_loop_run_once(w->l, 0);
        uint64_t took = cp__now_ns() - t0;
        getrusage(RUSAGE_THREAD, &b);
        if (rc < 0)
            problem(w, "cp_loop_run_once: %d", rc);
        w->turns++;
        w->voluntary += b.ru_nvcsw - a.ru_nvcsw;
        if (b.ru_nivcsw == a.ru_nivcsw && took > w->max_ns)
            w->max_ns = took;
        struct timespec ts = {0, 200000L};
        nanosleep(&ts, NULL);
    }
    cp_get_stats(w->c, &w->stats);
    return NULL;
}

static worker *start(cp_fixture *f, int hot_lo, int hot_hi, int budget_ms) {
    worker *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    w->seeds = f->endpoints;
    w->hot_lo = hot_lo;
    w->hot_hi = hot_hi;
    w->watch_lo = hot_lo;
    w->watch_hi = hot_hi;
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = f->endpoints;
    o.retry_budget_ms = budget_ms;
    o.io_timeout_ms = 10000; /* a stopped master's commands wait for it (b) */
    w->c = cp_client_new(&o);
    assert_non_null(w->c);
    w->l = cp_loop_new();
    assert_non_null(w->l);
    assert_int_equal(cp_loop_attach(w->l, w->c), 0);
    w->ch = calloc(CHAINS, sizeof(*w->ch));
    for (int i = 0; i < CHAINS; i++) {
        w->ch[i] = (chain){.w = w, .idx = i, .version = 1};
        name_chain(w, &w->ch[i], i);
        /* start from a clean counter */
        redisReply *r = cp_fixture_command(f, "DEL %s", w->ch[i].counter);
        if (r != NULL)
            freeReplyObject(r);
    }
    assert_int_equal(pthread_create(&w->th, NULL, work, w), 0);
    return w;
}

static void finish(worker *w) {
    atomic_store(&w->stop, 1);
    pthread_join(w->th, NULL);
    cp_free(w->c);
    cp_loop_free(w->l);
    print_message("%ld done, %ld failed, %ld unknown, %ld wrong, %ld stale; moved %llu ask %llu "
                  "refreshes %llu; %llu turns, longest %.2f ms, %ld voluntary switches%s%s\n",
                  w->done, w->failed, w->unknown, w->wrong, w->stale,
                  (unsigned long long)w->stats.moved, (unsigned long long)w->stats.ask,
                  (unsigned long long)w->stats.refreshes, (unsigned long long)w->turns,
                  (double)w->max_ns / 1e6, w->voluntary, w->first_problem[0] ? ": " : "",
                  w->first_problem);
}

static void assert_never_blocked(const worker *w) {
    assert_true(w->turns > 100);
    assert_true(w->max_ns <= 10000000ull);
}

/* The master whose initial range is the lo-th (0, 1, 2): the fixture assigns ranges in order. */
static size_t master_at(cp_fixture *f, int lo) {
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++)
        if (cp_topo_proc(f->topo, i)->role == CP_ROLE_MASTER && lo-- == 0)
            return i;
    fail_msg("no such master");
    return 0;
}

static void free_worker(worker *w) {
    free(w->ch);
    free(w);
}

/* a. Slots 5211..5460 (master 0's highest) move to master 1 and back, twice. */
static void async_through_resharding(void **state) {
    cp_fixture *f = *state;
    worker *w = start(f, 5211, 5460, 8000);
    cp__sleep_ms(300);
    size_t m0 = master_at(f, 0), m1 = master_at(f, 1);
    char err[512];
    for (int round = 0; round < 4; round++) {
        int rc = round % 2 == 0 ? cp_topo_migrate_slots(f->topo, m0, m1, 250, err, sizeof(err))
                                : cp_topo_migrate_slots(f->topo, m1, m0, 250, err, sizeof(err));
        if (rc != 0)
            fail_msg("migrate: %s", err);
    }
    cp__sleep_ms(300);
    finish(w);
    assert_true(w->done > 2000);
    assert_int_equal(w->failed, 0);
    assert_int_equal(w->unknown, 0);
    assert_int_equal(w->wrong, 0);
    assert_int_equal(w->stale, 0);
    assert_true(w->stats.moved > 0);
    assert_true(w->stats.ask > 0);
    /* every INCR once: each counter is shared by the chains i with i % COUNTERS equal */
    long sum_acked = 0, sum_server = 0;
    for (int i = 0; i < CHAINS; i++) {
        redisReply *r = cp_fixture_command(f, "GET %s", w->ch[i].counter);
        assert_non_null(r);
        if (r->type == REDIS_REPLY_STRING)
            sum_server += atol(r->str);
        freeReplyObject(r);
    }
    for (int k = 0; k < COUNTERS; k++)
        sum_acked += w->incrs_acked[k];
    assert_int_equal(sum_server, sum_acked);
    assert_never_blocked(w);
    free_worker(w);
}

/* b. Master 0 stopped for 3 s: the others keep answering, its commands finish after. */
static void async_master_stopped(void **state) {
    cp_fixture *f = *state;
    worker *w = start(f, 0, 5460, 20000); /* "hot" = master 0's slots: watched */
    cp__sleep_ms(500);
    size_t m0 = master_at(f, 0);
    char err[512];
    assert_int_equal(cp_topo_kill(f->topo, m0, SIGSTOP, err, sizeof(err)), 0);
    cp__sleep_ms(300); /* what was in flight to it before the stop has settled */
    long other0 = atomic_load(&w->other_done), watched0 = atomic_load(&w->watched_done);
    cp__sleep_ms(2400);
    long other1 = atomic_load(&w->other_done), watched1 = atomic_load(&w->watched_done);
    assert_int_equal(cp_topo_kill(f->topo, m0, SIGCONT, err, sizeof(err)), 0);
    cp__sleep_ms(1000);
    long watched2 = atomic_load(&w->watched_done);
    finish(w);
    print_message("while stopped: %ld other commands done, %ld of the stopped master's\n",
                  other1 - other0, watched1 - watched0);
    assert_true(other1 - other0 > 500);       /* the healthy masters kept going */
    assert_int_equal(watched1 - watched0, 0); /* nothing answered by a stopped process */
    assert_true(watched2 > watched1);         /* and its commands completed after */
    assert_int_equal(w->failed, 0);
    assert_int_equal(w->wrong, 0);
    assert_int_equal(w->stale, 0);
    assert_never_blocked(w);
    free_worker(w);
}

static int setup_cluster3x1(void **state) {
    *state = cp_fixture_cluster(3, 1);
    return *state ? 0 : -1;
}

/* c. Master 1 killed: its replica takes over, the shard's commands complete again. */
static void async_master_killed(void **state) {
    cp_fixture *f = *state;
    worker *w = start(f, 5461, 10922, 10000); /* watched: master 1's slots */
    cp__sleep_ms(500);
    size_t m1 = master_at(f, 1);
    char err[512];
    assert_int_equal(cp_topo_kill(f->topo, m1, SIGKILL, err, sizeof(err)), 0);
    cp__sleep_ms(6000); /* cluster-node-timeout is 2 s: the replica is master well before */
    long watched0 = atomic_load(&w->watched_done);
    cp__sleep_ms(1000);
    long watched1 = atomic_load(&w->watched_done);
    finish(w);
    assert_true(watched1 > watched0); /* the killed shard's commands run on its replica */
    assert_int_equal(w->wrong, 0);
    assert_never_blocked(w);
    free_worker(w);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(async_through_resharding, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(async_master_stopped, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(async_master_killed, setup_cluster3x1, cp_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
