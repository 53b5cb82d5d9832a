/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The rows of docs/bad-input.md that no other test covers, through the `clusterpipe` binary as a
 * user meets them: an unknown subcommand, a flag without its value, negative and overflowing
 * numbers, a wrong password, a node that answers garbage, closes mid-reply or stalls (scripted
 * fake nodes behind --proxy), the --dir of a topology that is gone, an unwritable output path,
 * and SIGINT mid-run. Each: the exit code, a message that names the problem, nothing left
 * running, and no result file that looks complete.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "asserts.h"
#include <jansson.h>

#include "clirun.h"
#include "fakenode.h"
#include "fixture.h"

typedef struct row {
    const char *args[16];
    int code;           /* exit code */
    const char *needle; /* must appear on stderr */
} row;

static void check_rows(const row *rows, size_t n) {
    cp_clirun run;
    cp_clirun_init(&run);
    for (size_t i = 0; i < n; i++) {
        int rc = cp_clirun_run(&run, rows[i].args);
        if (rc != rows[i].code || strstr(run.err, rows[i].needle) == NULL)
            fail_msg("row %zu (%s %s ...): exit %d, stderr '%s' (want %d naming '%s')", i,
                     rows[i].args[0], rows[i].args[1] ? rows[i].args[1] : "", rc, run.err,
                     rows[i].code, rows[i].needle);
    }
    cp_clirun_free(&run);
}

static void usage_rows(void **state) {
    (void)state;
    static const row rows[] = {
        {{"frobnicate", NULL}, 2, "unknown command 'frobnicate'"},
        {{"bench", "--cluster", NULL}, 2, "--cluster"},
        {{"bench", "--proxy", "127.0.0.1:1", "--threads", "-3", NULL}, 2, "--threads"},
        {{"bench", "--proxy", "127.0.0.1:1", "--requests", "99999999999999999999999", NULL},
         2,
         "--requests"},
        {{"bench", "--proxy", "127.0.0.1:1", "--pipeline", "4294967297", NULL}, 2, "--pipeline"},
        {{"up", "cluster", "--shards", "99999999999", NULL}, 2, "--shards"},
        {{"up", "cluster", "--replicas", "-1", NULL}, 2, "--replicas"},
        {{"up", "cluster", "--rtt", "fast", NULL}, 2, "--rtt"},
        {{"up", "cluster", "--rtt", "1ms~2ms", NULL}, 2, "--rtt"},
        {{"up", "cluster", "--rtt", "1ms", "--tls", NULL}, 2, "--rtt and --tls"},
        {{"up", "twemproxy", "--rtt", "1ms", "--proxy-placement", "moon", NULL},
         2,
         "not servers, clients or tier"},
        {{"up", "cluster", "--proxy-placement", "tier", NULL},
         2,
         "--proxy-placement is a twemproxy"},
        {{"load", "--proxy", "127.0.0.1:1", "--keys", "-5", NULL}, 2, "--keys"},
        {{"compare", "--repeat", "0", NULL}, 2, "--repeat"},
        {{"status", NULL}, 2, "--dir"},
    };
    check_rows(rows, sizeof(rows) / sizeof(rows[0]));
}

static void wrong_password(void **state) {
    (void)state;
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.kind = CP_TOPO_CLUSTER;
    o.shards = 3;
    o.password = "right-password";
    cp_fixture *f = cp_fixture_start(&o);
    assert_non_null(f);
    const row rows[] = {
        {{"bench", "--cluster", f->endpoints, "--password", "wrong", "--requests", "10", NULL},
         1,
         "WRONGPASS"},
        {{"bench", "--cluster", f->endpoints, "--requests", "10", NULL}, 1, "NOAUTH"},
        {{"load", "--cluster", f->endpoints, "--password", "wrong", "--keys", "10", NULL},
         1,
         "WRONGPASS"},
    };
    check_rows(rows, sizeof(rows) / sizeof(rows[0]));
    assert_int_equal(cp_fixture_stop(f), 0);
}

/* `bench --proxy` against a fake node scripted to misbehave on the 50th GET. */
static void misbehaving_node(fake_action action, const char *payload, const char *needle) {
    fake_node *n = fake_node_start();
    assert_non_null(n);
    fake_rule r = {"GET", NULL, 50, 1, action, payload, 0, 0};
    assert_int_ge(fake_node_rule(n, &r), 0);
    char ep[64];
    snprintf(ep, sizeof(ep), "127.0.0.1:%d", fake_node_port(n));
    cp_clirun run;
    cp_clirun_init(&run);
    const char *json = cp_clirun_path(&run, "out.json");
    char jpath[4096];
    snprintf(jpath, sizeof(jpath), "%s", json);
    const char *args[] = {"bench",     "--proxy", ep,           "--requests", "2000",
                          "--clients", "2",       "--pipeline", "4",          "--retry-budget",
                          "0",         "--json",  jpath,        NULL};
    time_t t0 = time(NULL);
    int rc = cp_clirun_run(&run, args);
    if (rc != 1 || strstr(run.err, needle) == NULL)
        fail_msg("exit %d, stderr '%s' (want 1 naming '%s')", rc, run.err, needle);
    assert_int_lt(time(NULL) - t0, 60); /* ended by the I/O timeout, not a hang */
    /* The summary is still printed and the failures are counted in the report. */
    assert_non_null(strstr(run.out, "failed"));
    json_error_t je;
    json_t *j = json_load_file(jpath, 0, &je);
    assert_non_null(j);
    json_int_t failed = json_integer_value(json_object_get(j, "failed_ops")) +
                        json_integer_value(json_object_get(j, "unknown_ops"));
    assert_int_gt(failed, 0);
    json_decref(j);
    cp_clirun_free(&run);
    fake_node_stop(n);
}

static void node_answers_garbage(void **state) {
    (void)state;
    misbehaving_node(FAKE_GARBAGE, "%%%garbage\r\n", "protocol error");
}

static void node_closes_mid_reply(void **state) {
    (void)state;
    misbehaving_node(FAKE_PARTIAL_CLOSE, "$10\r\nabc", "closed");
}

static void node_stalls(void **state) {
    (void)state;
    misbehaving_node(FAKE_STALL, NULL, "no reply within");
}

/* A topology whose processes are gone (down --keep) and one whose directory is gone. */
static void dir_of_gone_topology(void **state) {
    (void)state;
    cp_clirun run;
    cp_clirun_init(&run);
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", cp_clirun_path(&run, "topo"));
    const char *up[] = {"up",    "cluster", "--shards", "1", "--no-password",
                        "--dir", dir,       "-q",       NULL};
    assert_int_equal(cp_clirun_run(&run, up), 0);
    const char *down[] = {"down", "--dir", dir, "--keep", NULL};
    assert_int_equal(cp_clirun_run(&run, down), 0);
    const row rows[] = {
        {{"bench", "--dir", dir, "--requests", "10", NULL}, 1, "not running"},
        {{"load", "--dir", dir, "--keys", "10", NULL}, 1, "not running"},
        {{"bench", "--dir", "/nonexistent/cp-gone", NULL}, 1, "/nonexistent/cp-gone"},
    };
    check_rows(rows, sizeof(rows) / sizeof(rows[0]));
    const char *st[] = {"status", "--dir", dir, NULL};
    assert_int_equal(cp_clirun_run(&run, st), 1); /* status reports it down */
    const char *rm[] = {"down", "--dir", dir, NULL};
    assert_int_equal(cp_clirun_run(&run, rm), 0);
    cp_clirun_free(&run);
}

/* /etc/passwd is a file, so nothing can be created under it, even by root. */
static void unwritable_output(void **state) {
    (void)state;
    fake_node *n = fake_node_start();
    char ep[64];
    snprintf(ep, sizeof(ep), "127.0.0.1:%d", fake_node_port(n));
    const row rows[] = {
        {{"bench", "--proxy", ep, "--requests", "100", "--json", "/etc/passwd/x.json", NULL},
         1,
         "/etc/passwd/x.json"},
        {{"bench", "--proxy", ep, "--requests", "100", "--csv", "/etc/passwd/x.csv", NULL},
         1,
         "/etc/passwd/x.csv"},
        {{"compare", "--out", "/etc/passwd/results", NULL}, 1, "/etc/passwd/results"},
    };
    check_rows(rows, sizeof(rows) / sizeof(rows[0]));
    fake_node_stop(n);
}

static void sigint_mid_run(void **state) {
    (void)state;
    fake_node *n = fake_node_start();
    char ep[64];
    snprintf(ep, sizeof(ep), "127.0.0.1:%d", fake_node_port(n));
    cp_clirun run;
    cp_clirun_init(&run);
    char json[4096], csv[4096];
    snprintf(json, sizeof(json), "%s", cp_clirun_path(&run, "out.json"));
    snprintf(csv, sizeof(csv), "%s", cp_clirun_path(&run, "out.csv"));
    const char *args[] = {"bench",  "--proxy", ep,      "--duration", "60",
                          "--json", json,      "--csv", csv,          NULL};
    pid_t pid = cp_clirun_start(&run, args);
    sleep(2);
    kill(pid, SIGINT);
    int rc = cp_clirun_finish(&run, pid, 30);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(run.err, "interrupted"));
    json_error_t je;
    json_t *j = json_load_file(json, 0, &je);
    assert_non_null(j);
    assert_true(json_is_true(json_object_get(j, "interrupted")));
    json_decref(j);
    struct stat st;
    assert_int_not_equal(stat(csv, &st), 0);
    cp_clirun_free(&run);
    fake_node_stop(n);
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(usage_rows),           cmocka_unit_test(wrong_password),
        cmocka_unit_test(node_answers_garbage), cmocka_unit_test(node_closes_mid_reply),
        cmocka_unit_test(node_stalls),          cmocka_unit_test(dir_of_gone_topology),
        cmocka_unit_test(unwritable_output),    cmocka_unit_test(sigint_mid_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
