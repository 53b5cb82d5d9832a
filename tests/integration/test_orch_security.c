/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Integration tests of the security defaults of spawned topologies (docs/security.md), on real
 * redis-server, nutcracker and openssl processes: `clusterpipe up` generates a password kept in
 * DIR/password (0600) and never printed, servers refuse unauthenticated commands and run with
 * protected mode; --no-password turns auth off; twemproxy gets redis_auth and refuses TLS; a TLS
 * cluster (certificates generated for the run) serves the library's pipelines, refuses plain TCP
 * and a wrong CA, migrates slots with their keys over TLS, can require client certificates, and
 * leaves nothing running after `down` (checked by PID). Each test has its own topology, stopped
 * in its teardown even when an assertion failed. Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "clirun.h"
#include "clitopo.h"
#include "fixture.h"
#include "testutil.h"

#include "clusterpipe/clusterpipe.h"
#include "orch/orch.h"
#include "orch/proc.h"
#include "util/clock.h"
#include "util/errmsg.h"
#include "util/file.h"

#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NKEYS 10000

typedef struct ctx {
    cp_clirun run;
    cp_clitopo topo; /* a topology started through the CLI ("" dir when none) */
    cp_fixture *fx;
} ctx;

static int setup(void **state) {
    signal(SIGPIPE, SIG_IGN);
    ctx *c = calloc(1, sizeof(*c));
    cp_clirun_init(&c->run);
    *state = c;
    return 0;
}

/* CLI topologies are not ephemeral: `down`, then SIGKILL by PID whatever survived (a failure). */
static int teardown(void **state) {
    ctx *c = *state;
    int rc = cp_clitopo_stop(&c->topo, &c->run);
    if (cp_fixture_stop(c->fx) != 0)
        rc = -1;
    cp_clirun_free(&c->run);
    free(c);
    return rc;
}

static int file_mode(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    return (int)(st.st_mode & 07777);
}

static void assert_mode(const char *path, int want) {
    int got = file_mode(path);
    if (got != want)
        fail_msg("%s: mode %o, want %o", path, got, want);
}

/* A plain-TCP hiredis connection (no AUTH). */
static redisContext *plain(int port) {
    struct timeval tv = {5, 0};
    redisContext *r = redisConnectWithTimeout("127.0.0.1", port, tv);
    assert_non_null(r);
    if (r->err)
        fail_msg("connect to %d: %s", port, r->errstr);
    redisSetTimeout(r, tv);
    return r;
}

/* Runs a command on a hiredis connection and checks it is an error reply starting with want. */
static void expect_error(redisContext *r, const char *want, const char *cmd) {
    redisReply *rep = redisCommand(r, cmd);
    assert_non_null(rep);
    if (rep->type != REDIS_REPLY_ERROR || strncmp(rep->str, want, strlen(want)) != 0)
        fail_msg("%s: got type %d '%s', want an error starting %s", cmd, rep->type,
                 rep->str ? rep->str : "", want);
    freeReplyObject(rep);
}

/* CONFIG GET name through any reply source: the value, copied into out. */
static void config_value(const redisReply *rep, char *out, size_t len) {
    assert_non_null(rep);
    if (rep->type != CP_REPLY_MAP) /* RESP3 answers CONFIG GET with a map, the same elements */
        assert_int_equal(rep->type, REDIS_REPLY_ARRAY);
    assert_int_equal(rep->elements, 2);
    snprintf(out, len, "%s", rep->element[1]->str);
}

/* Checks a plain-TCP server: NOAUTH before AUTH, wrong password refused, then protected mode on
 * and bound to loopback only. */
static void check_plain_server(int port, const char *pw) {
    redisContext *r = plain(port);
    expect_error(r, "NOAUTH", "PING");
    expect_error(r, "NOAUTH", "GET somekey");
    expect_error(r, "WRONGPASS", "AUTH not-the-password");
    redisReply *rep = redisCommand(r, "AUTH %s", pw);
    assert_non_null(rep);
    assert_int_equal(rep->type, REDIS_REPLY_STATUS);
    freeReplyObject(rep);
    char v[128];
    rep = redisCommand(r, "CONFIG GET protected-mode");
    config_value(rep, v, sizeof(v));
    assert_string_equal(v, "yes");
    freeReplyObject(rep);
    rep = redisCommand(r, "CONFIG GET bind");
    config_value(rep, v, sizeof(v));
    assert_string_equal(v, "127.0.0.1");
    freeReplyObject(rep);
    redisFree(r);
}

/* Reads DIR/password and checks it: mode 0600, 32 lowercase hex characters, no newline. */
static char *read_password(const char *dir) {
    char path[600];
    snprintf(path, sizeof(path), "%s/password", dir);
    assert_mode(path, 0600);
    char *pw = cp__read_file(path, 4096, NULL);
    assert_non_null(pw);
    assert_int_equal(strlen(pw), 32);
    assert_int_equal(strspn(pw, "0123456789abcdef"), 32);
    return pw;
}

/* ---- passwords through the CLI ------------------------------------------------------------ */

/* `clusterpipe up` with no security flag: a generated password, never printed, 0600 file,
 * NOAUTH without it, protected mode, and the library connects with the topology's options. */
static void test_cli_default_password(void **state) {
    ctx *c = *state;
    cp_clitopo_new_dir(&c->topo, "sec");
    const char *up[] = {"up", "cluster", "--shards", "3", "--dir", c->topo.dir, NULL};
    int rc = cp_clirun_run(&c->run, up);
    cp_clitopo_note(&c->topo);
    if (rc != 0)
        fail_msg("up: exit %d\n%s", rc, c->run.err);
    assert_int_equal(cp_clitopo_alive(&c->topo), 3);
    char *pw = read_password(c->topo.dir);
    char path[600], want[1400];
    snprintf(path, sizeof(path), "%s/state.json", c->topo.dir);
    assert_mode(path, 0600);
    assert_mode(c->topo.dir, 0700);
    /* How to connect, without the secret. */
    snprintf(want, sizeof(want), "auth: on (password in %s/password", c->topo.dir);
    assert_non_null(strstr(c->run.out, want));
    assert_non_null(strstr(c->run.out, "--askpass"));
    snprintf(want, sizeof(want), "-a \"$(cat %s/password)\"", c->topo.dir);
    assert_non_null(strstr(c->run.out, want));
    assert_null(strstr(c->run.out, pw));
    assert_null(strstr(c->run.err, pw));

    cp_topo *t = NULL;
    char err[1024];
    assert_int_equal(cp_topo_open(c->topo.dir, &t, err, sizeof(err)), 0);
    assert_string_equal(cp_topo_password(t), pw);
    snprintf(path, sizeof(path), "%s/password", c->topo.dir);
    assert_string_equal(cp_topo_password_file(t), path);
    assert_null(cp_topo_tls_ca(t));
    for (size_t i = 0; i < cp_topo_nprocs(t); i++)
        check_plain_server(cp_topo_proc(t, i)->port, pw);

    /* The library: refused without the password, served with the topology's options. */
    char eps[1024];
    assert_int_equal(cp_topo_endpoints(t, eps, sizeof(eps)), 0);
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = eps;
    cp_test_protocol(&o);
    cp_client *cl = cp_connect(&o);
    assert_non_null(cl);
    assert_int_not_equal(cl->err, 0);
    print_message("without the password: %s\n", cl->errstr);
    cp_free(cl);
    cp_topo_client_options(t, &o);
    cp_test_protocol(&o);
    cl = cp_connect(&o);
    assert_non_null(cl);
    if (cl->err)
        fail_msg("connect with the topology's options: %s", cl->errstr);
    redisReply *r = cp_command(cl, "SET %s %s", "sec:key", "v");
    assert_non_null(r);
    freeReplyObject(r);
    cp_free(cl);
    cp_topo_free(t);

    /* status says auth is on and where the password is, never what it is. */
    const char *status[] = {"status", "--dir", c->topo.dir, NULL};
    assert_int_equal(cp_clirun_run(&c->run, status), 0);
    snprintf(want, sizeof(want), "auth: on (password in %s/password)", c->topo.dir);
    assert_non_null(strstr(c->run.out, want));
    assert_non_null(strstr(c->run.out, "tls: off"));
    assert_null(strstr(c->run.out, pw));
    const char *sjson[] = {"status", "--dir", c->topo.dir, "--json", NULL};
    assert_int_equal(cp_clirun_run(&c->run, sjson), 0);
    assert_null(strstr(c->run.out, pw));
    json_error_t je;
    json_t *root = json_loads(c->run.out, 0, &je);
    assert_non_null(root);
    assert_true(json_is_true(json_object_get(root, "auth")));
    assert_string_equal(json_string_value(json_object_get(root, "password_file")), path);
    assert_true(json_is_false(json_object_get(root, "tls")));
    json_decref(root);

    const char *down[] = {"down", "--dir", c->topo.dir, NULL};
    assert_int_equal(cp_clirun_run(&c->run, down), 0);
    assert_int_equal(cp_clitopo_alive(&c->topo), 0);
    struct stat st;
    assert_int_not_equal(stat(c->topo.dir, &st), 0); /* password file and all */
    free(pw);
}

/* --no-password: no file, no AUTH needed, protected mode still on. */
static void test_cli_no_password(void **state) {
    ctx *c = *state;
    cp_clitopo_new_dir(&c->topo, "sec");
    const char *up[] = {"up",    "cluster",   "--shards", "1", "--no-password",
                        "--dir", c->topo.dir, NULL};
    int rc = cp_clirun_run(&c->run, up);
    cp_clitopo_note(&c->topo);
    if (rc != 0)
        fail_msg("up: exit %d\n%s", rc, c->run.err);
    char path[600];
    snprintf(path, sizeof(path), "%s/password", c->topo.dir);
    assert_int_equal(file_mode(path), -1);
    assert_non_null(strstr(c->run.out, "auth: off"));
    assert_null(strstr(c->run.out, "--askpass"));
    cp_topo *t = NULL;
    char err[512];
    assert_int_equal(cp_topo_open(c->topo.dir, &t, err, sizeof(err)), 0);
    assert_null(cp_topo_password(t));
    assert_null(cp_topo_password_file(t));
    redisContext *r = plain(cp_topo_proc(t, 0)->port);
    redisReply *rep = redisCommand(r, "PING");
    assert_non_null(rep);
    assert_string_equal(rep->str, "PONG");
    freeReplyObject(rep);
    char v[64];
    rep = redisCommand(r, "CONFIG GET protected-mode");
    config_value(rep, v, sizeof(v));
    assert_string_equal(v, "yes");
    freeReplyObject(rep);
    redisFree(r);
    cp_topo_free(t);
    const char *status[] = {"status", "--dir", c->topo.dir, NULL};
    assert_int_equal(cp_clirun_run(&c->run, status), 0);
    assert_non_null(strstr(c->run.out, "auth: off"));
    /* Mutually exclusive with --password; TLS is cluster-only. */
    const char *both[] = {"up", "cluster", "--password", "x", "--no-password", NULL};
    assert_int_equal(cp_clirun_run(&c->run, both), 2);
    const char *twtls[] = {"up", "twemproxy", "--tls", NULL};
    assert_int_equal(cp_clirun_run(&c->run, twtls), 2);
    assert_non_null(strstr(c->run.err, "no TLS"));
    const char *auth_only[] = {"up", "cluster", "--tls-auth-clients", NULL};
    assert_int_equal(cp_clirun_run(&c->run, auth_only), 2);
    const char *down[] = {"down", "--dir", c->topo.dir, NULL};
    assert_int_equal(cp_clirun_run(&c->run, down), 0);
    assert_int_equal(cp_clitopo_alive(&c->topo), 0);
}

/* twemproxy by default: shards with requirepass, nutcracker with redis_auth (clients AUTH to the
 * proxy); TLS is refused with a reason. */
static void test_twemproxy_default_password(void **state) {
    ctx *c = *state;
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.kind = CP_TOPO_TWEMPROXY;
    o.shards = 2;
    o.proxies = 1;
    cp_fixture *f = c->fx = cp_fixture_start(&o);
    assert_non_null(f);
    const char *pw = cp_topo_password(f->topo);
    assert_non_null(pw);
    char *filed = read_password(f->dir);
    assert_string_equal(filed, pw);
    free(filed);
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++) {
        const cp_proc *p = cp_topo_proc(f->topo, i);
        if (p->role == CP_ROLE_SHARD) {
            check_plain_server(p->port, pw);
            continue;
        }
        char yml[600];
        snprintf(yml, sizeof(yml), "%s/nutcracker-%d/nutcracker.yml", f->dir, p->port);
        assert_true(cp__file_contains(yml, "redis_auth: '"));
        assert_mode(yml, 0600);
        redisContext *r = plain(p->port);
        redisReply *rep = redisCommand(r, "GET somekey");
        assert_non_null(rep);
        assert_int_equal(rep->type, REDIS_REPLY_ERROR); /* NOAUTH from the proxy itself */
        print_message("proxy without AUTH: %s\n", rep->str);
        freeReplyObject(rep);
        redisFree(r);
        cp_options co = CP_OPTIONS_INIT;
        char ep[64];
        snprintf(ep, sizeof(ep), "127.0.0.1:%d", p->port);
        co.endpoint = ep;
        cp_topo_client_options(f->topo, &co);
        co.protocol = 2; /* nutcracker speaks RESP2 only (test_client_real: its RESP3 refusal) */
        cp_client *cl = cp_connect(&co);
        assert_non_null(cl);
        assert_int_equal(cl->err, 0);
        rep = cp_command(cl, "SET %s %s", "tw:key", "tw-value");
        assert_non_null(rep);
        freeReplyObject(rep);
        rep = cp_command(cl, "GET %s", "tw:key");
        assert_non_null(rep);
        assert_string_equal(rep->str, "tw-value");
        freeReplyObject(rep);
        cp_free(cl);
    }
    o.tls = 1;
    cp_topo *t = NULL;
    char err[512];
    assert_int_equal(cp_topo_up(&o, &t, err, sizeof(err)), CP_EINVAL);
    assert_non_null(strstr(err, "no TLS"));
    assert_null(t);
}

/* ---- TLS ---------------------------------------------------------------------------------- */

/* A TLS cluster through the fixture (generated password too). */
static cp_fixture *tls_cluster(int shards, int auth_clients) {
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.shards = shards;
    o.tls = 1;
    o.tls_auth_clients = auth_clients;
    cp_fixture *f = cp_fixture_start(&o);
    assert_non_null(f);
    return f;
}

/* A libclusterpipe client in endpoint mode to one process, with the topology's options. */
static cp_client *endpoint_client(const cp_topo *t, int port) {
    char ep[64];
    snprintf(ep, sizeof(ep), "127.0.0.1:%d", port);
    cp_options o = CP_OPTIONS_INIT;
    o.endpoint = ep;
    cp_topo_client_options(t, &o);
    cp_test_protocol(&o);
    cp_client *c = cp_connect(&o);
    assert_non_null(c);
    if (c->err)
        fail_msg("endpoint %s over TLS: %s", ep, c->errstr);
    return c;
}

static long long dbsize(const cp_topo *t, int port) {
    cp_client *c = endpoint_client(t, port);
    redisReply *r = cp_command(c, "DBSIZE");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long n = r->integer;
    freeReplyObject(r);
    cp_free(c);
    return n;
}

/* GETs tag:0..n-1 in one pipeline on p and checks every value. */
static void check_values(cp_pipeline *p, int n, const char *tag) {
    for (int i = 0; i < n; i++)
        assert_int_equal(cp_append(p, "GET %s:%d", tag, i), 0);
    if (cp_exec(p) != 0)
        fail_msg("GET pipeline: %s", cp_pipeline_errstr(p));
    char want[64];
    for (int i = 0; i < n; i++) {
        const redisReply *r = cp_reply(p, (size_t)i);
        snprintf(want, sizeof(want), "value-of-%s:%d", tag, i);
        assert_int_equal(cp_get_outcome(p, (size_t)i), CP_DONE);
        assert_non_null(r);
        if (r->type != REDIS_REPLY_STRING || strcmp(r->str, want) != 0)
            fail_msg("GET %s:%d: got '%s', want '%s'", tag, i, r->str ? r->str : "(nil)", want);
    }
    cp_pipeline_reset(p);
}

/* NKEYS SETs in one pipeline, then NKEYS GETs in another; every value checked. */
static void pipeline_set_get(cp_client *cl, int n, const char *tag) {
    cp_pipeline *p = cp_pipeline_new(cl);
    assert_non_null(p);
    for (int i = 0; i < n; i++)
        assert_int_equal(cp_append(p, "SET %s:%d value-of-%s:%d", tag, i, tag, i), 0);
    if (cp_exec(p) != 0)
        fail_msg("SET pipeline: %s", cp_pipeline_errstr(p));
    for (int i = 0; i < n; i++) {
        assert_int_equal(cp_get_outcome(p, (size_t)i), CP_DONE);
        assert_int_equal(cp_reply(p, (size_t)i)->type, REDIS_REPLY_STATUS);
    }
    cp_pipeline_reset(p);
    check_values(p, n, tag);
    cp_pipeline_free(p);
}

/* A CA that did not sign the servers' certificate, made with openssl in dir. */
static void make_wrong_ca(const char *dir, char *ca, size_t len) {
    char bin[PATH_MAX], err[1024], out[600];
    assert_int_equal(
        cp__find_binary(NULL, "openssl", "openssl", bin, sizeof(bin), err, sizeof(err)), 0);
    snprintf(out, sizeof(out), "%s/openssl.log", dir);
    char *argv[] = {bin,
                    "req",
                    "-x509",
                    "-new",
                    "-newkey",
                    "ec",
                    "-pkeyopt",
                    "ec_paramgen_curve:prime256v1",
                    "-nodes",
                    "-keyout",
                    "wrong.key",
                    "-out",
                    "wrong.crt",
                    "-days",
                    "1",
                    "-subj",
                    "/CN=not the topology's CA",
                    NULL};
    if (cp__run(argv, dir, out, 30000, NULL, err, sizeof(err)) != 0)
        fail_msg("openssl: %s", err);
    snprintf(ca, len, "%s/wrong.crt", dir);
}

/* A 3-master TLS cluster: TLS-only servers, pipelines of 10,000 SET/GET routed over TLS, plain
 * TCP and a wrong CA refused cleanly, status, then down with every PID gone. */
static void test_tls_cluster(void **state) {
    ctx *c = *state;
    cp_fixture *f = c->fx = tls_cluster(3, 0);
    cp_topo *t = f->topo;
    const char *ca = cp_topo_tls_ca(t);
    assert_non_null(ca);
    assert_null(cp_topo_tls_client_cert(t));
    char path[700];
    snprintf(path, sizeof(path), "%s/tls/ca.crt", f->dir);
    assert_string_equal(ca, path);
    snprintf(path, sizeof(path), "%s/tls/ca.key", f->dir);
    assert_mode(path, 0600);
    snprintf(path, sizeof(path), "%s/tls/server.key", f->dir);
    assert_mode(path, 0600);
    snprintf(path, sizeof(path), "%s/tls", f->dir);
    assert_mode(path, 0700);
    /* Another process sees the same through state.json. */
    cp_topo *t2 = NULL;
    char err[1024];
    assert_int_equal(cp_topo_open(f->dir, &t2, err, sizeof(err)), 0);
    assert_string_equal(cp_topo_tls_ca(t2), ca);
    cp_topo_free(t2);

    /* Every node: TLS only, gossip and replication over TLS, protected mode. */
    for (size_t i = 0; i < cp_topo_nprocs(t); i++) {
        int port = cp_topo_proc(t, i)->port;
        cp_client *ec = endpoint_client(t, port);
        static const char *const want[][2] = {{"port", "0"},
                                              {"tls-cluster", "yes"},
                                              {"tls-replication", "yes"},
                                              {"tls-auth-clients", "no"},
                                              {"protected-mode", "yes"},
                                              {"bind", "127.0.0.1"}};
        for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
            redisReply *r = cp_command(ec, "CONFIG GET %s", want[k][0]);
            char v[64];
            config_value(r, v, sizeof(v));
            if (strcmp(v, want[k][1]) != 0)
                fail_msg("port %d: %s is %s, want %s", port, want[k][0], v, want[k][1]);
            freeReplyObject(r);
        }
        cp_free(ec);
    }

    /* The library routes and pipelines over TLS. */
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = f->endpoints;
    cp_topo_client_options(t, &o);
    assert_int_equal(o.tls, 1);
    cp_test_protocol(&o);
    cp_client *cl = cp_connect(&o);
    assert_non_null(cl);
    if (cl->err)
        fail_msg("cluster over TLS: %s", cl->errstr);
    assert_true(cp_is_cluster(cl));
    pipeline_set_get(cl, NKEYS, "tls");
    cp_free(cl);
    long long total = 0;
    for (size_t i = 0; i < cp_topo_nprocs(t); i++) {
        long long n = dbsize(t, cp_topo_proc(t, i)->port);
        assert_int_gt(n, 0); /* keys went to every master */
        total += n;
    }
    assert_int_equal(total, NKEYS);

    /* Plain TCP to a TLS port fails cleanly: with AUTH at connect, and without. */
    int port0 = cp_topo_proc(t, 0)->port;
    char ep[64];
    snprintf(ep, sizeof(ep), "127.0.0.1:%d", port0);
    cp_options po = CP_OPTIONS_INIT;
    po.endpoint = ep;
    po.password = cp_topo_password(t);
    po.connect_timeout_ms = po.io_timeout_ms = 2000;
    int64_t t0 = cp__now_ms();
    cp_test_protocol(&po);
    cl = cp_connect(&po);
    assert_non_null(cl);
    assert_int_not_equal(cl->err, 0);
    print_message("plain TCP with AUTH: %s (%s)\n", cp_strerror(cl->err), cl->errstr);
    cp_free(cl);
    po.password = NULL;
    cp_test_protocol(&po);
    cl = cp_connect(&po);
    assert_non_null(cl);
    redisReply *r = cl->err == 0 ? cp_command(cl, "PING") : NULL;
    assert_null(r);
    assert_int_not_equal(cl->err, 0);
    print_message("plain TCP, PING: %s (%s)\n", cp_strerror(cl->err), cl->errstr);
    cp_free(cl);
    assert_int_lt(cp__now_ms() - t0, 5000); /* closed by the server, not a timeout */

    /* A CA that did not sign the servers' certificate: a certificate error. */
    char wrong[600];
    make_wrong_ca(c->run.scratch, wrong, sizeof(wrong));
    cp_options wo = CP_OPTIONS_INIT;
    wo.endpoint = ep;
    cp_topo_client_options(t, &wo);
    wo.tls_ca_file = wrong;
    cp_test_protocol(&wo);
    cl = cp_connect(&wo);
    assert_non_null(cl);
    assert_int_equal(cl->err, CP_ECONNECT);
    print_message("wrong CA (endpoint): %s\n", cl->errstr);
    assert_non_null(strstr(cl->errstr, "certificate"));
    cp_free(cl);
    wo.endpoint = NULL;
    wo.seeds = f->endpoints;
    cp_test_protocol(&wo);
    cl = cp_connect(&wo);
    assert_non_null(cl);
    assert_int_not_equal(cl->err, 0);
    print_message("wrong CA (cluster): %s: %s\n", cp_strerror(cl->err), cl->errstr);
    assert_non_null(strstr(cl->errstr, "certificate"));
    cp_free(cl);

    /* tls_server_name is the name verified, not the address dialled: the servers' certificate
     * names IP:127.0.0.1 and DNS:localhost, so dialling 127.0.0.1 verifies as "localhost" and
     * fails as a name the certificate lacks (which the address alone would have passed). */
    cp_options no = CP_OPTIONS_INIT;
    no.seeds = f->endpoints;
    cp_topo_client_options(t, &no);
    no.tls_server_name = "localhost";
    cp_test_protocol(&no);
    cl = cp_connect(&no);
    assert_non_null(cl);
    if (cl->err)
        fail_msg("tls_server_name localhost: %s", cl->errstr);
    pipeline_set_get(cl, 64, "sni");
    cp_free(cl);
    no.tls_server_name = "not-in-the-certificate.example";
    cp_test_protocol(&no);
    cl = cp_connect(&no);
    assert_non_null(cl);
    assert_int_not_equal(cl->err, 0);
    print_message("tls_server_name not in the certificate: %s: %s\n", cp_strerror(cl->err),
                  cl->errstr);
    assert_non_null(strstr(cl->errstr, "certificate"));
    cp_free(cl);

    /* status over TLS, then down: every PID gone, the directory (keys included) removed. */
    const char *status[] = {"status", "--dir", f->dir, NULL};
    if (cp_clirun_run(&c->run, status) != 0)
        fail_msg("status: %s\n%s", c->run.out, c->run.err);
    snprintf(path, sizeof(path), "tls: on (CA %s)", ca);
    assert_non_null(strstr(c->run.out, path));
    assert_non_null(strstr(c->run.out, "cluster state: ok"));
    assert_null(strstr(c->run.out, cp_topo_password(t)));
    assert_int_equal(cp_fixture_alive(f), 3);
    assert_int_equal(cp_topo_down(t, 0, err, sizeof(err)), 0);
    assert_int_equal(cp_fixture_alive(f), 0);
    struct stat st;
    assert_int_not_equal(stat(f->dir, &st), 0);
}

/* Admin operations over TLS: cp_topo_migrate_slots moves keys with their slots, a replica is
 * added and takes over by failover, the old master restarts as its replica; every value reads
 * back intact. */
static void test_tls_operations(void **state) {
    ctx *c = *state;
    cp_fixture *f = c->fx = tls_cluster(3, 0);
    cp_topo *t = f->topo;
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = f->endpoints;
    cp_topo_client_options(t, &o);
    cp_test_protocol(&o);
    cp_client *cl = cp_connect(&o);
    assert_non_null(cl);
    assert_int_equal(cl->err, 0);
    pipeline_set_get(cl, NKEYS, "mig");
    int p0 = cp_topo_proc(t, 0)->port, p1 = cp_topo_proc(t, 1)->port;
    long long d0 = dbsize(t, p0), d1 = dbsize(t, p1);
    /* Master 0 owns 0..5460; migrate_slots moves its highest ones. */
    enum { NSLOTS = 300, HI = 5460 };
    long long moving = 0;
    char key[32];
    for (int i = 0; i < NKEYS; i++) {
        int len = snprintf(key, sizeof(key), "mig:%d", i);
        unsigned s = cp_keyslot(key, (size_t)len);
        moving += s > HI - NSLOTS && s <= HI;
    }
    assert_int_gt(moving, 0);
    char err[2048];
    if (cp_topo_migrate_slots(t, 0, 1, NSLOTS, err, sizeof(err)) != 0)
        fail_msg("migrate over TLS: %s", err);
    assert_int_equal(cp_topo_check(t, err, sizeof(err)), 0);
    assert_int_equal(dbsize(t, p0), d0 - moving);
    assert_int_equal(dbsize(t, p1), d1 + moving);
    /* The old client follows MOVED; a new one reads the new map. Every value intact. */
    cp_pipeline *p = cp_pipeline_new(cl);
    check_values(p, NKEYS, "mig");
    cp_pipeline_free(p);
    cp_free(cl);
    cp_test_protocol(&o);
    cl = cp_connect(&o);
    assert_int_equal(cl->err, 0);
    p = cp_pipeline_new(cl);
    check_values(p, NKEYS, "mig");
    cp_pipeline_reset(p);

    /* A replica of master 1 joins over TLS (MEET, REPLICATE, TLS replication) and takes over. */
    size_t rep = 0;
    if (cp_topo_add_node(t, 1, &rep, err, sizeof(err)) != 0)
        fail_msg("add_node over TLS: %s", err);
    assert_int_equal(dbsize(t, cp_topo_proc(t, rep)->port), d1 + moving);
    if (cp_topo_failover(t, rep, err, sizeof(err)) != 0)
        fail_msg("failover over TLS: %s", err);
    assert_int_equal(cp_topo_proc(t, rep)->role, CP_ROLE_MASTER);
    assert_int_equal(cp_topo_check(t, err, sizeof(err)), 0);
    /* The old master, now a replica, restarts and links again over TLS. */
    if (cp_topo_restart(t, 1, err, sizeof(err)) != 0)
        fail_msg("restart over TLS: %s", err);
    assert_int_equal(cp_topo_proc(t, 1)->role, CP_ROLE_REPLICA);
    assert_int_equal(cp_topo_check(t, err, sizeof(err)), 0);
    check_values(p, NKEYS, "mig");
    cp_pipeline_free(p);
    cp_free(cl);
}

static void count_spawn(void *ud, const cp_proc *p) {
    (void)p;
    ++*(size_t *)ud;
}

/* TLS needs the openssl command: missing or failing, the run fails before any server starts and
 * leaves no files behind. */
static void test_tls_openssl_failures(void **state) {
    ctx *c = *state;
    size_t spawned = 0;
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.shards = 1;
    o.tls = 1;
    o.quiet = 1;
    o.ephemeral = 1;
    o.openssl = "/nonexistent/openssl";
    o.on_spawn = count_spawn;
    o.hook_ud = &spawned;
    cp_topo *t = NULL;
    char err[2048];
    assert_int_equal(cp_topo_up(&o, &t, err, sizeof(err)), CP_EINVAL);
    assert_non_null(strstr(err, "apt-get install openssl"));
    cp_clitopo_new_dir(&c->topo, "sec");
    char sub[700];
    snprintf(sub, sizeof(sub), "%s/topo", c->topo.dir);
    o.dir = sub;
    o.openssl = "/bin/false";
    assert_int_not_equal(cp_topo_up(&o, &t, err, sizeof(err)), 0);
    assert_null(t);
    print_message("failing openssl: %s\n", err);
    assert_non_null(strstr(err, "generating the TLS CA"));
    struct stat st;
    assert_int_not_equal(stat(sub, &st), 0); /* the directory it created is gone */
    assert_int_equal(spawned, 0);            /* no server was started */
}

/* tls-auth-clients: a client without a certificate is refused, one with the generated client
 * certificate is served. */
static void test_tls_auth_clients(void **state) {
    ctx *c = *state;
    cp_fixture *f = c->fx = tls_cluster(1, 1);
    cp_topo *t = f->topo;
    assert_non_null(cp_topo_tls_client_cert(t));
    assert_mode(cp_topo_tls_client_key(t), 0600);
    int port = cp_topo_proc(t, 0)->port;
    char ep[64];
    snprintf(ep, sizeof(ep), "127.0.0.1:%d", port);
    cp_options o = CP_OPTIONS_INIT;
    o.endpoint = ep;
    o.connect_timeout_ms = o.io_timeout_ms = 2000;
    cp_topo_client_options(t, &o);
    o.tls_cert_file = o.tls_key_file = NULL;
    cp_test_protocol(&o);
    cp_client *cl = cp_connect(&o);
    assert_non_null(cl);
    redisReply *r = cl->err == 0 ? cp_command(cl, "PING") : NULL;
    assert_null(r);
    print_message("no client certificate: %s\n", cl->errstr);
    cp_free(cl);
    cl = endpoint_client(t, port);
    r = cp_command(cl, "PING");
    assert_non_null(r);
    assert_string_equal(r->str, "PONG");
    freeReplyObject(r);
    cp_free(cl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cli_default_password, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cli_no_password, setup, teardown),
        cmocka_unit_test_setup_teardown(test_twemproxy_default_password, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_cluster, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_operations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_openssl_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tls_auth_clients, setup, teardown),
    };
    return cmocka_run_group_tests_name("orch_security", tests, NULL, NULL);
}
