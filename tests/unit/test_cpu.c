/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Unit tests for CPU accounting (src/bench/cpu.c): /proc stat parsing (names with spaces and
 * parentheses), a busy child process and a busy thread showing CPU over an interval, the INFO
 * CPU parser on a reply captured from redis-server 7 (tests/data/info_cpu.txt), and the
 * before/after bookkeeping (dead process, reused PID, restarted server). The child process is
 * killed by its PID and reaped in the test that forks it. No timing thresholds: CPU deltas
 * are only checked to be positive.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "asserts.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/cpu.h"
#include "testutil.h"

/* Burns `seconds` of this thread's CPU time (not wall time). */
static void burn_cpu(double seconds) {
    struct timespec t0, t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    volatile uint64_t x = 1;
    do {
        for (int i = 0; i < 100000; i++)
            x = x * 6364136223846793005ull + 1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    } while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

static void test_parse_stat(void **state) {
    (void)state;
    const char *line = "6885 (cat) R 6842 6842 3681 0 -1 4194304 98 0 0 0 250 75 0 0 20 0 1 0 "
                       "76502 3133440 383 18446744073709551615 94537011134464\n";
    cp__cpu_times t;
    unsigned long long st = 0;
    assert_int_equal(cp__cpu_parse_stat(line, strlen(line), 100, &t, &st), 0);
    assert_double_eq(t.user, 2.5);
    assert_double_eq(t.sys, 0.75);
    assert_double_eq(cp__cpu_total(&t), 3.25);
    assert_int_equal(st, 76502);

    /* A command name with spaces and ") " in it: fields count from the last ')'. */
    const char *odd = "42 (a) b (c) R 1 1 1 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 999 0 0";
    assert_int_equal(cp__cpu_parse_stat(odd, strlen(odd), 100, &t, &st), 0);
    assert_double_eq(t.user, 0.07);
    assert_double_eq(t.sys, 0.03);
    assert_int_equal(st, 999);
    assert_int_equal(cp__cpu_parse_stat(odd, strlen(odd), 1000, &t, NULL), 0);
    assert_double_eq(t.user, 0.007);

    /* Malformed: no ')', truncated before stime, truncated before start time. */
    assert_int_equal(cp__cpu_parse_stat("42 cat R 1", 10, 100, &t, NULL), -EINVAL);
    const char *trunc = "42 (x) R 1 1 1 0 -1 0 0 0 0 0 7";
    assert_int_equal(cp__cpu_parse_stat(trunc, strlen(trunc), 100, &t, NULL), -EINVAL);
    const char *nost = "42 (x) R 1 1 1 0 -1 0 0 0 0 0 7 3 0 0";
    assert_int_equal(cp__cpu_parse_stat(nost, strlen(nost), 100, &t, NULL), 0);
    assert_int_equal(cp__cpu_parse_stat(nost, strlen(nost), 100, &t, &st), -EINVAL);
    assert_int_equal(cp__cpu_parse_stat(line, strlen(line), 0, &t, NULL), -EINVAL);
    assert_int_equal(cp__cpu_parse_stat("", 0, 100, &t, NULL), -EINVAL);
}

/* A child burns CPU between our "before" and "after" samples: its delta is positive; once it
 * is reaped the last good "after" is kept and reads fail with -ENOENT. */
static void test_busy_child(void **state) {
    (void)state;
    int up[2], down[2];
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    pid_t pid = fork();
    assert_int_ge(pid, 0);
    if (pid == 0) {
        char c = 'a';
        if (read(down[0], &c, 1) != 1) /* wait for "before" */
            _exit(1);
        burn_cpu(0.2);
        if (write(up[1], &c, 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    cp__cpu_source s;
    cp__cpu_source_pid(&s, CP__CPU_REDIS, pid);
    assert_int_equal(cp__cpu_source_before(&s), 0);
    assert_int_gt(s.start_time, 0);
    char c = 'g';
    assert_int_equal(write(down[1], &c, 1), 1);
    assert_int_equal(read(up[0], &c, 1), 1); /* child has burnt its CPU */
    assert_int_equal(cp__cpu_source_after(&s), 0);
    double d = 0;
    assert_true(cp__cpu_source_delta(&s, &d));
    assert_double_gt(d, 0.0);

    /* Direct read agrees with the source's sample and the start time is stable. */
    cp__cpu_times t;
    unsigned long long st;
    assert_int_equal(cp__cpu_read_pid(pid, &t, &st), 0);
    assert_int_equal(st, s.start_time);
    assert_double_ge(cp__cpu_total(&t), cp__cpu_total(&s.after));

    kill(pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    /* Gone: the read fails, the last good sample is kept. */
    assert_int_equal(cp__cpu_source_after(&s), -ENOENT);
    double d2 = 0;
    assert_true(cp__cpu_source_delta(&s, &d2));
    assert_double_eq(d2, d);
    /* A source whose "before" failed has no delta. */
    cp__cpu_source dead;
    cp__cpu_source_pid(&dead, CP__CPU_PROXY, pid);
    assert_int_equal(cp__cpu_source_before(&dead), -ENOENT);
    assert_int_equal(cp__cpu_source_after(&dead), -ENOENT);
    assert_false(cp__cpu_source_delta(&dead, &d2));
    assert_double_eq(d2, 0.0);
    assert_int_equal(cp__cpu_read_pid(0, &t, NULL), -EINVAL);
    close(up[0]);
    close(up[1]);
    close(down[0]);
    close(down[1]);
}

/* A PID that now names another process (start time differs) gives no delta. */
static void test_reused_pid(void **state) {
    (void)state;
    cp__cpu_source s;
    cp__cpu_source_pid(&s, CP__CPU_REDIS, getpid());
    assert_int_equal(cp__cpu_source_before(&s), 0);
    s.start_time += 1; /* as if the PID had been recycled since "before" */
    assert_int_equal(cp__cpu_source_after(&s), 0);
    double d;
    assert_false(cp__cpu_source_delta(&s, &d));
    /* A new "before" clears it. */
    assert_int_equal(cp__cpu_source_before(&s), 0);
    assert_int_equal(cp__cpu_source_after(&s), 0);
    assert_true(cp__cpu_source_delta(&s, &d));
    assert_double_ge(d, 0.0);
}

/* The client's own CPU: process-wide, this thread, and /proc/self/task/TID. */
static void test_self_and_thread(void **state) {
    (void)state;
    cp__cpu_source s;
    cp__cpu_source_self(&s);
    assert_int_equal(s.comp, CP__CPU_CLIENT);
    cp__cpu_times th0, th1, tk0, tk1;
    pid_t tid = gettid();
    assert_int_equal(cp__cpu_source_before(&s), 0);
    assert_int_equal(cp__cpu_read_thread(&th0), 0);
    assert_int_equal(cp__cpu_read_task(tid, &tk0), 0);
    burn_cpu(0.1);
    assert_int_equal(cp__cpu_source_after(&s), 0);
    assert_int_equal(cp__cpu_read_thread(&th1), 0);
    assert_int_equal(cp__cpu_read_task(tid, &tk1), 0);
    double d;
    assert_true(cp__cpu_source_delta(&s, &d));
    assert_double_gt(d, 0.0);
    assert_double_gt(cp__cpu_total(&th1), cp__cpu_total(&th0));
    assert_double_gt(cp__cpu_total(&tk1), cp__cpu_total(&tk0));
    assert_int_equal(cp__cpu_read_task(0, &tk1), -EINVAL);

    /* Remote setters refuse local sources and vice versa. */
    assert_int_equal(cp__cpu_source_set_before(&s, &th0), -EINVAL);
    assert_int_equal(cp__cpu_source_set_after(&s, &th0), -EINVAL);
    cp__cpu_source r;
    cp__cpu_source_remote(&r, CP__CPU_REDIS);
    assert_int_equal(cp__cpu_source_before(&r), -EINVAL);
    assert_int_equal(cp__cpu_source_after(&r), -EINVAL);
}

/* INFO CPU as captured from redis-server 7.0 (CRLF line ends, *_children and *_main_thread
 * fields that must not be mistaken for the totals). */
static void test_parse_info_fixture(void **state) {
    (void)state;
    size_t len;
    char *text = cp_test_read_data("info_cpu.txt", &len);
    assert_non_null(text);
    cp__cpu_times t;
    assert_int_equal(cp__cpu_parse_info(text, len, &t), 0);
    assert_double_eq(t.sys, 0.017400);
    assert_double_eq(t.user, 0.012016);
    free(text);
}

static void test_parse_info_variants(void **state) {
    (void)state;
    cp__cpu_times t;
    /* LF only, children fields first, other sections around, last line without newline. */
    const char *lf = "# Server\nredis_version:7.0.15\n\n# CPU\n"
                     "used_cpu_sys_children:9.5\nused_cpu_user_children:9.5\n"
                     "used_cpu_sys_main_thread:8.0\nused_cpu_sys:12.25\n"
                     "# Keyspace\ndb0:keys=1,expires=0\nused_cpu_user:3";
    assert_int_equal(cp__cpu_parse_info(lf, strlen(lf), &t), 0);
    assert_double_eq(t.sys, 12.25);
    assert_double_eq(t.user, 3.0);
    assert_double_eq(cp__cpu_total(&t), 15.25);

    const char *exact = "used_cpu_sys:123456.123456\r\nused_cpu_user:0.000001\r\n";
    assert_int_equal(cp__cpu_parse_info(exact, strlen(exact), &t), 0);
    assert_double_eq(t.sys, 123456.123456);
    assert_double_eq(t.user, 0.000001);

    const char *missing = "# CPU\r\nused_cpu_sys:1.0\r\nused_cpu_sys_children:0.0\r\n";
    assert_int_equal(cp__cpu_parse_info(missing, strlen(missing), &t), -ENOENT);
    const char *only_children = "used_cpu_sys_children:1\r\nused_cpu_user_children:1\r\n";
    assert_int_equal(cp__cpu_parse_info(only_children, strlen(only_children), &t), -ENOENT);
    assert_int_equal(cp__cpu_parse_info("", 0, &t), -ENOENT);
    const char *bad[] = {
        "used_cpu_sys:abc\r\nused_cpu_user:1\r\n",   "used_cpu_sys:1.5x\r\nused_cpu_user:1\r\n",
        "used_cpu_sys:-1\r\nused_cpu_user:1\r\n",    "used_cpu_sys:1\r\nused_cpu_user:\r\n",
        "used_cpu_sys:1.\r\nused_cpu_user:1\r\n",    "used_cpu_sys:.5\r\nused_cpu_user:1\r\n",
        "used_cpu_sys:1.2.3\r\nused_cpu_user:1\r\n", "used_cpu_sys:1 \r\nused_cpu_user:1\r\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(cp__cpu_parse_info(bad[i], strlen(bad[i]), &t), -EINVAL);
    /* Length is honoured: the user line lies past len. */
    const char *cut = "used_cpu_sys:1\nused_cpu_user:2\n";
    assert_int_equal(cp__cpu_parse_info(cut, 15, &t), -ENOENT);
}

/* Remote samples, a restart (counters go backwards), and the per-component sums. */
static void test_remote_and_sum(void **state) {
    (void)state;
    cp__cpu_source src[5];
    cp__cpu_times b = {1.0, 0.5}, a = {1.75, 1.0}, restarted = {0.1, 0.1};
    cp__cpu_source_remote(&src[0], CP__CPU_REDIS);
    assert_int_equal(cp__cpu_source_set_before(&src[0], &b), 0);
    assert_int_equal(cp__cpu_source_set_after(&src[0], &a), 0);
    cp__cpu_source_remote(&src[1], CP__CPU_REDIS);
    assert_int_equal(cp__cpu_source_set_before(&src[1], &b), 0);
    assert_int_equal(cp__cpu_source_set_after(&src[1], &b), 0);
    cp__cpu_source_remote(&src[2], CP__CPU_REDIS); /* restarted mid-run */
    assert_int_equal(cp__cpu_source_set_before(&src[2], &b), 0);
    assert_int_equal(cp__cpu_source_set_after(&src[2], &restarted), 0);
    cp__cpu_source_remote(&src[3], CP__CPU_PROXY); /* never sampled after */
    assert_int_equal(cp__cpu_source_set_before(&src[3], &b), 0);
    cp__cpu_source_self(&src[4]);
    assert_int_equal(cp__cpu_source_before(&src[4]), 0);
    burn_cpu(0.05);
    assert_int_equal(cp__cpu_source_after(&src[4]), 0);

    double d;
    assert_true(cp__cpu_source_delta(&src[0], &d));
    assert_double_eq(d, 1.25);
    assert_true(cp__cpu_source_delta(&src[1], &d));
    assert_double_eq(d, 0.0);
    assert_false(cp__cpu_source_delta(&src[2], &d));
    assert_false(cp__cpu_source_delta(&src[3], &d));

    cp__cpu_totals tot;
    cp__cpu_sum(src, 5, &tot);
    assert_double_eq(tot.seconds[CP__CPU_REDIS], 1.25);
    assert_int_equal(tot.sources[CP__CPU_REDIS], 3);
    assert_int_equal(tot.missing[CP__CPU_REDIS], 1);
    assert_double_eq(tot.seconds[CP__CPU_PROXY], 0.0);
    assert_int_equal(tot.sources[CP__CPU_PROXY], 1);
    assert_int_equal(tot.missing[CP__CPU_PROXY], 1);
    assert_int_equal(tot.sources[CP__CPU_CLIENT], 1);
    assert_int_equal(tot.missing[CP__CPU_CLIENT], 0);
    assert_double_gt(tot.seconds[CP__CPU_CLIENT], 0.0);
    assert_double_eq(cp__cpu_totals_all(&tot), 1.25 + tot.seconds[CP__CPU_CLIENT]);

    /* A new "before" starts a fresh interval. */
    assert_int_equal(cp__cpu_source_set_before(&src[2], &restarted), 0);
    assert_false(cp__cpu_source_delta(&src[2], &d));
    assert_int_equal(cp__cpu_source_set_after(&src[2], &a), 0);
    assert_true(cp__cpu_source_delta(&src[2], &d));
    assert_double_gt(d, 2.5);

    assert_string_equal(cp__cpu_comp_name(CP__CPU_REDIS), "redis");
    assert_string_equal(cp__cpu_comp_name(CP__CPU_PROXY), "proxy");
    assert_string_equal(cp__cpu_comp_name(CP__CPU_CLIENT), "client");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_stat),         cmocka_unit_test(test_busy_child),
        cmocka_unit_test(test_reused_pid),         cmocka_unit_test(test_self_and_thread),
        cmocka_unit_test(test_parse_info_fixture), cmocka_unit_test(test_parse_info_variants),
        cmocka_unit_test(test_remote_and_sum),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
