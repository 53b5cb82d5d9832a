/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `compare --command` and `scenario --command` through the binary. compare runs against a real
 * 3-master cluster and a real twemproxy given as external endpoints (fixtures, stopped by PID):
 * every case runs the templates (call types named after them), the table gets a part per command
 * with each command's ops/s and latency on both setups, the runs carry each command's part and
 * its .hgrm in OUT/latency, the reproducing bench commands carry the templates and report.md
 * says what ran. scenario
 * reshard on its own twemproxy runs the templates as its load, records each command's part and
 * says that nothing was read back. Single-threaded test code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "clirun.h"
#include "fixture.h"
#include "hgrm.h"
#include "jsoncheck.h"
#include "testutil.h"
#include "util/file.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HSET "HSET __tag__:h f __data__"
#define HGET "HGET __tag__:h f"

/* dir/results.json, loaded. */
static json_t *results_of(const char *dir) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/results.json", dir);
    return cp_json_load(path);
}

/* The text file dir/name holds every one of the NULL-terminated needles. */
static void file_has(const char *dir, const char *name, const char *const *needles) {
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    size_t len = 0;
    char *text = cp__read_file(path, 1u << 20, &len);
    if (text == NULL)
        fail_msg("%s: cannot be read", path);
    for (size_t i = 0; needles[i] != NULL; i++)
        if (strstr(text, needles[i]) == NULL)
            fail_msg("%s does not say '%s'", path, needles[i]);
    free(text);
}

/* The run's commands[] against the templates, and each command's .hgrm against its JSON. */
static void check_run_commands(const char *out, const json_t *run) {
    const json_t *cmds = json_object_get(run, "commands");
    if (json_array_size(cmds) != 2)
        fail_msg("%s: %zu commands", cp_json_str(run, "name"), json_array_size(cmds));
    const char *texts[2] = {HSET, HGET};
    double ops = 0;
    for (size_t k = 0; k < 2; k++) {
        const json_t *c = json_array_get(cmds, k);
        assert_string_equal(cp_json_str(c, "command"), texts[k]);
        assert_int_equal(json_is_true(json_object_get(c, "verified")), k == 1);
        double n = json_number_value(json_object_get(c, "ops"));
        assert_double_gt(n, 0);
        ops += n;
        char path[4200];
        snprintf(path, sizeof(path), "%s/latency/%s", out, cp_json_str(c, "hgrm"));
        cp_hgrm_check_json(path, json_object_get(c, "latency_us"), (unsigned long long)n);
    }
    assert_double_eq(ops, json_number_value(json_object_get(run, "ops")));
}

static void test_compare_commands(void **state) {
    (void)state;
    cp_fixture *cl = cp_fixture_cluster(3, 0);
    assert_non_null(cl);
    cp_fixture *tw = cp_fixture_twemproxy(2, 1);
    if (tw == NULL) {
        cp_fixture_stop(cl);
        fail_msg("twemproxy did not start");
    }
    char *out = cp_test_mkdtemp("cmpcmd");
    cp_clirun run;
    cp_clirun_init(&run);
    const char *args[] = {"compare",   "--cluster", cl->endpoints, "--proxy",  tw->endpoints,
                          "--out",     out,         "--threads",   "2",        "--requests",
                          "3000",      "--keys",    "1000",        "--repeat", "1",
                          "--command", HSET,        "--command",   HGET,       "--command-ratio",
                          "1,2",       "-q",        NULL};
    cp_clirun_expect(&run, args, 0);
    /* the published tables, by call type, then a table per call type, a row per command */
    assert_non_null(strstr(run.out, "| twemproxy | pipelined HSET/HGET |"));
    assert_non_null(strstr(run.out, "| cluster   | HSET/HGET           |"));
    assert_non_null(strstr(run.out, "Per command, HSET/HGET ("));
    assert_non_null(strstr(run.out, "Per command, pipelined HSET/HGET ("));
    assert_non_null(strstr(run.out, "| 1 | " HSET " | counted  |"));
    assert_non_null(strstr(run.out, "| 2 | " HGET "          | verified |"));
    assert_null(strstr(run.out, "FAILED"));
    json_t *doc = results_of(out);
    const json_t *set = json_object_get(doc, "settings");
    assert_string_equal(json_string_value(json_array_get(json_object_get(set, "commands"), 1)),
                        HGET);
    assert_string_equal(cp_json_str(set, "command_ratio"), "1,2");
    const json_t *runs = json_object_get(doc, "runs");
    assert_int_equal(json_array_size(runs), 4);
    for (size_t i = 0; i < 4; i++) {
        const json_t *r = json_array_get(runs, i);
        const char *call = cp_json_str(r, "call_type");
        if (strcmp(call, "HSET/HGET") != 0 && strcmp(call, "pipelined HSET/HGET") != 0)
            fail_msg("run %zu: call_type \"%s\", neither HSET/HGET nor pipelined HSET/HGET", i,
                     call);
        check_run_commands(out, r);
    }
    int reproduced = 0;
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(doc, "commands"), i, c) {
        const char *line = json_string_value(c);
        reproduced += strstr(line, "clusterpipe bench") != NULL &&
                      strstr(line, " --command '" HSET "' --command '" HGET "'") != NULL &&
                      strstr(line, " --command-ratio 1,2") != NULL;
    }
    assert_int_equal(reproduced, 4);
    json_decref(doc);
    /* table.md holds what was printed, report.md says what ran */
    file_has(out, "table.md", (const char *[]){"Per command, pipelined HSET/HGET (", NULL});
    file_has(out, "report.md",
             (const char *[]){"then the commands `" HSET "`, `" HGET "` (weights 1,2)",
                              "the other commands only counted", NULL});
    cp_clirun_free(&run);
    assert_int_equal(cp__rm_rf(out), 0);
    free(out);
    assert_int_equal(cp_fixture_stop(tw), 0);
    assert_int_equal(cp_fixture_stop(cl), 0);
}

static void test_scenario_commands(void **state) {
    (void)state;
    char *out = cp_test_mkdtemp("scncmd");
    cp_clirun run;
    cp_clirun_init(&run);
    const char *args[] = {"scenario",  "reshard", "--only",     "twemproxy", "--out",     out,
                          "--keys",    "2000",    "--duration", "3",         "--warmup",  "1",
                          "--threads", "1",       "--clients",  "2",         "--command", HSET,
                          "--command", HGET,      "-q",         NULL};
    cp_clirun_expect(&run, args, 0);
    json_t *doc = results_of(out);
    const json_t *set = json_object_get(doc, "settings");
    assert_string_equal(json_string_value(json_array_get(json_object_get(set, "commands"), 0)),
                        HSET);
    assert_true(json_is_null(json_object_get(set, "ratio")));
    const json_t *cases = json_object_get(doc, "cases");
    assert_int_equal(json_array_size(cases), 1);
    const json_t *c = json_array_get(cases, 0);
    assert_string_equal(cp_json_str(c, "name"), "twemproxy");
    assert_null(json_object_get(c, "error"));
    assert_null(json_object_get(c, "readback")); /* no versions tracked: nothing read back */
    assert_non_null(json_object_get(c, "summary"));
    assert_null(json_object_get(json_object_get(c, "summary"), "acked_writes_lost"));
    const json_t *bench = json_object_get(c, "bench");
    const json_t *cmds = json_object_get(bench, "commands");
    assert_int_equal(json_array_size(cmds), 2);
    for (size_t k = 0; k < 2; k++) {
        const json_t *x = json_array_get(cmds, k);
        assert_double_gt(json_number_value(json_object_get(x, "ops")), 0);
        assert_double_eq(
            json_number_value(json_object_get(json_object_get(x, "verify"), "mismatches")), 0);
    }
    assert_non_null(strstr(cp_json_str(bench, "command_line"), "--command '" HSET "'"));
    json_decref(doc);
    file_has(out, "report.md",
             (const char *[]){"the commands `" HSET "`, `" HGET "` (weights 1,1)",
                              "nothing is read back", NULL});
    cp_clirun_free(&run);
    assert_int_equal(cp__rm_rf(out), 0);
    free(out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compare_commands),
        cmocka_unit_test(test_scenario_commands),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
