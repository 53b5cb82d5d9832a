/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Waiting on a source's replica (replwait.h). Single-threaded.
 */
#include "replwait.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

void cp_test_wait_forked(redisContext *c) {
    for (int i = 0; i < 300; i++) {
        redisReply *r = redisCommand(c, "INFO replication");
        assert_non_null(r);
        int forked = strstr(r->str, "state=send_bulk") || strstr(r->str, "state=online");
        freeReplyObject(r);
        if (forked)
            return;
        usleep(20 * 1000);
    }
    fail_msg("the tool's replica connection never got a snapshot");
}

/* The offset the source's replica (the tool) acknowledged, or -1; *master the source's own. */
static long long acked(redisContext *c, long long *master) {
    redisReply *r = redisCommand(c, "INFO replication");
    assert_non_null(r);
    const char *at = strstr(r->str, "slave0:");
    const char *off = at ? strstr(at, "offset=") : NULL;
    long long v = off ? atoll(off + 7) : -1;
    const char *m = strstr(r->str, "master_repl_offset:");
    *master = m ? atoll(m + 19) : -2;
    freeReplyObject(r);
    return v;
}

void cp_test_wait_acked(redisContext *c) {
    long long master = 0, ack = -1;
    for (int i = 0; i < 1500 && ack != master; i++) {
        ack = acked(c, &master);
        if (ack != master)
            usleep(20 * 1000);
    }
    assert_int_equal(ack, master);
}
