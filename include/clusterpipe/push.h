/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Push frames of RESP3 servers; included by clusterpipe/clusterpipe.h (which defines CP_API,
 * cp_client and redisReply before it), not on its own.
 */
#ifndef CLUSTERPIPE_PUSH_PUBLIC_H
#define CLUSTERPIPE_PUSH_PUBLIC_H

/* ---- push frames ----------------------------------------------------------------------------- */

/* A frame a RESP3 server sent unasked on one of the client's command connections (an
 * invalidation of client-side caching, anything a later server adds): node is the node whose
 * connection it came on, kind its first element ("invalidate"; "" when that is not a string),
 * frame the whole push (type CP_REPLY_PUSH). A push is never taken as a command's reply, with
 * or without a callback. frame lives until the callback returns (cp_reply_dup keeps it). The
 * callback runs while the library reads that connection: it may look at the frame and record
 * what it needs, and must not call the client (no appends, no cp_exec, no cp_free).
 * Subscribers' messages go to their cp_subscribe callbacks instead. */
typedef void cp_push_fn(cp_client *c, int node, const char *kind, const redisReply *frame,
                        void *data);

/* Sets (fn NULL: clears) the client's push callback. Never blocks. */
CP_API void cp_set_push_callback(cp_client *c, cp_push_fn *fn, void *data);

#endif
