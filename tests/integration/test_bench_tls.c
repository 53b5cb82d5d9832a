/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe load` and `bench` over TLS, through the binary: a 3-master TLS cluster with a
 * generated password (the topology's certificates and password are used with --dir, given by
 * flags for an external --cluster), a server certificate that does not verify, and --tls with a
 * proxy target (twemproxy has no TLS).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "clirun.h"
#include "fixture.h"

static void bench_over_tls(void **state) {
    (void)state;
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.kind = CP_TOPO_CLUSTER;
    o.shards = 3;
    o.tls = 1;
    cp_fixture *f = cp_fixture_start(&o);
    assert_non_null(f);
    const char *dir = cp_topo_dir(f->topo);
    const char *ca = cp_topo_tls_ca(f->topo);
    const char *pw = cp_topo_password(f->topo);
    assert_non_null(ca);
    assert_non_null(pw);
    cp_clirun run;
    cp_clirun_init(&run);

    const char *load[] = {"load", "--dir", dir, "--keys", "5000", "--quiet", NULL};
    assert_int_equal(cp_clirun_run(&run, load), 0);
    const char *bench[] = {"bench",  "--dir",   dir,         "--requests", "20000",
                           "--keys", "5000",    "--clients", "4",          "--pipeline",
                           "8",      "--quiet", NULL};
    int rc = cp_clirun_run(&run, bench);
    if (rc != 0)
        fail_msg("bench --dir over TLS: exit %d: %s", rc, run.err);
    assert_non_null(strstr(run.out, "mismatches 0"));
    assert_non_null(strstr(run.out, "misses 0"));

    const char *ext[] = {"bench",  "--cluster",  f->endpoints, "--tls",      "--cacert",
                         ca,       "--password", pw,           "--requests", "5000",
                         "--keys", "5000",       "--quiet",    NULL};
    assert_int_equal(cp_clirun_run(&run, ext), 0);
    /* The system's CAs do not know the run's CA. */
    const char *unverified[] = {"bench", "--cluster",  f->endpoints, "--tls", "--password",
                                pw,      "--requests", "100",        NULL};
    assert_int_equal(cp_clirun_run(&run, unverified), 1);
    assert_non_null(strstr(run.err, "certificate"));
    /* Plain TCP to TLS ports does not get a slot map. */
    const char *plain[] = {"bench", "--cluster",  f->endpoints, "--password",
                           pw,      "--requests", "100",        NULL};
    assert_int_equal(cp_clirun_run(&run, plain), 1);
    const char *proxy[] = {"bench", "--proxy", "127.0.0.1:1", "--tls", NULL};
    assert_int_equal(cp_clirun_run(&run, proxy), 2);
    assert_non_null(strstr(run.err, "no TLS"));
    const char *nocacert[] = {"bench", "--cluster", f->endpoints, "--cacert", ca, NULL};
    assert_int_equal(cp_clirun_run(&run, nocacert), 2);

    cp_clirun_free(&run);
    assert_int_equal(cp_fixture_stop(f), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(bench_over_tls)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
