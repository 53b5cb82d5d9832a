/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Loading a server fast from a test: commands pipelined on a hiredis connection (a redis-server,
 * or a nutcracker in front of several), their replies read afterwards, each checked. For datasets
 * of large keys (collections of 100k elements) whose setup should not cost a round trip each.
 */
#ifndef CLUSTERPIPE_BULK_H
#define CLUSTERPIPE_BULK_H

#include <hiredis/hiredis.h>

/* Reads the replies of n commands appended to c (redisAppendCommand...), failing the test
 * (cmocka) on a missing one or an error reply, naming its place among the n. */
void cp_test_drain(redisContext *c, int n);

/* `cmd key` and n elements, each made of `per` (1 or 2) arguments: fmt[j] formatted with the
 * element's index (0 .. n-1), e.g. {"%d.5", "member-%d"} for ZADD. Sent as commands of 1,000
 * elements, pipelined, each reply checked. */
void cp_test_fill(redisContext *c, const char *cmd, const char *key, int n, int per,
                  const char *const fmt[]);

#endif
