/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe migrate` and `verify` over TLS on each side, on real servers: a 3-master TLS
 * cluster with a password (`up --tls`: its own CA) is the target; the sources are standalone
 * redis-servers started here (nutcracker has no TLS), one serving TLS only with the cluster's
 * CA and server certificate, one plain.
 *
 * TLS to TLS: the snapshot (strings, a list, a hash, TTLs, a 1 MB value) goes through the
 * replica connection's TLS, and writes made once the tool follows (2,000 SETs and a 1 MB value:
 * more than one read's worth of TLS records) through its stream; then SIGTERM, and `verify`
 * over TLS on both sides finds 0 differences. Plain to TLS: --until-synced --verify, 0
 * differences. Bad input: the TLS source without --from-tls, and with the system's CAs (which do
 * not know the run's CA), are clear errors with exit 1, and the source keeps every key; a CA file
 * without --from-tls is a usage error (2).
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "asserts.h"

#include "clirun.h"
#include "fixture.h"
#include "orch/ports.h"
#include "util/clock.h"

static cp_fixture *target;
static pid_t servers[2] = {-1, -1};
static cp__ports ports;
static cp_clirun scratch; /* the sources' directory (their logs), removed at the end */
static char ca[600], cert[600], cert_key[600];

/* Starts redis-server on a free port (TLS only with the cluster's certificate, or plain) and
 * records its PID for the teardown. */
static int start_source(int k, int tls) {
    int port;
    char err[256];
    assert_int_equal(cp__ports_take(&ports, 0, &port, err, sizeof err), 0);
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    pid_t pid = fork();
    assert_int_ge(pid, 0);
    if (pid == 0) {
        const char *argv[] = {"redis-server",
                              "--bind",
                              "127.0.0.1",
                              "--port",
                              tls ? "0" : ps,
                              "--tls-port",
                              tls ? ps : "0",
                              "--tls-cert-file",
                              cert,
                              "--tls-key-file",
                              cert_key,
                              "--tls-ca-cert-file",
                              ca,
                              "--tls-auth-clients",
                              "no",
                              "--save",
                              "",
                              "--appendonly",
                              "no",
                              "--logfile",
                              tls ? "source-tls.log" : "source-plain.log",
                              "--dir",
                              scratch.scratch,
                              "--dbfilename",
                              tls ? "tls.rdb" : "plain.rdb",
                              "--repl-diskless-sync-delay",
                              "0",
                              "--loglevel",
                              "warning",
                              NULL};
        execvp("redis-server", (char *const *)argv);
        _exit(127);
    }
    servers[k] = pid;
    return port;
}

/* A client of a source (single endpoint), once it answers PING. */
static cp_client *source_client(int port, int tls) {
    char ep[64];
    snprintf(ep, sizeof ep, "127.0.0.1:%d", port);
    cp_options o = CP_OPTIONS_INIT;
    o.endpoint = ep;
    o.tls = tls;
    o.tls_ca_file = ca;
    for (int64_t until = cp__now_ms() + 10000; cp__now_ms() < until; cp__sleep_ms(50)) {
        cp_client *c = cp_connect(&o);
        assert_non_null(c);
        redisReply *r = c->err ? NULL : cp_command(c, "PING");
        int ok = r != NULL && r->type == REDIS_REPLY_STATUS;
        cp_reply_free(r);
        if (ok)
            return c;
        cp_free(c);
    }
    fail_msg("the source on port %d did not answer PING", port);
    return NULL;
}

static void ok(cp_client *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *cmd = NULL;
    int len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    assert_int_gt(len, 0);
    cp_pipeline *p = cp_pipeline_new(c);
    assert_int_equal(cp_append_formatted(p, cmd, (size_t)len), 0);
    free(cmd);
    cp_exec(p);
    const redisReply *r = cp_reply(p, 0);
    if (r == NULL || r->type == REDIS_REPLY_ERROR)
        fail_msg("%s: %s", fmt, r ? r->str : c->errstr);
    cp_pipeline_free(p);
}

static long long dbsize(cp_client *c) {
    redisReply *r = cp_command(c, "DBSIZE");
    assert_non_null(r);
    long long n = r->integer;
    cp_reply_free(r);
    return n;
}

static void load(cp_client *c, const char *prefix) {
    for (int i = 0; i < 300; i++)
        ok(c, "SET %s:k:%d v%d", prefix, i, i);
    ok(c, "SET %s:ttl value PX 3600000", prefix);
    ok(c, "RPUSH %s:list a b c", prefix);
    ok(c, "HSET %s:hash f1 v1 f2 v2", prefix);
    char *big = malloc(1 << 20);
    assert_non_null(big);
    memset(big, 'x', 1 << 20);
    ok(c, "SET %s:big %b", prefix, big, (size_t)(1 << 20));
    free(big);
}

/* A client of the target, over TLS with its password. */
static cp_client *target_client(void) {
    cp_options o = CP_OPTIONS_INIT;
    o.tls = 1;
    o.tls_ca_file = ca;
    o.password = cp_topo_password(target->topo);
    return cp_fixture_client(target, &o);
}

static int start_target(void **state) {
    (void)state;
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.kind = CP_TOPO_CLUSTER;
    o.shards = 3;
    o.tls = 1;
    target = cp_fixture_start(&o);
    if (target == NULL)
        return -1;
    snprintf(ca, sizeof ca, "%s", cp_topo_tls_ca(target->topo));
    snprintf(cert, sizeof cert, "%.*s/server.crt", (int)(strrchr(ca, '/') - ca), ca);
    snprintf(cert_key, sizeof cert_key, "%.*s/server.key", (int)(strrchr(ca, '/') - ca), ca);
    cp_clirun_init(&scratch);
    cp__ports_init(&ports, 0);
    cp__ports_set_owner(&ports, scratch.scratch);
    return 0;
}

/* Stops the test's sources by their PIDs, also when the test failed. */
static int stop_sources(void **state) {
    (void)state;
    int bad = 0;
    for (int k = 0; k < 2; k++) {
        if (servers[k] > 0) {
            kill(servers[k], SIGTERM);
            int st;
            bad |= waitpid(servers[k], &st, 0) != servers[k];
            servers[k] = -1;
        }
    }
    return bad ? -1 : 0;
}

static int stop_target(void **state) {
    (void)state;
    cp__ports_release(&ports);
    cp_clirun_free(&scratch);
    return cp_fixture_stop(target) != 0 ? -1 : 0;
}

/* Waits (10 s at most) until the target holds key. */
static void wait_key(cp_client *t, const char *key) {
    for (int64_t until = cp__now_ms() + 10000; cp__now_ms() < until; cp__sleep_ms(20)) {
        redisReply *r = cp_command(t, "EXISTS %s", key);
        long long n = r != NULL ? r->integer : 0;
        cp_reply_free(r);
        if (n == 1)
            return;
    }
    fail_msg("the target never held %s", key);
}

static void tls_source_into_tls_cluster_then_bad_input(void **state) {
    (void)state;
    int port = start_source(0, 1);
    cp_client *s = source_client(port, 1);
    load(s, "t");
    cp_client *t = target_client();
    char from[64];
    snprintf(from, sizeof from, "127.0.0.1:%d", port);
    const char *pw = cp_topo_password(target->topo);
    cp_clirun run;
    cp_clirun_init(&run);

    /* Follow: the snapshot, then the stream, both through TLS. */
    const char *follow[] = {"migrate",
                            "--from",
                            from,
                            "--from-tls",
                            "--from-cacert",
                            ca,
                            "--to",
                            target->endpoints,
                            "--to-tls",
                            "--to-cacert",
                            ca,
                            "--to-password",
                            pw,
                            "-q",
                            NULL};
    pid_t pid = cp_clirun_start(&run, follow);
    wait_key(t, "t:big");
    for (int i = 0; i < 2000; i++)
        ok(s, "SET t:stream:%d w%d", i, i);
    char *big = malloc(1 << 20);
    assert_non_null(big);
    memset(big, 'y', 1 << 20);
    ok(s, "SET t:stream:big %b", big, (size_t)(1 << 20));
    free(big);
    ok(s, "SET t:stream:last done");
    wait_key(t, "t:stream:last");
    assert_int_equal(kill(pid, SIGTERM), 0);
    int rc = cp_clirun_finish(&run, pid, 60);
    if (rc != 0)
        fail_msg("migrate exited %d\nstdout:\n%s\nstderr:\n%s", rc, run.out, run.err);
    redisReply *r = cp_command(t, "STRLEN t:stream:big");
    assert_non_null(r);
    assert_int_equal(r->integer, 1 << 20);
    cp_reply_free(r);
    follow[0] = "verify"; /* the same flags */
    cp_clirun_expect(&run, follow, 0);
    assert_contains(run.out, "verify: 0 differences");
    assert_contains(run.out, "every key of the sources is on the target, the same.");

    /* Bad input: plain TCP to the TLS port, then the system's CAs; the source loses nothing. */
    long long keys = dbsize(s);
    const char *plain[] = {
        "migrate",        "--from",      from, "--to",          target->endpoints,
        "--to-tls",       "--to-cacert", ca,   "--to-password", pw,
        "--until-synced", NULL};
    cp_clirun_expect(&run, plain, 1);
    assert_contains(run.err, "clusterpipe migrate: source ");
    assert_contains(run.err, from);
    assert_contains(run.err, "--from-tls");
    const char *system_cas[] = {"migrate", "--from",          from,       "--from-tls",
                                "--to",    target->endpoints, "--to-tls", "--to-cacert",
                                ca,        "--to-password",   pw,         "--until-synced",
                                NULL};
    cp_clirun_expect(&run, system_cas, 1);
    assert_contains(run.err, "clusterpipe migrate: source ");
    assert_contains(run.err, "certificate");
    const char *no_tls[] = {"verify", "--from",          from, "--from-cacert", ca,
                            "--to",   target->endpoints, NULL};
    cp_clirun_expect(&run, no_tls, 2);
    assert_contains(run.err, "--from-cacert, --from-cert and --from-key need --from-tls");
    assert_int_equal(dbsize(s), keys);

    cp_free(t);
    cp_free(s);
    cp_clirun_free(&run);
}

static void plain_source_into_tls_cluster(void **state) {
    (void)state;
    int port = start_source(1, 0);
    cp_client *s = source_client(port, 0);
    load(s, "p");
    char from[64];
    snprintf(from, sizeof from, "127.0.0.1:%d", port);
    cp_clirun run;
    cp_clirun_init(&run);
    const char *args[] = {"migrate",
                          "--from",
                          from,
                          "--to",
                          target->endpoints,
                          "--to-tls",
                          "--to-cacert",
                          ca,
                          "--to-password",
                          cp_topo_password(target->topo),
                          "--until-synced",
                          "--verify",
                          "-q",
                          NULL};
    cp_clirun_expect(&run, args, 0);
    assert_contains(run.out, "synced: every source's lag is 0");
    assert_contains(run.out, "verify: 0 differences");
    cp_client *t = target_client();
    redisReply *r = cp_command(t, "HGET p:hash f2");
    assert_non_null(r);
    assert_string_equal(r->str, "v2");
    cp_reply_free(r);
    cp_free(t);
    cp_free(s);
    cp_clirun_free(&run);
}

/* The TLS cluster as the source (its masters, from the map read over TLS, each read as a replica
 * over TLS) into a plain cluster: --until-synced --verify, 0 differences. */
static void tls_cluster_as_source_into_a_plain_one(void **state) {
    (void)state;
    cp_client *t = target_client();
    for (int i = 0; i < 500; i++) {
        redisReply *r = cp_command(t, "SET c:%d v%d", i, i);
        assert_non_null(r);
        cp_reply_free(r);
    }
    long long keys = dbsize(t); /* every master's, summed */
    cp_fixture *plain = cp_fixture_cluster(3, 0);
    assert_non_null(plain);
    cp_clirun run;
    cp_clirun_init(&run);
    const char *args[] = {"migrate",
                          "--from",
                          target->endpoints,
                          "--from-tls",
                          "--from-cacert",
                          ca,
                          "--from-password",
                          cp_topo_password(target->topo),
                          "--to",
                          plain->endpoints,
                          "--until-synced",
                          "--verify",
                          "-q",
                          NULL};
    int rc = cp_clirun_run(&run, args);
    if (rc != 0)
        fail_msg("migrate exited %d\nstdout:\n%s\nstderr:\n%s", rc, run.out, run.err);
    assert_contains(run.out, "verify: 0 differences");
    cp_client *p = cp_fixture_client(plain, NULL);
    assert_int_equal(dbsize(p), keys);
    cp_free(p);
    cp_free(t);
    cp_clirun_free(&run);
    assert_int_equal(cp_fixture_stop(plain), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(tls_source_into_tls_cluster_then_bad_input, stop_sources),
        cmocka_unit_test_teardown(plain_source_into_tls_cluster, stop_sources),
        cmocka_unit_test(tls_cluster_as_source_into_a_plain_one),
    };
    return cmocka_run_group_tests(tests, start_target, stop_target);
}
