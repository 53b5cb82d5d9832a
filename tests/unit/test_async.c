/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The async API against scripted fake nodes, on the built-in loop: every callback exactly once,
 * a stalled node holding back only its own commands, a black-holed seed, the max_pending limit,
 * callbacks that send more, cp_free with commands in flight, blocking calls refused, and one
 * key's commands kept in order across a MOVED while more of them are in flight (the fence). The
 * loop is turned with cp_loop_run_once(l, 0), which never waits, and every such call is measured
 * (tests/support/calltime.h): none may take 10 ms of CPU, nor, when its thread slept in it, keep
 * the loop 10 ms. A non-blocking send can sleep for microseconds on the kernel's socket lock
 * while the peer holds it (seen in CI: 4 in a run with the longest call at 3 ms), which is not a
 * wait for the network and stays far under the bound.
 */
#include <setjmp.h>
#include <stdarg.h>
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
#include "calltime.h"
#include "clusterpipe/clusterpipe.h"
#include "fakenode.h"
#include "fakeset.h"
#include "testutil.h"

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- three fake masters, a third of the slots each ------------------------------------------- */

static int three_masters(void **state) {
    fakeset_setup(state);
    fakeset *f = *state;
    int start[3] = {0, 5461, 10923}, end[3] = {5460, 10922, 16383};
    char buf[2048];
    assert_int_gt(fake_cluster_shards(buf, sizeof(buf), 3, start, end, f->port), 0);
    for (int i = 0; i < FAKESET_N; i++)
        fake_node_set_cluster_reply(f->node[i], "SHARDS", buf);
    return 0;
}

static int node_of_slot(unsigned s) {
    return s <= 5460 ? 0 : s <= 10922 ? 1 : 2;
}

/* valgrind (CI runs the unit tests under it) slows every instruction tens of times: a wall-time
 * bound means nothing there, and the timeouts below stretch by this much (it preloads its
 * vgpreload libraries into the program). */
static int under_valgrind(void) {
    const char *p = getenv("LD_PRELOAD");
    return p != NULL && strstr(p, "vgpreload") != NULL;
}

static int slowdown(void) {
    return under_valgrind() ? 10 : 1;
}

/* An event-loop client seeded with `seeds`, on a new cp_loop. */
static cp_client *async_client(const char *seeds, int io_ms, int budget_ms, int max_pending,
                               cp_loop **loop) {
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = seeds;
    o.io_timeout_ms = io_ms * slowdown();
    o.retry_budget_ms = budget_ms * slowdown();
    o.connect_timeout_ms = 300 * slowdown();
    o.max_pending = max_pending;
    cp_client *c = cp_client_new(&o);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    *loop = cp_loop_new();
    assert_non_null(*loop);
    assert_int_equal(cp_loop_attach(*loop, c), 0);
    return c;
}

/* ---- measured turns ------------------------------------------------------------------------ */

static calltime g_calls;

/* One turn of the loop that never waits, measured. */
static void timed_turn(cp_loop *l) {
    calltimer t;
    calltime_begin(&g_calls, &t);
    int rc = cp_loop_run_once(l, 0);
    calltime_end(&g_calls, &t);
    assert_int_ge(rc, 0);
}

/* Turns until done() or the deadline, sleeping 1 ms between turns (outside the measurement). */
static void run_until(cp_loop *l, int (*done)(void *), void *arg, int max_ms) {
    uint64_t end = now_ns() + (uint64_t)max_ms * (uint64_t)slowdown() * 1000000ull;
    while (!done(arg) && now_ns() < end) {
        timed_turn(l);
        struct timespec ts = {0, 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* ---- callbacks ------------------------------------------------------------------------------ */

#define MAXCMDS 512

typedef struct tally {
    int calls[MAXCMDS]; /* callbacks per command */
    cp_outcome outcome[MAXCMDS];
    int err[MAXCMDS];
    char value[MAXCMDS][16];
    uint64_t when[MAXCMDS];
    int n, finished;
} tally;

typedef struct cmdref {
    tally *t;
    int i;
} cmdref;

static void on_reply(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    cmdref *ref = data;
    tally *t = ref->t;
    t->calls[ref->i]++;
    t->outcome[ref->i] = r->outcome;
    t->err[ref->i] = r->err;
    t->when[ref->i] = now_ns();
    if (r->reply != NULL && r->reply->type == REDIS_REPLY_STRING)
        snprintf(t->value[ref->i], sizeof(t->value[0]), "%s", r->reply->str);
    t->finished++;
}

static int all_finished(void *arg) {
    tally *t = arg;
    return t->finished >= t->n;
}

static char *seed_of(fakeset *f, int i, char *buf) {
    sprintf(buf, "127.0.0.1:%d", f->port[i]);
    return buf;
}

/* GETs of n keys spread over the three masters; each key's value is stored on its master
 * first. All stored before the first GET is queued: a command's deadlines run from its queuing,
 * and the loop does not turn while the values are stored (a slow machine took seconds for that,
 * and the first GETs ran out of their budget before the loop ever turned). */
static void send_gets(fakeset *f, cp_client *c, tally *t, cmdref *refs, int n, int store) {
    for (int i = 0; i < n && store; i++) {
        char k[16], v[16];
        sprintf(k, "k%d", i);
        sprintf(v, "v%d", i);
        fakeset_put(f, node_of_slot(cp_keyslot(k, strlen(k))), k, v);
    }
    for (int i = 0; i < n; i++) {
        char k[16];
        sprintf(k, "k%d", i);
        refs[i] = (cmdref){t, i};
        assert_int_equal(cp_async_command(c, on_reply, &refs[i], "GET %s", k), 0);
    }
    t->n = n;
}

static void every_callback_once(void **state) {
    fakeset *f = *state;
    char seed[32];
    cp_loop *l;
    cp_client *c = async_client(seed_of(f, 0, seed), 2000, 2000, 0, &l);
    static tally t;
    static cmdref refs[MAXCMDS];
    memset(&t, 0, sizeof(t));
    memset(&g_calls, 0, sizeof(g_calls));
    send_gets(f, c, &t, refs, 300, 1);
    assert_int_equal(t.finished, 0); /* never called inside the call that sent it */
    assert_int_equal(cp_pending(c), 300);
    run_until(l, all_finished, &t, 10000);
    for (int i = 0; i < 300; i++) {
        char v[16];
        sprintf(v, "v%d", i);
        assert_int_equal(t.calls[i], 1);
        assert_int_equal(t.outcome[i], CP_DONE);
        assert_string_equal(t.value[i], v);
    }
    assert_int_equal(cp_pending(c), 0);
    for (int i = 0; i < FAKESET_N; i++)
        assert_int_gt(fake_node_count(f->node[i], "GET"), 0);
    /* One write per node per turn: the 300 GETs arrive in a handful of reads, not 300. */
    calltime_assert_never_blocked(&g_calls, 0, !under_valgrind(), "cp_loop");
    cp_free(c);
    cp_loop_free(l);
}

/* Master 2 stops answering (FAKE_STALL): the other masters' commands complete at once; master
 * 2's end by the I/O timeout and the budget, after every other one, and no call blocks. */
static void stalled_node_holds_back_only_its_own(void **state) {
    fakeset *f = *state;
    fakeset_rule(f->node[2], "GET", NULL, 0, -1, FAKE_STALL, NULL);
    char seed[32];
    cp_loop *l;
    cp_client *c = async_client(seed_of(f, 0, seed), 500, 1200, 0, &l);
    static tally t;
    static cmdref refs[MAXCMDS];
    memset(&t, 0, sizeof(t));
    memset(&g_calls, 0, sizeof(g_calls));
    send_gets(f, c, &t, refs, 300, 1);
    run_until(l, all_finished, &t, 15000);
    uint64_t last_healthy = 0, first_stalled = UINT64_MAX;
    int stalled = 0;
    for (int i = 0; i < 300; i++) {
        char k[16], v[16];
        sprintf(k, "k%d", i);
        sprintf(v, "v%d", i);
        assert_int_equal(t.calls[i], 1);
        if (node_of_slot(cp_keyslot(k, strlen(k))) == 2) {
            stalled++;
            assert_int_equal(t.outcome[i], CP_UNKNOWN); /* written, never answered */
            assert_int_equal(t.err[i], CP_ETIMEDOUT);
            first_stalled = t.when[i] < first_stalled ? t.when[i] : first_stalled;
        } else {
            assert_int_equal(t.outcome[i], CP_DONE);
            assert_string_equal(t.value[i], v);
            last_healthy = t.when[i] > last_healthy ? t.when[i] : last_healthy;
        }
    }
    assert_int_gt(stalled, 0);
    assert_int_lt(last_healthy, first_stalled);
    cp_stats st;
    cp_get_stats(c, &st);
    assert_int_gt(st.io_retries, 0); /* read-only GETs were re-sent after the timeout */
    calltime_assert_never_blocked(&g_calls, 0, !under_valgrind(), "cp_loop");
    cp_free(c);
    cp_loop_free(l);
}

/* The first seed accepts no connection (a listener whose backlog is full: SYNs go unanswered);
 * the map comes from the second seed after the connect timeout, and no call blocks. */
static void black_holed_seed(void **state) {
    fakeset *f = *state;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t al = sizeof(a);
    getsockname(lfd, (struct sockaddr *)&a, &al);
    assert_int_equal(listen(lfd, 0), 0);
    int fill[4];
    for (int i = 0; i < 4; i++) { /* fill the backlog: further SYNs are dropped */
        fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(fill[i], (struct sockaddr *)&a, sizeof(a));
    }
    char seeds[64];
    snprintf(seeds, sizeof(seeds), "127.0.0.1:%d,127.0.0.1:%d", ntohs(a.sin_port), f->port[0]);
    cp_loop *l;
    cp_client *c = async_client(seeds, 2000, 3000, 0, &l);
    static tally t;
    static cmdref refs[MAXCMDS];
    memset(&t, 0, sizeof(t));
    memset(&g_calls, 0, sizeof(g_calls));
    send_gets(f, c, &t, refs, 30, 1);
    run_until(l, all_finished, &t, 10000);
    for (int i = 0; i < 30; i++) {
        assert_int_equal(t.calls[i], 1);
        assert_int_equal(t.outcome[i], CP_DONE);
    }
    calltime_assert_never_blocked(&g_calls, 0, !under_valgrind(), "cp_loop");
    cp_free(c);
    cp_loop_free(l);
    for (int i = 0; i < 4; i++)
        close(fill[i]);
    close(lfd);
}

static void limit_refuses_past_max_pending(void **state) {
    fakeset *f = *state;
    char seed[32];
    cp_loop *l;
    cp_client *c = async_client(seed_of(f, 0, seed), 2000, 2000, 10, &l);
    static tally t;
    static cmdref refs[MAXCMDS];
    memset(&t, 0, sizeof(t));
    for (int i = 0; i < 10; i++) {
        refs[i] = (cmdref){&t, i};
        assert_int_equal(cp_async_command(c, on_reply, &refs[i], "GET k%d", i), 0);
    }
    refs[10] = (cmdref){&t, 10};
    assert_int_equal(cp_async_command(c, on_reply, &refs[10], "GET k10"), CP_ELIMIT);
    assert_int_equal(c->err, CP_ELIMIT);
    t.n = 10;
    run_until(l, all_finished, &t, 10000);
    assert_int_equal(t.finished, 10);
    assert_int_equal(t.calls[10], 0);
    /* room again */
    assert_int_equal(cp_async_command(c, on_reply, &refs[10], "GET k10"), 0);
    t.n = 11;
    run_until(l, all_finished, &t, 10000);
    assert_int_equal(t.calls[10], 1);
    cp_free(c);
    cp_loop_free(l);
}

/* Each INCR's callback sends the next: a chain of 100 gives 100, in order. */
typedef struct chain {
    int left, last, errors;
} chain;

static void incr_next(cp_client *c, const cp_response *r, void *data) {
    chain *ch = data;
    if (r->outcome != CP_DONE || r->reply == NULL || r->reply->type != REDIS_REPLY_INTEGER) {
        ch->errors++;
        ch->left = 0;
        return;
    }
    ch->last = (int)r->reply->integer;
    if (--ch->left > 0)
        assert_int_equal(cp_async_command(c, incr_next, ch, "INCR chain"), 0);
}

static int chain_done(void *arg) {
    return ((chain *)arg)->left == 0;
}

static void callbacks_send_more(void **state) {
    fakeset *f = *state;
    char seed[32];
    cp_loop *l;
    cp_client *c = async_client(seed_of(f, 0, seed), 2000, 2000, 0, &l);
    chain ch = {100, 0, 0};
    assert_int_equal(cp_async_command(c, incr_next, &ch, "INCR chain"), 0);
    run_until(l, chain_done, &ch, 10000);
    assert_int_equal(ch.errors, 0);
    assert_int_equal(ch.last, 100);
    cp_free(c);
    cp_loop_free(l);
}

/* Freed with commands written and unanswered (a stalled node): each callback once, canceled. */
static void free_with_commands_in_flight(void **state) {
    fakeset *f = *state;
    for (int i = 0; i < FAKESET_N; i++)
        fakeset_rule(f->node[i], "GET", NULL, 0, -1, FAKE_STALL, NULL);
    char seed[32];
    cp_loop *l;
    cp_client *c = async_client(seed_of(f, 0, seed), 5000, 5000, 0, &l);
    static tally t;
    static cmdref refs[MAXCMDS];
    memset(&t, 0, sizeof(t));
    send_gets(f, c, &t, refs, 50, 0);
    /* until every GET has reached its node */
    uint64_t end = now_ns() + 10000000000ull;
    while (fake_node_count(f->node[0], "GET") + fake_node_count(f->node[1], "GET") +
                   fake_node_count(f->node[2], "GET") <
               50 &&
           now_ns() < end)
        cp_loop_run_once(l, 10);
    assert_int_equal(t.finished, 0);
    cp_free(c);
    for (int i = 0; i < 50; i++) {
        assert_int_equal(t.calls[i], 1);
        assert_int_equal(t.outcome[i], CP_UNKNOWN);
        assert_int_equal(t.err[i], CP_ECANCELED);
    }
    cp_loop_free(l);
}

static void exec_done(cp_pipeline *p, void *data) {
    (void)p;
    ++*(int *)data;
}

static int count_is_4(void *arg) {
    return *(int *)arg == 4;
}

/* Pipelines run at once with cp_exec_async; blocking calls are refused on this client. */
static void pipelines_at_once_and_no_blocking_calls(void **state) {
    fakeset *f = *state;
    char seed[32];
    cp_loop *l;
    cp_client *c = async_client(seed_of(f, 0, seed), 2000, 2000, 0, &l);
    for (int i = 0; i < 40; i++) {
        char k[16], v[16];
        sprintf(k, "k%d", i);
        sprintf(v, "v%d", i);
        fakeset_put(f, node_of_slot(cp_keyslot(k, strlen(k))), k, v);
    }
    cp_pipeline *p[4];
    int done = 0;
    for (int j = 0; j < 4; j++) {
        p[j] = cp_pipeline_new(c);
        for (int i = 0; i < 10; i++)
            assert_int_equal(cp_append(p[j], "GET k%d", j * 10 + i), 0);
        assert_int_equal(cp_exec_async(p[j], exec_done, &done), 0);
        assert_int_equal(cp_running(p[j]), 1);
    }
    assert_int_equal(cp_exec_async(p[0], exec_done, &done), CP_EINVAL); /* running */
    assert_int_equal(done, 0);
    run_until(l, count_is_4, &done, 10000);
    assert_int_equal(done, 4);
    for (int j = 0; j < 4; j++) {
        for (int i = 0; i < 10; i++) {
            char v[16];
            sprintf(v, "v%d", j * 10 + i);
            fakeset_assert_str(p[j], (size_t)i, v);
        }
        assert_int_equal(cp_running(p[j]), 0);
    }
    cp_pipeline_reset(p[0]);
    assert_int_equal(cp_append(p[0], "GET k0"), 0);
    assert_int_equal(cp_exec(p[0]), CP_EINVAL);
    assert_null(cp_command(c, "GET k0"));
    assert_int_equal(c->err, CP_EINVAL);
    for (int j = 0; j < 4; j++)
        cp_pipeline_free(p[j]);
    cp_free(c);
    cp_loop_free(l);
}

/* A pipeline with nothing to send (its one command refused as cross-slot) still gets `done`
 * exactly once, from the loop, not inside cp_exec_async; cp_loop_run waits for it; and `done`
 * may free the pipeline. Freeing a running pipeline instead detaches it: no `done`, no leak. */
static void free_pipeline_in_done(cp_pipeline *p, void *data) {
    ++*(int *)data;
    cp_pipeline_free(p);
}

static void finished_pipelines_and_frees(void **state) {
    fakeset *f = *state;
    char seed[32];
    cp_loop *l;
    cp_client *c = async_client(seed_of(f, 0, seed), 2000, 2000, 0, &l);
    cp_pipeline *p = cp_pipeline_new(c);
    assert_int_equal(cp_append(p, "MGET {a}x {b}y"), 0); /* splitting is off: refused */
    int done = 0;
    assert_int_equal(cp_exec_async(p, free_pipeline_in_done, &done), 0);
    assert_int_equal(done, 0);
    assert_int_gt(cp_pending(c), 0); /* owed until `done` is called */
    assert_int_equal(cp_loop_run(l), 0);
    assert_int_equal(done, 1);
    assert_int_equal(cp_pending(c), 0);
    /* detached while running: finishes on its own, `done` never called, nothing leaks */
    cp_pipeline *q = cp_pipeline_new(c);
    assert_int_equal(cp_append(q, "GET k1"), 0);
    assert_int_equal(cp_exec_async(q, free_pipeline_in_done, &done), 0);
    cp_pipeline_free(q);
    assert_int_equal(cp_loop_run(l), 0);
    assert_int_equal(done, 1);
    cp_free(c);
    cp_loop_free(l);
}

/* A connection idle for longer than the I/O timeout is not failed by the first request sent on
 * it afterwards: the timeout counts from that request, not from the last bytes it moved. The
 * requests are sent from a callback, so the loop runs its timers before it polls again. */
typedef struct fanout {
    fakeset *f;
    tally *t;
    cmdref *refs;
} fanout;

static void send_rest(cp_client *c, const cp_response *r, void *data) {
    fanout *fo = data;
    fo->t->finished++;
    fo->t->outcome[0] = r->outcome;
    for (int i = 1; i < 30; i++) {
        fo->refs[i] = (cmdref){fo->t, i};
        assert_int_equal(cp_async_command(c, on_reply, &fo->refs[i], "GET k%d", i), 0);
    }
}

static void idle_connection_is_not_timed_out(void **state) {
    fakeset *f = *state;
    char seed[32];
    cp_loop *l;
    cp_client *c = async_client(seed_of(f, 0, seed), 300, 2000, 0, &l);
    static tally t;
    static cmdref refs[MAXCMDS];
    memset(&t, 0, sizeof(t));
    send_gets(f, c, &t, refs, 30, 1); /* every master's connection opens */
    run_until(l, all_finished, &t, 10000);
    assert_int_equal(t.finished, 30);
    struct timespec idle = {0, 500 * 1000000L}; /* longer than the 300 ms I/O timeout */
    nanosleep(&idle, NULL);
    memset(&t, 0, sizeof(t));
    t.n = 30;
    fanout fo = {f, &t, refs};
    assert_int_equal(cp_async_command(c, send_rest, &fo, "GET k0"), 0);
    run_until(l, all_finished, &t, 10000);
    for (int i = 0; i < 30; i++)
        assert_int_equal(t.outcome[i], CP_DONE);
    cp_stats st;
    cp_get_stats(c, &st);
    assert_int_equal(st.io_retries, 0); /* no connection was failed and re-sent on */
    cp_free(c);
    cp_loop_free(l);
}

/* ---- the MOVED fence ------------------------------------------------------------------------ */

/* One key's commands keep their order across MOVED (docs/async.md, "Order"). The slot of key k
 * has moved from master 0 to master 1, and the client's map does not know yet. SET k v1, v2, v3
 * go out in one turn to master 0, which answers MOVED to each, but holds its answer to v2 back
 * (a FAKE_DELAY the test releases; v3's MOVED waits behind it on the connection, as behind any
 * slow reply). v1 is redirected and answered by master 1 first, and its callback sends SET k v4:
 * sent after v2 and v3, it must run after them, so it has to wait in the client until their
 * MOVED have come back and they have been redirected (the fence). Without the fence it goes
 * straight to master 1, ahead of them. The test waits until master 1 has it (or 200 ms, plenty
 * for a command the fence does not hold) before releasing master 0's answers, then checks the
 * order in which master 1 ran the SETs and the value left. */
typedef struct fence_ctx {
    tally *t;
    cmdref *refs;
    const char *key;
} fence_ctx;

static fence_ctx g_fence;

static void on_first_set(cp_client *c, const cp_response *r, void *data) {
    on_reply(c, r, data);
    g_fence.refs[3] = (cmdref){g_fence.t, 3};
    assert_int_equal(cp_async_command(c, on_reply, &g_fence.refs[3], "SET %s v4", g_fence.key), 0);
}

static int first_set_done(void *arg) {
    return ((tally *)arg)->calls[0] == 1;
}

typedef struct log_wait {
    fake_node *node;
    const char *line;
} log_wait;

static int node_logged(void *arg) {
    log_wait *w = arg;
    return fake_node_log_find(w->node, 0, w->line) >= 0;
}

static void moved_fence_keeps_key_order(void **state) {
    /* One key's SETs v1, v2, v3 go to master 0, whose slot moved; it answers MOVED to each but
     * holds v2's answer back. v1's callback sends v4 once master 1 answered v1. Master 1 must run
     * v1, v2, v3, v4: without the fence v4 overtakes (v1, v4, v2, v3); with a fence lifted before
     * its last command's redirect, v3 is overtaken (v1, v2, v4, v3). */
    fakeset *f = *state;
    /* a key of master 0, not at the edge of its range (the new map splits the range around it) */
    char key[32];
    unsigned slot = 0;
    for (int i = 0; slot == 0 || slot >= 5460; i++) {
        snprintf(key, sizeof(key), "fence:%d", i);
        slot = cp_keyslot(key, strlen(key));
    }
    char seed[32];
    cp_loop *l;
    cp_client *c = async_client(seed_of(f, 0, seed), 2000, 3000, 0, &l);
    static tally t;
    static cmdref refs[MAXCMDS];
    memset(&t, 0, sizeof(t));
    memset(&g_calls, 0, sizeof(g_calls));
    send_gets(f, c, &t, refs, 1, 1); /* the map is read, master 0 connected */
    run_until(l, all_finished, &t, 10000);
    assert_int_equal(t.outcome[0], CP_DONE);

    /* The slot moves to master 1: every node's map says so, master 0 redirects its SETs. */
    int start[5] = {0, (int)slot, (int)slot + 1, 5461, 10923};
    int end[5] = {(int)slot - 1, (int)slot, 5460, 10922, 16383};
    int ports[5] = {f->port[0], f->port[1], f->port[0], f->port[1], f->port[2]};
    char map[4096], moved[128];
    assert_int_gt(fake_cluster_shards(map, sizeof(map), 5, start, end, ports), 0);
    for (int i = 0; i < FAKESET_N; i++)
        fake_node_set_cluster_reply(f->node[i], "SHARDS", map);
    snprintf(moved, sizeof(moved), "-MOVED %u 127.0.0.1:%d\r\n", slot, f->port[1]);
    fakeset_rule(f->node[0], "SET", key, 0, 1, FAKE_REPLY, moved); /* v1 */
    int held = fake_node_rule(f->node[0], &(fake_rule){.cmd = "SET",
                                                       .key = key,
                                                       .times = 1,
                                                       .action = FAKE_DELAY,
                                                       .payload = moved,
                                                       .delay_ms = -1}); /* v2 */
    assert_int_ge(held, 0);
    fakeset_rule(f->node[0], NULL, key, 0, -1, FAKE_REPLY, moved); /* v3 and anything later */

    memset(&t, 0, sizeof(t));
    g_fence = (fence_ctx){&t, refs, key};
    t.n = 4;
    refs[0] = (cmdref){&t, 0};
    assert_int_equal(cp_async_command(c, on_first_set, &refs[0], "SET %s v1", key), 0);
    for (int i = 1; i < 3; i++) {
        refs[i] = (cmdref){&t, i};
        assert_int_equal(cp_async_command(c, on_reply, &refs[i], "SET %s v%d", key, i + 1), 0);
    }
    run_until(l, first_set_done, &t, 10000); /* v1 answered by master 1: v4 sent */
    assert_int_equal(t.calls[0], 1);
    assert_int_equal(t.outcome[0], CP_DONE);
    assert_int_equal(fake_node_rule_fired(f->node[0], held), 1); /* v2's MOVED is held */
    assert_int_equal(t.finished, 1);
    char v4[64];
    snprintf(v4, sizeof(v4), "SET %s v4", key);
    log_wait w = {f->node[1], v4};
    run_until(l, node_logged, &w, 200); /* the fence holds it: the full 200 ms */
    fake_node_release(f->node[0]);
    run_until(l, all_finished, &t, 10000);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(t.calls[i], 1);
        assert_int_equal(t.outcome[i], CP_DONE);
    }
    /* master 1 ran them in the order they were sent */
    long at = -1;
    for (int v = 1; v <= 4; v++) {
        char line[64];
        snprintf(line, sizeof(line), "SET %s v%d", key, v);
        long i = fake_node_log_find(f->node[1], 0, line);
        if (i <= at) {
            for (size_t j = 0; j < fake_node_log_len(f->node[1]); j++) {
                char entry[64];
                fake_node_log(f->node[1], j, entry, sizeof(entry));
                print_message("master 1's log %zu: %s\n", j, entry);
            }
            fail_msg("master 1 ran \"%s\" (entry %ld) before an earlier SET of the key", line, i);
        }
        at = i;
    }
    memset(&t, 0, sizeof(t));
    t.n = 1;
    refs[0] = (cmdref){&t, 0};
    assert_int_equal(cp_async_command(c, on_reply, &refs[0], "GET %s", key), 0);
    run_until(l, all_finished, &t, 10000);
    assert_int_equal(t.outcome[0], CP_DONE);
    assert_string_equal(t.value[0], "v4");
    calltime_assert_never_blocked(&g_calls, 0, !under_valgrind(), "cp_loop");
    cp_free(c);
    cp_loop_free(l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(every_callback_once, three_masters, fakeset_teardown),
        cmocka_unit_test_setup_teardown(stalled_node_holds_back_only_its_own, three_masters,
                                        fakeset_teardown),
        cmocka_unit_test_setup_teardown(black_holed_seed, three_masters, fakeset_teardown),
        cmocka_unit_test_setup_teardown(limit_refuses_past_max_pending, three_masters,
                                        fakeset_teardown),
        cmocka_unit_test_setup_teardown(callbacks_send_more, three_masters, fakeset_teardown),
        cmocka_unit_test_setup_teardown(free_with_commands_in_flight, three_masters,
                                        fakeset_teardown),
        cmocka_unit_test_setup_teardown(pipelines_at_once_and_no_blocking_calls, three_masters,
                                        fakeset_teardown),
        cmocka_unit_test_setup_teardown(finished_pipelines_and_frees, three_masters,
                                        fakeset_teardown),
        cmocka_unit_test_setup_teardown(idle_connection_is_not_timed_out, three_masters,
                                        fakeset_teardown),
        cmocka_unit_test_setup_teardown(moved_fence_keeps_key_order, three_masters,
                                        fakeset_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
