/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe load` / `bench` usage and failure paths through the binary, no topology needed:
 * every bad flag or value exits 2 with a message naming the flag, --help exits 0, an unreachable
 * target or a missing --dir exits 1 with a clear error. Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "clirun.h"

#include <stdio.h>
#include <string.h>

#define T "--cluster", "127.0.0.1:1"

typedef struct bad_case {
    const char *args[12];
    const char *needle; /* must appear on stderr */
} bad_case;

static void test_bad_flags_exit_2(void **state) {
    (void)state;
    static const bad_case cases[] = {
        {{"bench", NULL}, "target"},
        {{"bench", T, "--proxy", "127.0.0.1:2", NULL}, "only one"},
        {{"bench", "--cluster", "nohostport", NULL}, "--cluster"},
        {{"bench", "--proxy", "h:99999", NULL}, "--proxy"},
        {{"bench", T, "--threads", "0", NULL}, "--threads"},
        {{"bench", T, "--threads", "2", "--clients", "1", NULL}, "--clients"},
        {{"bench", T, "--clients", "abc", NULL}, "--clients"},
        {{"bench", T, "--pipeline", "-1", NULL}, "--pipeline"},
        {{"bench", T, "--requests", "0", NULL}, "--requests"},
        {{"bench", T, "--requests", "5", "--duration", "1", NULL}, "--duration"},
        {{"bench", T, "--duration", "soon", NULL}, "--duration"},
        {{"bench", T, "--ratio", "1", NULL}, "--ratio"},
        {{"bench", T, "--ratio", "0:0", NULL}, "--ratio"},
        {{"bench", T, "--keys", "0", NULL}, "--keys"},
        {{"bench", T, "--key-dist", "zipf:0", NULL}, "--key-dist"},
        {{"bench", T, "--key-dist", "pareto", NULL}, "--key-dist"},
        {{"bench", T, "--key-layout", "tagged", NULL}, "--key-layout"},
        {{"bench", T, "--read-from", "slave", NULL}, "--read-from"},
        {{"bench", "--proxy", "127.0.0.1:1", "--key-layout", "per-master", NULL}, "cluster"},
        {{"bench", T, "--key-layout", "per-master", "--value-size", "30", NULL}, "--value-size"},
        {{"bench", T, "--value-size", "0", NULL}, "--value-size"},
        {{"bench", T, "--value-size", "4", NULL}, "--no-verify"},
        {{"bench", T, "--rate", "-5", NULL}, "--rate"},
        {{"bench", T, "--value-size", "100-50", NULL}, "MIN is above MAX"},
        {{"bench", T, "--value-size", "100-", NULL}, "MIN-MAX"},
        {{"bench", T, "--value-size", "100:7,1000", NULL}, "SIZE:WEIGHT"},
        {{"bench", T, "--value-size", "100:0", NULL}, "weight"},
        {{"bench", T, "--value-size", "100:7,100:2", NULL}, "listed twice"},
        {{"bench", T, "--value-size", "10:1,100:1", NULL}, "--no-verify"},
        {{"bench", T, "--key-dist", "gaussian:5", NULL}, "gaussian:C,S"},
        {{"bench", T, "--key-dist", "gaussian:5,0", NULL}, "spread S > 0"},
        {{"bench", T, "--key-dist", "gaussian:100000,5", NULL}, "below --keys"},
        {{"bench", T, "--hdr-file", NULL}, "--hdr-file"},
        {{"load", T, "--keys", "10", "--value-size", "5:1,100:1", NULL}, "--value-size"},
        {{"load", T, "--keys", "10", "--value-size", "1-0", NULL}, "--value-size"},
        {{"load", T, "--keys", "10", "--mset", "100", "--value-size", "100:1,1000000:1", NULL},
         "the largest"},
        {{"compare", "--value-size", "100:0", NULL}, "weight"},
        {{"compare", "--key-dist", "gaussian:200000,3", NULL}, "below --keys"},
        {{"scenario", "reshard", "--value-size", "1-", NULL}, "MIN-MAX"},
        {{"scenario", "reshard", "--key-dist", "gaussian:300000,1", NULL}, "below --keys"},
        {{"bench", T, "--json", NULL}, "--json"},
        {{"bench", T, "--frobnicate", NULL}, "--frobnicate"},
        {{"bench", T, "--user", "u", NULL}, "--password"},
        {{"load", T, NULL}, "--keys"},
        {{"load", T, "--keys", "ten", NULL}, "--keys"},
        {{"load", T, "--keys", "10", "--pipeline", "0", NULL}, "--pipeline"},
        {{"load", T, "--keys", "10", "--mset", "0", NULL}, "--mset"},
        {{"load", T, "--keys", "10", "--mset", "100", "--value-size", "1000000", NULL}, "--mset"},
        {{"load", T, "--keys", "10", "--threads", "4", "--clients", "2", NULL}, "--clients"},
        {{"load", T, "--keys", "10", "--value-size", "3", NULL}, "--value-size"},
        {{"load", T, "--keys", "10", "--key-layout", NULL}, "--key-layout"},
        {{"load", "--proxy", "127.0.0.1:1", "--keys", "9", "--key-layout", "per-master", NULL},
         "cluster"},
        /* "key:{TAG}:000000000009" needs 34 bytes where "key:9" needs 17 */
        {{"load", T, "--keys", "10", "--key-layout", "per-master", "--value-size", "30", NULL},
         "--value-size"},
        {{"load", "--keys", "10", NULL}, "target"},
        /* the client-side cache: a cluster only */
        {{"bench", "--proxy", "127.0.0.1:1", "--client-cache", NULL}, "twemproxy cannot track"},
        {{"bench", "--proxy", "127.0.0.1:1", "--client-cache-size", "10", NULL},
         "twemproxy cannot track"},
        {{"bench", T, "--client-cache-size", "0", NULL}, "ENTRIES[:BYTES]"},
        {{"bench", T, "--client-cache-size", "10:", NULL}, "ENTRIES[:BYTES]"},
        {{"bench", T, "--client-cache-size", "10:4x", NULL}, "ENTRIES[:BYTES]"},
        {{"compare", "--setups", "cluster,nope", NULL}, "'nope' is not a setup"},
        {{"compare", "--setups", "cluster,cluster", NULL}, "listed twice"},
        {{"compare", "--setups", "cluster,", NULL}, "an empty name"},
        {{"compare", "--cluster", "127.0.0.1:1", "--setups", "twemproxy,cluster", NULL},
         "twemproxy needs --proxy"},
        {{"compare", "--ratio", "1:4", "--command", "GET __key__", NULL}, "--command-ratio"},
    };
    cp_clirun run;
    cp_clirun_init(&run);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = cp_clirun_run(&run, cases[i].args);
        if (rc != 2 || strstr(run.err, cases[i].needle) == NULL)
            fail_msg("case %zu (%s %s ...): exit %d, stderr '%s' (want 2 naming '%s')", i,
                     cases[i].args[0], cases[i].args[1] ? cases[i].args[1] : "", rc, run.err,
                     cases[i].needle);
    }
    cp_clirun_free(&run);
}

static void test_help(void **state) {
    (void)state;
    cp_clirun run;
    cp_clirun_init(&run);
    const char *b[] = {"bench", "--help", NULL}, *l[] = {"load", "--help", NULL};
    assert_int_equal(cp_clirun_run(&run, b), 0);
    assert_non_null(strstr(run.out, "--pipeline"));
    assert_non_null(strstr(run.out, "--no-verify"));
    assert_int_equal(cp_clirun_run(&run, l), 0);
    assert_non_null(strstr(run.out, "--keys"));
    cp_clirun_free(&run);
}

static void test_unreachable_exit_1(void **state) {
    (void)state;
    cp_clirun run;
    cp_clirun_init(&run);
    const char *c[] = {"bench", "--cluster", "127.0.0.1:1", "--requests", "10", NULL};
    assert_int_equal(cp_clirun_run(&run, c), 1);
    assert_non_null(strstr(run.err, "127.0.0.1:1"));
    const char *p[] = {"bench", "--proxy", "127.0.0.1:1", "--requests", "10", NULL};
    assert_int_equal(cp_clirun_run(&run, p), 1);
    assert_non_null(strstr(run.err, "127.0.0.1:1"));
    const char *l[] = {"load", "--proxy", "127.0.0.1:1", "--keys", "10", NULL};
    assert_int_equal(cp_clirun_run(&run, l), 1);
    assert_non_null(strstr(run.err, "127.0.0.1:1"));
    const char *d[] = {"bench", "--dir", "/nonexistent/cp-no-such-topology", NULL};
    assert_int_equal(cp_clirun_run(&run, d), 1);
    assert_non_null(strstr(run.err, "--dir"));
    cp_clirun_free(&run);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_flags_exit_2),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_unreachable_exit_1),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
