/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Waiting on the replica `clusterpipe migrate` makes of a source (a redis-server read as its
 * master), through the source's INFO replication: until its snapshot is forked, and until it has
 * acknowledged everything the source wrote. Fails the test (cmocka) on a timeout.
 */
#ifndef CLUSTERPIPE_REPLWAIT_H
#define CLUSTERPIPE_REPLWAIT_H

#include <hiredis/hiredis.h>

/* Waits (6 s at most) until the source has a replica past its snapshot's fork (send_bulk or
 * online). */
void cp_test_wait_forked(redisContext *c);

/* Waits (30 s at most) until the source's replica acknowledged the source's master_repl_offset
 * (the tool acknowledges only what it applied or marked), asserting it did. */
void cp_test_wait_acked(redisContext *c);

#endif
