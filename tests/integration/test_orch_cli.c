/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Integration tests of `clusterpipe up / status / down` as a user runs them (the built binary,
 * CP_BINARY): exit codes for bad flags (2), failed runs (1) and success (0), a full
 * up/status/down cycle with every PID gone afterwards, a busy port, a missing binary, and SIGINT
 * during `up` leaving nothing running. Topologies started through the CLI are not ephemeral, so
 * the teardown runs `clusterpipe down` and kills by PID whatever state.json still lists.
 * Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "clirun.h"
#include "testutil.h"

#include "clusterpipe/orch.h"
#include "orch/ports.h"
#include "orch/util.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct ctx {
    cp_clirun cli;  /* runs the binary; cli.out / cli.err: the last run's output */
    char dir[512];  /* topology directory, "" when none */
    int listen_fd;  /* a socket holding a port busy, or -1 */
    pid_t pids[64]; /* processes seen in state.json */
    unsigned long long starts[64];
    size_t npids;
} ctx;

static int setup(void **state) {
    signal(SIGPIPE, SIG_IGN);
    ctx *c = calloc(1, sizeof(*c));
    cp_clirun_init(&c->cli);
    c->listen_fd = -1;
    *state = c;
    return 0;
}

/* Records the PIDs state.json in dir lists (new ones only). */
static void note_pids(ctx *c, const char *dir) {
    cp_topo *t = NULL;
    char e[256];
    if (cp_topo_open(dir, &t, e, sizeof(e)) != 0)
        return;
    for (size_t i = 0; i < cp_topo_nprocs(t); i++) {
        const cp_proc *p = cp_topo_proc(t, i);
        int seen = p->pid <= 0;
        for (size_t k = 0; k < c->npids && !seen; k++)
            seen = c->pids[k] == p->pid && c->starts[k] == p->start_time;
        if (!seen && c->npids < 64) {
            c->pids[c->npids] = p->pid;
            c->starts[c->npids++] = p->start_time;
        }
    }
    cp_topo_free(t);
}

static size_t alive(const ctx *c) {
    size_t n = 0;
    for (size_t k = 0; k < c->npids; k++)
        n += cp_orch_pid_alive(c->pids[k], c->starts[k]) ? 1 : 0;
    return n;
}

/* Runs the CLI (args[0] is the subcommand); its output lands in c->cli.out / c->cli.err. */
static int run(ctx *c, const char *const *args) {
    return cp_clirun_run(&c->cli, args);
}

static int teardown(void **state) {
    ctx *c = *state;
    int rc = 0;
    if (c->dir[0]) {
        note_pids(c, c->dir);
        const char *args[] = {"down", "--dir", c->dir, NULL};
        run(c, args);
    }
    for (size_t k = 0; k < c->npids; k++)
        if (cp_orch_pid_alive(c->pids[k], c->starts[k])) {
            kill(c->pids[k], SIGKILL);
            rc = -1;
        }
    if (c->dir[0])
        cp__rm_rf(c->dir);
    if (c->listen_fd >= 0)
        close(c->listen_fd);
    cp_clirun_free(&c->cli);
    free(c);
    return rc;
}

static void new_dir(ctx *c) {
    char *d = cp_test_mkdtemp("clitopo");
    snprintf(c->dir, sizeof(c->dir), "%s", d);
    free(d);
}

static void test_usage_errors(void **state) {
    ctx *c = *state;
    static const char *const bad[][8] = {
        {"up", NULL},
        {"up", "mesh", NULL},
        {"up", "cluster", "--shards", "0", NULL},
        {"up", "cluster", "--shards", "three", NULL},
        {"up", "cluster", "--shards", NULL},
        {"up", "cluster", "--replicas", "-1", NULL},
        {"up", "cluster", "--proxies", "2", NULL},
        {"up", "cluster", "--hash", "murmur", NULL},
        {"up", "twemproxy", "--replicas", "1", NULL},
        {"up", "twemproxy", "--hash", "sha1", NULL},
        {"up", "twemproxy", "--distribution", "consistent", NULL},
        {"up", "cluster", "--base-port", "80", NULL},
        {"up", "cluster", "--base-port", "55530", "--shards", "8", NULL},
        {"up", "cluster", "--bogus", NULL},
        {"up", "cluster", "--dir", NULL},
        {"status", NULL},
        {"status", "--dir", NULL},
        {"status", "--dir", "x", "--bogus", NULL},
        {"down", NULL},
        {"down", "--dir", "x", "--bogus", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = run(c, bad[i]);
        if (rc != 2)
            fail_msg("clusterpipe %s %s %s: exit %d, want 2\n%s", bad[i][0],
                     bad[i][1] ? bad[i][1] : "", bad[i][1] && bad[i][2] ? bad[i][2] : "", rc,
                     c->cli.err);
        assert_non_null(strstr(c->cli.err, "--help"));
        assert_string_equal(c->cli.out, "");
    }
    static const char *const help[][4] = {
        {"up", "--help", NULL},
        {"up", "cluster", "--help", NULL},
        {"status", "--help", NULL},
        {"down", "-h", NULL},
    };
    for (size_t i = 0; i < sizeof(help) / sizeof(help[0]); i++) {
        assert_int_equal(run(c, help[i]), 0);
        assert_non_null(strstr(c->cli.out, "usage: clusterpipe"));
    }
}

static void test_no_topology(void **state) {
    ctx *c = *state;
    const char *status[] = {"status", "--dir", "/nonexistent/clusterpipe", NULL};
    assert_int_equal(run(c, status), 1);
    assert_non_null(strstr(c->cli.err, "no topology"));
    const char *down[] = {"down", "--dir", "/nonexistent/clusterpipe", NULL};
    assert_int_equal(run(c, down), 0);
}

static void test_up_status_down(void **state) {
    ctx *c = *state;
    new_dir(c);
    const char *up[] = {"up", "cluster", "--shards", "3", "--dir", c->dir, "-q", NULL};
    int rc = run(c, up);
    note_pids(c, c->dir);
    if (rc != 0)
        fail_msg("up: exit %d\n%s", rc, c->cli.err);
    assert_int_equal(c->npids, 3);
    assert_int_equal(alive(c), 3);
    assert_non_null(strstr(c->cli.out, "endpoints: 127.0.0.1:"));
    char want[600];
    snprintf(want, sizeof(want), "dir: %s\n", c->dir);
    assert_non_null(strstr(c->cli.out, want));
    snprintf(want, sizeof(want), "clusterpipe down --dir %s", c->dir);
    assert_non_null(strstr(c->cli.out, want));
    assert_string_equal(c->cli.err, ""); /* -q */

    const char *status[] = {"status", "--dir", c->dir, NULL};
    assert_int_equal(run(c, status), 0);
    assert_non_null(strstr(c->cli.out, "cluster state: ok"));
    const char *sjson[] = {"status", "--dir", c->dir, "--json", NULL};
    assert_int_equal(run(c, sjson), 0);
    json_error_t je;
    json_t *root = json_loads(c->cli.out, 0, &je);
    if (root == NULL)
        fail_msg("status --json: %s\n%s", je.text, c->cli.out);
    assert_string_equal(json_string_value(json_object_get(root, "schema")), "clusterpipe.status/1");
    assert_true(json_is_true(json_object_get(root, "healthy")));
    json_t *procs = json_object_get(root, "processes");
    assert_int_equal(json_array_size(procs), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *p = json_array_get(procs, i);
        assert_true(json_is_true(json_object_get(p, "alive")));
        assert_string_equal(json_string_value(json_object_get(p, "role")), "master");
        assert_true(json_integer_value(json_object_get(p, "used_memory")) > 0);
        assert_int_equal(json_integer_value(json_object_get(p, "keys")), 0);
        assert_int_equal(json_integer_value(json_object_get(p, "pid")), c->pids[i]);
    }
    json_decref(root);

    const char *down[] = {"down", "--dir", c->dir, NULL};
    assert_int_equal(run(c, down), 0);
    assert_int_equal(alive(c), 0);
    struct stat st;
    assert_int_not_equal(stat(c->dir, &st), 0);
    assert_int_equal(run(c, down), 0); /* twice is fine */
    assert_int_equal(run(c, status), 1);
}

static void test_busy_port(void **state) {
    ctx *c = *state;
    int port = 0;
    for (int p = 47000 + (int)(getpid() % 200) * 20; p < 55000 && port == 0; p += 7)
        if (cp__port_free(p) && cp__port_free(p + CP__BUS_OFFSET))
            port = p;
    assert_true(port > 0);
    c->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(c->listen_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(c->listen_fd, 1), 0);
    new_dir(c);
    char bp[16], want[32];
    snprintf(bp, sizeof(bp), "%d", port);
    const char *up[] = {"up", "cluster", "--shards", "1", "--base-port", bp, "--dir", c->dir, NULL};
    assert_int_equal(run(c, up), 1);
    snprintf(want, sizeof(want), "port %d", port);
    assert_non_null(strstr(c->cli.err, want));
    note_pids(c, c->dir);
    assert_int_equal(alive(c), 0);
}

static void test_missing_binary(void **state) {
    ctx *c = *state;
    const char *up[] = {"up", "cluster", "--redis-server", "/nonexistent/redis-server", NULL};
    assert_int_equal(run(c, up), 1);
    assert_non_null(strstr(c->cli.err, "apt-get install redis-server"));
}

/* SIGINT while `up` forms a cluster: exit 1, and every process it had started is gone. */
static void test_sigint_during_up(void **state) {
    ctx *c = *state;
    new_dir(c);
    const char *up[] = {"up", "cluster", "--shards", "3", "--replicas", "1", "--dir", c->dir, NULL};
    pid_t pid = cp_clirun_start(&c->cli, up);
    for (int i = 0; i < 2000 && c->npids < 2; i++) {
        note_pids(c, c->dir);
        cp__sleep_ms(5);
    }
    assert_true(c->npids >= 2);
    kill(pid, SIGINT);
    int rc = cp_clirun_finish(&c->cli, pid, 120);
    note_pids(c, c->dir); /* the processes started after our last look, too */
    if (rc != 1)
        fail_msg("up after SIGINT: exit %d, want 1\n%s", rc, c->cli.err);
    assert_non_null(strstr(c->cli.err, "interrupted"));
    assert_int_equal(alive(c), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_usage_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_topology, setup, teardown),
        cmocka_unit_test_setup_teardown(test_up_status_down, setup, teardown),
        cmocka_unit_test_setup_teardown(test_busy_port, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_binary, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigint_during_up, setup, teardown),
    };
    return cmocka_run_group_tests_name("orch_cli", tests, NULL, NULL);
}
