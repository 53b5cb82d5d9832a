/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe verify` and `migrate --verify` on real servers. Two standalone redis-servers hold
 * every type (strings, one of 2.5 MB; lists, sets, sorted sets, hashes of a few elements and of
 * 2,500, so the compare reads them in pieces; a stream of 2,500 entries with consumer groups and
 * pending entries; keys with and without expiries). `migrate --until-synced --verify` moves them
 * into a 3-master cluster and finds 0 differences; `verify --json` then counts every key by its
 * type. Then the target is changed, one key of each kind: a string's value, a list element far
 * into the list, a hash field's value, a set member swapped (same size), a sorted set's score, a
 * stream group's last-delivered-id, an expiry, a key's type, a key deleted, the value of a key
 * whose name is not UTF-8 (listed escaped in JSON); and a key added that no source has. verify
 * names each changed key with its reason (value, ttl, type, missing), counts the added key as
 * only on the target (not a difference), caps what it prints with --max-print and exits 1.
 *
 * A cluster as --from (one of its nodes): every master is a source. A 3-master cluster is moved
 * into another one in follow mode while writes go on at it (INCR, SET, DEL through a cluster
 * client), stopped by SIGTERM once each master's last offset is acknowledged; verify from the same
 * node then finds every key (by type) and 0 differences, and so does a second run with
 * --until-synced --verify.
 *
 * Also: a source or a target that cannot be reached, a wrong password, and a --from mixing a
 * cluster node with a standalone server are errors naming them (exit 1); so is a migrate
 * --verify stopped by SIGTERM (not verified); bad command lines exit 2.
 */
#include <netinet/in.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "asserts.h"

#include "clirun.h"
#include "fixture.h"
#include "replwait.h"
#include "testutil.h"
#include "util/clock.h"

#define BIG 2500                   /* elements of the large collections: 3 pieces of 1,000 */
#define BIG_STRING (2500u * 1024u) /* bytes: 3 pieces of 1 MiB */

/* Replies of n pipelined commands, each checked not to be an error. */
static void drain(redisContext *c, int n) {
    for (int i = 0; i < n; i++) {
        redisReply *r;
        assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
        if (r->type == REDIS_REPLY_ERROR)
            fail_msg("pipelined command %d: %s", i, r->str);
        freeReplyObject(r);
    }
}

/* Keys per type that load_source writes (the counts verify must report, per source). */
enum { STRINGS = 5, LISTS = 2, SETS = 3, ZSETS = 2, HASHES = 2, STREAMS = 1 };

static void load_source(redisContext *c, const char *p) {
    cp_test_ok(c, "SET %s:int 12345", p);
    cp_test_ok(c, "SET %s:str hello", p);
    cp_test_ok(c, "SET %s:ttl value PX 3600000", p);
    cp_test_ok(c,
               "SET %s:\xff\x01"
               "bin v",
               p); /* a name that is not UTF-8 */
    char *big = malloc(BIG_STRING);
    assert_non_null(big);
    for (size_t i = 0; i < BIG_STRING; i++)
        big[i] = (char)('a' + (i * 7919) % 26);
    cp_test_ok(c, "SET %s:bigstr %b", p, big, (size_t)BIG_STRING);
    free(big);
    cp_test_ok(c, "RPUSH %s:list a b c 1 2", p);
    cp_test_ok(c, "HSET %s:hash f1 v1 f2 v2", p);
    cp_test_ok(c, "SADD %s:intset 1 2 3", p);
    cp_test_ok(c, "SADD %s:set a b c", p);
    cp_test_ok(c, "ZADD %s:zset 1 a 2.5 b", p);
    int n = 0;
    for (int i = 0; i < BIG; i++, n += 4) {
        redisAppendCommand(c, "RPUSH %s:biglist e%d", p, i);
        redisAppendCommand(c, "HSET %s:bighash f%d v%d", p, i, i);
        redisAppendCommand(c, "SADD %s:bigset m%d", p, i);
        redisAppendCommand(c, "ZADD %s:bigzset %d.25 m%d", p, i, i);
    }
    for (int i = 0; i < BIG; i++, n++)
        redisAppendCommand(c, "XADD %s:stream * f %d", p, i);
    drain(c, n);
    cp_test_ok(c, "PEXPIRE %s:bighash 7200000", p);
    cp_test_ok(c, "XGROUP CREATE %s:stream g 0", p);
    cp_test_ok(c, "XGROUP CREATE %s:stream h $", p);
    cp_test_ok(c, "XREADGROUP GROUP g alice COUNT 3 STREAMS %s:stream >", p);
}

static int source_port(cp_fixture *f, int k) {
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++) {
        const cp_proc *pr = cp_topo_proc(f->topo, i);
        if (pr->role == CP_ROLE_SHARD && k-- == 0)
            return pr->port;
    }
    fail_msg("no shard %d", k);
    return -1;
}

/* The last line of out as JSON (the result), the caller's to json_decref. */
static json_t *last_json(const char *out) {
    const char *last = out, *nl;
    while ((nl = strchr(last, '\n')) != NULL && nl[1] != '\0')
        last = nl + 1;
    json_error_t jerr;
    json_t *res = json_loads(last, 0, &jerr);
    if (res == NULL)
        fail_msg("not JSON: %s (%s)", last, jerr.text);
    assert_string_equal(json_string_value(json_object_get(res, "schema")), "clusterpipe.verify/1");
    return res;
}

static long long jint(json_t *o, const char *a, const char *b) {
    json_t *v = json_object_get(o, a);
    if (b != NULL)
        v = json_object_get(v, b);
    if (!json_is_integer(v))
        fail_msg("%s%s%s: not an integer", a, b ? "." : "", b ? b : "");
    return json_integer_value(v);
}

/* The reason the JSON result lists for key, or NULL. */
static const char *listed_reason(json_t *res, const char *key) {
    json_t *listed = json_object_get(res, "listed");
    size_t i;
    json_t *d;
    json_array_foreach(listed, i, d) {
        if (strcmp(json_string_value(json_object_get(d, "key")), key) == 0)
            return json_string_value(json_object_get(d, "reason"));
    }
    return NULL;
}

static void a_migration_verifies_then_each_change_is_named(void **state) {
    (void)state;
    cp_fixture *sources = cp_fixture_twemproxy(2, 1);
    assert_non_null(sources);
    cp_fixture *target = cp_fixture_cluster(3, 0);
    assert_non_null(target);
    redisContext *s[2];
    for (int k = 0; k < 2; k++) {
        s[k] = cp_fixture_conn(sources, source_port(sources, k));
        assert_non_null(s[k]);
        cp_test_ok(s[k], "CONFIG SET repl-diskless-sync-delay 0");
        load_source(s[k], k == 0 ? "s0" : "s1");
    }
    char from[128];
    snprintf(from, sizeof from, "127.0.0.1:%d,127.0.0.1:%d", source_port(sources, 0),
             source_port(sources, 1));
    cp_clirun run;
    cp_clirun_init(&run);
    const char *migrate[] = {"migrate",         "--from",         from,       "--to",
                             target->endpoints, "--until-synced", "--verify", NULL};
    cp_clirun_expect(&run, migrate, 0);
    assert_contains(run.out, "synced: every source's lag is 0");
    assert_contains(run.out, "verify: 0 differences (missing 0, type 0, value 0, ttl 0)");
    assert_contains(run.out, "every key of the sources is on the target, the same.");
    assert_contains(run.out, "the target holds 0 keys that no source has");

    const char *json[] = {"verify", "--from", from, "--to", target->endpoints, "--json", NULL};
    cp_clirun_expect(&run, json, 0);
    json_t *res = last_json(run.out);
    assert_true(json_is_true(json_object_get(res, "ok")));
    assert_int_equal(jint(res, "differences", NULL), 0);
    assert_int_equal(jint(res, "keys_checked", NULL),
                     2 * (STRINGS + LISTS + SETS + ZSETS + HASHES + STREAMS));
    assert_int_equal(jint(res, "keys_total", NULL), jint(res, "keys_checked", NULL));
    assert_int_equal(jint(res, "types", "string"), 2 * STRINGS);
    assert_int_equal(jint(res, "types", "list"), 2 * LISTS);
    assert_int_equal(jint(res, "types", "set"), 2 * SETS);
    assert_int_equal(jint(res, "types", "zset"), 2 * ZSETS);
    assert_int_equal(jint(res, "types", "hash"), 2 * HASHES);
    assert_int_equal(jint(res, "types", "stream"), 2 * STREAMS);
    assert_int_equal(jint(res, "reasons", "same"), jint(res, "keys_checked", NULL));
    assert_int_equal(jint(res, "only_in_target", NULL), 0);
    json_decref(res);

    /* One change of each kind on the target. */
    cp_client *c = cp_fixture_client(target, NULL);
    static const char *const changes[] = {
        "SETRANGE s0:bigstr 2000000 X",
        "LSET s0:biglist 2345 changed",
        "HSET s0:bighash f1234 other",
        "SREM s0:bigset m777",
        "SADD s0:bigset intruder",
        "ZADD s0:bigzset 1.5 m2001",
        "XGROUP SETID s0:stream g 0",
        "PEXPIRE s1:str 99999999",
        "DEL s1:list",
        "SADD s1:list x",
        "DEL s1:hash",
        "SET only:on:the:target 1",
        "SET s1:int 12346",
        "SET s1:\xff\x01"
        "bin w",
    };
    for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
        redisReply *r = cp_command(c, changes[i]);
        if (r == NULL || r->type == REDIS_REPLY_ERROR)
            fail_msg("%s: %s", changes[i], r ? r->str : c->errstr);
        cp_reply_free(r);
    }
    cp_free(c);
    static const struct {
        const char *key, *reason;
    } want[] = {
        {"s0:bigstr", "value"}, {"s0:biglist", "value"},       {"s0:bighash", "value"},
        {"s0:bigset", "value"}, {"s0:bigzset", "value"},       {"s0:stream", "value"},
        {"s1:str", "ttl"},      {"s1:list", "type"},           {"s1:hash", "missing"},
        {"s1:int", "value"},    {"s1:\\xff\\x01bin", "value"}, /* escaped: not UTF-8 */
    };
    size_t nwant = sizeof want / sizeof want[0];
    cp_clirun_expect(&run, json, 1);
    res = last_json(run.out);
    assert_true(json_is_true(json_object_get(res, "ok"))); /* the run went through */
    assert_int_equal(jint(res, "differences", NULL), nwant);
    assert_int_equal(jint(res, "reasons", "value"), 8);
    assert_int_equal(jint(res, "reasons", "ttl"), 1);
    assert_int_equal(jint(res, "reasons", "type"), 1);
    assert_int_equal(jint(res, "reasons", "missing"), 1);
    assert_int_equal(jint(res, "not_listed", NULL), 0);
    assert_int_equal(jint(res, "only_in_target", NULL), 1);
    for (size_t i = 0; i < nwant; i++) {
        const char *got = listed_reason(res, want[i].key);
        if (got == NULL || strcmp(got, want[i].reason) != 0)
            fail_msg("%s: reason %s, want %s", want[i].key, got ? got : "(not listed)",
                     want[i].reason);
    }
    json_decref(res);

    /* Text: each named with what differs; --max-print caps the lines, counting the rest. */
    const char *text[] = {"verify", "--from", from, "--to", target->endpoints, "-q", NULL};
    cp_clirun_expect(&run, text, 1);
    static const char *const says[] = {
        "\"s0:bigstr\" (string, source 127.0.0.1:",
        ": value: byte 2000000 differs (string)",
        "\"s0:biglist\" (list, source ",
        ": value: element 2345 differs (list)",
        ": value: field \"f1234\" has another value (hash)",
        ": value: member \"m777\" is not on the target (set)",
        ": value: element 2 differs (zset)", /* m2001, scored 1.5, is at rank 2 now */
        ": value: consumer group 0: its last-delivered-id differs (stream)",
        "\"s1:str\" (string, source ",
        ": ttl: expires in none at the source, ",
        "\"s1:list\" (list, source ",
        ": type: list at the source, set on the target",
        "\"s1:hash\" (hash, source ",
        ": missing: not on the target",
        "verify: 11 differences (missing 1, type 1, value 8, ttl 1)",
        "difference: \"s1:\\xff\\x01bin\" (string, source ",
        "the target holds 1 keys that no source has (not differences)",
    };
    for (size_t i = 0; i < sizeof says / sizeof says[0]; i++)
        assert_contains(run.out, says[i]);
    assert_not_contains(run.out, "only:on:the:target");
    const char *capped[] = {"verify",      "--from", from, "--to", target->endpoints,
                            "--max-print", "3",      "-q", NULL};
    cp_clirun_expect(&run, capped, 1);
    assert_contains(run.out, "... and 8 more differences, not printed (--max-print 3)");
    int lines = 0;
    for (const char *p = strstr(run.out, "difference: "); p; p = strstr(p + 1, "difference: "))
        lines++;
    assert_int_equal(lines, 3);
    cp_clirun_free(&run);
    assert_int_equal(cp_fixture_stop(target), 0);
    assert_int_equal(cp_fixture_stop(sources), 0);
}

/* Runs a command through the cluster client, failing the test on an error. */
static void cluster_ok(cp_client *c, const char *fmt, int i) {
    redisReply *r = cp_command(c, fmt, i, i);
    if (r == NULL || r->type == REDIS_REPLY_ERROR)
        fail_msg("%s (%d): %s", fmt, i, r ? r->str : c->errstr);
    cp_reply_free(r);
}

static void a_cluster_moves_into_another_cluster(void **state) {
    (void)state;
    enum { STRS = 3000, EACH = 30, COUNTERS = 100, INCRS = 5 };
    cp_fixture *source = cp_fixture_cluster(3, 0);
    assert_non_null(source);
    cp_fixture *target = cp_fixture_cluster(3, 0);
    assert_non_null(target);
    redisContext *m[3];
    for (int k = 0; k < 3; k++) {
        m[k] =
            cp_fixture_conn(source, cp_topo_proc(source->topo, cp_fixture_master(source, k))->port);
        assert_non_null(m[k]);
        cp_test_ok(m[k], "CONFIG SET repl-diskless-sync-delay 0");
    }
    cp_client *c = cp_fixture_client(source, NULL);
    for (int i = 0; i < STRS; i++)
        cluster_ok(c, "SET k:%d v%d", i);
    for (int i = 0; i < EACH; i++) {
        cluster_ok(c, "RPUSH l:%d a b %d", i);
        cluster_ok(c, "SADD s:%d a b %d", i);
        cluster_ok(c, "ZADD z:%d 1 a %d b", i);
        cluster_ok(c, "HSET h:%d f v%d", i);
        cluster_ok(c, "XADD x:%d * f %d", i);
    }
    char from[64];
    snprintf(from, sizeof from, "127.0.0.1:%d",
             cp_topo_proc(source->topo, cp_fixture_master(source, 1))->port);
    cp_clirun run;
    cp_clirun_init(&run);
    const char *follow[] = {"migrate", "--from", from, "--to", target->endpoints, NULL};
    pid_t pid = cp_clirun_start(&run, follow);
    for (int k = 0; k < 3; k++)
        cp_test_wait_forked(m[k]);
    for (int r = 0; r < INCRS; r++)
        for (int i = 0; i < COUNTERS; i++)
            cluster_ok(c, "INCR ctr:%d", i);
    for (int i = 0; i < 500; i++)
        cluster_ok(c, "SET k:%d new%d", i);
    for (int i = 500; i < 600; i++)
        cluster_ok(c, "DEL k:%d", i);
    for (int i = 0; i < EACH; i++)
        cluster_ok(c, "PEXPIRE h:%d 3600000", i);
    for (int k = 0; k < 3; k++)
        cp_test_wait_acked(m[k]);
    assert_int_equal(kill(pid, SIGTERM), 0);
    int rc = cp_clirun_finish(&run, pid, 120);
    if (rc != 0)
        fail_msg("migrate exited %d\nstdout:\n%s\nstderr:\n%s", rc, run.out, run.err);
    assert_contains(run.out, "the source is a cluster: its 3 masters are the sources");
    for (int k = 0; k < 3; k++) {
        char name[64];
        snprintf(name, sizeof name, "source 127.0.0.1:%d: ",
                 cp_topo_proc(source->topo, cp_fixture_master(source, k))->port);
        assert_contains(run.out, name);
    }
    cp_free(c);

    const char *json[] = {"verify", "--from", from, "--to", target->endpoints, "--json", NULL};
    cp_clirun_expect(&run, json, 0);
    json_t *res = last_json(run.out);
    assert_int_equal(jint(res, "differences", NULL), 0);
    assert_int_equal(jint(res, "keys_checked", NULL), STRS - 100 + COUNTERS + 5 * EACH);
    assert_int_equal(jint(res, "types", "string"), STRS - 100 + COUNTERS);
    assert_int_equal(jint(res, "types", "stream"), EACH);
    assert_int_equal(jint(res, "types", "hash"), EACH);
    assert_int_equal(jint(res, "only_in_target", NULL), 0);
    json_decref(res);
    cp_client *t = cp_fixture_client(target, NULL);
    redisReply *r = cp_command(t, "GET ctr:7");
    assert_non_null(r);
    assert_string_equal(r->str, "5");
    cp_reply_free(r);
    cp_free(t);

    const char *again[] = {"migrate",        "--from",   from, "--to", target->endpoints,
                           "--until-synced", "--verify", "-q", NULL};
    cp_clirun_expect(&run, again, 0);
    assert_contains(run.out, "every key of the sources is on the target, the same.");
    cp_clirun_free(&run);
    assert_int_equal(cp_fixture_stop(target), 0);
    assert_int_equal(cp_fixture_stop(source), 0);
}

/* A loopback port nothing listens on (bound, then closed). */
static int closed_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void unreachable_source_or_target(void **state) {
    (void)state;
    cp_fixture *sources = cp_fixture_twemproxy(1, 1);
    assert_non_null(sources);
    cp_fixture *target = cp_fixture_cluster(3, 0);
    assert_non_null(target);
    char from[64], nowhere[64];
    snprintf(from, sizeof from, "127.0.0.1:%d", source_port(sources, 0));
    snprintf(nowhere, sizeof nowhere, "127.0.0.1:%d", closed_port());
    cp_clirun run;
    cp_clirun_init(&run);
    const char *no_target[] = {"verify", "--from", from, "--to", nowhere, NULL};
    cp_clirun_expect(&run, no_target, 1);
    assert_contains(run.err, "clusterpipe verify: target ");
    assert_contains(run.err, nowhere);
    const char *no_source[] = {"verify", "--from", nowhere, "--to", target->endpoints, NULL};
    cp_clirun_expect(&run, no_source, 1);
    assert_contains(run.err, "clusterpipe verify: source ");
    assert_contains(run.err, nowhere);
    assert_contains(run.err, "cannot connect");
    /* A wrong password at the source. */
    const char *bad_pw[] = {"verify",          "--from",          from,    "--to",
                            target->endpoints, "--from-password", "wrong", NULL};
    cp_clirun_expect(&run, bad_pw, 1);
    assert_contains(run.err, "AUTH");
    /* A cluster's node and a standalone server in one --from. */
    char mixed[128];
    snprintf(mixed, sizeof mixed, "%s,127.0.0.1:%d", from,
             cp_topo_proc(target->topo, cp_fixture_master(target, 0))->port);
    const char *mix[] = {"verify", "--from", mixed, "--to", target->endpoints, NULL};
    cp_clirun_expect(&run, mix, 1);
    assert_contains(run.err, "is a cluster node, ");
    assert_contains(run.err, from);
    assert_contains(run.err, "not both");

    /* migrate --until-synced --verify stopped by SIGTERM while its snapshot is written (the
     * target's masters take no writes for 3 s): it stops after the batch in flight, before it
     * synced, and the verify does not start: exit 1, no cutover. */
    redisContext *src = cp_fixture_conn(sources, source_port(sources, 0));
    assert_non_null(src);
    cp_test_ok(src, "CONFIG SET repl-diskless-sync-delay 0");
    cp_test_ok(src, "SET k v");
    uint64_t paused_at = cp__now_ms();
    for (int k = 0; k < 3; k++) {
        int port = cp_topo_proc(target->topo, cp_fixture_master(target, k))->port;
        cp_test_ok(cp_fixture_conn(target, port), "CLIENT PAUSE 3000 WRITE");
    }
    const char *stopped[] = {"migrate",         "--from",         from,       "--to",
                             target->endpoints, "--until-synced", "--verify", "-q",
                             "--timeout",       "10000",          NULL};
    pid_t pid = cp_clirun_start(&run, stopped);
    cp_test_wait_forked(src);
    assert_int_equal(kill(pid, SIGTERM), 0);
    /* The premise: the signal came while the target could not have taken the snapshot. */
    assert_int_lt(cp__now_ms() - paused_at, 3000);
    int rc = cp_clirun_finish(&run, pid, 60);
    if (rc != 1)
        fail_msg("migrate exited %d\nstdout:\n%s\nstderr:\n%s", rc, run.out, run.err);
    assert_contains(run.err, "stopped before every source was synced: do not cut over");
    assert_not_contains(run.out, "verify:");
    cp_clirun_free(&run);
    assert_int_equal(cp_fixture_stop(target), 0);
    assert_int_equal(cp_fixture_stop(sources), 0);
}

/* Bad command lines: exit 2, the flag named, nothing started. */
static void usage_errors(void **state) {
    (void)state;
    static const struct {
        const char *args[10];
        const char *says;
    } cases[] = {
        {{"verify", "--from", "127.0.0.1:1", NULL}, "--to HOST:PORT[,...] is required"},
        {{"verify", "--to", "127.0.0.1:1", NULL}, "--from"},
        {{"verify", "--from", "x", "--to", "127.0.0.1:1", NULL}, "--from: 'x' is not HOST:PORT"},
        {{"verify", "--from", "/nonexistent/nutcracker.yml", "--to", "127.0.0.1:1", NULL},
         "cannot read it"},
        {{"verify", "--from", "127.0.0.1:1", "--to", "127.0.0.1:1", "--ttl-tolerance", "-1", NULL},
         "--ttl-tolerance"},
        {{"verify", "--from", "127.0.0.1:1", "--to", "127.0.0.1:1", "--max-print", "x", NULL},
         "--max-print"},
        {{"verify", "--from", "127.0.0.1:1", "--to", "127.0.0.1:1", "extra", NULL}, "extra"},
        {{"migrate", "--from", "127.0.0.1:1", "--to", "127.0.0.1:1", "--verify", NULL},
         "--verify needs --until-synced"},
    };
    cp_clirun run;
    cp_clirun_init(&run);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cp_clirun_expect(&run, cases[i].args, 2);
        assert_contains(run.err, cases[i].says);
    }
    const char *help[] = {"verify", "--help", NULL};
    cp_clirun_expect(&run, help, 0);
    assert_contains(run.out, "--ttl-tolerance MS");
    cp_clirun_free(&run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(usage_errors),
        cmocka_unit_test(unreachable_source_or_target),
        cmocka_unit_test(a_migration_verifies_then_each_change_is_named),
        cmocka_unit_test(a_cluster_moves_into_another_cluster),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
