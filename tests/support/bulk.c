/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Pipelined loads (bulk.h). Single-threaded per connection.
 */
#include "bulk.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define PER_COMMAND 1000 /* elements per command: 1,000 of 2 arguments stay well under 64 KB */

void cp_test_drain(redisContext *c, int n) {
    for (int i = 0; i < n; i++) {
        redisReply *r = NULL;
        if (redisGetReply(c, (void **)&r) != REDIS_OK || r == NULL)
            fail_msg("pipelined command %d of %d: no reply (%s)", i, n, c->errstr);
        if (r->type == REDIS_REPLY_ERROR)
            fail_msg("pipelined command %d of %d: %s", i, n, r->str);
        freeReplyObject(r);
    }
}

void cp_test_fill(redisContext *c, const char *cmd, const char *key, int n, int per,
                  const char *const fmt[]) {
    assert_in_range(per, 1, 2);
    static char args[PER_COMMAND * 2][48];
    const char *argv[2 + PER_COMMAND * 2];
    size_t argl[2 + PER_COMMAND * 2];
    int sent = 0;
    for (int start = 0; start < n; start += PER_COMMAND, sent++) {
        int argc = 0;
        argv[argc] = cmd, argl[argc++] = strlen(cmd);
        argv[argc] = key, argl[argc++] = strlen(key);
        for (int i = start; i < n && i < start + PER_COMMAND; i++)
            for (int j = 0; j < per; j++) {
                char *a = args[argc - 2];
                snprintf(a, sizeof args[0], fmt[j], i);
                argv[argc] = a, argl[argc++] = strlen(a);
            }
        assert_int_equal(redisAppendCommandArgv(c, argc, argv, argl), REDIS_OK);
    }
    cp_test_drain(c, sent);
}
