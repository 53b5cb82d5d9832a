/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The event loops the async tests run a client on, behind one small table: the built-in cp_loop
 * and each adapter of include/clusterpipe/adapters/ whose library was found at configure time
 * (loopdrv.c is built with CP_HAVE_LIBEVENT, CP_HAVE_LIBEV, CP_HAVE_LIBUV as tests/CMakeLists.txt
 * finds them, into its own library, cp_test_loops, which only the tests that use it link). A
 * test body takes a `const loop_driver *` and so runs unchanged through every loop.
 *
 * Ownership: loop_new gives a loop that loop_free frees (after its clients are freed or moved
 * off it). Failures are cmocka assertions. A loop belongs to one thread at a time.
 */
#ifndef CLUSTERPIPE_LOOPDRV_H
#define CLUSTERPIPE_LOOPDRV_H

#include <stddef.h>

#include "clusterpipe/clusterpipe.h"

typedef struct loop_driver {
    const char *name;
    int in_library; /* the loop is the library's own (cp_loop): its run calls are library calls */
    void *(*loop_new)(void);
    int (*attach)(void *loop, cp_client *c); /* cp_loop_attach or the adapter's attach */
    void (*run_once)(void *loop);            /* waits for something, handles it */
    void (*run_nowait)(void *loop);          /* one pass over what is ready now, never waits */
    void (*run)(void *loop);      /* the loop's own run: returns when nothing is registered */
    int (*left)(void *loop);      /* what is left on the loop: 0 when nothing */
    int (*loop_free)(void *loop); /* 0 when nothing was left on the loop */
} loop_driver;

/* cp_loop first, then libevent, libev, libuv (those built). */
extern const loop_driver loop_drivers[];
extern const size_t n_loop_drivers;

/* Prints "loops under test: cp_loop libevent ..." (cmocka's print_message): a test's first line. */
void loop_drivers_announce(void);

#endif
