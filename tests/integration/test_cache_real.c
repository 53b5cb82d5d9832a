/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The client-side cache (clusterpipe/cache.h) on a real cluster. What it answers: the second read
 * of a key is a hit with the same reply (GET, HGET, HGETALL, EXISTS, MGET across slots), but
 * for a key that does not exist, which is never kept; a transaction's reads, this client's own
 * writes and another client's write (through its invalidation) are never answered from it; the
 * entry bound holds with LRU; endpoint mode is refused. Under both protocols (the @resp3 run:
 * RESP3 pushes; the plain one: RESP2, CLIENT TRACKING ... REDIRECT to a tracking link per node),
 * and when the connection the invalidations come on is killed, the node's entries go before the
 * next read, and tracking comes back (RESP2: redirected to the new link). And through the cluster's
 * changes, with a writer and a reader client and a version per key: while slots migrate back and
 * forth, and through a kill -9 failover, no read the reader sends after it received the
 * invalidation of an acknowledged write answers an older version (stale reads: 0), none stays older
 * for long (an invalidation lost), and the window between a write's acknowledgement and its
 * invalidation's arrival is measured.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "asserts.h"
#include "clusterpipe/clusterpipe.h"
#include "fixture.h"
#include "slotmover.h"
#include "testutil.h"
#include "util/clock.h"

/* Keys of the three masters of a cluster3 fixture (slots 15495, 3300 and 7365: one in each
 * third of the slots, as the fixture gives them out). */
static const char *const master_keys[3] = {"aw:{a}", "aw:{b}", "aw:{c}"};

/* 1 when every master tracks this client's reads. Under RESP3 a ready connection does; under
 * RESP2 once its tracking link is up and its REDIRECT answered, a round trip or two after it
 * opens: reads before that go to the servers and are not stored. */
static int all_tracked(cp_client *c) {
    cp_cache_stats st;
    cp_cache_get_stats(c, &st);
    return st.tracked_nodes >= 3;
}

/* Waits (10 s at most) until every master tracks c's reads, driving the blocking client with a
 * TYPE (no cacheable read: the cache's counters stay as they were) to a key of each master. */
static void await_tracking(cp_client *c) {
    uint64_t end = cp__now_ns() + 10000000000ull;
    for (;;) {
        for (int m = 0; m < 3; m++) {
            redisReply *r = cp_command(c, "TYPE %s", master_keys[m]);
            if (r == NULL)
                fail_msg("TYPE %s: %s", master_keys[m], c->errstr);
            cp_reply_free(r);
        }
        if (all_tracked(c))
            return;
        if (cp__now_ns() > end)
            fail_msg("the masters do not track the client's reads after 10 s");
        cp__sleep_ms(5);
    }
}

/* 1 in the @resp3 run (CP_TEST_PROTOCOL=3). */
static int test_resp3(void) {
    const char *env = getenv("CP_TEST_PROTOCOL");
    return env != NULL && strcmp(env, "3") == 0;
}

/* A client with a cache (under the run's protocol), every master tracking its reads. */
static cp_client *cached_client(cp_fixture *f, size_t max_entries, int budget_ms) {
    cp_cache_options co = {.max_entries = max_entries};
    cp_options o = CP_OPTIONS_INIT;
    o.client_cache = &co;
    o.retry_budget_ms = budget_ms;
    cp_client *c = cp_fixture_client(f, &o);
    await_tracking(c);
    return c;
}

/* cmd: a command without format directives. */
static void expect_str(cp_client *c, const char *want, const char *cmd) {
    redisReply *r = cp_command(c, cmd);
    if (r == NULL)
        fail_msg("%s: %s", cmd, c->errstr);
    if (r->type != CP_REPLY_STRING && r->type != CP_REPLY_STATUS)
        fail_msg("%s: reply type %d: %s", cmd, r->type, r->str ? r->str : "");
    assert_string_equal(r->str, want);
    cp_reply_free(r);
}

/* Runs the pipeline's commands (hiredis formats, no arguments) and returns how many the cache
 * answered; the replies stay in p. */
static int run(cp_pipeline *p, int n, const char *const *cmds) {
    cp_pipeline_reset(p);
    for (int i = 0; i < n; i++)
        assert_int_equal(cp_append(p, cmds[i]), 0);
    assert_int_equal(cp_exec(p), 0);
    int hits = 0;
    for (int i = 0; i < n; i++)
        hits += cp_reply_cached(p, (size_t)i);
    return hits;
}

static void hits_and_what_bypasses(void **state) {
    cp_fixture *f = *state;
    cp_client *w = cp_fixture_client(f, NULL);
    cp_client *c = cached_client(f, 0, 0);
    expect_str(w, "OK", "SET ca:a 1");
    expect_str(w, "OK", "SET ca:b 2");
    cp_cache_stats st;
    redisReply *r = cp_command(w, "HSET ca:h f1 x f2 y");
    assert_non_null(r);
    cp_reply_free(r);
    cp_pipeline *p = cp_pipeline_new(c);
    static const char *const reads[] = {"GET ca:a", "HGET ca:h f1", "HGETALL ca:h", "EXISTS ca:b",
                                        "GET ca:none"};
    assert_int_equal(run(p, 5, reads), 0); /* first reads: misses, stored but the nil */
    cp_cache_get_stats(c, &st);
    assert_int_equal(st.misses, 5);
    assert_int_equal(st.stored, 4);
    assert_int_equal(st.not_stored, 1);
    /* The same requests: hits, but the key that does not exist is read from its node again. */
    assert_int_equal(run(p, 5, reads), 4);
    assert_int_equal(cp_reply_cached(p, 4), 0);
    assert_string_equal(cp_reply(p, 0)->str, "1");
    assert_string_equal(cp_reply(p, 1)->str, "x");
    assert_int_equal(cp_reply(p, 2)->type, test_resp3() ? CP_REPLY_MAP : CP_REPLY_ARRAY);
    assert_int_equal(cp_reply(p, 2)->elements, 4);
    assert_int_equal(cp_reply(p, 3)->integer, 1);
    assert_int_equal(cp_reply(p, 4)->type, CP_REPLY_NIL);
    uint64_t s0, d0;
    assert_int_equal(cp_timing(p, 0, &s0, &d0), 0);
    assert_int_equal(s0, d0);
    cp_cache_get_stats(c, &st);
    assert_int_equal(st.hits, 4);

    /* MGET across slots goes as one part per slot, each kept: the second is answered whole. */
    static const char *const mget[] = {"MGET ca:a ca:b"};
    assert_int_not_equal(cp_keyslot("ca:a", 4), cp_keyslot("ca:b", 4));
    cp_options so = CP_OPTIONS_INIT;
    cp_cache_options co = {0};
    so.client_cache = &co;
    so.flags = CP_OPT_SPLIT_MULTIKEY;
    cp_client *cs = cp_fixture_client(f, &so);
    await_tracking(cs);
    cp_pipeline *ps = cp_pipeline_new(cs);
    assert_int_equal(run(ps, 1, mget), 0);
    assert_int_equal(run(ps, 1, mget), 1);
    assert_int_equal(cp_reply(ps, 0)->elements, 2);
    assert_string_equal(cp_reply(ps, 0)->element[1]->str, "2");
    cp_pipeline_free(ps);
    cp_free(cs);

    /* Another client's write: its invalidation evicts, the next read sees the new value. */
    expect_str(w, "OK", "SET ca:a 10");
    static const char *const get_a[] = {"GET ca:a"};
    uint64_t t0 = cp__now_ns();
    for (;;) { /* the invalidation may still be on its way: at most 2 s */
        int hit = run(p, 1, get_a);
        if (strcmp(cp_reply(p, 0)->str, "10") == 0) {
            assert_int_equal(hit, 0);
            break;
        }
        assert_int_equal(hit, 1);
        assert_int_lt(cp__now_ns() - t0, 2000000000ull);
    }
    cp_cache_get_stats(c, &st);
    assert_int_ge(st.invalidations, 1);

    /* This client's own write, earlier in the same pipeline: the read after it is not a hit. */
    assert_int_equal(run(p, 1, get_a), 1); /* stored again after the miss above */
    static const char *const own[] = {"SET ca:a 11", "GET ca:a"};
    assert_int_equal(run(p, 2, own), 0);
    assert_string_equal(cp_reply(p, 1)->str, "11");

    /* A transaction's reads never come from the cache, nor go in. */
    run(p, 1, reads + 1);
    assert_int_equal(run(p, 1, reads + 1), 1);
    cp_cache_get_stats(c, &st);
    uint64_t hits = st.hits, misses = st.misses;
    static const char *const tx[] = {"MULTI", "HGET ca:h f1", "EXEC"};
    assert_int_equal(run(p, 3, tx), 0);
    assert_int_equal(cp_reply(p, 2)->type, CP_REPLY_ARRAY);
    assert_string_equal(cp_reply(p, 2)->element[0]->str, "x");
    cp_cache_get_stats(c, &st);
    assert_int_equal(st.hits, hits);
    assert_int_equal(st.misses, misses);

    /* cp_cache_clear: everything is read again. */
    cp_cache_clear(c);
    cp_cache_get_stats(c, &st);
    assert_int_equal(st.entries, 0);
    assert_int_equal(st.bytes, 0);
    assert_int_equal(run(p, 5, reads), 0);

    /* A PUBLISH changes no key: the read after it is still a hit. A keyless write sent to every
     * master (FLUSHALL) drops every entry before the read after it in the pipeline. */
    assert_int_equal(run(p, 5, reads), 4);
    static const char *const publish[] = {"PUBLISH ca:ch hello", "GET ca:a"};
    assert_int_equal(run(p, 2, publish), 1);
    assert_int_equal(cp_reply_cached(p, 1), 1);
    static const char *const flush[] = {"FLUSHALL", "GET ca:a"};
    assert_int_equal(run(p, 2, flush), 0);
    assert_int_equal(cp_reply(p, 1)->type, CP_REPLY_NIL);

    /* CLIENT TRACKING itself stays refused: the cache owns tracking. */
    r = cp_command(c, "CLIENT TRACKING ON");
    assert_null(r);
    assert_int_equal(c->err, CP_EINVAL);
    assert_contains(c->errstr, "client_cache");
    cp_pipeline_free(p);
    cp_free(c);
    cp_free(w);
}

/* An async command answered by the cache says so in its response, and its callback comes from
 * the loop like any other (not from inside the send). */
typedef struct async_seen {
    int n, cached[4], in_send;
    char value[4][8];
} async_seen;

static void on_get(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    async_seen *s = data;
    assert_int_equal(s->in_send, 0);
    assert_int_equal(r->outcome, CP_DONE);
    s->cached[s->n] = r->cached;
    snprintf(s->value[s->n], sizeof(s->value[0]), "%s", r->reply->str);
    s->n++;
}

static void on_type(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    (void)data;
    assert_int_equal(r->outcome, CP_DONE);
}

static void async_hit(void **state) {
    cp_fixture *f = *state;
    cp_client *w = cp_fixture_client(f, NULL);
    expect_str(w, "OK", "SET as:k 7");
    cp_free(w);
    cp_cache_options co = {0};
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = f->endpoints;
    o.client_cache = &co;
    cp_test_protocol(&o);
    cp_loop *l = cp_loop_new();
    cp_client *a = cp_client_new(&o);
    assert_int_equal(a->err, 0);
    assert_int_equal(cp_loop_attach(l, a), 0);
    uint64_t end = cp__now_ns() + 10000000000ull;
    while (!all_tracked(a)) { /* TYPEs to each master until all track the client's reads */
        assert_int_lt(cp__now_ns(), end);
        for (int m = 0; m < 3; m++)
            assert_int_equal(cp_async_command(a, on_type, NULL, "TYPE %s", master_keys[m]), 0);
        assert_int_equal(cp_loop_run(l), 0);
        cp__sleep_ms(5);
    }
    async_seen seen = {0};
    for (int i = 0; i < 2; i++) { /* the second GET is sent once the first was answered */
        seen.in_send = 1;
        assert_int_equal(cp_async_command(a, on_get, &seen, "GET as:k"), 0);
        seen.in_send = 0;
        assert_int_equal(cp_loop_run(l), 0);
    }
    assert_int_equal(seen.n, 2);
    assert_int_equal(seen.cached[0], 0);
    assert_int_equal(seen.cached[1], 1);
    assert_string_equal(seen.value[1], "7");
    cp_free(a);
    cp_loop_free(l);
}

static void lru_bound_and_refusals(void **state) {
    cp_fixture *f = *state;
    cp_client *w = cp_fixture_client(f, NULL);
    for (int i = 0; i < 64; i++) {
        redisReply *r = cp_command(w, "SET lru:%d %d", i, i);
        assert_non_null(r);
        cp_reply_free(r);
    }
    cp_free(w);
    cp_client *c = cached_client(f, 16, 0);
    for (int i = 0; i < 64; i++) {
        redisReply *r = cp_command(c, "GET lru:%d", i);
        assert_non_null(r);
        cp_reply_free(r);
        cp_cache_stats st;
        cp_cache_get_stats(c, &st);
        assert_int_le(st.entries, 16);
    }
    cp_cache_stats st;
    cp_cache_get_stats(c, &st);
    assert_int_equal(st.entries, 16);
    assert_int_equal(st.evictions, 48);
    cp_pipeline *p = cp_pipeline_new(c); /* the 16 newest are held, the oldest not */
    cp_append(p, "GET lru:63");
    cp_append(p, "GET lru:48");
    cp_append(p, "GET lru:0");
    assert_int_equal(cp_exec(p), 0);
    assert_int_equal(cp_reply_cached(p, 0), 1);
    assert_int_equal(cp_reply_cached(p, 1), 1);
    assert_int_equal(cp_reply_cached(p, 2), 0);
    cp_pipeline_free(p);
    cp_free(c);

    cp_cache_options co = {0};
    cp_options o = CP_OPTIONS_INIT;
    o.client_cache = &co;
    o.endpoint = "127.0.0.1:1";
    c = cp_client_new(&o);
    assert_int_equal(c->err, CP_EINVAL);
    assert_contains(c->errstr, "cluster mode");
    cp_free(c);
}

/* The id (CLIENT LIST) of the connection to the node at port that carries this client's
 * invalidations: RESP2, the tracking link (the one subscriber, flags P); RESP3, the command
 * connection (flags t, tracking). redir: that line's redir= field (-1 when it has none). */
static long long inval_conn(cp_fixture *f, int port, int resp3, long long *redir) {
    redisContext *k = cp_fixture_conn(f, port);
    assert_non_null(k);
    redisReply *r = redisCommand(k, "CLIENT LIST");
    assert_non_null(r);
    long long id = -1;
    *redir = -1;
    for (char *line = strtok(r->str, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        const char *at = strstr(line, " flags=");
        char flags[16] = "";
        if (at == NULL || sscanf(at, " flags=%15s", flags) != 1 ||
            strchr(flags, resp3 ? 't' : 'P') == NULL)
            continue;
        id = strtoll(line + 3, NULL, 10); /* "id=N ..." */
        const char *rd = strstr(line, " redir=");
        *redir = rd != NULL ? strtoll(rd + 7, NULL, 10) : -1;
    }
    freeReplyObject(r);
    return id;
}

/* The command connection (flags t) redirecting its invalidations to id, on the node at port. */
static int redirected_to(cp_fixture *f, int port, long long id) {
    redisContext *k = cp_fixture_conn(f, port);
    redisReply *r = redisCommand(k, "CLIENT LIST");
    assert_non_null(r);
    char want[32];
    snprintf(want, sizeof(want), " redir=%lld ", id);
    int found = strstr(r->str, want) != NULL;
    freeReplyObject(r);
    return found;
}

/* The connection a node's invalidations come on is killed (CLIENT KILL: RESP2, the tracking
 * link; RESP3, the command connection): invalidations sent meanwhile are lost, so the node's
 * entries go as soon as the client sees the close, and a write made then is read from the
 * server, new. Tracking comes back by itself (RESP2: a new link, the command connection
 * redirected to it), and the key is cached again. */
static void lost_invalidations_conn(void **state) {
    cp_fixture *f = *state;
    int resp3 = test_resp3();
    cp_client *w = cp_fixture_client(f, NULL);
    cp_client *c = cached_client(f, 0, 0);
    int port = cp_topo_proc(f->topo, cp_fixture_master(f, 0))->port;
    char key[32];
    for (int j = 0;; j++) { /* a key of master 0, which holds the lowest slots */
        snprintf(key, sizeof(key), "lk:%d", j);
        if (cp_keyslot(key, strlen(key)) < 1000)
            break;
    }
    redisReply *r = cp_command(w, "SET %s old", key);
    assert_non_null(r);
    cp_reply_free(r);
    cp_pipeline *p = cp_pipeline_new(c);
    for (int i = 0; i < 2; i++) {
        cp_pipeline_reset(p);
        cp_append(p, "GET %s", key);
        assert_int_equal(cp_exec(p), 0);
    }
    assert_int_equal(cp_reply_cached(p, 0), 1);
    long long redir, id = inval_conn(f, port, resp3, &redir);
    assert_int_gt(id, 0);
    if (!resp3)
        assert_int_equal(redirected_to(f, port, id), 1);
    cp_cache_stats st0, st;
    cp_cache_get_stats(c, &st0);
    redisReply *kr = redisCommand(cp_fixture_conn(f, port), "CLIENT KILL ID %lld", id);
    assert_non_null(kr);
    assert_int_equal(kr->integer, 1);
    freeReplyObject(kr);
    uint64_t end = cp__now_ns() + 5000000000ull;
    for (;;) { /* the client sees the close and drops the node's entry (a TYPE turns its loop) */
        r = cp_command(c, "TYPE %s", master_keys[1]);
        assert_non_null(r);
        cp_reply_free(r);
        cp_cache_get_stats(c, &st);
        if (st.node_drops > st0.node_drops)
            break;
        assert_int_lt(cp__now_ns(), end);
        cp__sleep_ms(2);
    }
    assert_int_equal(st.node_drops, st0.node_drops + 1);
    r = cp_command(w, "SET %s new", key); /* nobody invalidates it for c now */
    assert_non_null(r);
    cp_reply_free(r);
    cp_pipeline_reset(p);
    cp_append(p, "GET %s", key);
    assert_int_equal(cp_exec(p), 0);
    assert_int_equal(cp_reply_cached(p, 0), 0);
    assert_string_equal(cp_reply(p, 0)->str, "new");
    await_tracking(c); /* back, through a new connection */
    long long id2 = inval_conn(f, port, resp3, &redir);
    assert_int_gt(id2, id);
    if (!resp3)
        assert_int_equal(redirected_to(f, port, id2), 1);
    for (int i = 0; i < 2; i++) {
        cp_pipeline_reset(p);
        cp_append(p, "GET %s", key);
        assert_int_equal(cp_exec(p), 0);
        assert_string_equal(cp_reply(p, 0)->str, "new");
    }
    assert_int_equal(cp_reply_cached(p, 0), 1);
    cp_pipeline_free(p);
    cp_free(c);
    cp_free(w);
}

/* A server that refuses the client's tracking (an ACL without CLIENT TRACKING) is an error that
 * names the refusal, CP_EPROTO from cp_connect, never a cache that silently answers untracked.
 * Both protocols ask in the handshake: RESP3 with CLIENT TRACKING ON, RESP2 with CLIENT TRACKING
 * OFF (its tracking goes on later, redirected to a link: a refusal there would come in the middle
 * of the connection's commands, and a new connection would meet it again). */
static void refused_tracking_is_an_error(void **state) {
    cp_fixture *f = *state;
    for (int m = 0; m < 3; m++) {
        int port = cp_topo_proc(f->topo, cp_fixture_master(f, m))->port;
        redisReply *r = redisCommand(cp_fixture_conn(f, port),
                                     "ACL SETUSER nt on >ntpw ~* &* +@all -client|tracking");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STATUS);
        freeReplyObject(r);
    }
    cp_cache_options co = {0};
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = f->endpoints;
    o.username = "nt";
    o.password = "ntpw";
    o.client_cache = &co;
    cp_test_protocol(&o);
    cp_client *c = cp_connect(&o);
    assert_non_null(c);
    assert_int_equal(c->err, CP_EPROTO);
    assert_contains(c->errstr,
                    test_resp3() ? "CLIENT TRACKING ON refused" : "CLIENT TRACKING OFF refused");
    assert_contains(c->errstr, "NOPERM");
    cp_free(c);
    o.client_cache = NULL; /* the same user without a cache is served */
    c = cp_connect(&o);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    redisReply *r = cp_command(c, "GET %s", master_keys[0]);
    assert_non_null(r);
    cp_reply_free(r);
    cp_free(c);
}

/* A master frozen (SIGSTOP) keeps its connection open but says nothing: once it has been silent
 * for max_silence_ms its keys' reads go to it, and time out, instead of being answered from what
 * it served (it may be missing invalidations); once it answers again, they are cached again. */
static void silent_node_is_asked(void **state) {
    cp_fixture *f = *state;
    cp_client *w = cp_fixture_client(f, NULL);
    size_t m0 = cp_fixture_master(f, 0);
    char key[32];
    int n0 = slot_node_of(w, f, m0), top = 0;
    int ranges[8][2];
    assert_int_gt(cp_node_slots(w, n0, ranges, 8), 0);
    top = ranges[0][0];
    for (int j = 0;; j++) { /* a key of master 0 */
        snprintf(key, sizeof(key), "si:%d", j);
        if ((int)cp_keyslot(key, strlen(key)) >= top &&
            (int)cp_keyslot(key, strlen(key)) <= ranges[0][1])
            break;
    }
    redisReply *r = cp_command(w, "SET %s v", key);
    assert_non_null(r);
    cp_reply_free(r);
    cp_free(w);
    cp_cache_options co = {.max_silence_ms = 1000};
    cp_options o = CP_OPTIONS_INIT;
    o.client_cache = &co;
    o.io_timeout_ms = 1000;
    o.retry_budget_ms = CP_RETRY_NONE;
    cp_client *c = cp_fixture_client(f, &o);
    await_tracking(c);
    cp_pipeline *p = cp_pipeline_new(c);
    cp_append(p, "GET %s", key);
    assert_int_equal(cp_exec(p), 0);
    cp_pipeline_reset(p);
    cp_append(p, "GET %s", key);
    assert_int_equal(cp_exec(p), 0);
    assert_int_equal(cp_reply_cached(p, 0), 1); /* heard from just now: a hit */
    char err[512];
    assert_int_equal(cp_topo_kill(f->topo, m0, SIGSTOP, err, sizeof(err)), 0);
    cp__sleep_ms(100);
    cp_pipeline_reset(p);
    cp_append(p, "GET %s", key);
    int rc = cp_exec(p);
    int early_hit = rc == 0 && cp_reply_cached(p, 0);
    cp__sleep_ms(1000); /* silent for max_silence_ms now */
    cp_pipeline_reset(p);
    cp_append(p, "GET %s", key);
    uint64_t t0 = cp__now_ns();
    rc = cp_exec(p);
    uint64_t took = cp__now_ns() - t0;
    cp_outcome out = cp_get_outcome(p, 0);
    assert_int_equal(cp_topo_kill(f->topo, m0, SIGCONT, err, sizeof(err)), 0);
    assert_int_equal(early_hit, 1); /* within the silence bound it is still answered */
    assert_int_not_equal(rc, 0);    /* then it was asked, and timed out */
    assert_int_equal(out, CP_UNKNOWN);
    assert_int_ge(took, 900000000ull);
    cp_cache_stats st;
    cp_cache_get_stats(c, &st);
    assert_int_ge(st.node_drops, 1); /* the timed-out connection took the entry */
    cp_pipeline_reset(p);
    uint64_t end = cp__now_ns() + 10000000000ull;
    for (;;) { /* answered again, and cached again */
        cp_pipeline_reset(p);
        cp_append(p, "GET %s", key);
        if (cp_exec(p) == 0 && cp_reply_cached(p, 0))
            break;
        assert_int_lt(cp__now_ns(), end);
        cp__sleep_ms(50);
    }
    cp_pipeline_free(p);
    cp_free(c);
}

/* ---- no stale reads through the cluster's changes ----------------------------------------- */

#define NKEYS 96

/* The reader's view: when it received an invalidation of each key (a flush: of all). */
typedef struct inval_log {
    uint64_t at[NKEYS];
    uint64_t pushes;
} inval_log;

static int key_index(const char *s, size_t len) {
    if (len < 4 || memcmp(s, "st:", 3) != 0) /* st:I-J: atoi stops at the '-' */
        return -1;
    int i = atoi(s + 3);
    return i >= 0 && i < NKEYS ? i : -1;
}

static void on_push(cp_client *c, int node, const char *kind, const redisReply *frame, void *d) {
    (void)c;
    (void)node;
    inval_log *l = d;
    if (strcmp(kind, "invalidate") != 0 || frame->elements < 2)
        return;
    uint64_t now = cp__now_ns();
    l->pushes++;
    const redisReply *keys = frame->element[1];
    if (keys == NULL || keys->type != CP_REPLY_ARRAY) {
        for (int i = 0; i < NKEYS; i++)
            l->at[i] = now;
        return;
    }
    for (size_t j = 0; j < keys->elements; j++) {
        int i = key_index(keys->element[j]->str, keys->element[j]->len);
        if (i >= 0)
            l->at[i] = now;
    }
}

typedef struct stale_run {
    char name[NKEYS][32]; /* st:I-J: key I, J chosen for its slot */
    cp_client *w, *r;
    cp_pipeline *wp, *rp;
    inval_log log;
    unsigned acked[NKEYS]; /* the last version the writer had acknowledged */
    uint64_t ack_ns[NKEYS];
    int wait_replica; /* writes wait for a replica's copy (a failover loses nothing acked) */
    long writes, unknown, reads, hits, stale, stuck, windows;
    uint64_t window[4096]; /* ns from an acknowledgement to its invalidation's arrival */
} stale_run;

/* The reader's GET of key i: its version (0: none yet). A stale read is one older than the
 * acknowledged version that came from the cache after the invalidation following the
 * acknowledgement had arrived (a blocking client reads what arrived before it answers from the
 * cache), or from a server at all (the write was acknowledged before the read was sent). */
static unsigned reader_get(stale_run *s, int i, int *older) {
    cp_pipeline_reset(s->rp);
    cp_append(s->rp, "GET %s", s->name[i]);
    int rc = cp_exec(s->rp);
    if (rc != 0)
        fail_msg("reader: %s (%s)", cp_err_name(rc), cp_pipeline_errstr(s->rp));
    const redisReply *r = cp_reply(s->rp, 0);
    unsigned v = r->type == CP_REPLY_STRING ? (unsigned)strtoul(r->str, NULL, 10) : 0;
    int hit = cp_reply_cached(s->rp, 0);
    uint64_t sent, done;
    assert_int_equal(cp_timing(s->rp, 0, &sent, &done), 0);
    s->reads++;
    s->hits += hit;
    *older = v < s->acked[i];
    /* the invalidation came after the acknowledgement and before the read was answered (a hit:
     * sent_ns; the loop turn that completes it may read the invalidation just after) */
    int invalidated = s->ack_ns[i] > 0 && s->log.at[i] >= s->ack_ns[i] && s->log.at[i] < sent;
    if (*older && (!hit || invalidated)) {
        s->stale++;
        print_message("stale read: %s version %u (%s), %u acknowledged%s\n", s->name[i], v,
                      hit ? "cached" : "from a server", s->acked[i], hit ? " and invalidated" : "");
    }
    return v;
}

/* One step on key i: the reader reads it (so its connection tracks it), the writer writes the
 * next version, and the reader reads until it sees it: older versions only until the
 * invalidation arrives, and not for 5 s. */
static void step(stale_run *s, int i) {
    int older;
    reader_get(s, i, &older);
    char val[16];
    unsigned next = s->acked[i] + 1;
    snprintf(val, sizeof(val), "%u", next);
    cp_pipeline_reset(s->wp);
    cp_append(s->wp, "SET %s %s", s->name[i], val);
    if (s->wait_replica)
        cp_append(s->wp, "WAIT 1 2000");
    cp_exec(s->wp);
    s->writes++;
    const redisReply *ok = cp_reply(s->wp, 0);
    int acked = cp_get_outcome(s->wp, 0) == CP_DONE && ok->type == CP_REPLY_STATUS &&
                (!s->wait_replica ||
                 (cp_get_outcome(s->wp, 1) == CP_DONE && cp_reply(s->wp, 1)->integer >= 1));
    if (!acked) { /* may or may not have run (a failover under way): not checked this time */
        s->unknown++;
        return;
    }
    s->acked[i] = next;
    s->ack_ns[i] = cp__now_ns();
    for (;;) {
        reader_get(s, i, &older);
        if (!older)
            break;
        if (cp__now_ns() - s->ack_ns[i] > 5000000000ull) {
            s->stuck++;
            print_message("stuck: st:%d still older than %u after 5 s\n", i, s->acked[i]);
            break;
        }
    }
    if (s->log.at[i] >= s->ack_ns[i] && s->windows < 4096)
        s->window[s->windows++] = s->log.at[i] - s->ack_ns[i];
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void report(stale_run *s, const char *what) {
    qsort(s->window, (size_t)s->windows, sizeof(s->window[0]), cmp_u64);
    double p50 = s->windows ? (double)s->window[s->windows / 2] / 1e3 : 0;
    double p99 = s->windows ? (double)s->window[s->windows * 99 / 100] / 1e3 : 0;
    double mx = s->windows ? (double)s->window[s->windows - 1] / 1e3 : 0;
    print_message("%s: %ld writes (%ld unacknowledged), %ld reads, %ld hits, %ld stale, %ld stuck;"
                  " write acknowledged -> invalidation received: %ld measured, median %.0f us, "
                  "p99 %.0f us, max %.0f us\n",
                  what, s->writes, s->unknown, s->reads, s->hits, s->stale, s->stuck, s->windows,
                  p50, p99, mx);
}

/* Names key i st:I-J with J the first whose slot is in [lo, hi]. */
static void name_key(stale_run *s, int i, int lo, int hi) {
    for (int j = 0; j < 1000000; j++) {
        snprintf(s->name[i], sizeof(s->name[i]), "st:%d-%d", i, j);
        int slot = (int)cp_keyslot(s->name[i], strlen(s->name[i]));
        if (slot >= lo && slot <= hi)
            return;
    }
    fail_msg("no key for slots %d..%d", lo, hi);
}

/* The highest slot node n serves. */
static int top_slot(cp_client *c, int n) {
    int ranges[64][2], k = cp_node_slots(c, n, ranges, 64), top = -1;
    for (int j = 0; j < k && j < 64; j++)
        top = ranges[j][1] > top ? ranges[j][1] : top;
    assert_int_ge(top, 0);
    return top;
}

/* A writer and a reader. A third of the keys is in the top MOVE slots of master 0, a third in
 * the top 2 * MOVE of master 1 (what the slot mover's rounds move back and forth), the rest
 * anywhere. */
#define MOVE 256
static stale_run *stale_start(cp_fixture *f, int wait_replica) {
    stale_run *s = calloc(1, sizeof(*s));
    assert_non_null(s);
    cp_options o = CP_OPTIONS_INIT;
    o.retry_budget_ms = 30000;
    s->w = cp_fixture_client(f, &o);
    s->r = cached_client(f, 0, 30000);
    int t0 = top_slot(s->w, slot_node_of(s->w, f, cp_fixture_master(f, 0)));
    int t1 = top_slot(s->w, slot_node_of(s->w, f, cp_fixture_master(f, 1)));
    for (int i = 0; i < NKEYS; i++) {
        if (i % 3 == 0)
            name_key(s, i, t0 - MOVE + 1, t0);
        else if (i % 3 == 1)
            name_key(s, i, t1 - 2 * MOVE + 1, t1);
        else
            name_key(s, i, 0, CP_SLOTS - 1);
    }
    cp_set_push_callback(s->r, on_push, &s->log);
    s->wp = cp_pipeline_new(s->w);
    s->rp = cp_pipeline_new(s->r);
    s->wait_replica = wait_replica;
    return s;
}

static void stale_end(stale_run *s, const char *what) {
    report(s, what);
    assert_int_equal(s->stale, 0);
    assert_int_equal(s->stuck, 0);
    assert_int_gt(s->hits, s->reads / 5);     /* the cache answered */
    assert_int_gt(s->windows, s->writes / 2); /* most writes' invalidations were seen */
    cp_pipeline_free(s->wp);
    cp_pipeline_free(s->rp);
    cp_free(s->w);
    cp_free(s->r);
    free(s);
}

static void no_stale_reads_through_migration(void **state) {
    cp_fixture *f = *state;
    stale_run *s = stale_start(f, 0);
    slot_mover m = {0};
    slot_mover_start(&m, f, cp_fixture_master(f, 0), cp_fixture_master(f, 1), MOVE, 4);
    int i = 0; /* four rounds, and every key stepped four times while slots move */
    while (slot_mover_rounds(&m) >= 0 && (slot_mover_rounds(&m) < 4 || i < 4 * NKEYS))
        step(s, i++ % NKEYS);
    print_message("%d slot-mover rounds of %d slots during %d steps\n", slot_mover_rounds(&m), MOVE,
                  i);
    if (slot_mover_stop(&m) < 0)
        fail_msg("migration: %s", m.err);
    stale_end(s, "through migration");
}

static void no_stale_reads_through_failover(void **state) {
    cp_fixture *f = *state;
    stale_run *s = stale_start(f, 1);
    for (int i = 0; i < 2 * NKEYS; i++)
        step(s, i % NKEYS);
    char err[512];
    assert_int_equal(cp_topo_kill(f->topo, cp_fixture_master(f, 2), SIGKILL, err, sizeof(err)), 0);
    s->wait_replica = 0; /* the promoted replica has none: nothing more is lost to a failover */
    for (int i = 0; i < 4 * NKEYS; i++)
        step(s, i % NKEYS);
    cp_cache_stats st;
    cp_cache_get_stats(s->r, &st);
    print_message("reader cache: %llu node drops, %llu entries dropped, %llu invalidations\n",
                  (unsigned long long)st.node_drops, (unsigned long long)st.dropped,
                  (unsigned long long)st.invalidations);
    assert_int_ge(st.node_drops, 1); /* the killed master's entries went with its connection */
    stale_end(s, "through a kill -9 failover");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(hits_and_what_bypasses, cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(async_hit, cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(lru_bound_and_refusals, cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(silent_node_is_asked, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(lost_invalidations_conn, cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(refused_tracking_is_an_error, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(no_stale_reads_through_migration, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(no_stale_reads_through_failover,
                                        cp_fixture_setup_cluster3x1, cp_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, cp_fixture_group_teardown);
}
