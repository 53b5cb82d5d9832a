/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Out of memory, at every allocation of a pipeline's life in turn. The test executable is linked
 * with -Wl,--wrap=malloc,calloc,realloc (tests/CMakeLists.txt), so every allocation the library
 * makes passes through the wrappers below; a run arms them to fail the k-th allocation of the
 * test's own thread (the fake node's thread is never failed), for k = 1, 2, ... until a run
 * makes fewer than k allocations. Whatever fails, every command must still end with an outcome,
 * and an error code on the pipeline or client must come with a message: a code without one is
 * what a caller cannot act on.
 *
 * The same sweep runs a second time with the test's own functions set by cp_set_allocators,
 * failing there instead: then no allocation of the run may reach libc's directly (the wrappers
 * count any that do), and every allocation made through them is freed through them by cp_free
 * (the replies the test keeps by cp_reply_free).
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
static int via_cp;                   /* the sweep fails the cp_set_allocators functions */
static _Thread_local long bare;      /* libc allocations of the test thread then */
static _Thread_local long live;      /* allocations through the test's functions not freed */

/* 1 when this allocation is the one to fail. */
static int fail_now(void) {
    if (countdown <= 0)
        return 0;
    made++;
    return --countdown == 0;
}

/* libc's, as every object of the test executable calls it. */
static int bare_fails(void) {
    if (!via_cp)
        return fail_now();
    bare += countdown > 0;
    return 0;
}

void *__wrap_malloc(size_t n) {
    return bare_fails() ? NULL : __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size) {
    return bare_fails() ? NULL : __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n) {
    return bare_fails() ? NULL : __real_realloc(p, n);
}

/* The program's own allocator, as cp_set_allocators takes it. */
static void *my_malloc(size_t n) {
    void *p = fail_now() ? NULL : __real_malloc(n);
    live += p != NULL;
    return p;
}
static void *my_calloc(size_t n, size_t size) {
    void *p = fail_now() ? NULL : __real_calloc(n, size);
    live += p != NULL;
    return p;
}
static void *my_realloc(void *p, size_t n) {
    void *q = fail_now() ? NULL : __real_realloc(p, n);
    live += p == NULL && q != NULL;
    return q;
}
static void my_free(void *p) {
    live -= p != NULL;
    free(p);
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
            cp_reply_free(cp_take_reply(p, 1)); /* a reply kept: the MGET's, merged */
            if (rc != 0 || cp_pipeline_err(p) != 0) {
                if (cp_pipeline_errstr(p)[0] == '\0')
                    fail_msg("allocation %ld failing: error %s without a message", k,
                             cp_err_name(cp_pipeline_err(p)));
            }
        }
        cp_pipeline_free(p);
    }
    cp_reply_free(cp_command(c, "GET a"));
    countdown = 0;
    if (c->err != 0 && c->errstr[0] == '\0')
        fail_msg("allocation %ld failing: client error %s without a message", k,
                 cp_err_name(c->err));
    cp_free(c);
    return made;
}

/* Fails the allocations of a run one by one, k = 1, 2, ... until a run makes fewer than k. */
static void sweep(void) {
    fake_node *node = fake_node_start();
    assert_non_null(node);
    char buf[1024];
    int start = 0, end = 16383, port = fake_node_port(node);
    assert_int_gt(fake_cluster_shards(buf, sizeof(buf), 1, &start, &end, &port), 0);
    fake_node_set_cluster_reply(node, "SHARDS", buf);
    long k = 1, runs = 0;
    while (run_with_failure_at(node, k) >= k) {
        assert_int_equal(bare, 0); /* nothing of the run went to libc's allocator directly */
        assert_int_equal(live, 0); /* ... and all that went through ours came back through it */
        k++;
        runs++;
    }
    /* The sweep reached the end of the run (a run that made fewer than k allocations), having
     * failed each allocation before it once. */
    assert_int_gt(runs, 10);
    fake_node_stop(node);
}

static void every_allocation_fails_in_turn(void **state) {
    (void)state;
    sweep();
}

static void every_allocation_fails_in_turn_through_cp_set_allocators(void **state) {
    (void)state;
    cp_allocators mine = {my_malloc, my_calloc, my_realloc, my_free}, old;
    cp_allocators half = {my_malloc, NULL, my_realloc, my_free};
    assert_int_equal(cp_set_allocators(&half, &old), CP_EINVAL); /* a mix is refused */
    assert_int_equal(cp_set_allocators(&mine, &old), 0);
    assert_ptr_equal(old.malloc_fn, malloc);
    via_cp = 1;
    sweep();
    via_cp = 0;
    assert_int_equal(cp_set_allocators(NULL, &old), 0); /* back to libc's */
    assert_ptr_equal(old.free_fn, my_free);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_allocation_fails_in_turn),
        cmocka_unit_test(every_allocation_fails_in_turn_through_cp_set_allocators),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
