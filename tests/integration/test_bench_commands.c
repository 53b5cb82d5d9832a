/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `bench --command` through the binary, against a real 3-master cluster and a real twemproxy
 * (ephemeral fixtures, stopped by PID in the teardown): HSET/HGET, LPUSH/LRANGE,
 * ZADD/ZRANGEBYSCORE, INCR and EVALSHA templates with weights, each command's count in the JSON
 * equal to what the servers' INFO commandstats counted (summed over the servers, reset before
 * the run), each command's share of the requests as its weight says (within one request per
 * client: the schedule's bound), the reads and counters verified and the writes only counted, no
 * redirect (the __tag__ keys are routed by __key__'s slot), a .hgrm per command that parses and
 * holds the JSON's percentiles; every placeholder's bytes as the servers store them; a corrupted
 * hash field, a list element of another key, a corrupted value read by a GET template and a
 * counter something else decrements are caught (exit 1); bad templates and weights exit 2 with the
 * reason. Single-threaded test code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "bench/keyspace.h"
#include "clirun.h"
#include "clusterpipe/clusterpipe.h"
#include "fixture.h"
#include "hgrm.h"
#include "jsoncheck.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCRIPT "return redis.call('SET', KEYS[1], ARGV[1])"

/* ---- the servers ------------------------------------------------------------------------------
 */

/* The ports of the servers that hold the data: the cluster's masters or twemproxy's shards. */
static int data_servers(const cp_fixture *f, int *ports, int max) {
    int n = 0;
    for (size_t i = 0; i < cp_topo_nprocs(f->topo) && n < max; i++) {
        const cp_proc *p = cp_topo_proc(f->topo, i);
        if (p->role == CP_ROLE_MASTER || p->role == CP_ROLE_SHARD)
            ports[n++] = p->port;
    }
    assert_int_gt(n, 0);
    return n;
}

/* Runs a command on every data server; returns the last reply's string (SCRIPT LOAD's sha) into
 * out when given. */
static void on_every_server(cp_fixture *f, const char *cmd, const char *arg, char *out,
                            size_t cap) {
    int ports[16];
    int n = data_servers(f, ports, 16);
    for (int i = 0; i < n; i++) {
        redisContext *c = cp_fixture_conn(f, ports[i]);
        assert_non_null(c);
        redisReply *r = arg ? redisCommand(c, cmd, arg) : redisCommand(c, cmd);
        assert_non_null(r);
        if (r->type == REDIS_REPLY_ERROR)
            fail_msg("%s on port %d: %s", cmd, ports[i], r->str);
        if (out != NULL && r->type == REDIS_REPLY_STRING)
            snprintf(out, cap, "%s", r->str);
        freeReplyObject(r);
    }
}

/* INFO commandstats' calls of `name` (lower case), summed over the data servers. */
static long long server_calls(cp_fixture *f, const char *name) {
    int ports[16];
    int n = data_servers(f, ports, 16);
    char tag[64];
    snprintf(tag, sizeof(tag), "cmdstat_%s:calls=", name);
    long long sum = 0;
    for (int i = 0; i < n; i++) {
        redisReply *r = redisCommand(cp_fixture_conn(f, ports[i]), "INFO commandstats");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        const char *p = strstr(r->str, tag);
        if (p != NULL)
            sum += strtoll(p + strlen(tag), NULL, 10);
        freeReplyObject(r);
    }
    return sum;
}

/* ---- one command of a run's JSON ------------------------------------------------------------ */

static const json_t *command_of(const json_t *j, size_t k) {
    const json_t *c = json_array_get(json_object_get(j, "commands"), k);
    if (c == NULL)
        fail_msg("the JSON has no commands[%zu]", k);
    return c;
}

static double checked(const json_t *c) {
    return cp_json_num(json_object_get(c, "verify"), "checked");
}

static double mismatches(const json_t *c) {
    return cp_json_num(json_object_get(c, "verify"), "mismatches");
}

/* ---- the workload on both architectures ----------------------------------------------------- */

typedef struct wl_cmd {
    const char *text, *stat; /* the template; its commandstats name */
    int weight, verified;
} wl_cmd;

#define NCMD 8
#define CLIENTS 4
#define REQUESTS 13000

/* Every workload of the issue in one run: counts, weights, checks, routing, .hgrm files; under
 * `protocol` (--protocol: RESP3's maps, sets, doubles and score pairs checked as RESP2's). */
static void run_workloads(cp_fixture *f, int cluster, const char *protocol) {
    char sha[64] = "", evalsha[128];
    on_every_server(f, "SCRIPT LOAD %s", SCRIPT, sha, sizeof(sha));
    assert_int_equal(strlen(sha), 40);
    snprintf(evalsha, sizeof(evalsha), "EVALSHA %s 1 __tag__:e __data__", sha);
    const wl_cmd cmds[NCMD] = {
        {"HSET __tag__:h f __data__", "hset", 3, 0},
        {"HGET __tag__:h f", "hget", 3, 1},
        {"LPUSH __tag__:l __data__", "lpush", 1, 0},
        {"LRANGE __tag__:l 0 3", "lrange", 1, 1},
        {"ZADD __tag__:z 1 __data__", "zadd", 1, 0},
        {"ZRANGEBYSCORE __tag__:z -inf +inf WITHSCORES", "zrangebyscore", 1, 1},
        {"INCR __tag__:n", "incr", 2, 1},
        {evalsha, "evalsha", 1, 0},
    };
    on_every_server(f, "CONFIG RESETSTAT", NULL, NULL, 0);
    cp_clirun run;
    cp_clirun_init(&run);
    char jpath[4096], hpath[4096];
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "w.json"));
    snprintf(hpath, sizeof(hpath), "%s", cp_clirun_path(&run, "w.hgrm"));
    char requests[16], clients[16];
    snprintf(requests, sizeof(requests), "%d", REQUESTS);
    snprintf(clients, sizeof(clients), "%d", CLIENTS);
    const char *args[64] = {"bench",     "--dir",  f->dir,       "--keys",     "300",
                            "--clients", clients,  "--pipeline", "4",          "--requests",
                            requests,    "--json", jpath,        "--hdr-file", hpath};
    int a = 15, wsum = 0;
    args[a++] = "--protocol";
    args[a++] = protocol;
    char ratio[64] = "";
    for (int k = 0; k < NCMD; k++) {
        args[a++] = "--command";
        args[a++] = cmds[k].text;
        snprintf(ratio + strlen(ratio), sizeof(ratio) - strlen(ratio), "%s%d", k ? "," : "",
                 cmds[k].weight);
        wsum += cmds[k].weight;
    }
    args[a++] = "--command-ratio";
    args[a++] = ratio;
    args[a] = NULL;
    cp_clirun_expect(&run, args, 0);
    assert_non_null(strstr(run.out, "commands     verified: HGET (2), LRANGE (4), "
                                    "ZRANGEBYSCORE (6), INCR (7); counted only: HSET (1), "
                                    "LPUSH (3), ZADD (5), EVALSHA (8)"));
    json_t *j = cp_json_load(jpath);
    assert_string_equal(json_string_value(json_object_get(j, "topology")),
                        cluster ? "cluster" : "twemproxy");
    assert_double_eq(cp_json_num(j, "failed_ops"), 0);
    assert_double_eq(cp_json_num(j, "unknown_ops"), 0);
    assert_double_eq(cp_json_num(json_object_get(j, "verify"), "mismatches"), 0);
    assert_double_eq(cp_json_num(j, "ops"), REQUESTS);
    const json_t *wl = json_object_get(j, "workload");
    assert_string_equal(json_string_value(json_object_get(wl, "command_ratio")), ratio);
    assert_true(json_is_null(json_object_get(wl, "ratio")));
    /* keyed by __key__'s slot: every command went to the right master the first time */
    assert_double_eq(cp_json_num(json_object_get(j, "redirects"), "moved"), 0);
    double ops_sum = 0;
    for (int k = 0; k < NCMD; k++) {
        const json_t *c = command_of(j, (size_t)k);
        double ops = cp_json_num(c, "ops");
        ops_sum += ops;
        assert_string_equal(json_string_value(json_object_get(c, "command")), cmds[k].text);
        /* the servers ran exactly what the JSON counts */
        long long calls = server_calls(f, cmds[k].stat);
        if ((long long)ops != calls)
            fail_msg("%s: the JSON counts %.0f, the servers %lld", cmds[k].text, ops, calls);
        /* its share: within one request per client of the weight's */
        double want = (double)REQUESTS * cmds[k].weight / wsum;
        if (fabs(ops - want) >= CLIENTS)
            fail_msg("%s: %.0f ops, its weight %d of %d makes %.1f", cmds[k].text, ops,
                     cmds[k].weight, wsum, want);
        assert_double_eq(cp_json_num(c, "weight"), cmds[k].weight);
        assert_int_equal(json_is_true(json_object_get(c, "verified")), cmds[k].verified);
        assert_double_eq(cp_json_num(c, "failed_ops"), 0);
        assert_double_eq(mismatches(c), 0);
        if (cmds[k].verified)
            assert_double_gt(checked(c), 0);
        else
            assert_double_eq(checked(c), 0);
        /* the .hgrm of each command holds its own latencies */
        char one[4200];
        snprintf(one, sizeof(one), "%.*s-%d-%s.hgrm", (int)(strlen(hpath) - 5), hpath, k + 1,
                 json_string_value(json_object_get(c, "name")));
        const char *base = strrchr(one, '/') + 1;
        assert_string_equal(json_string_value(json_object_get(c, "hgrm")), base);
        cp_hgrm_check_json(one, json_object_get(c, "latency_us"), (unsigned long long)ops);
    }
    assert_double_eq(ops_sum, REQUESTS);
    /* the reads: a value written by an earlier HSET, or a miss; every read is one or the other */
    const json_t *hget = command_of(j, 1);
    assert_double_eq(checked(hget) + cp_json_num(hget, "misses"), cp_json_num(hget, "ops"));
    assert_double_gt(checked(hget), 0);
    /* the script ran with __data__: its SET per EVALSHA */
    assert_double_eq(server_calls(f, "set"), cp_json_num(command_of(j, 7), "ops"));
    cp_hgrm_check_json(hpath, json_object_get(j, "latency_us"), REQUESTS);
    json_decref(j);
    cp_clirun_free(&run);
}

static void test_cluster_workloads(void **state) {
    run_workloads(*state, 1, "2");
}

static void test_cluster_workloads_resp3(void **state) {
    run_workloads(*state, 1, "3");
}

static void test_twemproxy_workloads(void **state) {
    run_workloads(*state, 0, "2"); /* nutcracker speaks RESP2 only */
}

/* ---- placeholders, as the servers store them ------------------------------------------------ */

/* The value the bench writes for key (version 2, --value-size 64). */
static void bench_value_is(const char *what, const redisReply *r, const char *key) {
    cp__valuefmt vf;
    assert_int_equal(cp__valuefmt_init(&vf, 64, 12, true), 0);
    if (r == NULL || r->type != REDIS_REPLY_STRING)
        fail_msg("%s: not a string", what);
    uint32_t version = 0;
    cp__verify_result v = cp__value_verify(&vf, r->str, r->len, key, strlen(key), &version);
    if (v != CP__VERIFY_OK || version != 2)
        fail_msg("%s: %s (version %u) for %s", what, cp__verify_result_str(v), version, key);
    cp__valuefmt_free(&vf);
}

static void test_placeholders(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    char jpath[4096];
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "p.json"));
    /* every key once (sequential, exact shares), equal weights by default */
    const char *args[] = {"bench",
                          "--dir",
                          f->dir,
                          "--keys",
                          "40",
                          "--key-dist",
                          "sequential",
                          "--clients",
                          "2",
                          "--requests",
                          "120",
                          "--command",
                          "SET __key__ __data__",
                          "--command",
                          "HSET __tag__:h \"f __key__\" 'v-__key__'",
                          "--command",
                          "SADD __tag__:o __otherkey__ __otherkey__",
                          "--json",
                          jpath,
                          NULL};
    cp_clirun_expect(&run, args, 0);
    json_t *j = cp_json_load(jpath);
    for (size_t k = 0; k < 3; k++) /* 1,1,1: each client's 60 requests take turns */
        assert_double_eq(cp_json_num(command_of(j, k), "ops"), 40);
    assert_double_eq(cp_json_num(json_object_get(j, "redirects"), "moved"), 0);
    json_decref(j);
    int sets = 0, hashes = 0, others = 0, elsewhere = 0;
    char seen_other[40] = {0};
    for (int n = 0; n < 40; n++) {
        char key[32], tagged[48], field[48], want[48];
        snprintf(key, sizeof(key), "key:%d", n);
        /* __key__ and __data__: the key's own value */
        redisReply *r = cp_fixture_command(f, "GET %s", key);
        if (r != NULL && r->type != REDIS_REPLY_NIL) {
            bench_value_is("SET __key__ __data__", r, key);
            sets++;
        }
        freeReplyObject(r);
        /* __tag__: {key:n}:h, in key:n's slot; __key__ inside quoted words */
        snprintf(tagged, sizeof(tagged), "{%s}:h", key);
        assert_int_equal(cp_keyslot(tagged, strlen(tagged)), cp_keyslot(key, strlen(key)));
        snprintf(field, sizeof(field), "f %s", key);
        r = cp_fixture_command(f, "HGET %s %s", tagged, field);
        if (r != NULL && r->type == REDIS_REPLY_STRING) {
            snprintf(want, sizeof(want), "v-%s", key);
            assert_string_equal(r->str, want);
            hashes++;
        }
        freeReplyObject(r);
        /* __otherkey__: keys of the key space, one draw per occurrence */
        snprintf(tagged, sizeof(tagged), "{%s}:o", key);
        r = cp_fixture_command(f, "SMEMBERS %s", tagged);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        int away = 0;
        for (size_t e = 0; e < r->elements; e++) {
            int other = -1, used = 0;
            if (sscanf(r->element[e]->str, "key:%d%n", &other, &used) != 1 ||
                r->element[e]->str[used] != '\0' || other < 0 || other >= 40)
                fail_msg("%s holds '%s', not a key of the key space", tagged, r->element[e]->str);
            seen_other[other] = 1;
            away |= other != n;
        }
        elsewhere += away;
        others += r->elements > 0;
        freeReplyObject(r);
    }
    /* each client walks its 20 keys three times, the templates taking turns: every key got
     * every template once */
    assert_int_equal(sets, 40);
    assert_int_equal(hashes, 40);
    assert_int_equal(others, 40);
    int distinct = 0;
    for (int n = 0; n < 40; n++)
        distinct += seen_other[n];
    assert_int_gt(distinct, 20);  /* about 80 draws from 40 keys */
    assert_int_ge(elsewhere, 38); /* draws of their own, not __key__ again */
    /* a multi-key command over keys of several slots: split by the library, all answered */
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "m.json"));
    const char *mget[] = {"bench",  "--dir",     f->dir,
                          "--keys", "40",        "--requests",
                          "400",    "--command", "MGET __key__ __otherkey__ __otherkey__",
                          "--json", jpath,       NULL};
    cp_clirun_expect(&run, mget, 0);
    j = cp_json_load(jpath);
    assert_double_eq(cp_json_num(command_of(j, 0), "ops"), 400);
    assert_double_eq(cp_json_num(j, "failed_ops"), 0);
    json_decref(j);
    cp_clirun_free(&run);
}

/* ---- what verification catches -------------------------------------------------------------- */

static void set_field(cp_fixture *f, const char *key, const char *field, const char *val,
                      size_t len) {
    redisReply *r = cp_fixture_command(f, "HSET %s %s %b", key, field, val, len);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    freeReplyObject(r);
}

/* bench over keys key:0 .. key:199, each once (sequential, two clients, one request per key),
 * with the flags in extra (NULL-terminated: the templates, --json ...); exits want. */
static void each_key_once(cp_clirun *run, cp_fixture *f, const char *const *extra, int want) {
    const char *args[32] = {"bench", "--dir",      f->dir,       "--keys",     "200", "--clients",
                            "2",     "--key-dist", "sequential", "--requests", "200"};
    int a = 11;
    for (int k = 0; extra[k] != NULL && a < 31; k++)
        args[a++] = extra[k];
    args[a] = NULL;
    cp_clirun_expect(run, args, want);
}

static void test_corrupted(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    /* every hash written once with its key's value */
    each_key_once(&run, f, (const char *[]){"--command", "HSET __tag__:h f __data__", NULL}, 0);
    /* then key:7's field gets key:8's value, key:9's a plain string */
    cp__valuefmt vf;
    assert_int_equal(cp__valuefmt_init(&vf, 64, 12, true), 0);
    char val[64];
    cp__value_fill(&vf, "key:8", 5, 2, val);
    cp__valuefmt_free(&vf);
    set_field(f, "{key:7}:h", "f", val, sizeof(val));
    set_field(f, "{key:9}:h", "f", "garbage", 7);
    char jpath[4096];
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "c.json"));
    each_key_once(&run, f, (const char *[]){"--command", "HGET __tag__:h f", "--json", jpath, NULL},
                  1);
    assert_non_null(strstr(run.err, "mismatch: HGET key {key:7}:h"));
    assert_non_null(strstr(run.err, "wrong key"));
    assert_non_null(strstr(run.err, "mismatch: HGET key {key:9}:h"));
    assert_non_null(strstr(run.err, "bad format"));
    json_t *j = cp_json_load(jpath);
    assert_double_eq(mismatches(command_of(j, 0)), 2);
    assert_double_eq(checked(command_of(j, 0)), 200);
    assert_double_eq(cp_json_num(json_object_get(j, "verify"), "mismatches"), 2);
    const json_t *sample =
        json_array_get(json_object_get(json_object_get(j, "verify"), "samples"), 0);
    assert_string_equal(cp_json_str(sample, "command"), "HGET");
    json_decref(j);

    /* a list whose element is another key's value: LRANGE checks every element */
    redisReply *r = cp_fixture_command(f, "RPUSH {key:11}:l %b", val, sizeof(val));
    freeReplyObject(r);
    each_key_once(&run, f, (const char *[]){"--command", "LRANGE __tag__:l 0 -1", NULL}, 1);
    assert_non_null(strstr(run.err, "mismatch: LRANGE key {key:11}:l"));
    assert_non_null(strstr(run.out, "mismatches 1"));

    /* a GET template of load's values: one value overwritten */
    const char *load[] = {"load", "--dir", f->dir, "--keys", "200", "--no-check", NULL};
    cp_clirun_expect(&run, load, 0);
    r = cp_fixture_command(f, "SET key:3 not-a-value");
    freeReplyObject(r);
    each_key_once(&run, f, (const char *[]){"--command", "GET __key__", NULL}, 1);
    assert_non_null(strstr(run.err, "mismatch: GET key key:3"));
    assert_non_null(strstr(run.out, "mismatches 1"));

    /* error replies are counted against their own command: INCR on load's strings */
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "e.json"));
    each_key_once(&run, f,
                  (const char *[]){"--no-verify", "--command", "INCR __key__", "--command",
                                   "GET __key__", "--json", jpath, NULL},
                  1);
    assert_non_null(strstr(run.err, "not an integer"));
    j = cp_json_load(jpath);
    assert_double_eq(cp_json_num(command_of(j, 0), "failed_ops"), 100);
    assert_double_eq(cp_json_num(command_of(j, 0), "error_replies"), 100);
    assert_double_eq(cp_json_num(command_of(j, 0), "ops"), 0);
    assert_double_eq(cp_json_num(command_of(j, 1), "failed_ops"), 0);
    assert_double_eq(cp_json_num(command_of(j, 1), "ops"), 100);
    assert_double_eq(cp_json_num(j, "failed_ops"), 100);
    json_decref(j);

    /* a counter something else decrements: INCR's replies go down */
    const char *ctr[] = {"bench",
                         "--dir",
                         f->dir,
                         "--keys",
                         "1",
                         "--clients",
                         "1",
                         "--requests",
                         "6",
                         "--command",
                         "INCR __tag__:c",
                         "--command",
                         "DECRBY __tag__:c 5",
                         NULL};
    cp_clirun_expect(&run, ctr, 1);
    assert_non_null(strstr(run.err, "mismatch: INCR key {key:0}:c"));
    assert_non_null(strstr(run.err, "counter did not grow"));
    assert_non_null(strstr(run.out, "mismatches 2")); /* 1, then -3, then -7 */
    cp_clirun_free(&run);
}

/* ---- bad templates and weights -------------------------------------------------------------- */

static void test_bad_templates_exit_2(void **state) {
    (void)state;
    cp_clirun run;
    cp_clirun_init(&run);
    static const struct {
        const char *args[12];
        const char *why;
    } cases[] = {
        {{"bench", "--proxy", "127.0.0.1:1", "--command", "", NULL}, "empty"},
        {{"bench", "--proxy", "127.0.0.1:1", "--command", "   ", NULL}, "empty"},
        {{"bench", "--proxy", "127.0.0.1:1", "--command", "GET __keys__", NULL},
         "unknown placeholder '__keys__'"},
        {{"bench", "--proxy", "127.0.0.1:1", "--command", "SET __key__ \"a b", NULL},
         "unbalanced quotes"},
        {{"bench", "--proxy", "127.0.0.1:1", "--command", "SET __key__ 'a'b", NULL},
         "unbalanced quotes"},
        {{"bench", "--proxy", "127.0.0.1:1", "--command", "GET __key__", "--command-ratio", "1,2",
          NULL},
         "--command-ratio: '1,2' has more weights than the 1 --command given"},
        {{"bench", "--proxy", "127.0.0.1:1", "--command", "GET __key__", "--command", "PING",
          "--command-ratio", "3,0", NULL},
         "every weight must be in [1, 10000]"},
        {{"bench", "--proxy", "127.0.0.1:1", "--command-ratio", "3,1", NULL},
         "--command-ratio needs --command"},
        {{"bench", "--proxy", "127.0.0.1:1", "--command", "GET __key__", "--ratio", "1:1", NULL},
         "with --command, give the commands' weights with --command-ratio"},
        {{"compare", "--command", "GET __nope__", NULL}, "unknown placeholder '__nope__'"},
        {{"compare", "--command", "GET __key__", "--command-ratio", "x", NULL},
         "is not a list of weights"},
        {{"scenario", "reshard", "--command", "\"GET", NULL}, "unbalanced quotes"},
        {{"scenario", "failover", "--command", "GET __key__", "--ratio", "1:1", NULL},
         "give the commands' weights with --command-ratio"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = cp_clirun_run(&run, cases[i].args);
        if (rc != 2 || strstr(run.err, cases[i].why) == NULL)
            fail_msg("case %zu (%s %s): exit %d, stderr '%s', want 2 and '%s'", i, cases[i].args[0],
                     cases[i].args[3] ? cases[i].args[3] : "", rc, run.err, cases[i].why);
    }
    /* 17 --command: more than the 16 a run takes */
    const char *many[40] = {"bench", "--proxy", "127.0.0.1:1"};
    int a = 3;
    for (int k = 0; k < 17; k++) {
        many[a++] = "--command";
        many[a++] = "GET __key__";
    }
    many[a] = NULL;
    assert_int_equal(cp_clirun_run(&run, many), 2);
    assert_non_null(strstr(run.err, "at most 16"));
    cp_clirun_free(&run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cluster_workloads, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_cluster_workloads_resp3, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_twemproxy_workloads, cp_fixture_setup_twemproxy2,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_placeholders, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_corrupted, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test(test_bad_templates_exit_2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
