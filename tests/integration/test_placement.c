/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Placement really pins: the compare experiment (tiny, both setups) with --cpus, every spawned
 * redis-server and nutcracker's Cpus_allowed_list read from /proc/PID/status right after it was
 * spawned (the on_spawn hook; the exec already happened), and the CPUs the client's bench threads
 * had, which the engine reads from /proc/self/task/ * while they wait at the start gate. The
 * same run without placement is the control: there every process may use every CPU, so the
 * pinned run's answers cannot come from the machine's defaults. Bad --cpus values exit 2 and
 * start nothing.
 *
 * Needs 2 usable CPUs (skipped otherwise). Single-threaded; the engine's threads live inside
 * cp__compare_run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "clirun.h"
#include "compare/compare.h"
#include "orch/orch.h"
#include "util/cpuset.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

#define MAXP 32

typedef struct spawned {
    int n;
    cp_proc_role role[MAXP];
    char cpus[MAXP][64];
} spawned;

/* Cpus_allowed_list of pid, parsed here rather than through the code under test. */
static void read_allowed(pid_t pid, char *out, size_t len) {
    assert_int_ge(len, 64); /* the sscanf width below */
    char path[64], line[512];
    snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    out[0] = '\0';
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "Cpus_allowed_list: %63s", out) == 1)
            break;
    fclose(f);
    assert_int_not_equal(out[0], '\0');
}

static void on_spawn(void *ud, const cp_proc *p) {
    spawned *s = ud;
    assert_int_lt(s->n, MAXP);
    s->role[s->n] = p->role;
    read_allowed(p->pid, s->cpus[s->n], sizeof(s->cpus[0]));
    s->n++;
}

static int two_cpus(void) {
    cpu_set_t u;
    return cp__cpuset_usable(&u) == 0 && CPU_ISSET(0, &u) && CPU_ISSET(1, &u);
}

/* A tiny experiment (both setups) with placement pl (NULL: none); the document's runs. */
static json_t *run(const cp__placement *pl, spawned *s) {
    cp__compare_opts o;
    cp__compare_opts_init(&o, NULL);
    o.threads = 2;
    o.clients = 2;
    o.requests = 2000;
    o.keys = 500;
    o.repeat = 1;
    o.placement = pl;
    o.on_spawn = on_spawn;
    o.ud = s;
    json_t *doc = NULL;
    char err[4096] = "";
    int rc = cp__compare_run(&o, &doc, err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "compare: %s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(json_array_size(json_object_get(doc, "runs")), 4);
    return doc;
}

static void test_pinned(void **state) {
    (void)state;
    if (!two_cpus())
        skip();
    char self_before[64], self_after[64];
    read_allowed(getpid(), self_before, sizeof(self_before));
    cp__placement pl;
    cp__placement_init(&pl);
    char err[256];
    assert_int_equal(cp__placement_parse(&pl, "redis=0,client=1", err, sizeof(err)), 0);
    assert_int_equal(cp__placement_parse_side(&pl, "clients", err, sizeof(err)), 0);
    assert_int_equal(cp__placement_resolve(&pl, err, sizeof(err)), 0);
    spawned s = {0};
    json_t *doc = run(&pl, &s);
    assert_int_equal(s.n, 4 + 4 + 4); /* twemproxy: 4 shards + 4 proxies; cluster: 4 masters */
    for (int i = 0; i < s.n; i++)
        assert_string_equal(s.cpus[i], s.role[i] == CP_ROLE_PROXY ? "1" : "0");
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(doc, "runs"), i, r) {
        assert_string_equal(json_string_value(json_object_get(r, "client_threads_cpus")), "1");
    }
    /* The calling thread itself was never pinned: only what was started for the client is. */
    read_allowed(getpid(), self_after, sizeof(self_after));
    assert_string_equal(self_before, self_after);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(doc, "placement"), "proxy")), "1");
    json_decref(doc);
}

static void test_unpinned_control(void **state) {
    (void)state;
    if (!two_cpus())
        skip();
    char all[64];
    read_allowed(getpid(), all, sizeof(all));
    spawned s = {0};
    json_t *doc = run(NULL, &s);
    for (int i = 0; i < s.n; i++)
        assert_string_equal(s.cpus[i], all);
    const json_t *r0 = json_array_get(json_object_get(doc, "runs"), 0);
    assert_string_equal(json_string_value(json_object_get(r0, "client_threads_cpus")), all);
    const json_t *placement = json_object_get(doc, "placement");
    if (placement != NULL && !json_is_null(placement))
        fail_msg("placement is set (JSON type %d), neither null nor absent",
                 (int)json_typeof(placement));
    json_decref(doc);
}

static void test_bad_cpus_exit_2(void **state) {
    (void)state;
    cp_clirun c;
    cp_clirun_init(&c);
    const char *out = cp_clirun_path(&c, "out");
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", out);
    const char *bad[][6] = {
        {"compare", "--cpus", "redis=100000", "--out", dir, NULL},
        {"compare", "--cpus", "servers=0", "--out", dir, NULL},
        {"compare", "--cpus", "redis=3-1", "--out", dir, NULL},
        {"compare", "--proxy-placement", "clients", "--out", dir, NULL},
        {"compare", "--proxy-placement", "sidecar", "--out", dir, NULL},
        {"compare", "--proxy-placement", "tier", "--out", dir, NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(cp_clirun_run(&c, bad[i]), 2);
        assert_non_null(strstr(c.err, bad[i][1]));
    }
    /* a CPU that exists in the list format but not on this machine: refused before any spawn */
    const char *absent[] = {"compare", "--cpus", "redis=1000", "--out", dir, NULL};
    assert_int_equal(cp_clirun_run(&c, absent), 2);
    assert_non_null(strstr(c.err, "not usable here"));
    const char *both[] = {"compare", "--cpus", "proxy=0", "--proxy-placement",
                          "servers", "--out",  dir,       NULL};
    assert_int_equal(cp_clirun_run(&c, both), 2);
    cp_clirun_free(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pinned),
        cmocka_unit_test(test_unpinned_control),
        cmocka_unit_test(test_bad_cpus_exit_2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
