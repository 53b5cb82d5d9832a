/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `bench --rate --max-inflight` through a master's kill -9 and its replica's takeover, on a real
 * 3-master cluster with a replica each (stopped and checked by PID in the teardown): the killed
 * master's lanes reach the bound and shed past it, and what they shed is all that fails. The
 * requests waiting within the bound are answered by the promoted replica (or, for the writes
 * the kill cut off, unknown), never ended as not executed: a lane that sheds starts nothing
 * new, so only the waiting requests themselves bring the client to the new map.
 * Single-threaded test code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "clirun.h"
#include "fixture.h"
#include "util/clock.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define RATE 2000
#define SECONDS 8
#define CLIENTS 4
#define MAX_INFLIGHT 8

static int setup(void **state) {
    return cp_fixture_setup_cluster3x1(state);
}

static int teardown(void **state) {
    return cp_fixture_teardown(state);
}

static json_int_t field(json_t *j, const char *name) {
    json_t *v = json_object_get(j, name);
    if (!json_is_integer(v))
        fail_msg("the report has no integer %s", name);
    return json_integer_value(v);
}

static void test_kill_sheds_and_nothing_else_fails(void **state) {
    cp_fixture *f = *state;
    cp_clirun run;
    cp_clirun_init(&run);
    const char *load[] = {"load", "--dir", f->dir, "--keys", "3000", NULL};
    int rc = cp_clirun_run(&run, load);
    if (rc != 0)
        fail_msg("load exited %d: %s%s", rc, run.out, run.err);
    char jpath[4096];
    snprintf(jpath, sizeof(jpath), "%s", cp_clirun_path(&run, "shed.json"));
    char rate[16], secs[16], clients[16], bound[16];
    snprintf(rate, sizeof(rate), "%d", RATE);
    snprintf(secs, sizeof(secs), "%d", SECONDS);
    snprintf(clients, sizeof(clients), "%d", CLIENTS);
    snprintf(bound, sizeof(bound), "%d", MAX_INFLIGHT);
    const char *args[] = {"bench", "--dir",          f->dir, "--duration",
                          secs,    "--rate",         rate,   "--clients",
                          clients, "--pipeline",     "1",    "--keys",
                          "3000",  "--max-inflight", bound,  "--retry-budget",
                          "10000", "--json",         jpath,  NULL};
    pid_t pid = cp_clirun_start(&run, args);
    cp__sleep_ms(1500);
    size_t victim = cp_fixture_master(f, 0), heir = cp_fixture_replica(f, victim, 0);
    assert_int_not_equal(victim, SIZE_MAX);
    assert_int_not_equal(heir, SIZE_MAX);
    char err[1024];
    if (cp_topo_kill(f->topo, victim, SIGKILL, err, sizeof(err)) != 0)
        fail_msg("kill: %s", err);
    /* The replica takes over after the cluster's 2 s node timeout, well within the run. */
    assert_int_equal(cp_fixture_wait_master(f, heir, 5000), 0);
    rc = cp_clirun_finish(&run, pid, 60);
    assert_int_equal(rc, 1); /* requests shed: the run did not send its load */
    json_t *j = json_load_file(jpath, 0, NULL);
    assert_non_null(j);
    json_int_t shed = field(j, "shed_ops"), failed = field(j, "failed_ops");
    json_int_t unknown = field(j, "unknown_ops"), ops = field(j, "ops");
    /* The bound was reached: the killed master's share is a third of the rate, and it answered
     * nothing for at least the node timeout (2 s); its lanes hold CLIENTS * MAX_INFLIGHT. */
    assert_int_ge(shed, RATE / 3);
    /* What failed is what was shed: no request sent ended not executed, none got an error. */
    assert_int_equal(failed, shed);
    assert_int_equal(field(j, "error_replies"), 0);
    /* Unknown: only writes in flight on the killed master's lanes when it died. */
    assert_int_le(unknown, CLIENTS * MAX_INFLIGHT);
    /* Every request offered was answered, shed or cut off: the offered RATE * SECONDS, give or
     * take the run's last slot. */
    assert_int_ge(ops + shed + unknown, RATE * SECONDS - 100);
    assert_int_le(ops + shed + unknown, RATE * SECONDS + 100);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(j, "verify"), "mismatches")), 0);
    json_decref(j);
    cp_clirun_free(&run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_kill_sheds_and_nothing_else_fails, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, cp_fixture_group_teardown);
}
