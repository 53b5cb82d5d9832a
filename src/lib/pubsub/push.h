/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Push frames: what a RESP3 server sends unasked on a command connection (a blocking command's
 * too), handed to the program's push callback (cp_set_push_callback) and counted. The
 * connection has already kept the frame out of its replies (cp__conn_reply tags it
 * CP__TAG_PUSH), so no push is taken as a command's answer. One thread, the client's.
 */
#ifndef CLUSTERPIPE_PUSH_H
#define CLUSTERPIPE_PUSH_H

#include "lib/client/client.h"

/* A push frame r from node n's connection: to the callback, if there is one. r lives in the
 * connection's own arena until its next reply is read. */
void cp__push_deliver(cp__client *c, int n, const redisReply *r);

#endif
