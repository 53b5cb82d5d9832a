/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Replica reads (read_from) on real clusters, counted by the servers themselves (INFO
 * commandstats): GETs land on the replicas and SETs on the masters, through pipelines and the
 * async API, while a transaction's read stays on its master; a replica killed mid-run costs no
 * failed read (replica-preferred falls back to the master); strict replica reads move to the
 * shard's other replica and, with none left, are refused rather than sent to the master; a
 * replica that answers MOVED (its master lost the slot) sends the read to the new master; and
 * `clusterpipe bench --read-from replica` reads its verified GETs from the replicas only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"

#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clusterpipe/clusterpipe.h"
#include "clirun.h"
#include "fixture.h"
#include "testutil.h"

#define KEYS 3000

static int setup_2(void **state) {
    *state = cp_fixture_cluster(3, 2);
    return *state == NULL ? -1 : 0;
}

/* Options for a client reading from read_from, with a retry budget of budget_ms (0: the
 * default), for cp_fixture_client. */
static cp_options reads_from(int read_from, int budget_ms) {
    cp_options opt = CP_OPTIONS_INIT;
    opt.read_from = read_from;
    if (budget_ms > 0)
        opt.retry_budget_ms = budget_ms;
    return opt;
}

/* KEYS keys rf:i = vi, on every replica too (WAIT on every master). */
static void load(cp_fixture *f) {
    cp_client *c = cp_fixture_client(f, NULL);
    cp_pipeline *p = cp_pipeline_new(c);
    for (int i = 0; i < KEYS; i++)
        assert_int_equal(cp_append(p, "SET rf:%d v%d", i, i), 0);
    assert_int_equal(cp_exec(p), 0);
    cp_pipeline_free(p);
    redisReply *r = cp_command_all(c, "WAIT %d 5000", 1);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    for (size_t i = 0; i < r->elements; i++)
        assert_int_ge(r->element[i]->integer, 1);
    freeReplyObject(r);
    cp_free(c);
}

/* `cmdstat_<name>` calls on process i (0 when it never ran the command). */
static long long calls(cp_fixture *f, size_t i, const char *name) {
    const cp_proc *pr = cp_topo_proc(f->topo, i);
    redisContext *rc = cp_fixture_conn(f, pr->port);
    assert_non_null(rc);
    redisReply *r = redisCommand(rc, "INFO commandstats");
    assert_non_null(r);
    char key[64];
    snprintf(key, sizeof(key), "cmdstat_%s:calls=", name);
    const char *at = strstr(r->str, key);
    long long v = at != NULL ? atoll(at + strlen(key)) : 0;
    freeReplyObject(r);
    return v;
}

static long long calls_by_role(cp_fixture *f, cp_proc_role role, const char *name) {
    long long sum = 0;
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++)
        if (cp_topo_proc(f->topo, i)->role == role && cp_topo_alive(f->topo, i))
            sum += calls(f, i, name);
    return sum;
}

static void reset_stats(cp_fixture *f) {
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++) {
        redisContext *rc = cp_fixture_conn(f, cp_topo_proc(f->topo, i)->port);
        assert_non_null(rc);
        redisReply *r = redisCommand(rc, "CONFIG RESETSTAT");
        assert_non_null(r);
        freeReplyObject(r);
    }
}

/* The k-th replica of master proc m (SIZE_MAX when there is none). */
static size_t replica_of(cp_fixture *f, size_t m, int k) {
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++) {
        const cp_proc *pr = cp_topo_proc(f->topo, i);
        if (pr->role == CP_ROLE_REPLICA && pr->master == (int)m && k-- == 0)
            return i;
    }
    return SIZE_MAX;
}

/* The master proc serving key rf:i, per the fixture's layout at start (3 equal ranges). */
static size_t master_of_key(cp_fixture *f, int i) {
    char key[32];
    int n = snprintf(key, sizeof(key), "rf:%d", i);
    unsigned slot = cp_keyslot(key, (size_t)n);
    return cp_fixture_master(f, slot <= 5460 ? 0 : slot <= 10922 ? 1 : 2);
}

/* Appends GET rf:i for count keys from `first` (wrapping), the ones master `only` serves when
 * only != SIZE_MAX; returns the keys appended, in order, in idx. */
static size_t append_gets(cp_fixture *f, cp_pipeline *p, int first, size_t count, size_t only,
                          int *idx) {
    size_t n = 0;
    for (int i = first; n < count; i = (i + 1) % KEYS) {
        if (only != SIZE_MAX && master_of_key(f, i) != only)
            continue;
        assert_int_equal(cp_append(p, "GET rf:%d", i), 0);
        idx[n++] = i;
    }
    return n;
}

/* Every GET of the pipeline ended CP_DONE with its value; returns how many did not. */
static size_t check_gets(cp_pipeline *p, const int *idx, size_t n) {
    size_t bad = 0;
    for (size_t j = 0; j < n; j++) {
        const redisReply *r = cp_reply(p, j);
        char want[32];
        snprintf(want, sizeof(want), "v%d", idx[j]);
        if (cp_get_outcome(p, j) != CP_DONE || r == NULL || r->type != REDIS_REPLY_STRING ||
            strcmp(r->str, want) != 0) {
            if (bad++ == 0)
                print_message("GET rf:%d: outcome %d, %s\n", idx[j], cp_get_outcome(p, j),
                              r == NULL ? cp_pipeline_errstr(p)
                              : r->str  ? r->str
                                        : "(nil)");
        }
    }
    return bad;
}

typedef struct async_state {
    int done, bad;
} async_state;

static void on_get(cp_client *c, const cp_response *r, void *data) {
    async_state *s = data;
    (void)c;
    s->done++;
    s->bad += r->outcome != CP_DONE || r->reply == NULL || r->reply->type != REDIS_REPLY_STRING ||
              r->reply->str[0] != 'v';
}

static void reads_land_on_replicas(void **state) {
    cp_fixture *f = *state;
    load(f);
    reset_stats(f);
    cp_options o = reads_from(CP_READ_REPLICA, 0);
    cp_client *c = cp_fixture_client(f, &o);
    cp_pipeline *p = cp_pipeline_new(c);
    int *idx = malloc(KEYS * sizeof(int));
    assert_int_equal(append_gets(f, p, 0, KEYS, SIZE_MAX, idx), KEYS);
    assert_int_equal(cp_exec(p), 0);
    assert_int_equal(check_gets(p, idx, KEYS), 0);
    cp_pipeline_reset(p);
    for (int i = 0; i < 100; i++) /* writes stay on the masters */
        assert_int_equal(cp_append(p, "SET rf:%d v%d", i, i), 0);
    assert_int_equal(cp_append(p, "MULTI"), 0); /* and so does a transaction, reads included */
    assert_int_equal(cp_append(p, "GET rf:0"), 0);
    assert_int_equal(cp_append(p, "EXEC"), 0);
    assert_int_equal(cp_exec(p), 0);
    assert_string_equal(cp_reply(p, 102)->element[0]->str, "v0");
    /* A WATCH stays on the master too, where it guards the transaction: a change by another
     * client between it and EXEC aborts the EXEC. */
    cp_pipeline_reset(p);
    assert_int_equal(cp_append(p, "WATCH rf:watched"), 0);
    assert_int_equal(cp_exec(p), 0);
    cp_pipeline_reset(p);
    cp_client *other = cp_fixture_client(f, NULL);
    freeReplyObject(cp_command(other, "SET rf:watched theirs"));
    cp_free(other);
    assert_int_equal(cp_append(p, "MULTI"), 0);
    assert_int_equal(cp_append(p, "SET rf:watched mine"), 0);
    assert_int_equal(cp_append(p, "EXEC"), 0);
    assert_int_equal(cp_exec(p), 0);
    assert_int_equal(cp_reply(p, 2)->type, REDIS_REPLY_NIL);
    cp_pipeline_free(p);
    cp_free(c);

    /* The async API: replica-preferred, on the built-in loop. */
    cp_options opt = CP_OPTIONS_INIT;
    opt.seeds = f->endpoints;
    opt.read_from = CP_READ_REPLICA_PREFERRED;
    cp_loop *l = cp_loop_new();
    cp_test_protocol(&opt);
    cp_client *a = cp_client_new(&opt);
    assert_int_equal(a->err, 0);
    assert_int_equal(cp_loop_attach(l, a), 0);
    async_state s = {0, 0};
    for (int i = 0; i < 500; i++)
        assert_int_equal(cp_async_command(a, on_get, &s, "GET rf:%d", i), 0);
    assert_int_equal(cp_loop_run(l), 0);
    assert_int_equal(s.done, 500);
    assert_int_equal(s.bad, 0);
    cp_free(a);
    cp_loop_free(l);

    assert_int_equal(calls_by_role(f, CP_ROLE_REPLICA, "get"), KEYS + 500);
    assert_int_equal(calls_by_role(f, CP_ROLE_MASTER, "get"), 1);   /* the transaction's */
    assert_int_equal(calls_by_role(f, CP_ROLE_MASTER, "set"), 101); /* and the other client's */
    assert_int_equal(calls_by_role(f, CP_ROLE_MASTER, "watch"), 1);
    assert_int_equal(calls_by_role(f, CP_ROLE_REPLICA, "watch"), 0);
    assert_int_ge(calls_by_role(f, CP_ROLE_REPLICA, "readonly"), 3);
    free(idx);

    /* A bad policy is refused. */
    opt.read_from = 7;
    cp_test_protocol(&opt);
    cp_client *bad = cp_client_new(&opt);
    assert_int_equal(bad->err, CP_EINVAL);
    cp_free(bad);
}

typedef struct killer {
    cp_fixture *f;
    size_t victim;
    int delay_ms;
    int rc;
    char err[512];
} killer;

static void *kill_later(void *arg) {
    killer *k = arg;
    struct timespec ts = {k->delay_ms / 1000, (long)(k->delay_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    k->rc = cp_topo_kill(k->f->topo, k->victim, SIGKILL, k->err, sizeof(k->err));
    return NULL;
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Pipelines of `batch` GETs (of master `only`'s keys, or all) for ms milliseconds, while
 * another thread kills `victim` after delay_ms. Returns the reads that failed. */
static size_t read_while_killing(cp_fixture *f, cp_client *c, size_t victim, int delay_ms, int ms,
                                 size_t only, size_t *total) {
    killer k = {f, victim, delay_ms, 0, ""};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, kill_later, &k), 0);
    cp_pipeline *p = cp_pipeline_new(c);
    int idx[200];
    size_t bad = 0;
    int first = 0;
    *total = 0;
    for (uint64_t end = now_ms() + (uint64_t)ms; now_ms() < end;) {
        size_t n = append_gets(f, p, first, 200, only, idx);
        first = (first + 997) % KEYS;
        cp_exec(p);
        bad += check_gets(p, idx, n);
        *total += n;
        cp_pipeline_reset(p);
    }
    cp_pipeline_free(p);
    pthread_join(th, NULL);
    if (k.rc != 0)
        fail_msg("kill: %s", k.err);
    return bad;
}

/* Replica-preferred: master 0's replica dies while reads are in flight on it; every read still
 * ends done with its value, from the master once the replica is gone. */
static void replica_killed_mid_run(void **state) {
    cp_fixture *f = *state;
    load(f);
    reset_stats(f);
    size_t m0 = cp_fixture_master(f, 0);
    /* A budget well below the cluster's failure detection (node timeout 2 s): the reads must
     * leave the dead replica at once, not when the map stops naming it. */
    cp_options o = reads_from(CP_READ_REPLICA_PREFERRED, 800);
    cp_client *c = cp_fixture_client(f, &o);
    size_t total = 0;
    size_t bad = read_while_killing(f, c, replica_of(f, m0, 0), 300, 2500, SIZE_MAX, &total);
    print_message("%zu reads, %zu failed; master 0 served %lld GETs after its replica died\n",
                  total, bad, calls(f, m0, "get"));
    assert_int_equal(bad, 0);
    assert_int_gt(total, 1000);
    assert_int_gt(calls(f, m0, "get"), 0); /* the fallback */
    cp_free(c);
}

/* Strict replica reads with two replicas per master: one killed mid-run costs no failed read
 * (the other takes its reads); with both gone the shard's reads are refused, the other shards'
 * go on, and no read ever reaches master 0. */
static void strict_replica_reads(void **state) {
    cp_fixture *f = *state;
    load(f);
    reset_stats(f);
    size_t m0 = cp_fixture_master(f, 0);
    cp_options o = reads_from(CP_READ_REPLICA, 400);
    cp_client *c = cp_fixture_client(f, &o);
    size_t total = 0;
    size_t bad = read_while_killing(f, c, replica_of(f, m0, 0), 300, 1500, SIZE_MAX, &total);
    assert_int_equal(bad, 0);
    bad = read_while_killing(f, c, replica_of(f, m0, 1), 300, 1500, SIZE_MAX, &total);
    /* Master 0's reads now have nowhere to go; once the victim is gone none of them is done. */
    cp_pipeline *p = cp_pipeline_new(c);
    int idx[200];
    size_t n = append_gets(f, p, 0, 200, m0, idx);
    assert_int_equal(cp_exec(p), CP_EPARTIAL);
    for (size_t j = 0; j < n; j++)
        assert_int_not_equal(cp_get_outcome(p, j), CP_DONE);
    cp_pipeline_reset(p);
    n = append_gets(f, p, 0, 200, cp_fixture_master(f, 1), idx);
    assert_int_equal(cp_exec(p), 0);
    assert_int_equal(check_gets(p, idx, n), 0);
    cp_pipeline_free(p);
    print_message("after both replicas died: %zu of %zu reads failed; master 0 GETs %lld\n", bad,
                  total, calls(f, m0, "get"));
    assert_int_gt(bad, 0);
    assert_int_equal(calls(f, m0, "get"), 0);
    cp_free(c);
}

/* Master 0's highest slot moves to master 1 behind the client's back: master 0's replica
 * answers MOVED and the read goes to master 1, with its value. */
static void moved_from_replica(void **state) {
    cp_fixture *f = *state;
    char key[32], err[512];
    int k = 0;
    for (;; k++) {
        int n = snprintf(key, sizeof(key), "rf:%d", k);
        if (cp_keyslot(key, (size_t)n) == 5460)
            break;
    }
    cp_client *w = cp_fixture_client(f, NULL);
    redisReply *r = cp_command(w, "SET %s moved", key);
    freeReplyObject(r);
    r = cp_command_all(w, "WAIT %d 5000", 1);
    freeReplyObject(r);
    cp_options o = reads_from(CP_READ_REPLICA, 0);
    cp_client *c = cp_fixture_client(f, &o);
    r = cp_command(c, "GET %s", key); /* from master 0's replica */
    assert_string_equal(r->str, "moved");
    freeReplyObject(r);
    if (cp_topo_migrate_slots(f->topo, cp_fixture_master(f, 0), cp_fixture_master(f, 1), 1, err,
                              sizeof(err)))
        fail_msg("migrate: %s", err);
    /* The replica hears of the new owner by gossip: until then it would answer from its own
     * (now empty) copy of the slot, which no client can tell from a missing key. */
    size_t r0 = replica_of(f, cp_fixture_master(f, 0), 0);
    redisContext *rc = cp_fixture_conn(f, cp_topo_proc(f->topo, r0)->port);
    freeReplyObject(redisCommand(rc, "READONLY"));
    for (int tries = 0;; tries++) {
        r = redisCommand(rc, "GET %s", key);
        int moved = r != NULL && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "MOVED", 5) == 0;
        freeReplyObject(r);
        if (moved)
            break;
        assert_int_lt(tries, 500);
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    reset_stats(f);
    cp_stats before, after;
    cp_get_stats(c, &before);
    r = cp_command(c, "GET %s", key);
    assert_non_null(r);
    assert_string_equal(r->str, "moved");
    freeReplyObject(r);
    cp_get_stats(c, &after);
    assert_int_equal(after.moved, before.moved + 1);
    assert_int_equal(calls(f, cp_fixture_master(f, 1), "get"), 1); /* the redirected read */
    cp_free(c);
    cp_free(w);
}

/* `clusterpipe load` of 3,000 keys, on every replica too (WAIT on every master). */
static void load_cli(cp_fixture *f, cp_clirun *run) {
    const char *ld[] = {"load", "--dir", f->dir, "--keys", "3000", "-q", NULL};
    int rc = cp_clirun_run(run, ld);
    if (rc != 0)
        fail_msg("load exited %d: %s", rc, run->err);
    cp_client *w = cp_fixture_client(f, NULL);
    freeReplyObject(cp_command_all(w, "WAIT %d 5000", 1));
    cp_free(w);
}

/* The bench's flag: every GET on a replica, verified, the masters left with the SETs. */
static void bench_reads_from_replicas(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    load_cli(f, &run);
    int rc;
    reset_stats(f);
    const char *bench[] = {"bench",   "--dir",       f->dir,       "--keys", "3000",
                           "--ratio", "1:9",         "--requests", "10000",  "--pipeline",
                           "10",      "--read-from", "replica",    "-q",     NULL};
    rc = cp_clirun_run(&run, bench);
    if (rc != 0)
        fail_msg("bench exited %d: %s%s", rc, run.out, run.err);
    assert_non_null(strstr(run.out, "reads        on replicas (replica)"));
    assert_non_null(strstr(run.out, "mismatches 0"));
    long long gets = calls_by_role(f, CP_ROLE_REPLICA, "get");
    long long sets = calls_by_role(f, CP_ROLE_MASTER, "set");
    assert_int_equal(calls_by_role(f, CP_ROLE_MASTER, "get"), 0);
    assert_int_ge(gets + sets, 10000); /* the measured requests, and the warm-up's before them */
    assert_int_gt(gets, 8000);
    assert_int_gt(sets, 500);
    const char *bad[] = {"bench", "--dir", f->dir, "--read-from", "slave", NULL};
    assert_int_equal(cp_clirun_run(&run, bad), 2);
    cp_clirun_free(&run);
}

/* The replicas' part of the Redis CPU (cpu_seconds.replicas): with every GET on a replica, it
 * is all of it but the masters' idle ticks, in the JSON and in the text summary. 20,000 GETs
 * one at a time cost the replicas far more than one 10 ms clock tick (about 9 us each). */
static void bench_replicas_cpu(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    load_cli(f, &run);
    int rc;
    char jpath[4096];
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "r.json"));
    const char *bench[] = {"bench", "--dir",       f->dir,    "--keys", "3000", "--requests",
                           "20000", "--read-from", "replica", "--json", jpath,  NULL};
    rc = cp_clirun_run(&run, bench);
    if (rc != 0)
        fail_msg("bench exited %d: %s%s", rc, run.out, run.err);
    json_error_t je;
    json_t *j = json_load_file(jpath, 0, &je);
    assert_non_null(j);
    json_t *cs = json_object_get(j, "cpu_seconds"), *cu = json_object_get(j, "cpu_us_per_op");
    double redis = json_number_value(json_object_get(cs, "redis"));
    double replicas = json_number_value(json_object_get(cs, "replicas"));
    assert_true(json_is_number(json_object_get(cs, "replicas")));
    assert_true(json_is_number(json_object_get(cu, "replicas")));
    if (!(replicas > 0 && replicas <= redis + 1e-9))
        fail_msg("cpu_seconds replicas %.3f, redis %.3f", replicas, redis);
    assert_non_null(strstr(run.out, "(replicas "));
    json_decref(j);
    cp_clirun_free(&run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(reads_land_on_replicas, cp_fixture_setup_cluster3x1,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(replica_killed_mid_run, cp_fixture_setup_cluster3x1,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(moved_from_replica, cp_fixture_setup_cluster3x1,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(bench_reads_from_replicas,
                                        cp_fixture_setup_shared_cluster3x1,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(bench_replicas_cpu, cp_fixture_setup_shared_cluster3x1,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(strict_replica_reads, setup_2, cp_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, cp_fixture_group_teardown);
}
