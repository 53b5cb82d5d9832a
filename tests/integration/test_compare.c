/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Integration tests of `clusterpipe compare` and `clusterpipe report`, driving the real binary
 * (CP_BINARY) with tiny overrides: the whole experiment end to end (twemproxy up, load, GET and
 * pipelined GET, down; then the cluster), results.json with its four runs and non-zero CPU for
 * every component that exists, every started PID gone afterwards, table.md, valid PNG and SVG
 * charts, report.md; re-rendering from results.json; SIGTERM in the middle of a run stops
 * everything; bad flags exit 2 and start nothing.
 *
 * The compare run is shared by the first tests (group setup) to keep the suite to seconds.
 * Every child is started with fork/exec, waited for with a timeout and, on timeout, killed by
 * its PID. Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "jsoncheck.h"
#include "hgrm.h"
#include "testutil.h"

#include "orch/orch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char *shared_dir; /* output of the shared compare run */
static int shared_rc = -1;

/* ---- running the binary --------------------------------------------------------------------- */

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Starts CP_BINARY with argv (argv[0] is the subcommand), stdout and stderr to files. */
static pid_t start_cli(const char *const *args, const char *out, const char *errf) {
    pid_t pid = fork();
    assert_int_ge(pid, 0);
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0)
            _exit(126);
        dup2(o, STDOUT_FILENO);
        dup2(e, STDERR_FILENO);
        char *argv[64];
        size_t n = 0;
        argv[n++] = (char *)CP_BINARY;
        for (; args[n - 1] && n < 63; n++)
            argv[n] = (char *)args[n - 1];
        argv[n] = NULL;
        execv(CP_BINARY, argv);
        _exit(127);
    }
    return pid;
}

/* Waits for pid up to timeout_s, then SIGKILLs it by PID. Returns its exit status, or -1 when
 * it had to be killed or died from a signal. */
static int wait_cli(pid_t pid, int timeout_s) {
    int status = 0;
    for (int i = 0; i < timeout_s * 20; i++) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        sleep_ms(50);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

/* Runs the CLI to completion; stdout/stderr land in DIR/NAME.out / NAME.err when dir is set. */
static int run_cli(const char *dir, const char *name, const char *const *args, int timeout_s) {
    char out[1024], err[1024];
    snprintf(out, sizeof(out), "%s/%s.out", dir, name);
    snprintf(err, sizeof(err), "%s/%s.err", dir, name);
    int rc = wait_cli(start_cli(args, out, err), timeout_s);
    if (rc != 0 && rc != 2) { /* show why in the test log */
        char *text = NULL;
        FILE *f = fopen(err, "r");
        if (f) {
            size_t cap = 1 << 16;
            text = calloc(1, cap);
            fread(text, 1, cap - 1, f);
            fclose(f);
            fprintf(stderr, "--- %s stderr:\n%s\n", name, text);
            free(text);
        }
    }
    return rc;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    buf[got] = '\0';
    if (len)
        *len = got;
    return buf;
}

static char *path_in(const char *dir, const char *name) {
    static char buf[1024];
    snprintf(buf, sizeof(buf), "%s/%s", dir, name);
    return buf;
}

static void rm_rf(const char *dir) {
    char cmd[1200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

/* ---- checks ---------------------------------------------------------------------------------- */

static void assert_png(const char *path) {
    size_t n = 0;
    char *b = slurp(path, &n);
    assert_non_null(b);
    assert_int_gt(n, 100);
    assert_memory_equal(b, "\x89PNG\r\n\x1a\n", 8);
    free(b);
}

static void assert_svg(const char *path) {
    size_t n = 0;
    char *b = slurp(path, &n);
    assert_non_null(b);
    while (n > 0 && (b[n - 1] == '\n' || b[n - 1] == ' ' || b[n - 1] == '\r'))
        b[--n] = '\0';
    if (strncmp(b, "<?xml", 5) != 0 && strncmp(b, "<svg", 4) != 0)
        fail_msg("%s starts with neither <?xml nor <svg: %.40s", path, b);
    assert_int_gt(n, 6);
    assert_string_equal(b + n - 6, "</svg>");
    free(b);
}

static void assert_charts(const char *dir) {
    static const char *const names[] = {"cpu", "throughput_p99", "latency"};
    char p[1024];
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof(p), "%s/%s.png", dir, names[i]);
        assert_png(p);
        snprintf(p, sizeof(p), "%s/%s.svg", dir, names[i]);
        assert_svg(p);
    }
}

static double cpu_of(const json_t *run, const char *comp) {
    const json_t *v = json_object_get(json_object_get(run, "cpu_seconds"), comp);
    return json_is_number(v) ? json_number_value(v) : -1; /* -1: null / absent */
}

/* ---- the shared compare run ----------------------------------------------------------------- */

static int group_setup(void **state) {
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    shared_dir = cp_test_mkdtemp("compare");
    /* enough requests that every process accumulates a few clock ticks of CPU */
    /* 100,000 requests a run: the servers' CPU is read from /proc/PID/stat in 10 ms ticks, and
     * at 20,000 pipelined GETs the four masters used about 4 ticks together, so each could read
     * 0. */
    /* values of two sizes and Gaussian keys: compare takes bench's workload flags and passes them
     * to the load, the read-back and every run */
    /* 4 connections a thread: plain GET, one request in flight per connection, then keeps 8
     * in flight, not 2 (with 2 it took 24 s of the test's 45 through twemproxy here) */
    const char *args[] = {"compare",    "--out",    shared_dir,   "--threads",    "2",
                          "--clients",  "8",        "--requests", "100000",       "--keys",
                          "1000",       "--repeat", "1",          "--value-size", "40:3,300:1",
                          "--key-dist", "gaussian", NULL};
    shared_rc = run_cli(shared_dir, "compare", args, 240);
    return 0;
}

static int group_teardown(void **state) {
    (void)state;
    if (shared_dir) {
        rm_rf(shared_dir);
        free(shared_dir);
    }
    return 0;
}

static void test_compare_end_to_end(void **state) {
    (void)state;
    assert_int_equal(shared_rc, 0);
    json_error_t je;
    json_t *doc = json_load_file(path_in(shared_dir, "results.json"), 0, &je);
    assert_non_null(doc);
    assert_int_equal(cp_json_kill_recorded(doc, "topologies", NULL), 0);
    assert_string_equal(json_string_value(json_object_get(doc, "schema")), "clusterpipe.compare/1");
    assert_true(json_is_false(json_object_get(doc, "failed")));
    /* both topologies were started (and are gone, above): 4 + 4 and 4 processes */
    const json_t *topos = json_object_get(doc, "topologies");
    assert_int_equal(json_array_size(topos), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(topos, 0), "setup")),
                        "twemproxy");
    assert_int_equal(json_array_size(json_object_get(json_array_get(topos, 0), "processes")), 8);
    assert_int_equal(json_array_size(json_object_get(json_array_get(topos, 1), "processes")), 4);

    static const char *const names[] = {"twemproxy GET", "twemproxy pipelined GET", "cluster GET",
                                        "cluster pipelined GET"};
    const json_t *runs = json_object_get(doc, "runs");
    assert_int_equal(json_array_size(runs), 4);
    for (size_t i = 0; i < 4; i++) {
        const json_t *r = json_array_get(runs, i);
        assert_string_equal(json_string_value(json_object_get(r, "name")), names[i]);
        assert_string_equal(json_string_value(json_object_get(r, "schema")), "clusterpipe.bench/1");
        assert_int_equal(json_integer_value(json_object_get(r, "ops")), 100000);
        assert_int_equal(json_integer_value(json_object_get(r, "failed_ops")), 0);
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(r, "verify"), "mismatches")), 0);
        int pipelined = i % 2 == 1;
        assert_int_equal(
            json_integer_value(json_object_get(json_object_get(r, "workload"), "pipeline")),
            pipelined ? 10 : 1);
        /* non-zero CPU for every component that exists */
        if (cpu_of(r, "redis") <= 0 || cpu_of(r, "client") <= 0 ||
            (i < 2 && cpu_of(r, "proxy") <= 0))
            fail_msg("%s: cpu redis %.3f client %.3f proxy %.3f", names[i], cpu_of(r, "redis"),
                     cpu_of(r, "client"), cpu_of(r, "proxy"));
        if (i >= 2) /* a cluster has no proxy: null or 0, never a made-up number */
            assert_double_le(cpu_of(r, "proxy"), 0);
        assert_int_gt(json_array_size(json_object_get(r, "latency_curve")), 1);
        const json_t *wl = json_object_get(r, "workload");
        assert_string_equal(json_string_value(json_object_get(wl, "value_sizes")), "40:3,300:1");
        assert_int_equal(json_integer_value(json_object_get(wl, "value_size")), 105);
        assert_string_equal(json_string_value(json_object_get(wl, "key_dist")), "gaussian");
        /* its latency distribution in latency/, HdrHistogram's text, the run's numbers */
        const char *file = json_string_value(json_object_get(r, "hgrm"));
        assert_non_null(file);
        char rel[256];
        snprintf(rel, sizeof(rel), "latency/%s", file);
        char *text = slurp(path_in(shared_dir, rel), NULL);
        cp_hgrm h;
        char err[256];
        if (cp_hgrm_parse(text, &h, err, sizeof(err)) != 0)
            fail_msg("%s: %s", rel, err);
        const json_t *lat = json_object_get(r, "latency_us");
        assert_int_equal(h.total, 100000);
        assert_double_lt(
            fabs(cp_hgrm_value_at(&h, 0.5) - json_number_value(json_object_get(lat, "p50"))),
            0.0005);
        assert_double_lt(fabs(h.max - json_number_value(json_object_get(lat, "max"))), 0.0005);
        cp_hgrm_free(&h);
        free(text);
    }
    /* environment for the report */
    const json_t *env = json_object_get(doc, "environment");
    assert_int_ge(json_integer_value(json_object_get(env, "cores")), 1);
    assert_non_null(json_string_value(json_object_get(env, "redis")));
    json_decref(doc);

    /* files: table (also printed), charts, report */
    char *table = slurp(path_in(shared_dir, "table.md"), NULL);
    assert_non_null(table);
    assert_non_null(strstr(table, "| setup"));
    assert_non_null(strstr(table, "twemproxy CPU-s"));
    assert_non_null(strstr(table, "published time"));
    char *out = slurp(path_in(shared_dir, "compare.out"), NULL);
    assert_non_null(out);
    assert_non_null(strstr(out, table));
    char want[1200];
    snprintf(want, sizeof(want), "report: %s/report.md", shared_dir);
    assert_non_null(strstr(out, want));
    free(out);
    free(table);
    assert_charts(shared_dir);
    char *report = slurp(path_in(shared_dir, "report.md"), NULL);
    assert_non_null(report);
    assert_non_null(strstr(report, "![CPU-seconds by component per case](cpu.png)"));
    assert_non_null(strstr(report, "## How to read this"));
    assert_non_null(strstr(report, "52920"));
    assert_non_null(strstr(report, "clusterpipe compare --out"));
    free(report);
}

/* `report DIR` rebuilds table, charts and report from results.json alone. */
static void test_report_rerender(void **state) {
    (void)state;
    assert_int_equal(shared_rc, 0);
    char *before = slurp(path_in(shared_dir, "table.md"), NULL);
    assert_non_null(before);
    static const char *const files[] = {"table.md",    "report.md",          "cpu.png",
                                        "cpu.svg",     "throughput_p99.png", "throughput_p99.svg",
                                        "latency.png", "latency.svg",        "charts.gp"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        assert_int_equal(unlink(path_in(shared_dir, files[i])), 0);
    const char *args[] = {"report", shared_dir, NULL};
    assert_int_equal(run_cli(shared_dir, "report", args, 60), 0);
    char *after = slurp(path_in(shared_dir, "table.md"), NULL);
    assert_non_null(after);
    assert_string_equal(before, after);
    free(before);
    free(after);
    assert_charts(shared_dir);
    assert_int_equal(access(path_in(shared_dir, "report.md"), R_OK), 0);
}

/* Children of pid whose command line names redis-server or nutcracker. */
static size_t server_children(pid_t parent, pid_t *out, size_t cap) {
    size_t n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL && n < cap) {
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid <= 0)
            continue;
        char p[64], buf[512];
        snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
        FILE *f = fopen(p, "r");
        if (f == NULL)
            continue;
        size_t len = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[len] = '\0';
        const char *rp = strrchr(buf, ')');
        int ppid = 0;
        char st = 0;
        if (rp == NULL || sscanf(rp + 2, "%c %d", &st, &ppid) != 2 || ppid != parent)
            continue;
        if (strstr(buf, "redis-server") || strstr(buf, "nutcracker"))
            out[n++] = pid;
    }
    if (d)
        closedir(d);
    return n;
}

static int pid_gone(pid_t pid) {
    char p[64], buf[512];
    snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(p, "r");
    if (f == NULL)
        return 1;
    size_t len = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[len] = '\0';
    const char *rp = strrchr(buf, ')');
    return rp != NULL && rp[2] == 'Z'; /* a zombie is dead */
}

/* SIGTERM while the first setup runs: compare stops it, starts nothing else, exits 1. */
static void test_compare_sigterm_stops_everything(void **state) {
    (void)state;
    char *dir = cp_test_mkdtemp("compare-term");
    const char *args[] = {"compare", "--out",      dir,         "--threads", "1", "--keys",
                          "1000",    "--requests", "100000000", "--repeat",  "1", NULL};
    pid_t pid = start_cli(args, path_in(dir, "term.out"), "/dev/null");
    pid_t kids[16];
    size_t n = 0;
    for (int i = 0; i < 400 && n < 8; i++) { /* up to 20 s for 4 redis + 4 nutcracker */
        sleep_ms(50);
        n = server_children(pid, kids, 16);
    }
    if (n < 8) {
        kill(pid, SIGKILL);
        wait_cli(pid, 5);
        fail_msg("compare did not start 8 servers (saw %zu)", n);
    }
    sleep_ms(1500); /* into the load or the first run */
    kill(pid, SIGTERM);
    int rc = wait_cli(pid, 60);
    for (size_t i = 0; i < n; i++) {
        if (!pid_gone(kids[i])) {
            kill(kids[i], SIGKILL);
            fail_msg("server pid %d still running after SIGTERM", (int)kids[i]);
        }
    }
    assert_int_equal(rc, 1);
    json_error_t je;
    json_t *doc = json_load_file(path_in(dir, "results.json"), 0, &je);
    assert_non_null(doc);
    assert_true(json_is_true(json_object_get(doc, "failed")));
    assert_int_equal(json_array_size(json_object_get(doc, "topologies")), 1); /* no cluster */
    assert_int_equal(cp_json_kill_recorded(doc, "topologies", NULL), 0);
    json_decref(doc);
    rm_rf(dir);
    free(dir);
}

static void test_bad_flags_exit_2(void **state) {
    (void)state;
    char *dir = cp_test_mkdtemp("compare-flags");
    char out[1024];
    snprintf(out, sizeof(out), "%s/never", dir);
    const char *const cases[][8] = {
        {"compare", "--threads", "0", "--out", out, NULL},
        {"compare", "--bogus", "--out", out, NULL},
        {"compare", "--quick", "--full", "--out", out, NULL},
        {"compare", "--repeat", "x", "--out", out, NULL},
        {"compare", "--threads", "4", "--clients", "2", "--out", out, NULL},
        {"compare", "--key-dist", "pareto", "--out", out, NULL},
        {"compare", "--cluster", "no-port", "--out", out, NULL},
        {"compare", "--out", NULL},
        {"report", NULL},
        {"report", dir, dir, NULL},
        {"report", "--bogus", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = run_cli(dir, "flags", cases[i], 30);
        if (rc != 2)
            fail_msg("case %zu (%s %s) exited %d, want 2", i, cases[i][0],
                     cases[i][1] ? cases[i][1] : "", rc);
        char *err = slurp(path_in(dir, "flags.err"), NULL);
        assert_non_null(err);
        assert_non_null(strstr(err, "--help"));
        free(err);
    }
    assert_int_equal(access(out, F_OK), -1); /* nothing was created, let alone started */
    /* report on a directory without results.json: a failed run, with a clear message */
    const char *none[] = {"report", dir, NULL};
    assert_int_equal(run_cli(dir, "none", none, 30), 1);
    char *err = slurp(path_in(dir, "none.err"), NULL);
    assert_non_null(strstr(err, "results.json"));
    free(err);
    const char *help[] = {"compare", "--help", NULL};
    assert_int_equal(run_cli(dir, "help", help, 30), 0);
    const char *rhelp[] = {"report", "--help", NULL};
    assert_int_equal(run_cli(dir, "help", rhelp, 30), 0);
    rm_rf(dir);
    free(dir);
}

/* The results record the command line, and results are shared: a password given on it is
 * written "***" (compare used to record it as typed). A cluster that refuses connections makes
 * the run fail fast, after results.json is written. */
static void test_password_not_recorded(void **state) {
    (void)state;
    char *dir = cp_test_mkdtemp("compare-pw");
    char out[512];
    snprintf(out, sizeof(out), "%s/out", dir);
    const char *args[] = {"compare",   "--cluster",  "127.0.0.1:1", "--password",
                          "s3cret-pw", "--requests", "10",          "--keys",
                          "10",        "--out",      out,           NULL};
    assert_int_equal(run_cli(dir, "pw", args, 60), 1);
    size_t len = 0;
    char *doc = slurp(path_in(out, "results.json"), &len);
    assert_non_null(doc);
    assert_null(strstr(doc, "s3cret-pw"));
    assert_non_null(strstr(doc, "--password '***'")); /* quoted: a shell would glob it */
    free(doc);
    rm_rf(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compare_end_to_end),
        cmocka_unit_test(test_report_rerender),
        cmocka_unit_test(test_compare_sigterm_stops_everything),
        cmocka_unit_test(test_bad_flags_exit_2),
        cmocka_unit_test(test_password_not_recorded),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
