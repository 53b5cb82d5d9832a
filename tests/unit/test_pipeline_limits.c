/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Where a pipeline stops trying, against scripted fake nodes (tests/support/fakeset.h): a MOVED
 * ping-pong bounded by max_redirects (at the default, at the largest limit, and by the batch's
 * deadline), a limit above what the counter holds refused at connect, and a poll(2) that fails for
 * good ending the batch and leaving the client usable.
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
#include "fakeset.h"

#include <errno.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Two nodes sending a command back and forth forever: bounded by max_redirects. */
static void redirect_loop_is_bounded(void **state) {
    fakeset *f = *state;
    char a[128], b[128];
    fakeset_rule(f->node[0], "GET", "k", 0, -1, FAKE_REPLY,
                 fakeset_redirect(a, "MOVED", "k", f->port[1]));
    fakeset_rule(f->node[1], "GET", "k", 0, -1, FAKE_REPLY,
                 fakeset_redirect(b, "MOVED", "k", f->port[0]));
    fakeset_connect(f, 2000, 3000, 0); /* the count ends the loop, long before the budget */
    assert_int_equal(cp_append(f->p, "GET k"), 0);
    assert_int_equal(cp_append(f->p, "PING"), 0);
    assert_int_equal(cp_exec(f->p), CP_EPARTIAL);
    assert_int_equal(cp_get_outcome(f->p, 0), CP_NOT_EXECUTED);
    assert_non_null(strstr(cp_reply(f->p, 0)->str, "MOVED"));
    assert_int_equal(cp_pipeline_err(f->p), CP_EREDIRECT);
    assert_int_equal(cp_get_outcome(f->p, 1), CP_DONE);
    /* The default limit is 16 redirects: 17 answers, then it stops. */
    assert_int_equal(fake_node_count(f->node[0], "GET") + fake_node_count(f->node[1], "GET"), 17);
}

/* Nodes 0 and 1 answer GET k with MOVED to each other, forever; a client seeded with node 0 and
 * options o runs GET k alone, which must end not executed with CP_EREDIRECT. Returns how many
 * GETs the two nodes received. */
static size_t ping_pong(fakeset *f, cp_options o) {
    char seeds[64], a[128], b[128];
    snprintf(seeds, sizeof(seeds), "127.0.0.1:%d", f->port[0]);
    fakeset_rule(f->node[0], "GET", "k", 0, -1, FAKE_REPLY,
                 fakeset_redirect(a, "MOVED", "k", f->port[1]));
    fakeset_rule(f->node[1], "GET", "k", 0, -1, FAKE_REPLY,
                 fakeset_redirect(b, "MOVED", "k", f->port[0]));
    o.seeds = seeds;
    f->c = cp_connect(&o);
    assert_int_equal(f->c->err, 0);
    f->p = cp_pipeline_new(f->c);
    assert_int_equal(cp_append(f->p, "GET k"), 0);
    assert_int_equal(cp_exec(f->p), CP_EPARTIAL);
    assert_int_equal(cp_get_outcome(f->p, 0), CP_NOT_EXECUTED);
    assert_int_equal(cp_pipeline_err(f->p), CP_EREDIRECT);
    return fake_node_count(f->node[0], "GET") + fake_node_count(f->node[1], "GET");
}

/* The largest limit still ends a loop: the per-command counter is a uint8_t, so it is compared
 * before it is counted (at 255 it used to wrap to 0 and the loop never ended); a limit it could
 * not hold is refused at connect. */
static void redirect_limit_is_bounded(void **state) {
    fakeset *f = *state;
    char seeds[64];
    snprintf(seeds, sizeof(seeds), "127.0.0.1:%d", f->port[0]);
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = seeds;
    o.max_redirects = CP_MAX_REDIRECTS + 1;
    cp_client *bad = cp_connect(&o);
    assert_non_null(bad);
    assert_int_equal(bad->err, CP_EINVAL);
    assert_non_null(strstr(bad->errstr, "max_redirects"));
    cp_free(bad);

    o.max_redirects = CP_MAX_REDIRECTS;
    o.retry_budget_ms = 60000; /* only the count can end it */
    assert_int_equal(ping_pong(f, o), CP_MAX_REDIRECTS + 1);
}

/* Redirects respect the batch's deadline: with a budget far shorter than 255 round trips, the
 * loop ends on the budget, not on the count. The first hop is always followed. */
static void redirect_loop_ends_at_deadline(void **state) {
    fakeset *f = *state;
    cp_options o = CP_OPTIONS_INIT;
    o.max_redirects = CP_MAX_REDIRECTS;
    /* 255 round trips through the fake node's thread take well over a millisecond (each is two
     * wake-ups and four system calls at the very least). */
    o.retry_budget_ms = 1;
    size_t gets = ping_pong(f, o);
    assert_non_null(strstr(cp_pipeline_errstr(f->p), "retry budget"));
    assert_int_ge(gets, 2);
    assert_int_lt(gets, CP_MAX_REDIRECTS + 1);
}

/* A poll(2) that fails for good (here EINVAL: more sockets than RLIMIT_NOFILE) ends the batch at
 * once with the reason; it used to be dropped and cp_exec spun on it until the I/O timeout. The
 * client stays usable: the next batch gets its own replies. Run in a child process, so the lowered
 * limit touches neither cmocka nor the fake nodes' thread. */
static void poll_failure_ends_batch(void **state) {
    fakeset *f = *state;
    int start[2] = {0, 8192}, end[2] = {8191, 16383}, ports[2] = {f->port[0], f->port[1]};
    char buf[2048];
    assert_int_gt(fake_cluster_shards(buf, sizeof(buf), 2, start, end, ports), 0);
    for (int i = 0; i < 2; i++)
        fake_node_set_cluster_reply(f->node[i], "SHARDS", buf);
    fakeset_connect(f, 20000, 3000, 0);
    /* Both nodes connected: keys of either half of the slots. */
    const char *keys[2] = {"a", "b"};
    assert_int_not_equal(cp_keyslot("a", 1) < 8192, cp_keyslot("b", 1) < 8192);
    for (int i = 0; i < 2; i++)
        assert_int_equal(cp_append(f->p, "SET %s %d", keys[i], i + 1), 0);
    assert_int_equal(cp_exec(f->p), 0);
    cp_pipeline_reset(f->p);
    pid_t pid = fork();
    assert_int_ge(pid, 0);
    if (pid == 0) {
        alarm(10); /* the old behaviour spun for the 20 s I/O timeout */
        for (int i = 0; i < 2; i++)
            cp_append(f->p, "GET %s", keys[i]);
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
            _exit(3);
        rlim_t soft = rl.rlim_cur;
        rl.rlim_cur = 1;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            _exit(3);
        /* The fault needs a kernel that checks the limit; valgrind only pretends to lower it. */
        struct pollfd probe[2] = {{0, 0, 0}, {0, 0, 0}};
        if (poll(probe, 2, 0) >= 0 || errno != EINVAL)
            _exit(5);
        int rc = cp_exec(f->p);
        /* Both GETs were written before the wait failed: they may have run. */
        int ok = rc == CP_EPARTIAL && cp_pipeline_err(f->p) == CP_EIO &&
                 strstr(cp_pipeline_errstr(f->p), "poll") != NULL &&
                 cp_get_outcome(f->p, 0) == CP_UNKNOWN && cp_get_outcome(f->p, 1) == CP_UNKNOWN;
        if (!ok)
            _exit(4);
        /* The client goes on cleanly: the failed batch's connections were closed, so the next
         * batch reads its own replies (integers), never the old GETs' values. */
        rl.rlim_cur = soft;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            _exit(3);
        cp_pipeline_reset(f->p);
        for (int i = 0; i < 2; i++)
            cp_append(f->p, "EXISTS %s", keys[i]);
        if (cp_exec(f->p) != 0)
            _exit(6);
        for (size_t i = 0; i < 2; i++)
            if (cp_reply(f->p, i)->type != REDIS_REPLY_INTEGER || cp_reply(f->p, i)->integer != 1)
                _exit(7);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 5)
        skip(); /* poll(2) could not be made to fail here */
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void) {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fakeset_setup, fakeset_teardown)
    const struct CMUnitTest tests[] = {
        T(redirect_loop_is_bounded),
        T(redirect_limit_is_bounded),
        T(redirect_loop_ends_at_deadline),
        T(poll_failure_ends_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
