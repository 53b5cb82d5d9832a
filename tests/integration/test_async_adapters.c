/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The event-loop adapters (include/clusterpipe/adapters/) and the built-in cp_loop against a
 * real 3-master cluster (one for the whole file, tests/support/fixture.h), every loop through the
 * same six tests. The loops are tests/support/loopdrv.h's: an adapter is in when its library
 * was found at configure time. Clients are
 * freed with plain cp_free on every loop: the adapters free their state in the detach hook.
 *  a. volume: 10,000 keys, 256 at a time, each a SET then from its callback a GET that must
 *     return the value SET; every callback called exactly once (counted per command). The last
 *     callback frees the client (cp_free from inside an I/O callback); the loop's own run then
 *     returns by itself, nothing of the client is left on the loop (libevent: no event added;
 *     libev: no active watcher; libuv: no handle after one more turn) and it tears down clean.
 *  b. cp_free with commands in flight: BLPOPs written and never answered (on the servers, on
 *     their connections of their own), GETs queued and never written, GETs answered before.
 *     Every remaining callback is called once, from the free, with CP_ECANCELED (CP_UNKNOWN for
 *     the written BLPOPs, CP_NOT_EXECUTED for the unwritten GETs), none again afterwards, and
 *     the loop tears down clean.
 *  c. a client freed before the loop ever turned: its queued command ends once, CP_ECANCELED.
 *  d. a client moved (cp_attach again) to a second loop of the same kind in mid-life: the
 *     first loop is left with nothing of it (checked, and the loop torn down, while the client
 *     lives on the second), commands run on both, each called back once.
 *  e. a client moved off the loop to a cp_loop and back: nothing of it is left on the loop
 *     while it is away, commands run on each, each called back once.
 *  f. cp_free from inside a timer callback: a SET that the server holds (CLIENT PAUSE WRITE on its
 *     master) ends by the I/O timeout (CP_ETIMEDOUT comes only from the client's timer); its
 *     callback frees the client, and the loop's own run returns with nothing of the client left
 *     on it.
 * Leaks: the suite runs under ASan in CI (and valgrind by hand); the adapters' per-client and
 * per-connection state must all be freed by cp_free, cp_attach and the loop teardown here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "asserts.h"
#include "clusterpipe/clusterpipe.h"
#include "fixture.h"
#include "testutil.h"
#include "loopdrv.h"

static cp_fixture *cluster; /* one for the whole file */
static unsigned run_tag;    /* keeps this run's keys apart */

static cp_client *new_client(void) {
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = cluster->endpoints;
    o.connect_timeout_ms = 10000; /* generous: a loaded CI machine must not fail the test */
    o.io_timeout_ms = 60000;
    o.retry_budget_ms = 60000;
    cp_test_protocol(&o);
    cp_client *c = cp_client_new(&o);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    return c;
}

/* ---- a. volume -------------------------------------------------------------------------- */

#define VOL_KEYS 10000
#define VOL_DEPTH 256

typedef struct vrun {
    const loop_driver *d;
    cp_client *c;
    long next, finished;
    unsigned char set_calls[VOL_KEYS], get_calls[VOL_KEYS];
    long ok_sets, ok_gets, bad, twice;
    char first_bad[256];
    int freed;
} vrun;

typedef struct vchain {
    vrun *r;
    long i; /* the key this chain is on */
} vchain;

static void vkey(const vrun *r, long i, char *out, size_t len) {
    snprintf(out, len, "adapters:%s:%08x:%ld", r->d->name, run_tag, i);
}

static void vval(const vrun *r, long i, char *out, size_t len) {
    snprintf(out, len, "%s-%ld-%08x", r->d->name, i, run_tag);
}

static void vbad(vrun *r, const char *what, long i, const cp_response *resp) {
    if (r->bad++ == 0)
        snprintf(r->first_bad, sizeof(r->first_bad), "%s of key %ld: outcome %d, %s, reply %s",
                 what, i, (int)resp->outcome, resp->errstr,
                 resp->reply == NULL                       ? "none"
                 : resp->reply->type == REDIS_REPLY_STRING ? resp->reply->str
                 : resp->reply->type == REDIS_REPLY_ERROR  ? resp->reply->str
                                                           : "of another type");
}

static void on_vset(cp_client *c, const cp_response *resp, void *privdata);

static void vnext(vchain *ch) {
    vrun *r = ch->r;
    if (r->next >= VOL_KEYS)
        return;
    ch->i = r->next++;
    char k[96], v[96];
    vkey(r, ch->i, k, sizeof(k));
    vval(r, ch->i, v, sizeof(v));
    int rc = cp_async_command(r->c, on_vset, ch, "SET %s %s", k, v);
    assert_int_equal(rc, 0);
}

static void vfinish(vchain *ch) {
    vrun *r = ch->r;
    if (++r->finished == VOL_KEYS) { /* the last one: free the client from its callback */
        cp_free(r->c);
        r->freed = 1;
        return;
    }
    vnext(ch);
}

static void on_vget(cp_client *c, const cp_response *resp, void *privdata) {
    (void)c;
    vchain *ch = privdata;
    vrun *r = ch->r;
    assert_false(r->freed);
    if (r->get_calls[ch->i]++ != 0)
        r->twice++;
    char v[96];
    vval(r, ch->i, v, sizeof(v));
    if (resp->outcome == CP_DONE && resp->err == 0 && resp->reply != NULL &&
        resp->reply->type == REDIS_REPLY_STRING && strcmp(resp->reply->str, v) == 0)
        r->ok_gets++;
    else
        vbad(r, "GET", ch->i, resp);
    vfinish(ch);
}

static void on_vset(cp_client *c, const cp_response *resp, void *privdata) {
    vchain *ch = privdata;
    vrun *r = ch->r;
    assert_false(r->freed);
    if (r->set_calls[ch->i]++ != 0)
        r->twice++;
    if (resp->outcome != CP_DONE || resp->reply == NULL ||
        resp->reply->type != REDIS_REPLY_STATUS || strcmp(resp->reply->str, "OK") != 0) {
        vbad(r, "SET", ch->i, resp);
        vfinish(ch);
        return;
    }
    r->ok_sets++;
    char k[96];
    vkey(r, ch->i, k, sizeof(k));
    assert_int_equal(cp_async_command(c, on_vget, ch, "GET %s", k), 0);
}

static void test_volume(void **state) {
    const loop_driver *d = *state;
    vrun *r = calloc(1, sizeof(*r));
    vchain *chains = calloc(VOL_DEPTH, sizeof(*chains));
    void *loop = d->loop_new();
    assert_non_null(r);
    assert_non_null(chains);
    assert_non_null(loop);
    r->d = d;
    r->c = new_client();
    assert_int_equal(d->attach(loop, r->c), 0);
    for (int i = 0; i < VOL_DEPTH; i++) {
        chains[i].r = r;
        vnext(&chains[i]);
    }
    assert_int_equal(cp_pending(r->c), VOL_DEPTH);
    d->run(loop); /* returns once the last callback has freed the client */
    assert_int_equal(d->left(loop), 0);

    if (r->bad != 0)
        print_message("%s: %ld bad, first: %s\n", d->name, r->bad, r->first_bad);
    assert_true(r->freed);
    assert_int_equal(r->twice, 0);
    assert_int_equal(r->bad, 0);
    assert_int_equal(r->ok_sets, VOL_KEYS);
    assert_int_equal(r->ok_gets, VOL_KEYS);
    for (long i = 0; i < VOL_KEYS; i++) {
        assert_int_equal(r->set_calls[i], 1);
        assert_int_equal(r->get_calls[i], 1);
    }
    assert_int_equal(d->loop_free(loop), 0);
    free(chains);
    free(r);
}

/* ---- b. cp_free with commands in flight -------------------------------------------------- */

#define FREE_TAGS 8     /* SET markers, then as many BLPOPs */
#define FREE_EARLY 1000 /* GETs sent with them: answered or canceled */
#define FREE_LATE 500   /* GETs sent right before the free: never written */

typedef enum { K_MARK, K_BLPOP, K_EARLY, K_LATE } kind;

typedef struct fcmd {
    struct frun *r;
    kind k;
    int calls;
    int during_free; /* the callback came from inside the free */
    cp_outcome outcome;
    int err;
} fcmd;

typedef struct frun {
    int freeing;
    int marks_done;
    fcmd mark[FREE_TAGS], blpop[FREE_TAGS], early[FREE_EARLY], late[FREE_LATE];
} frun;

static void on_fcmd(cp_client *c, const cp_response *resp, void *privdata) {
    (void)c;
    fcmd *x = privdata;
    x->calls++;
    x->during_free = x->r->freeing;
    x->outcome = resp->outcome;
    x->err = resp->err;
    if (x->k == K_MARK && resp->outcome == CP_DONE)
        x->r->marks_done++;
}

static void fsend(cp_client *c, frun *r, fcmd *x, kind k, const char *fmt, const char *arg) {
    x->r = r;
    x->k = k;
    assert_int_equal(cp_async_command(c, on_fcmd, x, fmt, arg), 0);
}

/* Clients blocked on the masters, summed (INFO clients). */
static long blocked_clients(void) {
    long n = 0;
    for (int k = 0; k < 3; k++) {
        redisContext *hc = cp_fixture_conn(
            cluster, cp_topo_proc(cluster->topo, cp_fixture_master(cluster, k))->port);
        redisReply *rep = hc != NULL ? redisCommand(hc, "INFO clients") : NULL;
        const char *p = rep != NULL && rep->type == REDIS_REPLY_STRING
                            ? strstr(rep->str, "blocked_clients:")
                            : NULL;
        if (p != NULL)
            n += atol(p + strlen("blocked_clients:"));
        if (rep != NULL)
            freeReplyObject(rep);
    }
    return n;
}

static void test_free_in_flight(void **state) {
    const loop_driver *d = *state;
    frun *r = calloc(1, sizeof(*r));
    void *loop = d->loop_new();
    assert_non_null(r);
    assert_non_null(loop);
    cp_client *c = new_client();
    assert_int_equal(d->attach(loop, c), 0);
    char key[96];
    /* The markers first, then the BLPOPs (each on a connection of its own, held by its server:
     * nothing is ever pushed to the lists) and GETs. */
    for (int t = 0; t < FREE_TAGS; t++) {
        snprintf(key, sizeof(key), "adapters-free-%s-%08x-%d:mark", d->name, run_tag, t);
        fsend(c, r, &r->mark[t], K_MARK, "SET %s 1", key);
    }
    for (int t = 0; t < FREE_TAGS; t++) {
        snprintf(key, sizeof(key), "adapters-free-%s-%08x-%d:list", d->name, run_tag, t);
        fsend(c, r, &r->blpop[t], K_BLPOP, "BLPOP %s 0", key);
    }
    for (int i = 0; i < FREE_EARLY; i++) {
        snprintf(key, sizeof(key), "adapters-free-%s-%08x:%d", d->name, run_tag, i);
        fsend(c, r, &r->early[i], K_EARLY, "GET %s", key);
    }
    while (r->marks_done < FREE_TAGS || blocked_clients() < FREE_TAGS) {
        for (int t = 0; t < FREE_TAGS; t++)
            if (r->mark[t].calls != 0 && r->mark[t].outcome != CP_DONE)
                fail_msg("marker %d: outcome %d, err %s", t, (int)r->mark[t].outcome,
                         cp_err_name(r->mark[t].err));
        d->run_once(loop); /* until every BLPOP waits on its server: written */
    }
    for (int i = 0; i < FREE_LATE; i++) { /* between loop turns: queued, not written */
        snprintf(key, sizeof(key), "adapters-free-late-%s-%08x:%d", d->name, run_tag, i);
        fsend(c, r, &r->late[i], K_LATE, "GET %s", key);
    }
    size_t pending = cp_pending(c);
    assert_int_ge(pending, FREE_TAGS + FREE_LATE);

    r->freeing = 1;
    cp_free(c);
    r->freeing = 0;

    size_t during = 0;
    for (int t = 0; t < FREE_TAGS; t++) {
        assert_int_equal(r->mark[t].calls, 1);
        assert_int_equal(r->blpop[t].calls, 1);
        assert_true(r->blpop[t].during_free);
        assert_int_equal(r->blpop[t].outcome, CP_UNKNOWN); /* written: it may have run */
        assert_int_equal(r->blpop[t].err, CP_ECANCELED);
        during++;
    }
    for (int i = 0; i < FREE_EARLY; i++) {
        fcmd *x = &r->early[i];
        assert_int_equal(x->calls, 1);
        if (x->during_free) {
            assert_int_not_equal(x->outcome, CP_DONE);
            assert_int_equal(x->err, CP_ECANCELED);
            during++;
        } else {
            assert_int_equal(x->outcome, CP_DONE);
        }
    }
    for (int i = 0; i < FREE_LATE; i++) {
        fcmd *x = &r->late[i];
        assert_int_equal(x->calls, 1);
        assert_true(x->during_free);
        assert_int_equal(x->outcome, CP_NOT_EXECUTED);
        assert_int_equal(x->err, CP_ECANCELED);
        during++;
    }
    assert_int_equal(during, pending); /* each command pending at the free ended in it */

    assert_int_equal(d->loop_free(loop), 0); /* also turns libuv's loop: nothing may call back */
    for (int t = 0; t < FREE_TAGS; t++)
        assert_int_equal(r->blpop[t].calls, 1);
    for (int i = 0; i < FREE_EARLY; i++)
        assert_int_equal(r->early[i].calls, 1);
    for (int i = 0; i < FREE_LATE; i++)
        assert_int_equal(r->late[i].calls, 1);
    free(r);
}

/* ---- c. freed before the loop turned ------------------------------------------------------ */

static void test_free_before_turn(void **state) {
    const loop_driver *d = *state;
    frun *r = calloc(1, sizeof(*r));
    void *loop = d->loop_new();
    assert_non_null(r);
    assert_non_null(loop);
    cp_client *c = new_client();
    assert_int_equal(d->attach(loop, c), 0);
    fsend(c, r, &r->late[0], K_LATE, "GET %s", "adapters-never");
    r->freeing = 1;
    cp_free(c);
    assert_int_equal(r->late[0].calls, 1);
    assert_int_equal(r->late[0].outcome, CP_NOT_EXECUTED);
    assert_int_equal(r->late[0].err, CP_ECANCELED);
    assert_int_equal(d->loop_free(loop), 0);
    assert_int_equal(r->late[0].calls, 1);
    free(r);
}

/* ---- d. moved to another loop ----------------------------------------------------------- */

#define MOVE_CMDS 100
#define MOVE_ROUNDS 3

typedef struct mrun {
    int calls[MOVE_ROUNDS][MOVE_CMDS];
    int done[MOVE_ROUNDS], bad;
} mrun;

typedef struct mcmd {
    mrun *r;
    int round, i;
} mcmd;

static void on_mcmd(cp_client *c, const cp_response *resp, void *privdata) {
    (void)c;
    mcmd *x = privdata;
    x->r->calls[x->round][x->i]++;
    x->r->done[x->round]++;
    if (resp->outcome != CP_DONE || resp->reply == NULL ||
        resp->reply->type != REDIS_REPLY_INTEGER || resp->reply->integer != x->round + 1)
        x->r->bad++;
}

/* One round: MOVE_CMDS INCRs of the test's keys (so each is at round + 1 after it), run on
 * `loop` (of driver `on`) until every one is called back. */
static void mround(const loop_driver *d, const char *test, const loop_driver *on, void *loop,
                   cp_client *c, mrun *r, mcmd *x, int round) {
    char key[96];
    for (int i = 0; i < MOVE_CMDS; i++) {
        mcmd *m = &x[round * MOVE_CMDS + i];
        *m = (mcmd){r, round, i};
        snprintf(key, sizeof(key), "adapters-%s-%s-%08x:%d", test, d->name, run_tag, i);
        assert_int_equal(cp_async_command(c, on_mcmd, m, "INCR %s", key), 0);
    }
    while (r->done[round] < MOVE_CMDS)
        on->run_once(loop);
}

/* Commands on one loop, then the client moves to a second loop of the same kind (its
 * connections stay open and are registered again there) and runs more; the first loop must be
 * left with nothing of the client's, and the adapter's record of it on the first loop freed.
 * The first loop is checked and torn down right after the move, while the client lives on. */
static void test_move(void **state) {
    const loop_driver *d = *state;
    mrun *r = calloc(1, sizeof(*r));
    mcmd *x = calloc(MOVE_ROUNDS * MOVE_CMDS, sizeof(*x));
    void *loop[2] = {d->loop_new(), d->loop_new()};
    assert_non_null(r);
    assert_non_null(x);
    assert_non_null(loop[0]);
    assert_non_null(loop[1]);
    cp_client *c = new_client();
    assert_int_equal(d->attach(loop[0], c), 0);
    mround(d, "move", d, loop[0], c, r, x, 0);
    assert_int_equal(d->attach(loop[1], c), 0); /* detaches it from loop[0] */
    assert_int_equal(d->left(loop[0]), 0);
    assert_int_equal(d->loop_free(loop[0]), 0);
    mround(d, "move", d, loop[1], c, r, x, 1);
    cp_free(c);
    assert_int_equal(r->bad, 0);
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < MOVE_CMDS; i++)
            assert_int_equal(r->calls[round][i], 1);
    assert_int_equal(d->left(loop[1]), 0);
    assert_int_equal(d->loop_free(loop[1]), 0);
    free(x);
    free(r);
}

/* ---- e. moved to a cp_loop and back ------------------------------------------------------ */

/* The client leaves the loop for a cp_loop (another set of hooks: the adapter hears of it only
 * through detach), runs commands there, and comes back. While it is away nothing of it may be
 * left on the loop; the record of its first stay must be gone (ASan / valgrind tell). */
static void test_move_away(void **state) {
    const loop_driver *d = *state;
    const loop_driver *p = &loop_drivers[0]; /* cp_loop */
    mrun *r = calloc(1, sizeof(*r));
    mcmd *x = calloc(MOVE_ROUNDS * MOVE_CMDS, sizeof(*x));
    void *loop = d->loop_new(), *away = p->loop_new();
    assert_non_null(r);
    assert_non_null(x);
    assert_non_null(loop);
    assert_non_null(away);
    cp_client *c = new_client();
    assert_int_equal(d->attach(loop, c), 0);
    mround(d, "away", d, loop, c, r, x, 0);
    assert_int_equal(p->attach(away, c), 0);
    assert_int_equal(d->left(loop), 0); /* while the client lives on the cp_loop */
    mround(d, "away", p, away, c, r, x, 1);
    assert_int_equal(d->attach(loop, c), 0); /* back: a new record */
    assert_int_equal(p->loop_free(away), 0);
    mround(d, "away", d, loop, c, r, x, 2);
    cp_free(c);
    assert_int_equal(r->bad, 0);
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < MOVE_CMDS; i++)
            assert_int_equal(r->calls[round][i], 1);
    assert_int_equal(d->left(loop), 0);
    assert_int_equal(d->loop_free(loop), 0);
    free(x);
    free(r);
}

/* ---- f. freed from a timer callback ------------------------------------------------------- */

typedef struct trun {
    int calls;
    cp_outcome outcome;
    int err;
} trun;

static void on_twarm(cp_client *c, const cp_response *resp, void *privdata) {
    (void)c;
    trun *t = privdata;
    t->calls++;
    t->outcome = resp->outcome;
}

static void on_tset(cp_client *c, const cp_response *resp, void *privdata) {
    trun *t = privdata;
    t->calls++;
    t->outcome = resp->outcome;
    t->err = resp->err;
    cp_free(c); /* the library frees it as the loop's cp_on_timer returns to the adapter */
}

static void test_free_in_timer(void **state) {
    const loop_driver *d = *state;
    trun *t = calloc(1, sizeof(*t));
    void *loop = d->loop_new();
    assert_non_null(t);
    assert_non_null(loop);
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = cluster->endpoints;
    o.connect_timeout_ms = 10000;
    o.io_timeout_ms = 500; /* the GET's end */
    o.retry_budget_ms = 60000;
    cp_test_protocol(&o);
    cp_client *c = cp_client_new(&o);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    assert_int_equal(d->attach(loop, c), 0);
    char key[96];
    snprintf(key, sizeof(key), "adapters-timer-%s-%08x", d->name, run_tag);
    unsigned slot = cp_keyslot(key, strlen(key));
    int port = cp_topo_proc(cluster->topo, cp_fixture_master(cluster, slot <= 5460    ? 0
                                                                      : slot <= 10922 ? 1
                                                                                      : 2))
                   ->port;
    trun warm = {0};
    assert_int_equal(cp_async_command(c, on_twarm, &warm, "GET %s", key), 0);
    while (warm.calls == 0) /* the map read, the key's master connected */
        d->run_once(loop);
    redisContext *hc = cp_fixture_conn(cluster, port);
    assert_non_null(hc);
    redisReply *rep = redisCommand(hc, "CLIENT PAUSE 5000 WRITE"); /* the SET is held there */
    assert_non_null(rep);
    freeReplyObject(rep);
    /* a write: its lost answer is never re-sent, so the I/O timeout ends it */
    assert_int_equal(cp_async_command(c, on_tset, t, "SET %s v", key), 0);
    d->run(loop); /* returns once the callback has freed the client */
    rep = redisCommand(hc, "CLIENT UNPAUSE");
    assert_non_null(rep);
    freeReplyObject(rep);
    assert_int_equal(t->calls, 1);
    assert_int_equal(t->outcome, CP_UNKNOWN); /* written: it may have run */
    assert_int_equal(t->err, CP_ETIMEDOUT);   /* so it came from the client's timer */
    assert_int_equal(d->left(loop), 0);
    assert_int_equal(d->loop_free(loop), 0);
    assert_int_equal(t->calls, 1);
    free(t);
}

/* ---- the suite ------------------------------------------------------------------------------ */

static int start_cluster(void **state) {
    (void)state;
    run_tag = (unsigned)getpid() ^ (unsigned)time(NULL);
    cluster = cp_fixture_cluster(3, 0);
    return cluster != NULL ? 0 : -1;
}

static int stop_cluster(void **state) {
    (void)state;
    int rc = cp_fixture_stop(cluster);
    cluster = NULL;
    return rc;
}

int main(void) {
#define NKINDS 6
#define MAX_DRIVERS 4 /* cp_loop and the three adapters */
    static char names[NKINDS * MAX_DRIVERS][64];
    struct CMUnitTest tests[NKINDS * MAX_DRIVERS];
    static const struct {
        const char *what;
        CMUnitTestFunction fn;
    } kinds[] = {{"volume", test_volume},
                 {"free_in_flight", test_free_in_flight},
                 {"free_before_turn", test_free_before_turn},
                 {"move", test_move},
                 {"move_away", test_move_away},
                 {"free_in_timer", test_free_in_timer}};
    size_t n = 0;
    for (size_t k = 0; k < NKINDS; k++)
        for (size_t i = 0; i < n_loop_drivers && i < MAX_DRIVERS; i++, n++) {
            snprintf(names[n], sizeof(names[n]), "%s/%s", kinds[k].what, loop_drivers[i].name);
            tests[n] =
                (struct CMUnitTest){names[n], kinds[k].fn, NULL, NULL, (void *)&loop_drivers[i]};
        }
    print_message("adapters under test:");
    for (size_t i = 0; i < n_loop_drivers; i++)
        print_message(" %s", loop_drivers[i].name);
    print_message("\n");
    return _cmocka_run_group_tests("async_adapters", tests, n, start_cluster, stop_cluster);
}
