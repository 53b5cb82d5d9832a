/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The cluster SCAN (cp_scan_*) on a real 3-master cluster (Debian's redis-server): a full scan
 * returns every key, and a quiet cluster needs no slot listed again; MATCH, TYPE and COUNT
 * filter as the server does, also in the slots listed again after a migration during the walk
 * (and the client's glob matcher agrees with the server's KEYS on odd patterns); a scan while
 * another thread moves slots back and forth between two masters still returns every key, and so
 * does one during whose first walk slots leave every master and come back (views alike before
 * and after: only the masters' MIGRATE counts tell); a stopped master ends the call with an error,
 * never the scan short, and the scan goes on once it answers again; a slot left half-migrated is
 * read from both of its nodes; bad arguments, and the call of the other kind of client, are
 * refused, and single-endpoint mode scans its endpoint. test_scan_async.c has the async call.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusterpipe/clusterpipe.h"
#include "lib/proto/glob.h"
#include "orch/orch.h"
#include "util/clock.h"
#include "fixture.h"
#include "testutil.h"
#include "slotmover.h"

#define NKEYS 20000

/* Options with an I/O timeout of io_timeout_ms and a retry budget of budget_ms (0: the
 * defaults), for cp_fixture_client. */
static cp_options timeouts(int io_timeout_ms, int budget_ms) {
    cp_options opt = CP_OPTIONS_INIT;
    if (io_timeout_ms > 0)
        opt.io_timeout_ms = io_timeout_ms;
    if (budget_ms > 0)
        opt.retry_budget_ms = budget_ms;
    return opt;
}

/* A client of a cluster that the tests before may have filled: emptied first. */
static cp_client *connect_empty(cp_fixture *f) {
    cp_client *c = cp_fixture_client(f, NULL);
    redisReply *r = cp_command(c, "FLUSHALL");
    assert_non_null(r);
    assert_string_equal(r->str, "OK");
    freeReplyObject(r);
    return c;
}

/* SET prefix%d for i in [0, n), in one pipeline. */
static void load(cp_client *c, const char *prefix, int n) {
    cp_pipeline *p = cp_pipeline_new(c);
    for (int i = 0; i < n; i++)
        assert_int_equal(cp_append(p, "SET %s%d %d", prefix, i, i), 0);
    assert_int_equal(cp_exec(p), 0);
    cp_pipeline_free(p);
}

/* Tallies a batch: keys prefix%d count in seen[], others in *other. */
static void tally(const redisReply *keys, const char *prefix, int n, int *seen, long *other) {
    size_t pl = strlen(prefix);
    for (size_t i = 0; i < keys->elements; i++) {
        const redisReply *k = keys->element[i];
        assert_int_equal(k->type, REDIS_REPLY_STRING);
        int idx = -1;
        if ((size_t)k->len > pl && memcmp(k->str, prefix, pl) == 0)
            idx = atoi(k->str + pl);
        if (idx >= 0 && idx < n)
            seen[idx]++;
        else
            (*other)++;
    }
}

/* One batch, tallied. */
static void one_batch(cp_scan *s, const char *prefix, int n, int *seen, long *other) {
    redisReply *keys;
    assert_int_equal(cp_scan_next(s, &keys), 1);
    tally(keys, prefix, n, seen, other);
    freeReplyObject(keys);
}

/* The rest of a scan; 0 when it completed. */
static int drain(cp_scan *s, const char *prefix, int n, int *seen, long *other) {
    redisReply *keys;
    int rc;
    while ((rc = cp_scan_next(s, &keys)) == 1) {
        assert_non_null(keys);
        assert_int_gt(keys->elements, 0);
        tally(keys, prefix, n, seen, other);
        freeReplyObject(keys);
    }
    return rc;
}

/* Every prefixN with N < n came at least once. */
static void assert_all_seen(const int *seen, int n, const char *prefix) {
    int m = 0, first = -1;
    for (int i = 0; i < n; i++)
        if (seen[i] == 0 && m++ == 0)
            first = i;
    if (m != 0)
        fail_msg("%d keys present throughout were not returned, the first %s%d", m, prefix, first);
}

/* (a) 20,000 keys: all of them, nothing else; a quiet cluster certifies every slot by SCAN. */
static void full_scan(void **state) {
    cp_fixture *f = *state;
    cp_client *c = connect_empty(f);
    load(c, "k:", NKEYS);
    int *seen = calloc(NKEYS, sizeof(int));
    long other = 0;
    cp_scan *s = cp_scan_new(c, NULL, 1000, NULL);
    assert_non_null(s);
    assert_int_equal(drain(s, "k:", NKEYS, seen, &other), 0);
    assert_all_seen(seen, NKEYS, "k:");
    assert_int_equal(other, 0);
    cp_scan_stats st;
    cp_scan_get_stats(s, &st);
    assert_int_ge(st.keys, NKEYS);
    assert_int_ge(st.scan_calls, 3);
    assert_int_equal(st.slots_reread, 0);
    assert_int_equal(st.keys_reread, 0);
    redisReply *keys = (redisReply *)1;
    assert_int_equal(cp_scan_next(s, &keys), 0); /* finished stays finished */
    assert_null(keys);
    cp_scan_free(s);
    free(seen);
    cp_free(c);
}

/* Strings m:s:N, hashes m:h:N and strings x:N. */
#define MIXED 600

static void load_mixed(cp_client *c) {
    cp_pipeline *p = cp_pipeline_new(c);
    for (int i = 0; i < MIXED; i++) {
        assert_int_equal(cp_append(p, "SET m:s:%d v", i), 0);
        assert_int_equal(cp_append(p, "HSET m:h:%d f v", i), 0);
        assert_int_equal(cp_append(p, "SET x:%d v", i), 0);
    }
    assert_int_equal(cp_exec(p), 0);
    cp_pipeline_free(p);
}

/* A scan of MATCH/TYPE whose keys must be exactly prefix0..MIXED-1; `move` moves 400 slots off
 * every master after the first batch (about 44 keys each), so that the master being walked gave
 * keys away during its walk and its slots are listed again (MATCH and TYPE applied by the
 * client). */
static void expect_exactly(cp_fixture *f, cp_client *c, const char *match, long count,
                           const char *type, const char *prefix, int move) {
    int seen[MIXED] = {0};
    long other = 0;
    cp_scan *s = cp_scan_new(c, match, count, type);
    assert_non_null(s);
    one_batch(s, prefix, MIXED, seen, &other);
    if (move) {
        char err[512];
        for (int k = 0; k < 3; k++)
            if (cp_topo_migrate_slots(f->topo, cp_fixture_master(f, k),
                                      cp_fixture_master(f, (k + 1) % 3), 400, err, sizeof(err)))
                fail_msg("migrate: %s", err);
    }
    assert_int_equal(drain(s, prefix, MIXED, seen, &other), 0);
    cp_scan_stats st;
    cp_scan_get_stats(s, &st);
    print_message("MATCH %s TYPE %s COUNT %ld%s: %llu keys, %llu SCANs, %llu slots listed again "
                  "(%llu keys)\n",
                  match ? match : "-", type ? type : "-", count, move ? ", slots moved" : "",
                  (unsigned long long)st.keys, (unsigned long long)st.scan_calls,
                  (unsigned long long)st.slots_reread, (unsigned long long)st.keys_reread);
    assert_all_seen(seen, MIXED, prefix);
    assert_int_equal(other, 0);
    if (move) {
        assert_int_gt(st.slots_reread, 0);
        assert_int_gt(st.keys_reread, 0);
    } else
        assert_int_equal(st.slots_reread, 0);
    cp_scan_free(s);
}

/* (b) MATCH, TYPE and COUNT, by SCAN and by the re-listing. */
static void match_and_type(void **state) {
    cp_fixture *f = *state;
    cp_client *c = connect_empty(f);
    load_mixed(c);
    expect_exactly(f, c, "m:*", 7, "hash", "m:h:", 0);
    expect_exactly(f, c, "m:[s]:*", 0, NULL, "m:s:", 0);
    expect_exactly(f, c, "m:*", 50, "string", "m:s:", 0);
    /* TYPE alone: the strings are m:s:N and x:N. */
    cp_scan *s = cp_scan_new(c, NULL, 50, "string");
    int seen[MIXED] = {0};
    long other = 0;
    assert_int_equal(drain(s, "x:", MIXED, seen, &other), 0);
    assert_all_seen(seen, MIXED, "x:");
    assert_int_equal(other, MIXED);
    cp_scan_free(s);
    expect_exactly(f, c, "m:*", 3, "HASH", "m:h:", 1);
    expect_exactly(f, c, "?:s:*", 0, NULL, "m:s:", 1);
    cp_free(c);
}

/* The client's matcher is the server's: KEYS over odd keys, pattern by pattern. */
static void glob_matches_server(void **state) {
    cp_fixture *f = *state;
    cp_client *c = connect_empty(f);
    static const char *keys[] = {"a",     "ab",    "abc",   "a*c",  "a?c",     "a[c", "a]c",
                                 "a\\c",  "a-c",   "aXc",   "abbc", "",        "^x",  "b",
                                 "hello", "hallo", "hxllo", "hllo", "heeello", "a\\", "[",
                                 "]",     "-",     "^",     "ba",   "zzz",     "AbC"};
    static const char *pats[] = {
        "*",         "**",      "a*",    "*c",      "a?c",   "a[bX]c", "a[^b]c",   "a[a-c]c",
        "a[c-a]c",   "a\\*c",   "a\\?c", "a[\\]]c", "a[",    "a[bc",   "[",        "[^",
        "[]",        "[]]",     "a\\",   "\\",      "h?llo", "h*llo",  "h[ae]llo", "h[^e]llo",
        "h[a-b]llo", "*a*a*a*", "a*b*c", "[a-]",    "[-a]",  "^*",     "\\^x",     "a[\\",
        "A*",        "*b*",     "???",   "[!a]*",   "a\\[c", "a]c",    "*]*",      "?",
    };
    cp_pipeline *p = cp_pipeline_new(c);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        assert_int_equal(cp_append(p, "SET %b 1", keys[i], strlen(keys[i])), 0);
    assert_int_equal(cp_exec(p), 0);
    cp_pipeline_free(p);
    for (size_t j = 0; j < sizeof(pats) / sizeof(pats[0]); j++) {
        redisReply *r = cp_command(c, "KEYS %b", pats[j], strlen(pats[j]));
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
            int server = 0;
            for (size_t e = 0; e < r->elements; e++)
                server |= (size_t)r->element[e]->len == strlen(keys[i]) &&
                          memcmp(r->element[e]->str, keys[i], strlen(keys[i])) == 0;
            /* KEYS * is every key without matching (as SCAN without MATCH). */
            int client = strcmp(pats[j], "*") == 0 ||
                         cp__glob_match(pats[j], strlen(pats[j]), keys[i], strlen(keys[i]));
            if (server != client)
                fail_msg("pattern '%s', key '%s': server %d, client %d", pats[j], keys[i], server,
                         client);
        }
        freeReplyObject(r);
    }
    cp_free(c);
}

/* (c) Slots move back and forth between masters 0 and 1 while the scan walks with COUNT 10. */
#define MOVE_SLOTS 250
#define MIN_ROUNDS 2

static void scan_through_migration(void **state) {
    cp_fixture *f = *state;
    cp_options o = timeouts(0, 30000);
    cp_client *c = cp_fixture_client(f, &o);
    load(c, "mv:", NKEYS);
    int *seen = calloc(NKEYS, sizeof(int));
    long other = 0;
    /* The client's first nodes are its seeds, the masters in order: master 0 is walked first,
     * and its walk spans a whole round of moves (the scan waits for one there). */
    cp_node_info first;
    assert_int_equal(cp_node_get(c, 0, &first), 0);
    assert_int_equal(first.port, cp_topo_proc(f->topo, cp_fixture_master(f, 0))->port);
    slot_mover m = {0};
    slot_mover_start(&m, f, cp_fixture_master(f, 0), cp_fixture_master(f, 1), MOVE_SLOTS,
                     MIN_ROUNDS);
    uint64_t t0 = cp__now_ns();
    cp_scan *s = cp_scan_new(c, NULL, 10, NULL);
    assert_non_null(s);
    one_batch(s, "mv:", NKEYS, seen, &other);
    while (slot_mover_rounds(&m) == 0)
        cp__sleep_ms(5);
    int rc = drain(s, "mv:", NKEYS, seen, &other);
    int during = slot_mover_rounds(&m);
    double took = (double)(cp__now_ns() - t0) / 1e9;
    if (slot_mover_stop(&m) < 0)
        fail_msg("migration: %s", m.err);
    if (rc != 0)
        fail_msg("scan: %s (%s)", cp_err_name(rc), c->errstr);
    cp_scan_stats st;
    cp_scan_get_stats(s, &st);
    print_message("%d rounds of %d slots moved during the scan (%.1f s); %llu keys returned, "
                  "%llu SCANs, %llu slots listed again (%llu keys)\n",
                  during, MOVE_SLOTS, took, (unsigned long long)st.keys,
                  (unsigned long long)st.scan_calls, (unsigned long long)st.slots_reread,
                  (unsigned long long)st.keys_reread);
    assert_all_seen(seen, NKEYS, "mv:");
    assert_int_equal(other, 0);
    assert_int_ge(during, 1);
    assert_int_gt(st.slots_reread, 0);
    cp_scan_free(s);
    free(seen);
    cp_free(c);
}

/* Moves slots [first, first + n) with their keys from node `from` to node `to` as a resharding
 * tool does (IMPORTING, MIGRATING, MIGRATE each key, NODE on the target, the source, the third
 * master), one pipeline per step. */
static void move_slots(cp_client *c, cp_fixture *f, size_t pfrom, size_t pto, int first, int n) {
    int from = slot_node_of(c, f, pfrom), to = slot_node_of(c, f, pto);
    const char *fid = cp_topo_proc(f->topo, pfrom)->id, *tid = cp_topo_proc(f->topo, pto)->id;
    int port = cp_topo_proc(f->topo, pto)->port;
    cp_pipeline *p = cp_pipeline_new(c);
    for (int s = first; s < first + n; s++) {
        assert_int_equal(cp_append_node(p, to, "CLUSTER SETSLOT %d IMPORTING %s", s, fid), 0);
        assert_int_equal(cp_append_node(p, from, "CLUSTER SETSLOT %d MIGRATING %s", s, tid), 0);
        assert_int_equal(cp_append_node(p, from, "CLUSTER GETKEYSINSLOT %d 1000", s), 0);
    }
    assert_int_equal(cp_exec(p), 0);
    cp_pipeline *m = cp_pipeline_new(c);
    for (int i = 0; i < n; i++) {
        const redisReply *keys = cp_reply(p, (size_t)i * 3 + 2);
        for (size_t k = 0; k < keys->elements; k++)
            assert_int_equal(cp_append_node(m, from, "MIGRATE 127.0.0.1 %d %b 0 5000", port,
                                            keys->element[k]->str, (size_t)keys->element[k]->len),
                             0);
    }
    assert_int_equal(cp_exec(m), 0);
    for (size_t i = 0; i < cp_count(m); i++)
        assert_string_equal(cp_reply(m, i)->str, "OK");
    cp_pipeline_reset(p);
    for (int s = first; s < first + n; s++)
        assert_int_equal(cp_append_node(p, to, "CLUSTER SETSLOT %d NODE %s", s, tid), 0);
    assert_int_equal(cp_exec(p), 0);
    /* Then the source, then the third master, each once the one before answered. Told in one
     * pipeline, the third could apply a ping the source sent before it let go: the cluster then
     * lost keys or bounced MOVED between two masters (2 times in 80 rounds under load). */
    for (int k = -1; k < 3; k++) {
        int node = k < 0 ? from : slot_node_of(c, f, cp_fixture_master(f, k));
        if (node == to || (k >= 0 && node == from))
            continue;
        cp_pipeline_reset(p);
        for (int s = first; s < first + n; s++)
            assert_int_equal(cp_append_node(p, node, "CLUSTER SETSLOT %d NODE %s", s, tid), 0);
        assert_int_equal(cp_exec(p), 0);
        for (size_t i = 0; i < cp_count(p); i++)
            assert_string_equal(cp_reply(p, i)->str, "OK");
    }
    cp_pipeline_free(m);
    cp_pipeline_free(p);
}

/* Slots leave every master and come back while the first master's walk is half done: the
 * master's view is the same before and after its walk, but keys whose place SCAN visited while
 * they were away were not on it then; its MIGRATE count moved, so its slots are listed again. */
static void slots_leave_and_return(void **state) {
    cp_fixture *f = *state;
    cp_client *c = cp_fixture_client(f, NULL);
    load(c, "rt:", NKEYS);
    int *seen = calloc(NKEYS, sizeof(int));
    long other = 0;
    cp_scan *s = cp_scan_new(c, NULL, 10, NULL);
    one_batch(s, "rt:", NKEYS, seen, &other);
    static const int lowest[3] = {0, 5461, 10922}; /* the masters' first slots */
    for (int k = 0; k < 3; k++)
        move_slots(c, f, cp_fixture_master(f, k), cp_fixture_master(f, (k + 1) % 3), lowest[k],
                   100);
    for (int i = 0; i < 300; i++) { /* a third of a master's walk, at COUNT 10 */
        one_batch(s, "rt:", NKEYS, seen, &other);
    }
    for (int k = 0; k < 3; k++)
        move_slots(c, f, cp_fixture_master(f, (k + 1) % 3), cp_fixture_master(f, k), lowest[k],
                   100);
    int rc = drain(s, "rt:", NKEYS, seen, &other);
    if (rc != 0)
        fail_msg("scan: %s (%s)", cp_err_name(rc), c->errstr);
    cp_scan_stats st;
    cp_scan_get_stats(s, &st);
    print_message("slots out and back during a walk: %llu keys, %llu slots listed again (%llu "
                  "keys)\n",
                  (unsigned long long)st.keys, (unsigned long long)st.slots_reread,
                  (unsigned long long)st.keys_reread);
    assert_all_seen(seen, NKEYS, "rt:");
    assert_int_equal(other, 0);
    assert_int_ge(st.slots_reread, 5461);
    cp_scan_free(s);
    free(seen);
    cp_free(c);
}

/* (d) A master stopped (SIGSTOP) mid-scan: the call fails, the scan is not short; once the
 * master answers again the same scan goes on and completes. A master killed: an error. */
static void unreachable_master(void **state) {
    cp_fixture *f = *state;
    char err[512];
    cp_options o = timeouts(300, 0);
    cp_client *c = cp_fixture_client(f, &o);
    load(c, "u:", 3000);
    int seen[3000] = {0};
    long other = 0;
    cp_scan *s = cp_scan_new(c, NULL, 100, NULL);
    one_batch(s, "u:", 3000, seen, &other);
    size_t stopped = cp_fixture_master(f, 2);
    assert_int_equal(cp_topo_kill(f->topo, stopped, SIGSTOP, err, sizeof(err)), 0);
    redisReply *keys;
    int rc, batches = 0;
    while ((rc = cp_scan_next(s, &keys)) == 1) {
        tally(keys, "u:", 3000, seen, &other);
        freeReplyObject(keys);
        batches++;
    }
    print_message("stopped master: %d more batches, then %s: %s\n", batches, cp_err_name(rc),
                  c->errstr);
    assert_int_lt(rc, 0);
    assert_int_equal(c->err, rc);
    assert_int_lt(cp_scan_next(s, &keys), 0); /* still stopped: the same step fails again */
    assert_int_equal(cp_topo_kill(f->topo, stopped, SIGCONT, err, sizeof(err)), 0);
    assert_int_equal(drain(s, "u:", 3000, seen, &other), 0);
    assert_all_seen(seen, 3000, "u:");
    assert_int_equal(other, 0);
    cp_scan_free(s);

    /* Killed: connection refused, an error every time. */
    assert_int_equal(cp_topo_kill(f->topo, stopped, SIGKILL, err, sizeof(err)), 0);
    s = cp_scan_new(c, NULL, 1000, NULL);
    memset(seen, 0, sizeof(seen));
    rc = drain(s, "u:", 3000, seen, &other);
    assert_int_lt(rc, 0);
    print_message("killed master: %s: %s\n", cp_err_name(rc), c->errstr);
    cp_scan_free(s);
    cp_free(c);
}

/* A slot left half-migrated (IMPORTING on master 1, MIGRATING on master 0, half of its keys
 * moved): read from both nodes at once, no waiting for a migration that never ends. */
static void half_migrated_slot(void **state) {
    cp_fixture *f = *state;
    cp_options o = timeouts(0, 2000);
    cp_client *c = cp_fixture_client(f, &o);
    load(c, "h:", 2000);
    slot_half_migrate(f, c, 100, 20); /* 10 of its 20 keys moved */
    int seen[2000] = {0};
    long other = 0;
    cp_scan *s = cp_scan_new(c, NULL, 0, NULL);
    int rc = drain(s, "h:", 2000, seen, &other);
    if (rc != 0)
        fail_msg("scan: %s (%s)", cp_err_name(rc), c->errstr);
    assert_all_seen(seen, 2000, "h:");
    assert_int_ge(other, 20); /* the slot's keys, from both nodes */
    cp_scan_stats st;
    cp_scan_get_stats(s, &st);
    print_message("half-migrated slot (10 of 20 keys moved): %llu slots listed again, %llu keys\n",
                  (unsigned long long)st.slots_reread, (unsigned long long)st.keys_reread);
    assert_int_equal(st.slots_reread, 1);
    assert_int_equal(st.keys_reread, 20);
    cp_scan_free(s);
    cp_free(c);
}

static void no_callback(cp_scan *s, int rc, redisReply *keys, void *privdata) {
    (void)s, (void)rc, (void)keys, (void)privdata;
    fail_msg("a refused cp_scan_next_async called back");
}

/* (e) Refused arguments and clients (cp_scan_next on an event-loop client, the async call on a
 * blocking one); single-endpoint mode scans its one endpoint. */
static void bad_arguments(void **state) {
    cp_fixture *f = *state;
    assert_null(cp_scan_new(NULL, NULL, 0, NULL));
    redisReply *keys = (redisReply *)1;
    assert_int_equal(cp_scan_next(NULL, &keys), CP_EINVAL);
    cp_scan_free(NULL);
    cp_scan_stats st = {1, 1, 1, 1};
    cp_scan_get_stats(NULL, &st);
    assert_int_equal(st.keys + st.scan_calls + st.slots_reread + st.keys_reread, 0);

    cp_options opt = CP_OPTIONS_INIT;
    opt.seeds = f->endpoints;
    cp_test_protocol(&opt);
    cp_client *ev = cp_client_new(&opt);
    cp_loop *l = cp_loop_new();
    assert_int_equal(cp_loop_attach(l, ev), 0);
    cp_scan *es = cp_scan_new(ev, NULL, 0, NULL); /* an event-loop client's is async */
    assert_non_null(es);
    assert_int_equal(cp_scan_next(es, &keys), CP_EINVAL);
    assert_null(keys);
    assert_int_equal(ev->err, CP_EINVAL);
    cp_scan_free(es);
    cp_free(ev);
    cp_loop_free(l);

    cp_client *c = connect_empty(f);
    load(c, "e:", 500);
    cp_scan *s = cp_scan_new(c, "e:*", 0, NULL);
    assert_non_null(s);
    assert_int_equal(cp_scan_next(s, NULL), CP_EINVAL);
    assert_int_equal(c->err, CP_EINVAL);
    assert_int_equal(cp_scan_next_async(s, no_callback, NULL), CP_EINVAL); /* blocking client */
    assert_int_equal(c->err, CP_EINVAL);
    cp_scan_free(s);
    /* A blocking client handed to a loop is no longer one. */
    cp_loop *l2 = cp_loop_new();
    assert_int_equal(cp_loop_attach(l2, c), 0);
    s = cp_scan_new(c, NULL, 0, NULL);
    assert_non_null(s);
    assert_int_equal(cp_scan_next(s, &keys), CP_EINVAL);
    assert_int_equal(c->err, CP_EINVAL);
    cp_scan_free(s);
    cp_free(c);
    cp_loop_free(l2);

    /* Single-endpoint mode: SCAN of the endpoint, here one master, whatever it holds. */
    c = cp_fixture_client(f, NULL);
    int n0 = slot_node_of(c, f, cp_fixture_master(f, 0));
    redisReply *r = cp_command_node(c, n0, "DBSIZE");
    long long held = r->integer;
    freeReplyObject(r);
    cp_free(c);
    cp_options one = CP_OPTIONS_INIT;
    char ep[64];
    snprintf(ep, sizeof(ep), "127.0.0.1:%d", cp_topo_proc(f->topo, cp_fixture_master(f, 0))->port);
    one.endpoint = ep;
    cp_test_protocol(&one);
    c = cp_connect(&one);
    assert_int_equal(c->err, 0);
    s = cp_scan_new(c, NULL, 100, NULL);
    int seen[500] = {0};
    long other = 0;
    assert_int_equal(drain(s, "e:", 500, seen, &other), 0);
    long long got = other;
    for (int i = 0; i < 500; i++)
        got += seen[i] > 0;
    assert_int_gt(held, 0);
    assert_int_lt(held, 500);
    assert_int_equal(got, held);
    cp_scan_free(s);
    cp_free(c);
}

/* The cases that leave the cluster as it was (but its keys, and where slots are) share one
 * cluster; those that move slots by hand, stop or kill a master get one each. */
int main(void) {
    const struct CMUnitTest shared[] = {
        cmocka_unit_test(full_scan),
        cmocka_unit_test(bad_arguments),
        cmocka_unit_test(glob_matches_server),
        cmocka_unit_test(match_and_type),
    };
    const struct CMUnitTest own[] = {
        cmocka_unit_test_setup_teardown(scan_through_migration, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(slots_leave_and_return, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(half_migrated_slot, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(unreachable_master, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
    };
    int failed = cmocka_run_group_tests(shared, cp_fixture_setup_cluster3, cp_fixture_teardown);
    return failed + cmocka_run_group_tests(own, NULL, NULL);
}
