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

#include "asserts.h"
#include "clirun.h"
#include "clitopo.h"
#include "testutil.h"

#include "orch/orch.h"
#include "orch/ports.h"
#include "util/clock.h"
#include "util/errmsg.h"
#include "util/file.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct ctx {
    cp_clirun cli;   /* runs the binary; cli.out / cli.err: the last run's output */
    cp_clitopo topo; /* the topology a test started ("" dir when none) */
    int listen_fd;   /* a socket holding a port busy, or -1 */
} ctx;

static int setup(void **state) {
    signal(SIGPIPE, SIG_IGN);
    ctx *c = calloc(1, sizeof(*c));
    cp_clirun_init(&c->cli);
    c->listen_fd = -1;
    *state = c;
    return 0;
}

/* Runs the CLI (args[0] is the subcommand); its output lands in c->cli.out / c->cli.err. */
static int run(ctx *c, const char *const *args) {
    return cp_clirun_run(&c->cli, args);
}

static int teardown(void **state) {
    ctx *c = *state;
    int rc = cp_clitopo_stop(&c->topo, &c->cli);
    if (c->listen_fd >= 0)
        close(c->listen_fd);
    cp_clirun_free(&c->cli);
    free(c);
    return rc;
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
    cp_clitopo_new_dir(&c->topo, "clitopo");
    const char *up[] = {"up", "cluster", "--shards", "3", "--dir", c->topo.dir, "-q", NULL};
    int rc = run(c, up);
    cp_clitopo_note(&c->topo);
    if (rc != 0)
        fail_msg("up: exit %d\n%s", rc, c->cli.err);
    assert_int_equal(c->topo.npids, 3);
    assert_int_equal(cp_clitopo_alive(&c->topo), 3);
    assert_non_null(strstr(c->cli.out, "endpoints: 127.0.0.1:"));
    char want[600];
    snprintf(want, sizeof(want), "dir: %s\n", c->topo.dir);
    assert_non_null(strstr(c->cli.out, want));
    snprintf(want, sizeof(want), "clusterpipe down --dir %s", c->topo.dir);
    assert_non_null(strstr(c->cli.out, want));
    assert_string_equal(c->cli.err, ""); /* -q */

    const char *status[] = {"status", "--dir", c->topo.dir, NULL};
    assert_int_equal(run(c, status), 0);
    assert_non_null(strstr(c->cli.out, "cluster state: ok"));
    const char *sjson[] = {"status", "--dir", c->topo.dir, "--json", NULL};
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
        assert_int_gt(json_integer_value(json_object_get(p, "used_memory")), 0);
        assert_int_equal(json_integer_value(json_object_get(p, "keys")), 0);
        assert_int_equal(json_integer_value(json_object_get(p, "pid")), c->topo.pids[i]);
    }
    json_decref(root);

    const char *down[] = {"down", "--dir", c->topo.dir, NULL};
    assert_int_equal(run(c, down), 0);
    assert_int_equal(cp_clitopo_alive(&c->topo), 0);
    struct stat st;
    assert_int_not_equal(stat(c->topo.dir, &st), 0);
    assert_int_equal(run(c, down), 0); /* twice is fine */
    assert_int_equal(run(c, status), 1);
}

static void test_busy_port(void **state) {
    ctx *c = *state;
    /* The port is held by the test itself from before `up` looks at it, so nothing running in
     * parallel can change the outcome (the old check-then-bind in the ephemeral range failed
     * when a TIME_WAIT socket passed the SO_REUSEADDR check and then failed a plain bind). */
    cp_clitopo_new_dir(&c->topo, "clitopo");
    int port = cp_test_fixed_base(1, c->topo.dir);
    assert_int_gt(port, 0);
    c->listen_fd = cp_test_listen(port);
    assert_int_ge(c->listen_fd, 0);
    char bp[16], want[32];
    snprintf(bp, sizeof(bp), "%d", port);
    const char *up[] = {"up", "cluster", "--shards",  "1", "--base-port",
                        bp,   "--dir",   c->topo.dir, NULL};
    assert_int_equal(run(c, up), 1);
    snprintf(want, sizeof(want), "port %d", port);
    assert_contains(c->cli.err, want);
    cp_clitopo_note(&c->topo);
    assert_int_equal(cp_clitopo_alive(&c->topo), 0);
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
    cp_clitopo_new_dir(&c->topo, "clitopo");
    const char *up[] = {"up", "cluster", "--shards",  "3", "--replicas",
                        "1",  "--dir",   c->topo.dir, NULL};
    pid_t pid = cp_clirun_start(&c->cli, up);
    for (int i = 0; i < 2000 && c->topo.npids < 2; i++) {
        cp_clitopo_note(&c->topo);
        cp__sleep_ms(5);
    }
    assert_int_ge(c->topo.npids, 2);
    kill(pid, SIGINT);
    int rc = cp_clirun_finish(&c->cli, pid, 120);
    cp_clitopo_note(&c->topo); /* the processes started after our last look, too */
    if (rc != 1)
        fail_msg("up after SIGINT: exit %d, want 1\n%s", rc, c->cli.err);
    assert_non_null(strstr(c->cli.err, "interrupted"));
    assert_int_equal(cp_clitopo_alive(&c->topo), 0);
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
