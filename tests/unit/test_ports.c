/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Port claims across topologies (orch/ports.h): a port one topology took is not handed to
 * another while the first one's directory exists, even when nothing listens on it (its server
 * killed for a while); a claim whose directory is gone is taken over; a released one is free; a
 * fixed base port claimed by another topology is refused with a clear error; a cluster node's bus
 * port is claimed with it. The claims go to a directory of this test's own (TMPDIR), so nothing
 * here touches the claims of topologies that other tests run meanwhile.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "clusterpipe/clusterpipe.h"
#include "orch/ports.h"
#include "testutil.h"

static char *tmp; /* this test's TMPDIR: the claims directory is made in it */

static int setup(void **state) {
    (void)state;
    tmp = cp_test_mkdtemp("ports");
    if (tmp == NULL || setenv("TMPDIR", tmp, 1) != 0)
        return -1;
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    int rc = system(cmd);
    free(tmp);
    return rc == 0 ? 0 : -1;
}

/* A topology directory that exists (its name inside this test's TMPDIR). */
static char *topo_dir(const char *name) {
    char *d = malloc(4200);
    snprintf(d, 4200, "%s/%s", tmp, name);
    mkdir(d, 0700);
    return d;
}

static int claimed(int port) {
    char path[4300];
    snprintf(path, sizeof(path), "%s/clusterpipe-ports-%u/%d", tmp, (unsigned)getuid(), port);
    return access(path, F_OK) == 0;
}

/* An allocator of owner dir whose next candidate is port (0: where cp__ports_init starts this
 * process, the block of ports other processes start away from; each case runs in microseconds,
 * so another process binding its port meanwhile is as unlikely as two topologies colliding). */
static void at(cp__ports *a, const char *dir, int port) {
    cp__ports_init(a, 0);
    cp__ports_set_owner(a, dir);
    if (port != 0)
        a->next = port;
}

static void claimed_port_is_skipped_until_released(void **state) {
    (void)state;
    char err[256];
    char *da = topo_dir("a"), *db = topo_dir("b");
    cp__ports a, b;
    at(&a, da, 0);
    int pa = 0, pb = 0;
    assert_int_equal(cp__ports_take(&a, 0, &pa, err, sizeof(err)), 0);
    assert_true(claimed(pa));
    /* Nothing listens on pa (as after a kill): b, starting there, still passes it over. */
    assert_int_equal(cp__port_free(pa), 1);
    at(&b, db, pa);
    assert_int_equal(cp__ports_take(&b, 0, &pb, err, sizeof(err)), 0);
    assert_int_not_equal(pb, pa);
    /* Released (a's down): b gets it; b's own claim is left alone by a second release of a. */
    cp__ports_release(&a);
    assert_false(claimed(pa));
    at(&b, db, pa);
    assert_int_equal(cp__ports_take(&b, 0, &pb, err, sizeof(err)), 0);
    assert_int_equal(pb, pa);
    cp__ports_release(&a);
    assert_true(claimed(pa));
    cp__ports_release(&b);
    assert_false(claimed(pa));
    free(da);
    free(db);
}

static void stale_claim_is_taken_over(void **state) {
    (void)state;
    char err[256];
    char *da = topo_dir("gone"), *db = topo_dir("b2");
    cp__ports a, b;
    at(&a, da, 0);
    int pa = 0, pb = 0;
    assert_int_equal(cp__ports_take(&a, 0, &pa, err, sizeof(err)), 0);
    assert_int_equal(rmdir(da), 0); /* its topology crashed and its directory was removed */
    at(&b, db, pa);
    assert_int_equal(cp__ports_take(&b, 0, &pb, err, sizeof(err)), 0);
    assert_int_equal(pb, pa);
    cp__ports_release(&b);
    free(da);
    free(db);
}

static void fixed_base_on_a_claimed_port_is_refused(void **state) {
    (void)state;
    char err[256];
    char *da = topo_dir("f1"), *db = topo_dir("f2");
    cp__ports a, b;
    at(&a, da, 0);
    int pa = 0, pb = 0;
    assert_int_equal(cp__ports_take(&a, 0, &pa, err, sizeof(err)), 0);
    cp__ports_init(&b, pa);
    cp__ports_set_owner(&b, db);
    assert_int_equal(cp__ports_take(&b, 0, &pb, err, sizeof(err)), CP_EINVAL);
    assert_non_null(strstr(err, "belongs to another running topology"));
    cp__ports_release(&a);
    cp__ports_init(&b, pa);
    cp__ports_set_owner(&b, db);
    assert_int_equal(cp__ports_take(&b, 0, &pb, err, sizeof(err)), 0);
    assert_int_equal(pb, pa);
    cp__ports_release(&b);
    free(da);
    free(db);
}

static void bus_port_is_claimed_too(void **state) {
    (void)state;
    char err[256];
    char *da = topo_dir("c1"), *db = topo_dir("c2");
    cp__ports a, b;
    at(&a, da, 0);
    int pa = 0, pb = 0;
    assert_int_equal(cp__ports_take(&a, 1, &pa, err, sizeof(err)), 0);
    assert_true(claimed(pa) && claimed(pa + CP__BUS_OFFSET));
    /* Another topology's node, starting at pa, passes it over. */
    at(&b, db, pa);
    assert_int_equal(cp__ports_take(&b, 1, &pb, err, sizeof(err)), 0);
    assert_int_not_equal(pb, pa);
    cp__ports_release(&a);
    assert_false(claimed(pa) || claimed(pa + CP__BUS_OFFSET));
    cp__ports_release(&b);
    free(da);
    free(db);
}

/* Without an owner (a handle not tied to a directory) nothing is claimed. */
static void no_owner_no_claims(void **state) {
    (void)state;
    char err[256];
    cp__ports a;
    cp__ports_init(&a, 0);
    int pa = 0;
    assert_int_equal(cp__ports_take(&a, 0, &pa, err, sizeof(err)), 0);
    assert_false(claimed(pa));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(claimed_port_is_skipped_until_released),
        cmocka_unit_test(stale_claim_is_taken_over),
        cmocka_unit_test(fixed_base_on_a_claimed_port_is_refused),
        cmocka_unit_test(bus_port_is_claimed_too),
        cmocka_unit_test(no_owner_no_claims),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
