/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `load` and `bench` against a real 3-master Redis Cluster (one ephemeral topology per test,
 * stopped and checked by PID in the teardown): a verified mixed run through the engine API with
 * 0 mismatches and the key count checked after load; a value corrupted directly on its owning
 * node caught by verification (exit code 1 through the CLI, the key named); the JSON report with
 * every contract field and sane values; a master killed mid-run (the run goes on, errors are
 * counted, the summary is printed, exit code 1); an external --cluster target (redis CPU from
 * INFO); keys so skewed that one lane's queue fills (every GET still verified); keys named as
 * redis-benchmark --cluster names them (--key-layout per-master: redis-benchmark itself reads
 * them without a miss). Requests are kept small so each test takes seconds. Single-threaded test
 * code (the engine starts its own threads).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "bench/engine.h"
#include "bench/load.h"
#include "bench/target.h"
#include "clirun.h"
#include "fixture.h"
#include "util/clock.h"

#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KEYS 3000
#define MSET_KEYS 100000

static int setup(void **state) {
    return cp_fixture_setup_cluster3(state);
}

static int teardown(void **state) {
    return cp_fixture_teardown(state);
}

/* The cases that leave the cluster as they found it share one (fixture.h). */
static int setup_shared(void **state) {
    return cp_fixture_setup_shared_cluster3(state);
}

static void load_cli(cp_clirun *r, cp_fixture *f, int keys) {
    char k[32];
    snprintf(k, sizeof(k), "%d", keys);
    const char *args[] = {"load", "--dir", f->dir, "--keys", k, "--pipeline", "16", NULL};
    int rc = cp_clirun_run(r, args);
    if (rc != 0)
        fail_msg("load exited %d: %s%s", rc, r->out, r->err);
    assert_non_null(strstr(r->out, "as expected"));
}

/* `status --json`'s key count for the fixture's topology (-1: null), and its exit code in *rc;
 * also checks it against the per-process rows when it is known. */
static long long status_keys(cp_clirun *r, cp_fixture *f, int *rc) {
    const char *args[] = {"status", "--dir", f->dir, "--json", NULL};
    *rc = cp_clirun_run(r, args);
    json_t *root = json_loads(r->out, 0, NULL);
    if (root == NULL)
        fail_msg("status --json: not JSON: %s%s", r->out, r->err);
    json_t *k = json_object_get(root, "keys");
    assert_true(json_is_integer(k) || json_is_null(k));
    long long keys = json_is_integer(k) ? json_integer_value(k) : -1, rows = 0;
    json_t *procs = json_object_get(root, "processes"), *p;
    size_t i;
    json_array_foreach(procs, i, p) {
        if (strcmp(json_string_value(json_object_get(p, "role")), "master") == 0)
            rows += json_integer_value(json_object_get(p, "keys"));
    }
    json_t *why = json_object_get(root, "keys_error");
    if (keys >= 0) {
        assert_int_equal(keys, rows);
        assert_true(json_is_null(why));
    } else {
        assert_true(json_is_string(why));
        assert_int_gt(json_string_length(why), 0);
    }
    json_decref(root);
    return keys;
}

/* The sum over the masters of one numeric field of an INFO section (e.g. "commandstats",
 * "cmdstat_mset:calls="); a master without the field adds 0. */
static long long masters_info(cp_fixture *f, const char *section, const char *field) {
    long long sum = 0;
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++) {
        const cp_proc *pr = cp_topo_proc(f->topo, i);
        if (pr->role != CP_ROLE_MASTER)
            continue;
        redisContext *c = cp_fixture_conn(f, pr->port);
        assert_non_null(c);
        redisReply *r = redisCommand(c, "INFO %s", section);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        const char *m = strstr(r->str, field);
        if (m != NULL)
            sum += atoll(m + strlen(field));
        freeReplyObject(r);
    }
    return sum;
}

/* load's MSET groups (3 keys at most, batches of 7 keys, so groups are cut by the cap, by a
 * slot change and by the batch's end): every key is written once with its own value (a
 * sequential read of every key verifies each one), and the masters really ran MSETs of more than
 * one key on average (INFO commandstats against DBSIZE). */
static void test_load_mset_groups(void **state) {
    cp_fixture *f = *state;
    cp__bench_target t;
    char err[1024];
    assert_int_equal(cp__bench_target_from_topo(&t, f->topo, NULL, NULL), 0);
    cp__load_config lc;
    cp__load_config_init(&lc);
    lc.keys = MSET_KEYS;
    lc.threads = 1;
    lc.clients = 1;
    lc.pipeline = 7;
    lc.mset = 3;
    cp__load_result lr;
    if (cp__load_run(&t, &lc, &lr, err, sizeof(err)) != 0)
        fail_msg("load: %s", err);
    assert_int_equal(lr.written, MSET_KEYS);
    assert_int_equal(lr.mset, 3);
    assert_int_equal(lr.dbsize, MSET_KEYS);

    long long msets = masters_info(f, "commandstats", "cmdstat_mset:calls=");
    long long keys = masters_info(f, "keyspace", "db0:keys=");
    /* no SET: every key went in an MSET */
    assert_int_equal(masters_info(f, "commandstats", "cmdstat_set:calls="), 0);
    assert_int_equal(keys, MSET_KEYS);
    /* one chunk of 100,000 keys sorted by slot, about 6 per slot: groups of 2-3 on average */
    assert_int_le(msets, MSET_KEYS * 7 / 10);
    assert_int_ge(msets, MSET_KEYS / 3);

    cp__bench_config cfg;
    cp__bench_config_init(&cfg);
    cfg.threads = 1;
    cfg.clients = 1;
    cfg.pipeline = 16;
    cfg.requests = MSET_KEYS;
    cfg.ratio_set = 0;
    cfg.ratio_get = 1;
    cfg.keys = MSET_KEYS;
    assert_int_equal(cp__dist_parse("sequential", &cfg.dist), 0);
    cp__bench_result *r = malloc(sizeof(*r));
    assert_non_null(r);
    if (cp__bench_run(&t, &cfg, r, err, sizeof(err)) != 0)
        fail_msg("bench: %s", err);
    assert_int_equal(r->gets, MSET_KEYS);
    assert_int_equal(r->misses, 0);
    assert_int_equal(r->verify_checked, MSET_KEYS);
    assert_int_equal(r->verify_mismatches, 0);
    cp__bench_result_free(r);
    free(r);
}

/* Engine API: load, check the count, then a verified 1:4 run over two threads. */
static void test_load_and_bench_verified(void **state) {
    cp_fixture *f = *state;
    cp__bench_target t;
    char err[1024];
    assert_int_equal(cp__bench_target_from_topo(&t, f->topo, NULL, NULL), 0);
    assert_string_equal(cp__bench_target_topology(&t), "cluster");

    cp__load_config lc;
    cp__load_config_init(&lc);
    lc.keys = KEYS;
    lc.pipeline = 16;
    cp__load_result lr;
    if (cp__load_run(&t, &lc, &lr, err, sizeof(err)) != 0)
        fail_msg("load: %s", err);
    assert_int_equal(lr.written, KEYS);
    assert_int_equal(lr.dbsize_checked, 1);
    assert_int_equal(lr.dbsize, KEYS);

    cp__bench_config cfg;
    cp__bench_config_init(&cfg);
    cfg.threads = 2;
    cfg.clients = 4;
    cfg.pipeline = 8;
    /* Enough work that every master uses many clock ticks of CPU: /proc/PID/stat counts in
     * 10 ms ticks, and 20,000 requests over 3 masters sometimes read 0 on all of them. */
    cfg.requests = 200000;
    cfg.ratio_set = 1;
    cfg.ratio_get = 4;
    cfg.keys = KEYS;
    cp__bench_result *r = malloc(sizeof(*r));
    assert_non_null(r);
    if (cp__bench_run(&t, &cfg, r, err, sizeof(err)) != 0)
        fail_msg("bench: %s", err);
    assert_int_equal(r->ops, 200000);
    assert_int_equal(r->sets, 40000);
    assert_int_equal(r->gets, 160000);
    assert_int_equal(r->failed_ops, 0);
    assert_int_equal(r->unknown_ops, 0);
    assert_int_equal(r->misses, 0);
    assert_int_equal(r->verify_checked, 160000);
    assert_int_equal(r->verify_mismatches, 0);
    assert_int_equal(cp__hist_count(&r->latency), 200000);
    assert_int_equal(r->masters, 3);
    assert_int_equal(r->stats.moved, 0);
    assert_double_gt(r->seconds, 0);
    assert_int_ge(r->ntimeline, 1);
    uint64_t sum = 0;
    for (size_t i = 0; i < r->ntimeline; i++)
        sum += r->timeline[i].ops;
    assert_int_equal(sum, 200000);
    assert_true(r->has_cpu_redis);
    assert_double_gt(r->cpu_redis, 0);
    assert_true(r->has_cpu_client);
    assert_double_gt(r->cpu_client, 0);
    assert_true(r->has_cpu_proxy);
    assert_double_eq(r->cpu_proxy, 0);
    assert_int_not_equal(r->redis_version[0], '\0');
    assert_false(cp__bench_result_failed(r));
    cp__bench_result_free(r);

    /* keys beyond the loaded range are misses, not mismatches */
    cfg.ratio_set = 0;
    cfg.ratio_get = 1;
    cfg.keys = 2 * KEYS;
    cfg.requests = 4000;
    if (cp__bench_run(&t, &cfg, r, err, sizeof(err)) != 0)
        fail_msg("bench: %s", err);
    assert_int_gt(r->misses, 0);
    assert_int_equal(r->verify_mismatches, 0);
    assert_int_equal(r->misses + r->verify_checked, 4000);
    cp__bench_result_free(r);
    free(r);
}

/* Keys so skewed that one master gets most of them: that master's lane queue fills up (4,096
 * requests), the client's key stream waits on it while the other lanes drain and go out short,
 * and its queue is compacted and taken from while full. Each batch is a view of its lane's
 * queue, so a queue that moved or reused requests of a batch in flight would show up as GET
 * replies verified against the wrong key or version: every one must still check out. */
static void test_skewed_keys_fill_a_lane(void **state) {
    cp_fixture *f = *state;
    cp__bench_target t;
    char err[1024];
    assert_int_equal(cp__bench_target_from_topo(&t, f->topo, NULL, NULL), 0);
    cp__bench_config cfg;
    cp__bench_config_init(&cfg);
    cfg.clients = 3;
    cfg.pipeline = 5;
    cfg.requests = 90000;
    cfg.ratio_set = 1;
    cfg.ratio_get = 1;
    cfg.keys = KEYS;
    assert_int_equal(cp__dist_parse("zipf:2", &cfg.dist), 0);
    cp__bench_result *r = malloc(sizeof(*r));
    assert_non_null(r);
    if (cp__bench_run(&t, &cfg, r, err, sizeof(err)) != 0)
        fail_msg("bench: %s", err);
    assert_int_equal(r->ops, 90000);
    assert_int_equal(r->sets + r->gets, 90000);
    assert_int_equal(r->failed_ops, 0);
    assert_int_equal(r->unknown_ops, 0);
    assert_int_equal(r->verify_checked + r->misses, r->gets);
    assert_int_gt(r->verify_checked, r->gets / 2);
    assert_int_equal(r->verify_mismatches, 0);
    assert_false(cp__bench_result_failed(r));
    cp__bench_result_free(r);
    free(r);
}

/* A wrong value written straight to the owning node must be caught, named, and fail the run. */
static void test_corrupted_value_caught(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    load_cli(&run, f, KEYS);
    /* key:7 gets key:8's (well-formed) value; key:9 a truncated one. cp_fixture_command follows
     * MOVED, so the SET lands on the owning master itself. */
    cp__keyfmt kf;
    cp__valuefmt vf;
    assert_int_equal(cp__keyfmt_init(&kf, NULL, 0), 0);
    assert_int_equal(cp__valuefmt_init(&vf, 64, cp__key_max_len(&kf, KEYS), true), 0);
    char val[64];
    cp__value_fill(&vf, "key:8", 5, 1, val);
    redisReply *rep = cp_fixture_command(f, "SET key:7 %b", val, (size_t)64);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    cp__value_fill(&vf, "key:9", 5, 1, val);
    rep = cp_fixture_command(f, "SET key:9 %b", val, (size_t)40);
    assert_non_null(rep);
    freeReplyObject(rep);
    cp__valuefmt_free(&vf);

    char keys[32];
    snprintf(keys, sizeof(keys), "%d", KEYS);
    const char *json = cp_clirun_path(&run, "corrupt.json");
    char jpath[4096];
    snprintf(jpath, sizeof(jpath), "%s", json);
    /* sequential, one lap: every key is read exactly once */
    const char *args[] = {"bench", "--dir",      f->dir,       "--keys",    keys, "--requests",
                          keys,    "--key-dist", "sequential", "--clients", "2",  "--pipeline",
                          "4",     "--json",     jpath,        NULL};
    int rc = cp_clirun_run(&run, args);
    if (rc != 1)
        fail_msg("bench exited %d, want 1: %s%s", rc, run.out, run.err);
    assert_non_null(strstr(run.out, "mismatches 2"));
    assert_non_null(strstr(run.err, "key:7"));
    assert_non_null(strstr(run.err, "key:9"));
    assert_non_null(strstr(run.err, "wrong key"));
    assert_non_null(strstr(run.err, "node 127.0.0.1:"));
    json_t *j = json_load_file(jpath, 0, NULL);
    assert_non_null(j);
    json_t *v = json_object_get(j, "verify");
    assert_int_equal(json_integer_value(json_object_get(v, "mismatches")), 2);
    assert_int_equal(json_integer_value(json_object_get(v, "checked")), KEYS);
    json_decref(j);
    cp_clirun_free(&run);
}

static double num(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    if (!json_is_number(v))
        fail_msg("'%s' is not a number", k);
    return json_number_value(v);
}

/* The CLI's --json file: every contract field, with values that make sense for the run. */
static void test_json_report(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    load_cli(&run, f, KEYS);
    char jpath[4096], cpath[4096];
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "bench.json"));
    snprintf(cpath, sizeof(cpath), "%s", cp_clirun_path(&run, "bench.csv"));
    const char *args[] = {"bench",     "--dir",   f->dir,       "--threads", "2",
                          "--clients", "4",       "--pipeline", "10",        "--requests",
                          "120000",    "--ratio", "1:5",        "--keys",    "3000",
                          "--json",    jpath,     "--csv",      cpath,       NULL};
    int rc = cp_clirun_run(&run, args);
    if (rc != 0)
        fail_msg("bench exited %d: %s%s", rc, run.out, run.err);
    assert_non_null(strstr(run.out, "throughput"));
    json_error_t je;
    json_t *j = json_load_file(jpath, 0, &je);
    if (j == NULL)
        fail_msg("%s: %s", jpath, je.text);
    assert_string_equal(json_string_value(json_object_get(j, "schema")), "clusterpipe.bench/1");
    assert_string_equal(json_string_value(json_object_get(j, "topology")), "cluster");
    json_t *wl = json_object_get(j, "workload");
    assert_double_eq(num(wl, "threads"), 2);
    assert_double_eq(num(wl, "clients"), 4);
    assert_double_eq(num(wl, "pipeline"), 10);
    assert_string_equal(json_string_value(json_object_get(wl, "ratio")), "1:5");
    assert_double_eq(num(wl, "keys"), 3000);
    assert_double_eq(num(wl, "value_size"), 64);
    assert_string_equal(json_string_value(json_object_get(wl, "key_dist")), "uniform");
    assert_string_equal(json_string_value(json_object_get(wl, "key_layout")), "spread");
    double ops = num(j, "ops"), secs = num(j, "seconds");
    assert_double_eq(ops, 120000); /* many CPU ticks per master, as above */
    assert_double_gt(secs, 0);
    assert_double_lt(secs, 120);
    assert_double_lt(fabs(num(j, "ops_per_sec") - ops / secs), 1e-6 * ops / secs + 1);
    json_t *lat = json_object_get(j, "latency_us");
    assert_double_gt(num(lat, "p50"), 0);
    assert_double_le(num(lat, "p50"), num(lat, "p90"));
    assert_double_le(num(lat, "p90"), num(lat, "p99"));
    assert_double_le(num(lat, "p99"), num(lat, "p999"));
    assert_double_le(num(lat, "p999"), num(lat, "max"));
    json_t *cs = json_object_get(j, "cpu_seconds"), *cu = json_object_get(j, "cpu_us_per_op");
    assert_double_gt(num(cs, "redis"), 0);
    assert_double_eq(num(cs, "proxy"), 0);
    assert_double_gt(num(cs, "client"), 0);
    assert_double_lt(fabs(num(cs, "total") - num(cs, "redis") - num(cs, "client")), 1e-9);
    assert_double_lt(fabs(num(cu, "client") - num(cs, "client") * 1e6 / ops), 1e-6);
    assert_double_gt(num(cu, "total"), 0);
    /* no replicas in this topology: their part is null, not 0 */
    assert_true(json_is_null(json_object_get(cs, "replicas")));
    assert_true(json_is_null(json_object_get(cu, "replicas")));
    json_t *rd = json_object_get(j, "redirects"), *rt = json_object_get(j, "retries");
    assert_double_eq(num(rd, "moved"), 0);
    assert_double_eq(num(rd, "ask"), 0);
    assert_double_eq(num(rt, "tryagain"), 0);
    assert_double_eq(num(rt, "clusterdown"), 0);
    assert_double_eq(num(rt, "io"), 0);
    assert_double_eq(num(j, "failed_ops"), 0);
    assert_double_eq(num(j, "unknown_ops"), 0);
    json_t *v = json_object_get(j, "verify");
    assert_double_eq(num(v, "mismatches"), 0);
    assert_double_eq(num(v, "checked"), 100000);
    assert_double_eq(num(j, "misses"), 0);
    json_t *tl = json_object_get(j, "timeline");
    assert_int_ge(json_array_size(tl), 1);
    double tsum = 0, tprev = 0;
    for (size_t i = 0; i < json_array_size(tl); i++) {
        json_t *e = json_array_get(tl, i);
        assert_double_gt(num(e, "t"), tprev);
        tprev = num(e, "t");
        tsum += num(e, "ops");
        assert_double_eq(num(e, "errors"), 0);
        assert_double_ge(num(e, "p99_us"), 0);
    }
    assert_double_eq(tsum, ops);
    json_t *curve = json_object_get(j, "latency_curve");
    assert_int_ge(json_array_size(curve), 3);
    double pprev = -1;
    for (size_t i = 0; i < json_array_size(curve); i++) {
        double p = num(json_array_get(curve, i), "percentile");
        assert_double_gt(p, pprev);
        assert_double_le(p, 100);
        pprev = p;
    }
    json_t *ver = json_object_get(j, "versions");
    assert_non_null(strstr(json_string_value(json_object_get(ver, "redis")), "."));
    assert_non_null(json_string_value(json_object_get(ver, "clusterpipe")));
    assert_double_ge(num(json_object_get(j, "machine"), "cores"), 1);
    assert_non_null(strstr(json_string_value(json_object_get(j, "command_line")), "bench --dir"));
    json_decref(j);
    FILE *fp = fopen(cpath, "r");
    assert_non_null(fp);
    char line[4096];
    assert_non_null(fgets(line, sizeof(line), fp));
    assert_non_null(strstr(line, "ops_per_sec"));
    assert_non_null(fgets(line, sizeof(line), fp));
    assert_non_null(strstr(line, "cluster,cluster,2,4,10,1:5,3000,64,uniform,120000,"));
    fclose(fp);
    cp_clirun_free(&run);
}

/* A master dies mid-run: the run continues with the others, counts the errors, prints its
 * summary and exits 1. */
static void test_master_dies_mid_run(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    load_cli(&run, f, KEYS);
    int rc;
    assert_int_equal(status_keys(&run, f, &rc), KEYS); /* the library's DBSIZE on every master */
    assert_int_equal(rc, 0);
    char jpath[4096];
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "dies.json"));
    const char *args[] = {
        "bench",          "--dir", f->dir,   "--duration", "3",      "--clients", "2",
        "--retry-budget", "200",   "--keys", "3000",       "--json", jpath,       NULL};
    pid_t pid = cp_clirun_start(&run, args);
    cp__sleep_ms(1200);
    size_t victim = SIZE_MAX;
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++)
        if (cp_topo_proc(f->topo, i)->role == CP_ROLE_MASTER)
            victim = i;
    assert_int_not_equal(victim, SIZE_MAX);
    char err[1024];
    if (cp_topo_kill(f->topo, victim, SIGKILL, err, sizeof(err)) != 0)
        fail_msg("kill: %s", err);
    rc = cp_clirun_finish(&run, pid, 60);
    if (rc != 1)
        fail_msg("bench exited %d, want 1: %s%s", rc, run.out, run.err);
    assert_non_null(strstr(run.out, "throughput"));
    assert_non_null(strstr(run.err, "the run failed"));
    json_t *j = json_load_file(jpath, 0, NULL);
    assert_non_null(j);
    assert_int_gt(json_integer_value(json_object_get(j, "ops")), 0);
    assert_int_gt(json_integer_value(json_object_get(j, "failed_ops")) +
                      json_integer_value(json_object_get(j, "unknown_ops")),
                  0);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(j, "verify"), "mismatches")), 0);
    /* the dead server's CPU counts up to its last sample rather than vanishing */
    assert_true(json_is_number(json_object_get(json_object_get(j, "cpu_seconds"), "redis")));
    json_decref(j);
    /* A dead master: no count rather than a part of one (the fan-out fails as a whole). */
    assert_int_equal(status_keys(&run, f, &rc), -1);
    assert_int_equal(rc, 1);
    const char *st[] = {"status", "--dir", f->dir, NULL};
    assert_int_equal(cp_clirun_run(&run, st), 1);
    assert_non_null(strstr(run.out, "keys: unknown ("));
    cp_clirun_free(&run);
}

/* --rate is open loop: a master stopped (SIGSTOP) for 1.5 s holds back only its own requests.
 * Requests keep going out on schedule (a closed loop would have the stopped master's lane fill
 * its client's queue and stall the client), the other masters keep answering, the stopped one's
 * requests are answered once it resumes, and their latency counts from when they were meant to
 * be sent. */
static void test_open_loop_stopped_master(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    load_cli(&run, f, KEYS);
    char jpath[4096];
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "open.json"));
    const char *args[] = {"bench", "--dir",     f->dir, "--duration", "4", "--rate",
                          "2000",  "--clients", "4",    "--pipeline", "1", "--keys",
                          "3000",  "--json",    jpath,  NULL};
    pid_t pid = cp_clirun_start(&run, args);
    cp__sleep_ms(1500);
    size_t victim = SIZE_MAX;
    for (size_t i = 0; i < cp_topo_nprocs(f->topo) && victim == SIZE_MAX; i++)
        if (cp_topo_proc(f->topo, i)->role == CP_ROLE_MASTER)
            victim = i;
    char err[1024];
    if (cp_topo_kill(f->topo, victim, SIGSTOP, err, sizeof(err)) != 0)
        fail_msg("stop: %s", err);
    cp__sleep_ms(1500); /* below the cluster's node timeout: no failover */
    if (cp_topo_kill(f->topo, victim, SIGCONT, err, sizeof(err)) != 0)
        fail_msg("continue: %s", err);
    int rc = cp_clirun_finish(&run, pid, 60);
    if (rc != 0)
        fail_msg("bench exited %d: %s%s", rc, run.out, run.err);
    json_t *j = json_load_file(jpath, 0, NULL);
    assert_non_null(j);
    json_int_t ops = json_integer_value(json_object_get(j, "ops"));
    assert_int_equal(json_integer_value(json_object_get(j, "failed_ops")), 0);
    assert_int_equal(json_integer_value(json_object_get(j, "unknown_ops")), 0);
    /* on schedule: 2000/s for 4 s, give or take the batches of the last slot */
    if (ops < 7900 || ops > 8100)
        fail_msg("%lld requests, want 8000 (open loop)", (long long)ops);
    /* The stopped master's requests (a third of them for 1.5 s: about an eighth of the run)
     * waited, counted from when they were meant to go: p99 shows the stall. A closed loop would
     * have held them back unsent and timed them from their late send. */
    json_t *lat = json_object_get(j, "latency_us");
    double p99 = json_number_value(json_object_get(lat, "p99"));
    if (p99 < 300000 || json_number_value(json_object_get(lat, "max")) < 1.0e6)
        fail_msg("p99 %.0f us: the stall does not show", p99);
    /* While it was stopped, the other two masters' share still came back (2/3; at least half),
     * in every whole second of the run: the stop starts 1.5 s after the process did, the run's
     * clock after its setup, so which second the stop covers is not known here. */
    json_t *tl = json_object_get(j, "timeline");
    size_t i;
    json_t *sec;
    int seen = 0;
    double prev = 0;
    json_array_foreach(tl, i, sec) {
        double t = json_number_value(json_object_get(sec, "t")), span = t - prev;
        prev = t;
        if (span < 0.99) /* the run's last, partial second */
            continue;
        seen++;
        json_int_t n = json_integer_value(json_object_get(sec, "ops"));
        if (n < 1000)
            fail_msg("second %.0f answered %lld of 2000 offered", t, (long long)n);
    }
    assert_int_equal(seen, 4);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(j, "verify"), "mismatches")), 0);
    json_decref(j);
    cp_clirun_free(&run);
}

/* --max-inflight bounds an open-loop lane: a master stopped for 1.5 s holds at most N requests
 * per lane waiting; the rest of its share is shed (not sent, counted as failed and as shed), the
 * other masters' share is served, and the run fails as a run that did not send its load. */
static void test_open_loop_sheds_past_max_inflight(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    load_cli(&run, f, KEYS);
    char jpath[4096];
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "shed.json"));
    const char *args[] = {"bench", "--dir",          f->dir, "--duration", "4",   "--rate",
                          "2000",  "--clients",      "4",    "--pipeline", "1",   "--keys",
                          "3000",  "--max-inflight", "8",    "--json",     jpath, NULL};
    pid_t pid = cp_clirun_start(&run, args);
    cp__sleep_ms(1500);
    size_t victim = SIZE_MAX;
    for (size_t i = 0; i < cp_topo_nprocs(f->topo) && victim == SIZE_MAX; i++)
        if (cp_topo_proc(f->topo, i)->role == CP_ROLE_MASTER)
            victim = i;
    char err[1024];
    uint64_t t0 = cp__now_ns();
    if (cp_topo_kill(f->topo, victim, SIGSTOP, err, sizeof(err)) != 0)
        fail_msg("stop: %s", err);
    cp__sleep_ms(1500); /* below the cluster's node timeout: no failover */
    if (cp_topo_kill(f->topo, victim, SIGCONT, err, sizeof(err)) != 0)
        fail_msg("continue: %s", err);
    /* The stop lasts until the master answers again, which on a loaded machine comes a while
     * after SIGCONT: a PING answered marks it (the commands that waited are read in the same
     * turn of its loop). */
    redisContext *v = cp_fixture_conn(f, cp_topo_proc(f->topo, victim)->port);
    assert_non_null(v);
    redisReply *pong = redisCommand(v, "PING");
    assert_non_null(pong);
    freeReplyObject(pong);
    double stopped = (double)(cp__now_ns() - t0) / 1e9;
    int rc = cp_clirun_finish(&run, pid, 60);
    assert_int_equal(rc, 1); /* requests shed: the run did not send its load */
    assert_non_null(strstr(run.out, ", shed "));
    json_t *j = json_load_file(jpath, 0, NULL);
    assert_non_null(j);
    json_int_t shed = json_integer_value(json_object_get(j, "shed_ops"));
    json_int_t ops = json_integer_value(json_object_get(j, "ops"));
    /* nothing failed but what was shed */
    assert_int_equal(json_integer_value(json_object_get(j, "failed_ops")), shed);
    assert_int_equal(json_integer_value(json_object_get(j, "unknown_ops")), 0);
    /* The stopped master's third of 2,000/s: 1,000 in 1.5 s, less the 4 lanes' 8 each waiting;
     * shed beyond its share (the stop as it lasted here, give or take the run's last slot) would
     * be the other masters' load shed. */
    double share = 2000.0 / 3 * stopped;
    assert_int_ge(shed, (json_int_t)(2000.0 / 3 * 1.5) - 4 * 8 - 100);
    assert_int_le(shed, (json_int_t)share + 100);
    /* The other masters' two thirds were served (less the lanes' last slot), and nothing was
     * counted twice: at most the 8,000 offered. (How many of the 8,000 the open loop offers by
     * the end depends on the CPU it gets: a starved lane ends behind its schedule.) */
    assert_int_ge(ops, (json_int_t)(8000.0 * 2 / 3) - 100);
    assert_int_le(ops + shed, 8100);
    assert_non_null(strstr(json_string_value(json_object_get(j, "first_error")), "shed"));
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(j, "verify"), "mismatches")), 0);
    json_decref(j);
    cp_clirun_free(&run);
}

/* --cluster without --dir: external; redis CPU still measured through INFO CPU. */
static void test_external_cluster(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    char jpath[4096];
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "ext.json"));
    const char *load[] = {"load", "--cluster", f->endpoints, "--keys", "2000", NULL};
    int rc = cp_clirun_run(&run, load);
    if (rc != 0)
        fail_msg("load exited %d: %s%s", rc, run.out, run.err);
    assert_non_null(strstr(run.out, "hold 2000 keys"));
    assert_non_null(
        strstr(run.out, "pipeline 512, MSET of <= 16 keys)")); /* a cluster's default load depth */
    const char *args[] = {"bench",      f->endpoints[0] ? "--cluster" : "",
                          f->endpoints, "--keys",
                          "2000",       "--requests",
                          "6000",       "--pipeline",
                          "5",          "--json",
                          jpath,        NULL};
    rc = cp_clirun_run(&run, args);
    if (rc != 0)
        fail_msg("bench exited %d: %s%s", rc, run.out, run.err);
    json_t *j = json_load_file(jpath, 0, NULL);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "topology")), "external");
    json_t *cs = json_object_get(j, "cpu_seconds");
    assert_true(json_is_number(json_object_get(cs, "redis")));
    assert_double_ge(json_number_value(json_object_get(cs, "redis")), 0);
    assert_double_gt(json_number_value(json_object_get(cs, "client")), 0);
    json_decref(j);
    cp_clirun_free(&run);
}

/* Runs redis-benchmark (redis-tools) with args, output discarded; its exit status. */
static int run_redis_benchmark(char *const *args) {
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        alarm(60);
        execvp(args[0], args);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* --key-layout per-master names keys as redis-benchmark --cluster does: `load` writes K keys,
 * each master's K/3 in one slot (key:{TAG}:%012d); redis-benchmark then GETs its own key names
 * (-r K/3) and every GET is a hit, so the names are the very same; `bench` reads them verified. */
static void test_per_master_keys_as_redis_benchmark(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    const char *load[] = {"load", "--dir",        f->dir,       "--keys",
                          "3000", "--key-layout", "per-master", NULL};
    int rc = cp_clirun_run(&run, load);
    if (rc != 0)
        fail_msg("load exited %d: %s%s", rc, run.out, run.err);
    assert_non_null(strstr(run.out, "hold 3000 keys, as expected"));
    int port = 0;
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++) {
        const cp_proc *pr = cp_topo_proc(f->topo, i);
        if (pr->role != CP_ROLE_MASTER)
            continue;
        port = pr->port;
        redisContext *c = cp_fixture_conn(f, pr->port);
        assert_non_null(c);
        redisReply *r = redisCommand(c, "RANDOMKEY");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        assert_int_equal(r->len, 22);
        assert_memory_equal(r->str, "key:{", 5);
        assert_memory_equal(r->str + 8, "}:", 2);
        redisReply *slot = redisCommand(c, "CLUSTER KEYSLOT %b", r->str, (size_t)r->len);
        assert_non_null(slot);
        assert_int_equal(slot->type, REDIS_REPLY_INTEGER);
        redisReply *n = redisCommand(c, "CLUSTER COUNTKEYSINSLOT %lld", slot->integer);
        assert_non_null(n);
        assert_int_equal(n->type, REDIS_REPLY_INTEGER);
        assert_int_equal(n->integer, 1000); /* all of this master's keys in one slot */
        freeReplyObject(n);
        freeReplyObject(slot);
        freeReplyObject(r);
    }

    long long hits = masters_info(f, "stats", "keyspace_hits:");
    long long misses = masters_info(f, "stats", "keyspace_misses:");
    char p[16];
    snprintf(p, sizeof(p), "%d", port);
    char *rb[] = {"redis-benchmark",
                  "--cluster",
                  "-h",
                  "127.0.0.1",
                  "-p",
                  p,
                  "-t",
                  "get",
                  "-r",
                  "1000",
                  "-n",
                  "3000",
                  "-P",
                  "10",
                  "-q",
                  NULL};
    rc = run_redis_benchmark(rb);
    if (rc != 0)
        fail_msg("redis-benchmark exited %d (127: not installed; Debian: redis-tools)", rc);
    assert_int_equal(masters_info(f, "stats", "keyspace_misses:"), misses);
    assert_int_ge(masters_info(f, "stats", "keyspace_hits:"), hits + 3000);

    const char *bench[] = {"bench", "--dir",        f->dir,       "--keys",
                           "3000",  "--requests",   "6000",       "--pipeline",
                           "10",    "--key-layout", "per-master", NULL};
    rc = cp_clirun_run(&run, bench);
    if (rc != 0)
        fail_msg("bench exited %d: %s%s", rc, run.out, run.err);
    assert_non_null(strstr(run.out, "keys 3000 (per-master)"));
    assert_non_null(strstr(run.out, "misses 0)"));
    assert_non_null(strstr(run.out, "checked 6000, mismatches 0"));
    cp_clirun_free(&run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_load_and_bench_verified, setup_shared,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(test_skewed_keys_fill_a_lane, setup_shared,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(test_corrupted_value_caught, setup_shared,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(test_json_report, setup_shared, cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(test_load_mset_groups, setup_shared,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(test_master_dies_mid_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_loop_stopped_master, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_loop_sheds_past_max_inflight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_external_cluster, setup_shared,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(test_per_master_keys_as_redis_benchmark, setup_shared,
                                        cp_fixture_teardown_shared),
    };
    return cmocka_run_group_tests(tests, NULL, cp_fixture_group_teardown);
}
