/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The blocking commands' pool: connections of their own, per node, beside its command
 * connection, each carrying one blocking command (BLPOP, XREAD ... BLOCK, ...) at a time. A
 * command waiting on the server there holds back nothing else: the node's other commands go on
 * its command connection. A node has at most c->pool_per_node of them (cp_options.blocking_conns),
 * opened as needed and kept for the next one; past that, blocking commands wait for one, in the
 * order sent. Each command's deadline is its own timeout plus the I/O timeout (none for a
 * timeout of 0).
 *
 * Bookkeeping here: which connection a command takes, what waits, and writing its bytes once
 * the connection is ready. Reading replies is recv.c's, a broken connection's commands send.c's,
 * readiness and timers exec.c's; nothing here calls them. One thread, the client's.
 */
#ifndef CLUSTERPIPE_POOL_H
#define CLUSTERPIPE_POOL_H

#include "lib/client/pipeline.h"

/* Blocking command tag of p goes to node n: onto an idle pool connection of n, a new one (its
 * connect started), or the wait list. 0, or a CP_E* code when a new connection could not be
 * started (unresolvable host, out of memory) with the reason in why: the caller retries it. */
int cp__pool_submit(cp__client *c, cp_pipeline *p, uint32_t tag, int n, uint64_t now, char *why,
                    size_t whylen);

/* The pool connection with this fd, or NULL. */
cp__pconn *cp__pool_of_fd(cp__client *c, int fd);

/* pc is ready for requests (its handshake was answered): its command's bytes go in. */
void cp__pool_send(cp__client *c, cp__pconn *pc, uint64_t now);

/* pc's command has its answer (or is being acted on): pc is idle, and takes the first command
 * waiting for its node, if any. */
void cp__pool_idle(cp__client *c, cp__pconn *pc, uint64_t now);

/* Closes pc and frees it (the loop told first). Its command is the caller's to end or retry,
 * read before; so are the commands waiting for its node (cp__pool_take_waiting). */
void cp__pool_remove(cp__client *c, cp__pconn *pc);

/* Takes the next command waiting for node n off the wait list: 1 with *p, *tag, else 0. */
int cp__pool_take_waiting(cp__client *c, int n, cp_pipeline **p, uint32_t *tag);

/* Brings every pool connection's registration with the loop in line. */
void cp__pool_sync_all(cp__client *c);

/* CLOCK_MONOTONIC ns of the pool's next deadline (a connect, a command), 0 when none. */
uint64_t cp__pool_next_wake(const cp__client *c);

#endif
