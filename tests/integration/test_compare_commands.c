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

#include "clirun.h"
#include "fixture.h"
#include "hgrm.h"
#include "testutil.h"
#include "util/file.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HSET "HSET __tag__:h f __data__"
#define HGET "HGET __tag__:h f"

static json_t *load_json(const char *path) {
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (j == NULL)
        fail_msg("%s: %s", path, je.text);
    return j;
}

static const char *str(const json_t *o, const char *k) {
    const char *s = json_string_value(json_object_get(o, k));
    if (s == NULL)
        fail_msg("'%s' is not a string", k);
    return s != NULL ? s : "";
}

/* The run's commands[] against the templates, and each command's .hgrm against its JSON. */
static void check_run_commands(const char *out, const json_t *run) {
    const json_t *cmds = json_object_get(run, "commands");
    if (json_array_size(cmds) != 2)
        fail_msg("%s: %zu commands", str(run, "name"), json_array_size(cmds));
    const char *texts[2] = {HSET, HGET};
    double ops = 0;
    for (size_t k = 0; k < 2; k++) {
        const json_t *c = json_array_get(cmds, k);
        assert_string_equal(str(c, "command"), texts[k]);
        assert_int_equal(json_is_true(json_object_get(c, "verified")), k == 1);
        double n = json_number_value(json_object_get(c, "ops"));
        assert_true(n > 0);
        ops += n;
        char path[4200];
        snprintf(path, sizeof(path), "%s/latency/%s", out, str(c, "hgrm"));
        cp_hgrm_check_json(path, json_object_get(c, "latency_us"), (unsigned long long)n);
    }
    assert_int_equal(ops, json_number_value(json_object_get(run, "ops")));
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
    const char *args[] = {"compare",   "--cluster",       cl->endpoints, "--proxy",  tw->endpoints,
                          "--out",     out,               "--threads",   "2",        "--requests",
                          "3000",      "--keys",          "1000",        "--repeat", "1",
                          "--command", HSET,              "--command",   HGET,       "--command-ratio",
                          "1,2",       "-q",              NULL};
    int rc = cp_clirun_run(&run, args);
    if (rc != 0)
        fail_msg("compare exited %d: %s%s", rc, run.out, run.err);
    /* the published tables, by call type, then a table per call type, a row per command */
    assert_non_null(strstr(run.out, "| twemproxy | pipelined HSET/HGET |"));
    assert_non_null(strstr(run.out, "| cluster   | HSET/HGET           |"));
    assert_non_null(strstr(run.out, "Per command, HSET/HGET ("));
    assert_non_null(strstr(run.out, "Per command, pipelined HSET/HGET ("));
    assert_non_null(strstr(run.out, "| 1 | " HSET " | counted  |"));
    assert_non_null(strstr(run.out, "| 2 | " HGET "          | verified |"));
    assert_null(strstr(run.out, "FAILED"));
    char path[4200];
    snprintf(path, sizeof(path), "%s/results.json", out);
    json_t *doc = load_json(path);
    const json_t *set = json_object_get(doc, "settings");
    assert_string_equal(json_string_value(json_array_get(json_object_get(set, "commands"), 1)),
                        HGET);
    assert_string_equal(str(set, "command_ratio"), "1,2");
    const json_t *runs = json_object_get(doc, "runs");
    assert_int_equal(json_array_size(runs), 4);
    for (size_t i = 0; i < 4; i++) {
        const json_t *r = json_array_get(runs, i);
        const char *call = str(r, "call_type");
        assert_true(strcmp(call, "HSET/HGET") == 0 || strcmp(call, "pipelined HSET/HGET") == 0);
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
    /* table.md holds what was printed */
    snprintf(path, sizeof(path), "%s/table.md", out);
    size_t len = 0;
    char *md = cp__read_file(path, 1u << 20, &len);
    assert_non_null(md);
    assert_non_null(strstr(md, "Per command, pipelined HSET/HGET ("));
    free(md);
    /* report.md says what ran */
    snprintf(path, sizeof(path), "%s/report.md", out);
    md = cp__read_file(path, 1u << 20, &len);
    assert_non_null(md);
    assert_non_null(strstr(md, "then the commands `" HSET "`, `" HGET "` (weights 1,2)"));
    assert_non_null(strstr(md, "the other commands only counted"));
    free(md);
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
    const char *args[] = {"scenario",  "reshard",   "--only",    "twemproxy", "--out",
                          out,         "--keys",    "2000",      "--duration", "3",
                          "--warmup",  "1",         "--threads", "1",         "--clients",
                          "2",         "--command", HSET,        "--command",  HGET,
                          "-q",        NULL};
    int rc = cp_clirun_run(&run, args);
    if (rc != 0)
        fail_msg("scenario exited %d: %s%s", rc, run.out, run.err);
    char path[4200];
    snprintf(path, sizeof(path), "%s/results.json", out);
    json_t *doc = load_json(path);
    const json_t *set = json_object_get(doc, "settings");
    assert_string_equal(json_string_value(json_array_get(json_object_get(set, "commands"), 0)),
                        HSET);
    assert_true(json_is_null(json_object_get(set, "ratio")));
    const json_t *cases = json_object_get(doc, "cases");
    assert_int_equal(json_array_size(cases), 1);
    const json_t *c = json_array_get(cases, 0);
    assert_string_equal(str(c, "name"), "twemproxy");
    assert_null(json_object_get(c, "error"));
    assert_null(json_object_get(c, "readback")); /* no versions tracked: nothing read back */
    assert_non_null(json_object_get(c, "summary"));
    assert_null(json_object_get(json_object_get(c, "summary"), "acked_writes_lost"));
    const json_t *bench = json_object_get(c, "bench");
    const json_t *cmds = json_object_get(bench, "commands");
    assert_int_equal(json_array_size(cmds), 2);
    for (size_t k = 0; k < 2; k++) {
        const json_t *x = json_array_get(cmds, k);
        assert_true(json_number_value(json_object_get(x, "ops")) > 0);
        assert_int_equal(
            json_number_value(json_object_get(json_object_get(x, "verify"), "mismatches")), 0);
    }
    assert_true(strstr(str(bench, "command_line"), "--command '" HSET "'") != NULL);
    json_decref(doc);
    snprintf(path, sizeof(path), "%s/report.md", out);
    size_t len = 0;
    char *md = cp__read_file(path, 1u << 20, &len);
    assert_non_null(md);
    assert_non_null(strstr(md, "the commands `" HSET "`, `" HGET "` (weights 1,1)"));
    assert_non_null(strstr(md, "nothing is read back"));
    free(md);
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
