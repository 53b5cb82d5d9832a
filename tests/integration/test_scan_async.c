/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The async cluster SCAN (cp_scan_next_async) on a real 3-master cluster (Debian's
 * redis-server), through every loop of tests/support/loopdrv.h (cp_loop, and libevent, libev,
 * libuv when built), one after the other:
 *  a. 20,000 keys of three kinds: the async scan with MATCH, TYPE and COUNT returns exactly the
 *     keys the blocking scan returns with them, and without filters every key; the callback
 *     asks for the next batch itself, or the program does after it returned; a quiet cluster
 *     lists no slot again.
 *  b. a scan while another thread moves 250 slots at a time back and forth between two masters
 *     (tests/support/slotmover.h, as test_scan_real's blocking case): every key present
 *     throughout is returned, and slots were listed again.
 *  c. a master stopped (SIGSTOP) mid-scan: the call ends CP_ETIMEDOUT after the I/O timeout,
 *     and again when asked again; once the master is continued the same scan completes with
 *     every key, the failed step run again (no slot had to be listed again).
 *  d. cp_scan_free with a call under way, at every point a scan's steps reach (a pipeline out,
 *     the wait for the map, a pause between listings of a half-migrated slot): its callback
 *     never comes, nothing is left pending, and nothing leaks (ASan in CI); cp_free of the
 *     client with a call under way calls it back once with CP_ECANCELED.
 *  e. refused calls (no callback, a second call under way, a client not on a loop) never call
 *     back, and a finished scan answers 0 from the loop, never inside the call.
 *  f. a slot left MIGRATING to a node that does not import it: no listing certifies it, the
 *     pauses between listings grow to 64 ms, and the call ends CP_ETIMEDOUT after the retry
 *     budget; once the slot is stable, calling again completes the scan.
 *  g. a TYPE filter on a slot listed again that holds more keys than max_pending: checked a
 *     chunk of TYPEs at a time, the scan completes with every string and no hash.
 * In a, b, c, f and g no library call takes longer than 10 ms, measured per call as test_async_real
 * does: the link routes cp_on_ready and cp_on_timer through the wrappers below (-Wl,--wrap,
 * tests/CMakeLists.txt), cp_loop's turn cp_loop_run_once(l, 0) is timed as the one call it is,
 * and so is every cp_scan_next_async the program makes (those from callbacks are inside the
 * loop's call). Only the scanning client's calls are timed (the blocking clients that load keys
 * and move slots go through the wrappers too). What a call is held to is
 * tests/support/calltime.h's (its CPU time; when it slept, the time it kept the loop); under a
 * sanitizer the figures are printed, not asserted.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "asserts.h"
#include "clusterpipe/clusterpipe.h"
#include "calltime.h"
#include "fixture.h"
#include "testutil.h"
#include "loopdrv.h"
#include "slotmover.h"
#include "testonly.h"
#include "util/clock.h"

#define NKEYS 20000

/* ---- every library call of the scanning client, timed ------------------------------------- */

static calltime timed_calls;
static cp_client *timed_client; /* the client whose calls are timed; NULL: none */

static void timed_begin(calltimer *t, cp_client *c) {
    if (timed_client != NULL && c == timed_client)
        calltime_begin(&timed_calls, t);
}

static void timed_end(calltimer *t, cp_client *c) {
    if (timed_client != NULL && c == timed_client)
        calltime_end(&timed_calls, t);
}

void __real_cp_on_ready(cp_client *c, int fd, int events);
void __real_cp_on_timer(cp_client *c);
void __wrap_cp_on_ready(cp_client *c, int fd, int events);
void __wrap_cp_on_timer(cp_client *c);

void __wrap_cp_on_ready(cp_client *c, int fd, int events) {
    calltimer t;
    timed_begin(&t, c);
    __real_cp_on_ready(c, fd, events);
    timed_end(&t, c);
}

void __wrap_cp_on_timer(cp_client *c) {
    calltimer t;
    timed_begin(&t, c);
    __real_cp_on_timer(c);
    timed_end(&t, c);
}

/* ---- a scan on one loop ------------------------------------------------------------------- */

typedef struct arun {
    const loop_driver *d;
    void *loop;
    cp_client *c;
    cp_scan *s;
    int chain;  /* the callback asks for the next batch itself */
    int inside; /* inside cp_scan_next_async: its callback must not come now */
    /* what came back */
    long callbacks, batches, called_inside, bad, turns;
    int got_batch, ended, rc; /* rc: the last 0 or error, once ended */
    char errstr[CP_ERRSTR_LEN];
    /* keys: by index (prefix%d for i < n, in seen[]; others counted), or all kept */
    const char *prefix;
    int n, *seen;
    long other;
    char **keys;
    size_t nkeys, capkeys;
} arun;

static int run_max_pending; /* new_run's cp_options.max_pending (0: the default) */

/* One idle client whose COMMAND table every scanning client shares (cp_options.commands_from,
 * as the bench's workers do): the calls timed here are the scan's. Reading the table is one
 * call of several milliseconds when the machine is busy (a 90 KB reply parsed, about 200 page
 * faults on a new client), and this file makes a new client for every run, more than 300 of
 * them; test_async_real times clients that read their own. Freed by main. */
static cp_client *table_source;
static cp_client *connect_blocking(cp_fixture *f);

static arun *new_run(const loop_driver *d, cp_fixture *f, int io_timeout_ms, int budget_ms) {
    arun *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    r->d = d;
    if (table_source == NULL)
        table_source = connect_blocking(f);
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = f->endpoints;
    o.commands_from = table_source;
    o.max_pending = run_max_pending;
    if (io_timeout_ms > 0)
        o.io_timeout_ms = io_timeout_ms;
    if (budget_ms > 0)
        o.retry_budget_ms = budget_ms;
    cp_test_protocol(&o);
    r->c = cp_client_new(&o);
    assert_non_null(r->c);
    assert_int_equal(r->c->err, 0);
    r->loop = d->loop_new();
    assert_non_null(r->loop);
    timed_calls = (calltime){0};
    timed_client = r->c;
    calltimer t;
    timed_begin(&t, r->c);
    assert_int_equal(d->attach(r->loop, r->c), 0);
    timed_end(&t, r->c);
    return r;
}

/* Frees the run's scan, client and loop; the loop must be left with nothing of the client. */
static void free_run(arun *r) {
    timed_client = NULL;
    cp_scan_free(r->s);
    cp_free(r->c);
    assert_int_equal(r->d->loop_free(r->loop), 0);
    for (size_t i = 0; i < r->nkeys; i++)
        free(r->keys[i]);
    free(r->keys);
    free(r->seen);
    free(r);
}

static void keep(arun *r, const redisReply *k) {
    size_t pl = r->prefix != NULL ? strlen(r->prefix) : 0;
    if (r->seen != NULL) {
        int idx = -1;
        if ((size_t)k->len > pl && memcmp(k->str, r->prefix, pl) == 0)
            idx = atoi(k->str + pl);
        if (idx >= 0 && idx < r->n)
            r->seen[idx]++;
        else
            r->other++;
        return;
    }
    if (r->nkeys == r->capkeys) {
        r->capkeys = r->capkeys ? r->capkeys * 2 : 1024;
        r->keys = realloc(r->keys, r->capkeys * sizeof(*r->keys));
    }
    r->keys[r->nkeys++] = strdup(k->str);
}

static void next(arun *r);

/* The callback: checks and keeps the batch; asks for the next one when the run chains. Problems
 * are counted (an assertion cannot jump out of the library). */
static void on_scan(cp_scan *s, int rc, redisReply *keys, void *data) {
    arun *r = data;
    r->callbacks++;
    r->called_inside += r->inside > 0;
    r->bad += s != r->s;
    if (rc == 1) {
        r->bad += keys == NULL || keys->type != REDIS_REPLY_ARRAY || keys->elements == 0;
        for (size_t i = 0; keys != NULL && i < keys->elements; i++) {
            r->bad += keys->element[i]->type != REDIS_REPLY_STRING;
            keep(r, keys->element[i]);
        }
        freeReplyObject(keys);
        r->batches++;
        r->got_batch = 1;
        if (r->chain)
            next(r);
        return;
    }
    r->bad += keys != NULL;
    r->rc = rc;
    snprintf(r->errstr, sizeof(r->errstr), "%s", rc < 0 ? r->c->errstr : "");
    r->ended = 1;
}

/* cp_scan_next_async, timed when the program calls it (from a callback it is inside the loop's
 * call). */
static void next(arun *r) {
    calltimer t;
    timed_begin(&t, r->c);
    r->inside++;
    int rc = cp_scan_next_async(r->s, on_scan, r);
    r->inside--;
    timed_end(&t, r->c);
    r->bad += rc != 0;
}

/* One turn of the loop without waiting (timed when it is the library's cp_loop), then a short
 * sleep outside any call. */
static void turn(arun *r) {
    calltimer t;
    if (r->d->in_library)
        timed_begin(&t, r->c);
    r->d->run_nowait(r->loop);
    if (r->d->in_library)
        timed_end(&t, r->c);
    r->turns++;
    struct timespec ts = {0, 200000L};
    nanosleep(&ts, NULL);
}

/* Turns the loop until the callback has come `want` times in all, for at most `seconds`. */
static void until(arun *r, long want, int seconds) {
    for (uint64_t end = cp__now_ns() + (uint64_t)seconds * 1000000000ull; r->callbacks < want;) {
        if (cp__now_ns() > end)
            fail_msg("%s: no callback within %d s", r->d->name, seconds);
        turn(r);
    }
}

/* Turns the loop until the scan's last call ended (0 or an error), for at most `seconds`. */
static void until_ended(arun *r, int seconds) {
    for (uint64_t end = cp__now_ns() + (uint64_t)seconds * 1000000000ull; !r->ended;) {
        if (cp__now_ns() > end)
            fail_msg("%s: the scan did not end within %d s", r->d->name, seconds);
        turn(r);
    }
}

/* One call, and the loop turned until its callback. */
static void next_and_wait(arun *r) {
    long want = r->callbacks + 1;
    r->chain = 0;
    next(r);
    until(r, want, 120);
}

/* The rest of the scan, to its end or an error: chained (each callback asks for the next
 * batch), or each call made by the program after the last callback returned. Returns the
 * last rc. */
static int drain_async(arun *r, int chain) {
    r->ended = r->got_batch = 0;
    r->chain = chain;
    next(r);
    if (chain) {
        until_ended(r, 60);
        return r->rc;
    }
    for (uint64_t end = cp__now_ns() + 60000000000ull; !r->ended;) {
        if (cp__now_ns() > end)
            fail_msg("%s: the scan did not end within 60 s", r->d->name);
        if (r->got_batch) {
            r->got_batch = 0;
            next(r);
        }
        turn(r);
    }
    return r->rc;
}

static void assert_sane(const arun *r) {
    if (r->called_inside || r->bad)
        fail_msg("%s: %ld callbacks inside cp_scan_next_async, %ld bad answers or refused calls",
                 r->d->name, r->called_inside, r->bad);
}

/* ---- blocking helpers -------------------------------------------------------------------------
 */

static cp_client *connect_blocking(cp_fixture *f) {
    cp_options opt = CP_OPTIONS_INIT;
    opt.retry_budget_ms = 30000;
    return cp_fixture_client(f, &opt);
}

static void flushall(cp_client *c) {
    redisReply *r = cp_command(c, "FLUSHALL");
    assert_non_null(r);
    assert_string_equal(r->str, "OK");
    freeReplyObject(r);
}

/* SET prefix%d for i in [0, n), in one pipeline. */
static void load(cp_client *c, const char *prefix, int n) {
    cp_pipeline *p = cp_pipeline_new(c);
    for (int i = 0; i < n; i++)
        assert_int_equal(cp_append(p, "SET %s%d %d", prefix, i, i), 0);
    assert_int_equal(cp_exec(p), 0);
    cp_pipeline_free(p);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts keys and drops repeats; returns how many are left. */
static size_t unique(char **keys, size_t n) {
    qsort(keys, n, sizeof(*keys), cmp_str);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m > 0 && strcmp(keys[m - 1], keys[i]) == 0) {
            free(keys[i]);
            continue;
        }
        keys[m++] = keys[i];
    }
    return m;
}

/* A blocking scan's keys, sorted without repeats. */
static char **blocking_keys(cp_client *c, const char *match, long count, const char *type,
                            size_t *n) {
    cp_scan *s = cp_scan_new(c, match, count, type);
    assert_non_null(s);
    char **v = NULL;
    size_t len = 0, cap = 0;
    redisReply *keys;
    int rc;
    while ((rc = cp_scan_next(s, &keys)) == 1) {
        for (size_t i = 0; i < keys->elements; i++) {
            if (len == cap) {
                cap = cap ? cap * 2 : 1024;
                v = realloc(v, cap * sizeof(*v));
            }
            v[len++] = strdup(keys->element[i]->str);
        }
        freeReplyObject(keys);
    }
    assert_int_equal(rc, 0);
    cp_scan_free(s);
    *n = unique(v, len);
    return v;
}

static void free_keys(char **v, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* ---- a. a full scan, as the blocking one ------------------------------------------------------
 */

/* The async scan of (match, count, type) on every loop, chained or called by the program, gives
 * the blocking scan's keys exactly. */
static void same_as_blocking(cp_fixture *f, cp_client *bc, const char *match, long count,
                             const char *type, size_t expect) {
    size_t nwant;
    char **want = blocking_keys(bc, match, count, type, &nwant);
    assert_int_equal(nwant, expect);
    for (size_t i = 0; i < n_loop_drivers; i++)
        for (int chain = 0; chain < 2; chain++) {
            arun *r = new_run(&loop_drivers[i], f, 0, 0);
            r->s = cp_scan_new(r->c, match, count, type);
            assert_non_null(r->s);
            assert_int_equal(drain_async(r, chain), 0);
            assert_sane(r);
            size_t n = unique(r->keys, r->nkeys);
            r->nkeys = n;
            cp_scan_stats st;
            cp_scan_get_stats(r->s, &st);
            print_message("%-8s MATCH %s COUNT %ld TYPE %s, %s: %zu keys in %ld batches, %llu "
                          "SCANs, %llu slots listed again\n",
                          r->d->name, match ? match : "-", count, type ? type : "-",
                          chain ? "the callback asks for the next" : "the program asks", n,
                          r->batches, (unsigned long long)st.scan_calls,
                          (unsigned long long)st.slots_reread);
            if (n != nwant)
                fail_msg("%s: %zu keys, the blocking scan %zu", r->d->name, n, nwant);
            for (size_t k = 0; k < n; k++)
                if (strcmp(r->keys[k], want[k]) != 0)
                    fail_msg("%s: key %zu is %s, the blocking scan's %s", r->d->name, k, r->keys[k],
                             want[k]);
            assert_int_equal(st.slots_reread, 0);
            assert_int_equal(r->callbacks, r->batches + 1);
            assert_int_equal(cp_pending(r->c), 0);
            calltime_assert_never_blocked(&timed_calls, 10, CALLTIME_ASSERTED, r->d->name);
            free_run(r);
        }
    free_keys(want, nwant);
}

static void async_full_scan(void **state) {
    cp_fixture *f = *state;
    cp_client *c = connect_blocking(f);
    flushall(c);
    /* k:s:N strings, k:h:N hashes, o:N strings */
    cp_pipeline *p = cp_pipeline_new(c);
    for (int i = 0; i < NKEYS; i++) {
        int rc = i % 4 == 3   ? cp_append(p, "HSET k:h:%d f v", i)
                 : i % 4 == 2 ? cp_append(p, "SET o:%d v", i)
                              : cp_append(p, "SET k:s:%d v", i);
        assert_int_equal(rc, 0);
    }
    assert_int_equal(cp_exec(p), 0);
    cp_pipeline_free(p);
    same_as_blocking(f, c, "k:*", 100, "string", NKEYS / 2);
    same_as_blocking(f, c, NULL, 1000, NULL, NKEYS);
    cp_free(c);
}

/* ---- b. while slots migrate -------------------------------------------------------------------
 */

#define MOVE_SLOTS 250
#define MIN_ROUNDS 2

static void async_scan_through_migration(void **state) {
    cp_fixture *f = *state;
    cp_client *bc = connect_blocking(f);
    load(bc, "mv:", NKEYS);
    cp_free(bc);
    for (size_t i = 0; i < n_loop_drivers; i++) {
        arun *r = new_run(&loop_drivers[i], f, 0, 0);
        r->prefix = "mv:";
        r->n = NKEYS;
        r->seen = calloc(NKEYS, sizeof(int));
        r->s = cp_scan_new(r->c, NULL, 10, NULL);
        slot_mover m = {0};
        slot_mover_start(&m, f, cp_fixture_master(f, 0), cp_fixture_master(f, 1), MOVE_SLOTS,
                         MIN_ROUNDS);
        uint64_t t0 = cp__now_ns();
        next_and_wait(r); /* the first batch, then a round of moves during the first walk */
        while (slot_mover_rounds(&m) == 0)
            cp__sleep_ms(5);
        int rc = drain_async(r, 1);
        int during = slot_mover_rounds(&m);
        double took = (double)(cp__now_ns() - t0) / 1e9;
        if (slot_mover_stop(&m) < 0)
            fail_msg("migration: %s", m.err);
        if (rc != 0)
            fail_msg("%s: scan: %s (%s)", r->d->name, cp_err_name(rc), r->errstr);
        assert_sane(r);
        cp_scan_stats st;
        cp_scan_get_stats(r->s, &st);
        int missing = 0, first = -1;
        for (int k = 0; k < NKEYS; k++)
            if (r->seen[k] == 0 && missing++ == 0)
                first = k;
        print_message("%-8s %d rounds of %d slots moved during the scan (%.1f s); %llu keys "
                      "returned, %llu SCANs, %llu slots listed again (%llu keys); %d missing\n",
                      r->d->name, during, MOVE_SLOTS, took, (unsigned long long)st.keys,
                      (unsigned long long)st.scan_calls, (unsigned long long)st.slots_reread,
                      (unsigned long long)st.keys_reread, missing);
        if (missing != 0)
            fail_msg("%s: %d keys present throughout were not returned, the first mv:%d",
                     r->d->name, missing, first);
        assert_int_equal(r->other, 0);
        assert_int_ge(during, 1);
        assert_int_gt(st.slots_reread, 0);
        calltime_assert_never_blocked(&timed_calls, 10, CALLTIME_ASSERTED, r->d->name);
        free_run(r);
    }
}

/* ---- c. a stopped master ----------------------------------------------------------------------
 */

#define STOPPED_KEYS 3000

static void async_stopped_master(void **state) {
    cp_fixture *f = *state;
    char err[512];
    cp_client *bc = connect_blocking(f);
    load(bc, "u:", STOPPED_KEYS);
    cp_free(bc);
    size_t stopped = cp_fixture_master(f, 2);
    for (size_t i = 0; i < n_loop_drivers; i++) {
        arun *r = new_run(&loop_drivers[i], f, 300, 0);
        r->prefix = "u:";
        r->n = STOPPED_KEYS;
        r->seen = calloc(STOPPED_KEYS, sizeof(int));
        r->s = cp_scan_new(r->c, NULL, 100, NULL);
        next_and_wait(r);
        assert_int_equal(cp_topo_kill(f->topo, stopped, SIGSTOP, err, sizeof(err)), 0);
        uint64_t t0 = cp__now_ns();
        long before = r->batches;
        int rc = drain_async(r, 1);
        double took = (double)(cp__now_ns() - t0) / 1e6;
        print_message("%-8s stopped master: %ld more batches, then after %.0f ms %s: %s\n",
                      r->d->name, r->batches - before, took, cp_err_name(rc), r->errstr);
        assert_int_equal(rc, CP_ETIMEDOUT);
        assert_int_equal(r->c->err, CP_ETIMEDOUT);
        rc = drain_async(r, 1); /* still stopped: the same step fails again */
        assert_int_equal(rc, CP_ETIMEDOUT);
        assert_int_equal(cp_topo_kill(f->topo, stopped, SIGCONT, err, sizeof(err)), 0);
        rc = drain_async(r, 1);
        if (rc != 0)
            fail_msg("%s: after SIGCONT: %s (%s)", r->d->name, cp_err_name(rc), r->errstr);
        assert_sane(r);
        for (int k = 0; k < STOPPED_KEYS; k++)
            if (r->seen[k] == 0)
                fail_msg("%s: u:%d was not returned", r->d->name, k);
        assert_int_equal(r->other, 0);
        /* The step that failed ran again: the stopped master's walk certified its slots (none
         * had to be listed again, as none moved). */
        cp_scan_stats st;
        cp_scan_get_stats(r->s, &st);
        assert_int_equal(st.slots_reread, 0);
        calltime_assert_never_blocked(&timed_calls, 10, CALLTIME_ASSERTED, r->d->name);
        free_run(r);
    }
}

/* ---- d. freed with a call under way ------------------------------------------------------------
 */

static void async_free_in_flight(void **state) {
    cp_fixture *f = *state;
    cp_client *bc = connect_blocking(f);
    flushall(bc);
    load(bc, "fr:", 2000);
    slot_half_migrate(f, bc, 100, 10); /* phase 2 lists it at both, pausing between listings */
    cp_free(bc);
    for (size_t i = 0; i < n_loop_drivers; i++) {
        /* The whole scan, for the number of turns it takes (its pauses among them). */
        arun *r = new_run(&loop_drivers[i], f, 0, 0);
        r->s = cp_scan_new(r->c, NULL, 100, NULL);
        assert_int_equal(drain_async(r, 1), 0);
        long total = r->turns;
        cp_scan_stats st;
        cp_scan_get_stats(r->s, &st);
        assert_int_equal(st.slots_reread, 1);
        assert_sane(r);
        free_run(r);
        /* Freed after every number of turns up to there: no callback, nothing pending. */
        int turns = 0;
        for (;; turns++) {
            r = new_run(&loop_drivers[i], f, 0, 0);
            r->s = cp_scan_new(r->c, NULL, 100, NULL);
            r->chain = 1;
            next(r);
            while (r->turns < turns && !r->ended)
                turn(r);
            int ended = r->ended;
            long before = r->callbacks;
            cp_scan_free(r->s);
            r->s = NULL;
            /* What the freed step left running finishes on its own. */
            for (uint64_t end = cp__now_ns() + 10000000000ull; cp_pending(r->c) > 0;) {
                if (cp__now_ns() > end)
                    fail_msg("%s: %zu commands still pending after the free", r->d->name,
                             cp_pending(r->c));
                turn(r);
            }
            for (int t = 0; t < 20; t++)
                turn(r);
            assert_int_equal(r->callbacks, before);
            assert_sane(r);
            free_run(r);
            if (ended)
                break;
        }
        print_message("%-8s the scan took %ld turns; freed after 0 to %d turns\n",
                      loop_drivers[i].name, total, turns);
        /* cp_free with a call under way: called back once, CP_ECANCELED; the scan is freed
         * after the client. */
        for (turns = 0;; turns++) {
            r = new_run(&loop_drivers[i], f, 0, 0);
            r->s = cp_scan_new(r->c, NULL, 100, NULL);
            r->chain = 1;
            next(r);
            while (r->turns < turns && !r->ended)
                turn(r);
            if (r->ended) {
                free_run(r);
                break;
            }
            long before = r->callbacks;
            timed_client = NULL;
            cp_free(r->c);
            assert_int_equal(r->callbacks, before + 1);
            assert_true(r->ended);
            assert_int_equal(r->rc, CP_ECANCELED);
            r->c = NULL;
            cp_scan_free(r->s);
            r->s = NULL;
            assert_sane(r);
            free_run(r);
        }
    }
}

/* ---- f. a slot that cannot be listed whole ----------------------------------------------------
 */

/* Master 0's slot marked MIGRATING to master 1, which does not import it (a resharding stopped
 * half set up): no listing certifies it, the pauses between listings grow to 64 ms, and after
 * the retry budget the call ends CP_ETIMEDOUT, naming the slot; no call waited meanwhile. Once
 * the slot is stable again, calling again completes the same scan. */
#define STUCK_SLOT 200
#define STUCK_BUDGET_MS 600

static void set_migrating(cp_fixture *f, cp_client *c, int on) {
    size_t p0 = cp_fixture_master(f, 0), p1 = cp_fixture_master(f, 1);
    int port0 = cp_topo_proc(f->topo, p0)->port;
    for (int i = 0; i < cp_node_count(c); i++) {
        cp_node_info n;
        assert_int_equal(cp_node_get(c, i, &n), 0);
        if (n.port != port0)
            continue;
        redisReply *r = on ? cp_command_node(c, i, "CLUSTER SETSLOT %d MIGRATING %s", STUCK_SLOT,
                                             cp_topo_proc(f->topo, p1)->id)
                           : cp_command_node(c, i, "CLUSTER SETSLOT %d STABLE", STUCK_SLOT);
        assert_non_null(r);
        assert_string_equal(r->str, "OK");
        freeReplyObject(r);
        return;
    }
    fail_msg("no node for master 0");
}

static void async_slot_stuck(void **state) {
    cp_fixture *f = *state;
    cp_client *bc = connect_blocking(f);
    load(bc, "st:", 2000);
    for (size_t i = 0; i < n_loop_drivers; i++) {
        set_migrating(f, bc, 1);
        arun *r = new_run(&loop_drivers[i], f, 0, STUCK_BUDGET_MS);
        r->prefix = "st:";
        r->n = 2000;
        r->seen = calloc(2000, sizeof(int));
        r->s = cp_scan_new(r->c, NULL, 100, NULL);
        uint64_t t0 = cp__now_ns();
        int rc = drain_async(r, 1);
        double ms = (double)(cp__now_ns() - t0) / 1e6;
        print_message("%-8s slot %d stuck MIGRATING: after %.0f ms %s: %s\n", r->d->name,
                      STUCK_SLOT, ms, cp_err_name(rc), r->errstr);
        assert_int_equal(rc, CP_ETIMEDOUT);
        char want[32];
        snprintf(want, sizeof(want), "slot %d ", STUCK_SLOT);
        assert_non_null(strstr(r->errstr, want));
        /* the budget ran out; the pauses woke on time (a pause left to other timer work, the
         * 5 s I/O timeout, ended the call after 5.4 s) */
        assert_double_ge(ms, STUCK_BUDGET_MS);
        assert_double_lt(ms, STUCK_BUDGET_MS + 2000);
        set_migrating(f, bc, 0);
        rc = drain_async(r, 1);
        if (rc != 0)
            fail_msg("%s: once the slot is stable: %s (%s)", r->d->name, cp_err_name(rc),
                     r->errstr);
        assert_sane(r);
        for (int k = 0; k < 2000; k++)
            if (r->seen[k] == 0)
                fail_msg("%s: st:%d was not returned", r->d->name, k);
        calltime_assert_never_blocked(&timed_calls, 10, CALLTIME_ASSERTED, r->d->name);
        free_run(r);
    }
    cp_free(bc);
}

/* ---- g. a TYPE filter on a slot with many keys -------------------------------------------------
 */

/* A slot listed again whose keys are more than max_pending: the TYPE filter checks them a chunk
 * at a time, so the scan completes (one pipeline of them all would pass the limit every time,
 * CP_ELIMIT). At this size, with max_pending 1,500: 3,000 strings and 500 hashes in one slot, a
 * third of real 16M-key clusters' slot size against a limit 40 times lower. */
static void async_type_big_slot(void **state) {
    cp_fixture *f = *state;
    cp_client *bc = connect_blocking(f);
    flushall(bc);
    char prefix[32], tag[16]; /* a hash tag of slot 100, master 0's (slot_half_migrate) */
    for (int i = 0;; i++) {
        snprintf(tag, sizeof(tag), "big%d", i);
        if (cp_keyslot(tag, strlen(tag)) == 100)
            break;
    }
    snprintf(prefix, sizeof(prefix), "{%s}:", tag);
    load(bc, prefix, 3000);
    cp_pipeline *p = cp_pipeline_new(bc);
    for (int i = 0; i < 500; i++)
        assert_int_equal(cp_append(p, "HSET %sh%d f v", prefix, i), 0);
    assert_int_equal(cp_exec(p), 0);
    cp_pipeline_free(p);
    slot_half_migrate(f, bc, 100, 10); /* listed again; 10 more strings */
    run_max_pending = 1500;
    for (size_t i = 0; i < n_loop_drivers; i++) {
        arun *r = new_run(&loop_drivers[i], f, 0, 0); /* every key kept, in r->keys */
        r->s = cp_scan_new(r->c, NULL, 1000, "string");
        int rc = drain_async(r, 1);
        if (rc != 0)
            fail_msg("%s: %s (%s)", r->d->name, cp_err_name(rc), r->errstr);
        cp_scan_stats st;
        cp_scan_get_stats(r->s, &st);
        assert_int_ge(st.slots_reread, 1);
        /* the 3,000 strings and slot_half_migrate's 10, each at least once; no hash */
        size_t n = unique(r->keys, r->nkeys), strings = 0;
        for (size_t k = 0; k < n; k++) {
            if (strstr(r->keys[k], "}:h") != NULL)
                fail_msg("%s: the hash %s passed the TYPE filter", r->d->name, r->keys[k]);
            strings += strncmp(r->keys[k], prefix, strlen(prefix)) == 0;
        }
        assert_int_equal(strings, 3000);
        assert_int_equal(n, 3010);
        r->nkeys = n;
        assert_sane(r);
        calltime_assert_never_blocked(&timed_calls, 10, CALLTIME_ASSERTED, r->d->name);
        free_run(r);
    }
    run_max_pending = 0;
    cp_free(bc);
}

/* ---- e. refused calls; the end -------------------------------------------------------------- */

static void async_refused(void **state) {
    cp_fixture *f = *state;
    cp_client *bc = connect_blocking(f);
    flushall(bc);
    load(bc, "e:", 300);
    cp_free(bc);
    assert_int_equal(cp_scan_next_async(NULL, on_scan, NULL), CP_EINVAL);
    /* Not on a loop yet. */
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = f->endpoints;
    cp_test_protocol(&o);
    cp_client *c = cp_client_new(&o);
    cp_scan *s = cp_scan_new(c, NULL, 0, NULL);
    assert_non_null(s);
    assert_int_equal(cp_scan_next_async(s, on_scan, NULL), CP_EINVAL);
    assert_int_equal(c->err, CP_EINVAL);
    cp_scan_free(s);
    cp_free(c);

    arun *r = new_run(&loop_drivers[0], f, 0, 0);
    r->s = cp_scan_new(r->c, "e:*", 0, NULL);
    assert_int_equal(cp_scan_next_async(r->s, NULL, r), CP_EINVAL);
    r->chain = 1;
    next(r);
    r->inside++; /* a second call while the first is under way */
    assert_int_equal(cp_scan_next_async(r->s, on_scan, r), CP_EINVAL);
    r->inside--;
    assert_int_equal(r->c->err, CP_EINVAL);
    until_ended(r, 60);
    assert_int_equal(r->rc, 0);
    /* Complete: each call answers 0, from the loop. */
    long before = r->callbacks;
    for (int k = 0; k < 3; k++) {
        r->ended = 0;
        next(r);
        assert_int_equal(r->callbacks, before + k);
        until(r, before + k + 1, 10);
        assert_true(r->ended);
        assert_int_equal(r->rc, 0);
    }
    assert_int_equal(cp_pending(r->c), 0);
    assert_sane(r);
    free_run(r);
}

/* The cases before the first with a setup of its own share one cluster (they leave it as they
 * found it); each of the others starts its own. tests/CMakeLists.txt runs them as three ctest
 * tests beside each other (CP_TEST_ONLY, testonly.h): one after the other they take about 45 s,
 * most of it the six clusters' start and the scans' turns, little of it CPU. */
int main(void) {
    loop_drivers_announce();
    const struct CMUnitTest all[] = {
        cmocka_unit_test(async_full_scan),
        cmocka_unit_test(async_refused),
        cmocka_unit_test_setup_teardown(async_scan_through_migration, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(async_free_in_flight, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(async_slot_stuck, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(async_stopped_master, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(async_type_big_slot, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
    };
    struct CMUnitTest tests[sizeof all / sizeof all[0]];
    size_t n = cp_test_only(all, sizeof all / sizeof all[0], tests), shared = 0;
    while (shared < n && tests[shared].setup_func == NULL)
        shared++;
    int failed = 0;
    if (shared > 0) /* no cluster started for none of them */
        failed += _cmocka_run_group_tests("shared cluster", tests, shared,
                                          cp_fixture_setup_cluster3, cp_fixture_teardown);
    if (n > shared)
        failed += _cmocka_run_group_tests("own cluster", tests + shared, n - shared, NULL, NULL);
    cp_free(table_source);
    return failed;
}
