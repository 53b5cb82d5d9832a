/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Out of memory, at every allocation of a pipeline's life in turn. The test executable is linked
 * with -Wl,--wrap=malloc,calloc,realloc (tests/CMakeLists.txt), so every allocation the library
 * makes passes through the wrappers below; a run arms them to fail the k-th allocation of the
 * test's own thread (the fake node's thread is never failed), for k = 1, 2, ... until a run
 * makes fewer than k allocations. Whatever fails, every command must still end with an outcome,
 * and an error code on the pipeline or client must come with a message: a code without one is
 * what a caller cannot act on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "asserts.h"
#include "clusterpipe/clusterpipe.h"
#include "fakenode.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);

static _Thread_local long countdown; /* > 0: armed, the allocation that brings it to 0 fails */
static _Thread_local long made;      /* allocations while armed */

/* 1 when this allocation is the one to fail. */
static int fail_now(void) {
    if (countdown <= 0)
        return 0;
    made++;
    return --countdown == 0;
}

void *__wrap_malloc(size_t n) {
    return fail_now() ? NULL : __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size) {
    return fail_now() ? NULL : __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n) {
    return fail_now() ? NULL : __real_realloc(p, n);
}

/* One pipeline of every kind of command the library treats apart: plain reads and writes, a
 * multi-key command split over slots and merged back, run with the k-th allocation failing.
 * Returns the number of allocations the run made while armed. */
static long run_with_failure_at(fake_node *node, long k) {
    char seeds[64];
    snprintf(seeds, sizeof(seeds), "127.0.0.1:%d", fake_node_port(node));
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = seeds;
    o.flags = CP_OPT_SPLIT_MULTIKEY;
    o.io_timeout_ms = 2000;
    cp_client *c = cp_connect(&o);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    made = 0;
    countdown = k;
    cp_pipeline *p = cp_pipeline_new(c);
    if (p != NULL) {
        int rc = 0;
        rc |= cp_append(p, "SET a 1");
        rc |= cp_append(p, "MGET a b c d e f");
        rc |= cp_append(p, "GET b");
        rc |= cp_append(p, "MSET x 1 y 2 z 3");
        if (rc == 0) {
            rc = cp_exec(p);
            for (size_t i = 0; i < cp_count(p); i++)
                assert_int_not_equal(cp_get_outcome(p, i), CP_PENDING);
            if (rc != 0 || cp_pipeline_err(p) != 0) {
                if (cp_pipeline_errstr(p)[0] == '\0')
                    fail_msg("allocation %ld failing: error %s without a message", k,
                             cp_err_name(cp_pipeline_err(p)));
            }
        }
        cp_pipeline_free(p);
    }
    countdown = 0;
    if (c->err != 0 && c->errstr[0] == '\0')
        fail_msg("allocation %ld failing: client error %s without a message", k,
                 cp_err_name(c->err));
    cp_free(c);
    return made;
}

static void every_allocation_fails_in_turn(void **state) {
    (void)state;
    fake_node *node = fake_node_start();
    assert_non_null(node);
    char buf[1024];
    int start = 0, end = 16383, port = fake_node_port(node);
    assert_int_gt(fake_cluster_shards(buf, sizeof(buf), 1, &start, &end, &port), 0);
    fake_node_set_cluster_reply(node, "SHARDS", buf);
    long k = 1, runs = 0;
    while (run_with_failure_at(node, k) >= k) {
        k++;
        runs++;
    }
    /* The sweep reached the end of the run (a run that made fewer than k allocations), having
     * failed each allocation before it once. */
    assert_int_gt(runs, 10);
    fake_node_stop(node);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_allocation_fails_in_turn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
