/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Per-key order on a real cluster while it changes, through every loop of tests/support/loopdrv.h
 * at once (one worker per loop, each in its own thread with its own client and keys, all against
 * the same cluster and the same fault, which the main thread makes). Each worker keeps INFLIGHT
 * commands out at all times over KEYS keys, as the load did: whenever commands end, it
 * sends new ones at random, a GET (3 in 4) or a SET writing the key's next version ("key|v"),
 * whatever is still out for the key, so a key has two or more SETs outstanding most of the time.
 * A GET was sent after the acknowledgement of every version up to the highest acknowledged when
 * it was sent, so it must answer at least that one. A later command of a key that overtakes an
 * earlier one still waiting in the client (for a retry round, the map, a connection) shows up
 * three ways, each counted:
 *
 *   - an inversion: an older version acknowledged after a newer one of the same key;
 *   - a stale read: a GET answers a version older than one acknowledged before it was sent;
 *   - a lost write: at the end, the key (read back with a plain client) holds a version older
 *     than its highest acknowledged one.
 *
 * All three must be 0 in each scenario: live slot migration back and forth (MOVED, ASK), a
 * master SIGSTOPped for 3 s, CLUSTERDOWN under cluster-require-full-coverage yes (a master
 * stopped past the node timeout), and a master killed with SIGKILL and replaced by its replica.
 * The server must not lose acknowledged writes by itself in the last one, or the count would
 * measure Redis's asynchronous replication instead of the client: the master's writes are paused
 * (CLIENT PAUSE WRITE) and its replica caught up before the kill. Commands the paused master held
 * end CP_UNKNOWN when it dies; the client re-sends none of them (they are writes), and the ones
 * it had not written wait, with the key's later commands behind them, for the new master.
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <pthread.h>

#include "asserts.h"
#include "clusterpipe/clusterpipe.h"
#include "fixture.h"
#include "testutil.h"
#include "loopdrv.h"
#include "util/clock.h"

#define KEYS 64      /* per worker */
#define INFLIGHT 512 /* commands out at once per worker */
#define MAX_WORKERS 4

typedef struct key_state {
    char name[48];
    unsigned slot;
    long next;  /* the next version to send */
    long acked; /* the highest version acknowledged (0: none yet) */
} key_state;

/* One command out: a SET's version, or a GET's least acceptable answer. */
typedef struct op {
    struct worker *w;
    key_state *k;
    long version;
    struct op *next_free;
} op;

typedef struct worker {
    const loop_driver *d;
    int idx;
    void *loop;
    cp_client *c;
    pthread_t th;
    int running;
    _Atomic int stop;
    int hot_lo, hot_hi; /* half the keys are in these slots (the scenario's) */
    key_state keys[KEYS];
    op ops[INFLIGHT], *free_ops;
    int out;
    uint64_t rng;
    /* results, read after the join (the atomics also while it runs) */
    _Atomic long sets_done, hot_done;
    long sets_unknown, sets_failed, gets_done, gets_failed, refused;
    long inversions, stale, wrong, lost;
    int loop_left;
    cp_stats stats;
    char first_problem[256];
} worker;

typedef struct crew {
    worker *w[MAX_WORKERS];
    size_t n;
} crew;

static crew the_crew; /* the running scenario's, so that a teardown after a failure ends it */

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

static uint32_t rnd(worker *w, uint32_t n) {
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return (uint32_t)(w->rng % n);
}

static void done_op(op *o) {
    worker *w = o->w;
    o->next_free = w->free_ops;
    w->free_ops = o;
    w->out--;
}

static int hot(const worker *w, const key_state *k) {
    return k->slot >= (unsigned)w->hot_lo && k->slot <= (unsigned)w->hot_hi;
}

static void on_set(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    op *o = data;
    worker *w = o->w;
    key_state *k = o->k;
    if (r->outcome == CP_DONE) {
        atomic_fetch_add(&w->sets_done, 1);
        if (hot(w, k))
            atomic_fetch_add(&w->hot_done, 1);
        if (o->version < k->acked) {
            w->inversions++;
            problem(w, "%s: v%ld acknowledged after v%ld", k->name, o->version, k->acked);
        } else {
            k->acked = o->version;
        }
    } else if (r->outcome == CP_UNKNOWN) {
        w->sets_unknown++;
    } else {
        w->sets_failed++;
    }
    done_op(o);
}

/* The version a reply of key k carries, or -1 when it is not one of k's values. */
static long version_of(const key_state *k, const redisReply *rep) {
    size_t klen = strlen(k->name);
    if (rep->type != REDIS_REPLY_STRING || rep->len <= klen ||
        memcmp(rep->str, k->name, klen) != 0 || rep->str[klen] != '|')
        return -1;
    return atol(rep->str + klen + 1);
}

static void on_get(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    op *o = data;
    worker *w = o->w;
    key_state *k = o->k;
    if (r->outcome != CP_DONE) {
        w->gets_failed++;
    } else if (r->reply->type == REDIS_REPLY_NIL) {
        w->gets_done++;
        if (o->version > 0) {
            w->stale++;
            problem(w, "%s: GET nil after v%ld was acknowledged", k->name, o->version);
        }
    } else {
        w->gets_done++;
        long v = version_of(k, r->reply);
        if (v < 0 || v >= k->next) {
            w->wrong++;
            problem(w, "%s: GET answered \"%.60s\"", k->name,
                    r->reply->type == REDIS_REPLY_STRING ? r->reply->str : "(not a string)");
        } else if (v < o->version) {
            w->stale++;
            problem(w, "%s: GET answered v%ld after v%ld was acknowledged", k->name, v, o->version);
        }
    }
    done_op(o);
}

/* Tops the commands out up to INFLIGHT, each a GET or a SET of a random key. */
static void send_more(worker *w) {
    while (w->out < INFLIGHT && !atomic_load(&w->stop)) {
        op *o = w->free_ops;
        w->free_ops = o->next_free;
        key_state *k = &w->keys[rnd(w, KEYS)];
        int rc;
        if (rnd(w, 4) == 0) {
            *o = (op){w, k, k->next, NULL};
            char val[80];
            snprintf(val, sizeof(val), "%s|%ld", k->name, k->next);
            rc = cp_async_command(w->c, on_set, o, "SET %s %s", k->name, val);
            if (rc == 0)
                k->next++;
        } else {
            *o = (op){w, k, k->acked, NULL};
            rc = cp_async_command(w->c, on_get, o, "GET %s", k->name);
        }
        if (rc != 0) {
            o->next_free = w->free_ops;
            w->free_ops = o;
            w->refused++;
            problem(w, "send refused: %s", cp_strerror(rc));
            return;
        }
        w->out++;
    }
}

/* Key i of worker w: in [hot_lo, hot_hi] for even i, anywhere for odd i; the worker's index in
 * the tag keeps the workers' keys apart. */
static void name_key(worker *w, key_state *k, int i) {
    for (int t = 0;; t++) {
        char tag[32];
        snprintf(tag, sizeof(tag), "o%d.%d.%d", w->idx, i, t);
        unsigned s = cp_keyslot(tag, strlen(tag));
        if (i % 2 == 0 && (s < (unsigned)w->hot_lo || s > (unsigned)w->hot_hi))
            continue;
        snprintf(k->name, sizeof(k->name), "{%s}:k", tag);
        k->slot = s;
        k->next = 1;
        return;
    }
}

static void *work(void *arg) {
    worker *w = arg;
    int rc = w->d->attach(w->loop, w->c);
    if (rc != 0) {
        problem(w, "attach: %s", cp_strerror(rc));
        atomic_store(&w->stop, 1);
    }
    while (!atomic_load(&w->stop) || cp_pending(w->c) > 0) {
        send_more(w);
        w->d->run_nowait(w->loop);
        struct timespec ts = {0, 1000000L}; /* 1 ms: the servers share the machine's 2 cores */
        nanosleep(&ts, NULL);
    }
    cp_get_stats(w->c, &w->stats);
    return NULL;
}

/* One worker per loop, each in its thread: a client on the fixture's masters, half its keys in
 * [hot_lo, hot_hi]. */
static void start(crew *cr, cp_fixture *f, int hot_lo, int hot_hi, int budget_ms) {
    memset(cr, 0, sizeof(*cr));
    for (size_t i = 0; i < n_loop_drivers && i < MAX_WORKERS; i++) {
        worker *w = calloc(1, sizeof(*w));
        assert_non_null(w);
        w->d = &loop_drivers[i];
        w->idx = (int)i;
        w->hot_lo = hot_lo;
        w->hot_hi = hot_hi;
        cp_options o = CP_OPTIONS_INIT;
        o.seeds = f->endpoints;
        o.retry_budget_ms = budget_ms;
        o.io_timeout_ms = 15000; /* a stopped or paused master's commands wait for it */
        cp_test_protocol(&o);
        w->c = cp_client_new(&o);
        assert_non_null(w->c);
        assert_int_equal(w->c->err, 0);
        w->loop = w->d->loop_new();
        assert_non_null(w->loop);
        for (int k = 0; k < KEYS; k++)
            name_key(w, &w->keys[k], k);
        for (int k = 0; k < INFLIGHT; k++) {
            w->ops[k].next_free = w->free_ops;
            w->free_ops = &w->ops[k];
        }
        w->rng = 0x9E3779B97F4A7C15ull * (i + 1);
        cr->w[cr->n++] = w;
    }
    for (size_t i = 0; i < cr->n; i++) {
        assert_int_equal(pthread_create(&cr->w[i]->th, NULL, work, cr->w[i]), 0);
        cr->w[i]->running = 1;
    }
}

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

static void free_crew(crew *cr) {
    stop_workers(cr);
    for (size_t i = 0; i < cr->n; i++)
        free(cr->w[i]);
    cr->n = 0;
}

static int teardown(void **state) {
    free_crew(&the_crew);
    return cp_fixture_teardown(state);
}

/* Every key read back with a plain client: no acknowledged version may be missing. */
static void read_back(cp_fixture *f, worker *w) {
    for (int i = 0; i < KEYS; i++) {
        key_state *k = &w->keys[i];
        if (k->acked == 0)
            continue;
        redisReply *r = cp_fixture_command(f, "GET %s", k->name);
        assert_non_null(r);
        long v = r->type == REDIS_REPLY_STRING ? version_of(k, r) : 0;
        if (v < k->acked) {
            w->lost++;
            problem(w, "%s: holds v%ld at the end, v%ld was acknowledged", k->name, v, k->acked);
        }
        freeReplyObject(r);
    }
}

/* The end of a scenario: workers stopped and freed, keys read back, figures printed, and what
 * every scenario holds to checked. */
static void finish(crew *cr, cp_fixture *f) {
    stop_workers(cr);
    for (size_t i = 0; i < cr->n; i++) {
        worker *w = cr->w[i];
        read_back(f, w);
        print_message(
            "%-8s SETs %ld done, %ld unknown, %ld not executed; GETs %ld done, %ld "
            "failed; %ld inversions, %ld stale reads, %ld lost writes, %ld wrong; moved "
            "%llu ask %llu tryagain %llu clusterdown %llu io retries %llu refreshes "
            "%llu%s%s\n",
            w->d->name, atomic_load(&w->sets_done), w->sets_unknown, w->sets_failed, w->gets_done,
            w->gets_failed, w->inversions, w->stale, w->lost, w->wrong,
            (unsigned long long)w->stats.moved, (unsigned long long)w->stats.ask,
            (unsigned long long)w->stats.tryagain, (unsigned long long)w->stats.clusterdown,
            (unsigned long long)w->stats.io_retries, (unsigned long long)w->stats.refreshes,
            w->first_problem[0] ? ": " : "", w->first_problem);
    }
    for (size_t i = 0; i < cr->n; i++) {
        worker *w = cr->w[i];
        WCHECK(w, w->loop_left == 0);
        WCHECK(w, atomic_load(&w->sets_done) > 20 * KEYS);
        WCHECK(w, w->gets_done > 20 * KEYS);
        WCHECK(w, w->refused == 0);
        WCHECK(w, w->inversions == 0);
        WCHECK(w, w->stale == 0);
        WCHECK(w, w->lost == 0);
        WCHECK(w, w->wrong == 0);
    }
}

/* Waits until every worker's hot keys have had more SETs done than at `since` (their shard
 * serves again), up to max_ms. Returns 1 when they all have. */
static int hot_resumed(crew *cr, const long *since, int max_ms) {
    for (uint64_t end = cp__now_ns() + (uint64_t)max_ms * 1000000ull; cp__now_ns() < end;) {
        size_t there = 0;
        for (size_t i = 0; i < cr->n; i++)
            there += atomic_load(&cr->w[i]->hot_done) > since[i] + KEYS;
        if (there == cr->n)
            return 1;
        cp__sleep_ms(20);
    }
    return 0;
}

static void hot_now(crew *cr, long *out) {
    for (size_t i = 0; i < cr->n; i++)
        out[i] = atomic_load(&cr->w[i]->hot_done);
}

/* ---- the scenarios ----------------------------------------------------------------------------
 */

/* Slots 5211..5460 (master 0's highest) move to master 1 and back, twice. */
static void order_through_migration(void **state) {
    cp_fixture *f = *state;
    crew *cr = &the_crew;
    start(cr, f, 5211, 5460, 8000);
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
    finish(cr, f);
    for (size_t i = 0; i < cr->n; i++) {
        worker *w = cr->w[i];
        WCHECK(w, w->stats.moved > 0);
        WCHECK(w, w->stats.ask > 0);
        WCHECK(w, w->sets_failed == 0);
        WCHECK(w, w->sets_unknown == 0);
    }
    free_crew(cr);
}

/* Master 0 stopped for 3 s (longer than the cluster's 2 s node timeout; without replicas and
 * with full coverage not required, the others go on): its commands wait for it, and finish in
 * order once it runs again, whatever it answers while it rejoins. */
static void order_through_stop(void **state) {
    cp_fixture *f = *state;
    crew *cr = &the_crew;
    start(cr, f, 0, 5460, 30000);
    cp__sleep_ms(500);
    size_t m0 = cp_fixture_master(f, 0);
    char err[512];
    long before[MAX_WORKERS];
    assert_int_equal(cp_topo_kill(f->topo, m0, SIGSTOP, err, sizeof(err)), 0);
    cp__sleep_ms(3000);
    hot_now(cr, before);
    assert_int_equal(cp_topo_kill(f->topo, m0, SIGCONT, err, sizeof(err)), 0);
    assert_true(hot_resumed(cr, before, 20000));
    cp__sleep_ms(500);
    finish(cr, f);
    for (size_t i = 0; i < cr->n; i++)
        WCHECK(cr->w[i], cr->w[i]->sets_failed == 0);
    free_crew(cr);
}

/* cluster-require-full-coverage yes, and master 0 stopped past the node timeout: the other
 * masters answer CLUSTERDOWN to everything until it is back, and every command waits for its
 * retry rounds. */
static void order_through_clusterdown(void **state) {
    cp_fixture *f = *state;
    for (int k = 0; k < 3; k++) {
        redisContext *hc = cp_fixture_conn(f, cp_topo_proc(f->topo, cp_fixture_master(f, k))->port);
        assert_non_null(hc);
        redisReply *r = redisCommand(hc, "CONFIG SET cluster-require-full-coverage yes");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STATUS);
        freeReplyObject(r);
    }
    crew *cr = &the_crew;
    start(cr, f, 5461, 16383, 30000); /* hot: the masters that answer CLUSTERDOWN */
    cp__sleep_ms(500);
    size_t m0 = cp_fixture_master(f, 0);
    char err[512];
    long before[MAX_WORKERS];
    assert_int_equal(cp_topo_kill(f->topo, m0, SIGSTOP, err, sizeof(err)), 0);
    /* The stop lasts until the others have declared the cluster down (the node timeout, 2 s,
     * then their votes: on a loaded machine that can take longer than any fixed wait), and a
     * second more of CLUSTERDOWN answers. */
    redisContext *m1 = cp_fixture_conn(f, cp_topo_proc(f->topo, cp_fixture_master(f, 1))->port);
    assert_non_null(m1);
    int down = 0;
    for (int i = 0; i < 300 && !down; i++) {
        redisReply *r = redisCommand(m1, "CLUSTER INFO");
        assert_non_null(r);
        down = r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:fail") != NULL;
        freeReplyObject(r);
        if (!down)
            cp__sleep_ms(100);
    }
    assert_true(down); /* within 30 s */
    cp__sleep_ms(1000);
    hot_now(cr, before);
    assert_int_equal(cp_topo_kill(f->topo, m0, SIGCONT, err, sizeof(err)), 0);
    assert_true(hot_resumed(cr, before, 20000));
    cp__sleep_ms(500);
    finish(cr, f);
    for (size_t i = 0; i < cr->n; i++) {
        worker *w = cr->w[i];
        WCHECK(w, w->stats.clusterdown > 0);
        WCHECK(w, w->sets_failed == 0);
    }
    free_crew(cr);
}

/* The replication offset a server reports in INFO replication (field: master_repl_offset or
 * slave_repl_offset), or -1. */
static long long repl_offset(redisContext *hc, const char *field) {
    redisReply *r = redisCommand(hc, "INFO replication");
    long long off = -1;
    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        const char *p = strstr(r->str, field);
        if (p != NULL)
            off = atoll(p + strlen(field) + 1);
    }
    if (r != NULL)
        freeReplyObject(r);
    return off;
}

/* Master 1 killed with SIGKILL (its writes paused and its replica caught up first, so that the
 * server loses no acknowledged write by itself): its replica takes over, and the shard's
 * commands, waiting in the client meanwhile, go to it in order. */
static void order_through_failover(void **state) {
    cp_fixture *f = *state;
    crew *cr = &the_crew;
    start(cr, f, 5461, 10922, 15000); /* hot: master 1's slots */
    cp__sleep_ms(800);
    size_t m1 = cp_fixture_master(f, 1), r1 = SIZE_MAX;
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++)
        if (cp_topo_proc(f->topo, i)->role == CP_ROLE_REPLICA &&
            cp_topo_proc(f->topo, i)->master == (int)m1)
            r1 = i;
    assert_int_not_equal(r1, SIZE_MAX);
    redisContext *mc = cp_fixture_conn(f, cp_topo_proc(f->topo, m1)->port);
    redisContext *rc = cp_fixture_conn(f, cp_topo_proc(f->topo, r1)->port);
    assert_non_null(mc);
    assert_non_null(rc);
    redisReply *r = redisCommand(mc, "CLIENT PAUSE 30000 WRITE");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
    long long want = repl_offset(mc, "master_repl_offset"), have = -1;
    for (int i = 0; i < 500 && (have = repl_offset(rc, "slave_repl_offset")) < want; i++)
        cp__sleep_ms(10);
    print_message("master 1 paused at offset %lld; its replica has %lld\n", want, have);
    assert_int_gt(want, 0);
    assert_int_ge(have, want);
    char err[512];
    long before[MAX_WORKERS];
    hot_now(cr, before);
    assert_int_equal(cp_topo_kill(f->topo, m1, SIGKILL, err, sizeof(err)), 0);
    uint64_t killed = cp__now_ns();
    assert_true(hot_resumed(cr, before, 30000));
    print_message("the killed shard's SETs went on %.2f s after the kill\n",
                  (double)(cp__now_ns() - killed) / 1e9);
    cp__sleep_ms(1000);
    finish(cr, f);
    for (size_t i = 0; i < cr->n; i++)
        WCHECK(cr->w[i], cr->w[i]->stats.refreshes > 1);
    free_crew(cr);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    loop_drivers_announce();
    const char *only = getenv("CP_TEST_ONLY"); /* e.g. order_through_failover */
    if (only != NULL)
        cmocka_set_test_filter(only);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(order_through_migration, cp_fixture_setup_cluster3,
                                        teardown),
        cmocka_unit_test_setup_teardown(order_through_stop, cp_fixture_setup_cluster3, teardown),
        cmocka_unit_test_setup_teardown(order_through_clusterdown, cp_fixture_setup_cluster3,
                                        teardown),
        cmocka_unit_test_setup_teardown(order_through_failover, cp_fixture_setup_cluster3x1,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
