/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Small helpers shared by the tests: scratch directories, reading stored fixtures, the fixed
 * ports of the --base-port tests, a command that must succeed, and a node's role in a client's
 * map.
 */
#ifndef CLUSTERPIPE_TESTUTIL_H
#define CLUSTERPIPE_TESTUTIL_H

#include <stddef.h>

#include "clusterpipe/clusterpipe.h"

/* Creates a fresh directory under $TMPDIR (or /tmp) named cp-test-<tag>-XXXXXX and returns it
 * (malloc'd, caller frees). Aborts the test process if it cannot. */
char *cp_test_mkdtemp(const char *tag);

/* Reads tests/data/<name> whole into a malloc'd buffer; *len gets its size. NULL if missing. */
char *cp_test_read_data(const char *name, size_t *len);

/* One whole RESP2 reply (hiredis's reader) from buf[0..len), or NULL when buf is not exactly one.
 * The caller frees it with freeReplyObject. */
redisReply *cp_test_parse_reply(const char *buf, size_t len);

/* tests/data/<name> as one reply (cp_test_parse_reply), or NULL when missing or not one. */
redisReply *cp_test_read_reply(const char *name);

/* A base port for n consecutive fixed ports whose ports and cluster bus ports (+10000) are free
 * right now, in 2000..9999: below the kernel's ephemeral range (32768..60999), where any test's
 * outgoing connection may hold a port or leave it in TIME_WAIT, and below the orchestrator's own
 * automatic range (10000 up), so no topology started in parallel picks the base ports. Their bus
 * ports fall in that automatic range, so every port is also claimed for dir (an existing
 * directory, the topology's to be; orch/ports.h's claims): a topology started in parallel then
 * passes them over, and cannot take one between this check and the test's `up`. -1 when none is
 * found. */
int cp_test_fixed_base(int n, const char *dir);

/* A listening socket on 127.0.0.1:port, bound with SO_REUSEADDR as every server binds (so it
 * agrees with cp__port_free about TIME_WAIT sockets: cp__port_listen): holds the port busy. The
 * fd, or -1. */
int cp_test_listen(int port);

/* The protocol the suite runs under: CP_TEST_PROTOCOL (2 or 3; ctest runs the tests that make
 * clients a second time, as NAME@resp3, with 3). Sets o->protocol from it when the test left the
 * protocol at 0 (a test that asks for a protocol keeps it). Aborts on another value. */
void cp_test_protocol(cp_options *o);

/* Runs a command (hiredis format) on c; fails the test, naming the command and the server's
 * answer, when there is none or it is an error. */
void cp_test_ok(redisContext *c, const char *fmt, ...);

/* The role c's slot map gives its node on port (cp_node_get); fails the test when c knows no
 * node on that port. */
cp_node_role cp_test_role_at(cp_client *c, int port);

#endif
