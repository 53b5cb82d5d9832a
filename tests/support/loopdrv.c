/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The loop drivers of loopdrv.h: cp_loop, and libevent, libev, libuv when found. Owns nothing
 * beyond the loops it makes (freed by loop_free; libuv's uv_loop_t is malloc'd here). The
 * adapters are header-only: this file compiles them. One thread per loop.
 */
#include "loopdrv.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "asserts.h"

#ifdef CP_HAVE_LIBEVENT
#include "clusterpipe/adapters/libevent.h"
/* libevent's flags, taken before ev.h: with EV_COMPAT3 (Debian's default) it redefines
 * EVLOOP_NONBLOCK as EVRUN_NOWAIT, 1, which is libevent's EVLOOP_ONCE (a "non-blocking" turn
 * then waited for the next event: 436 ms seen) */
enum { LEVT_ONCE = EVLOOP_ONCE, LEVT_NONBLOCK = EVLOOP_NONBLOCK };
#endif
#ifdef CP_HAVE_LIBEV
/* libevent's event.h and libev's ev.h both define EV_READ and friends (macros there, an enum
 * here), so a program includes one of them; this file has both. The libevent adapter above is
 * already compiled by this point, so its macros can go. */
#undef EV_TIMEOUT
#undef EV_READ
#undef EV_WRITE
#undef EV_SIGNAL
#include "clusterpipe/adapters/libev.h"
#endif
#ifdef CP_HAVE_LIBUV
#include "clusterpipe/adapters/libuv.h"
#endif

static void *poll_new(void) {
    return cp_loop_new();
}
static int poll_attach(void *l, cp_client *c) {
    return cp_loop_attach(l, c);
}
static void poll_run_once(void *l) {
    assert_int_ge(cp_loop_run_once(l, -1), 0);
}
static void poll_run_nowait(void *l) {
    assert_int_ge(cp_loop_run_once(l, 0), 0);
}
static void poll_run(void *l) {
    assert_int_equal(cp_loop_run(l), 0);
}
static int poll_left(void *l) { /* cp_loop does not tell; its own detach is the library's */
    (void)l;
    return 0;
}
static int poll_free(void *l) {
    cp_loop_free(l);
    return 0;
}

#ifdef CP_HAVE_LIBEVENT
static void *levt_new(void) {
    return event_base_new();
}
static int levt_attach(void *b, cp_client *c) {
    return cp_libevent_attach(c, b);
}
static void levt_run_once(void *b) {
    assert_int_ge(event_base_loop(b, LEVT_ONCE), 0);
}
static void levt_run_nowait(void *b) {
    /* NONBLOCK alone goes round again while callbacks keep becoming active; with ONCE it is one
     * pass, as EVRUN_NOWAIT and UV_RUN_NOWAIT are */
    assert_int_ge(event_base_loop(b, LEVT_ONCE | LEVT_NONBLOCK), 0);
}
static void levt_run(void *b) {
    assert_int_ge(event_base_dispatch(b), 0);
}
static int levt_left(void *b) {
    return event_base_get_num_events(b, EVENT_BASE_COUNT_ADDED | EVENT_BASE_COUNT_ACTIVE);
}
static int levt_free(void *b) {
    int left = levt_left(b);
    event_base_free(b);
    return left;
}
#endif

#ifdef CP_HAVE_LIBEV
static void *lev_new(void) {
    return ev_loop_new(EVFLAG_AUTO);
}
static int lev_attach(void *l, cp_client *c) {
    return cp_libev_attach(c, l);
}
static void lev_run_once(void *l) {
    ev_run(l, EVRUN_ONCE);
}
static void lev_run_nowait(void *l) {
    ev_run(l, EVRUN_NOWAIT);
}
static void lev_run(void *l) {
    ev_run(l, 0);
}
static int lev_left(void *l) {
    return ev_run(l, EVRUN_NOWAIT); /* nonzero while a watcher is active */
}
static int lev_free(void *l) {
    int left = lev_left(l);
    ev_loop_destroy(l);
    return left;
}
#endif

#ifdef CP_HAVE_LIBUV
static void *luv_new(void) {
    uv_loop_t *l = malloc(sizeof(*l));
    if (l != NULL && uv_loop_init(l) != 0) {
        free(l);
        l = NULL;
    }
    return l;
}
static int luv_attach(void *l, cp_client *c) {
    return cp_libuv_attach(c, l);
}
static void luv_run_once(void *l) {
    uv_run(l, UV_RUN_ONCE);
}
static void luv_run_nowait(void *l) {
    uv_run(l, UV_RUN_NOWAIT);
}
static void luv_run(void *l) {
    uv_run(l, UV_RUN_DEFAULT);
}
static void luv_count(uv_handle_t *h, void *arg) {
    (void)h;
    ++*(int *)arg;
}
static int luv_left(void *l) {
    /* One turn runs the close callbacks of the handles closed so far (it does not wait, and
     * nothing may call back into a client that left): then no handle may be left. */
    uv_run(l, UV_RUN_NOWAIT);
    int n = 0;
    uv_walk(l, luv_count, &n);
    return n;
}
static int luv_free(void *l) {
    int left = luv_left(l);    /* the close callbacks free the adapter's handles */
    int rc = uv_loop_close(l); /* UV_EBUSY: a handle was left open */
    free(l);
    return rc != 0 ? rc : left;
}
#endif

const loop_driver loop_drivers[] = {
    {"cp_loop", 1, poll_new, poll_attach, poll_run_once, poll_run_nowait, poll_run, poll_left,
     poll_free},
#ifdef CP_HAVE_LIBEVENT
    {"libevent", 0, levt_new, levt_attach, levt_run_once, levt_run_nowait, levt_run, levt_left,
     levt_free},
#endif
#ifdef CP_HAVE_LIBEV
    {"libev", 0, lev_new, lev_attach, lev_run_once, lev_run_nowait, lev_run, lev_left, lev_free},
#endif
#ifdef CP_HAVE_LIBUV
    {"libuv", 0, luv_new, luv_attach, luv_run_once, luv_run_nowait, luv_run, luv_left, luv_free},
#endif
};

const size_t n_loop_drivers = sizeof(loop_drivers) / sizeof(loop_drivers[0]);

void loop_drivers_announce(void) {
    print_message("loops under test:");
    for (size_t i = 0; i < n_loop_drivers; i++)
        print_message(" %s", loop_drivers[i].name);
    print_message("\n");
}
