/* SPDX-License-Identifier: BSD-3-Clause
 *
 * What happens to a command once its outcome is final, and to its batch once every outcome is:
 * the callback (now, or put off until the loop's call can run it), the split command its part
 * completes, the transaction that ends as one, and the batch's completion (the caller's `done`,
 * an async batch back to the spare list, an internal one freed). exec.c decides the outcomes;
 * this says what they set off. Callbacks run only inside the loop's calls (c->depth), never
 * while a command is being sent (c->sending), so a callback never runs inside the call that sent
 * its command. No I/O. One thread, the client's.
 */
#ifndef CLUSTERPIPE_BATCH_H
#define CLUSTERPIPE_BATCH_H

#include "lib/client/pipeline.h"

/* Every outcome of the batch is final, and an async batch takes no more commands. */
static inline int cp__batch_finished(const cp_pipeline *p) {
    return p->remaining == 0 && (p->kind != CP__BATCH_ASYNC || p->sealed);
}

/* Some batch has timer work at t (a retry round, a deadline, a completion): the client's
 * lower bound for it, so finding the next wake-up never walks every batch. */
static inline void cp__batch_wake_at(cp__client *c, uint64_t t) {
    if (c->batch_wake == 0 || t < c->batch_wake)
        c->batch_wake = t;
}

/* Callbacks run only inside the loop's calls and never while a command is being sent (an async
 * send or a pipeline's start, from a callback or not): otherwise they are put off to the end of
 * the loop's call or its next one, so a callback never runs inside the call that sent a
 * command. A batch is not completed while its retries are being stepped either. */
static inline int cp__batch_may_call_back(const cp__client *c) {
    return c->depth > 0 && c->sending == 0;
}

static inline int cp__batch_may_complete(const cp_pipeline *p) {
    return cp__batch_may_call_back(p->c) && p->c->deferred.n == 0 && p->c->stepping != p;
}

/* Puts p on the client's list of running batches. */
void cp__batch_link(cp_pipeline *p);

/* A batch with every outcome final: the caller hears of it (cp_exec_async), an async batch
 * goes back to the spare list, a freed one or a refresh request is freed. Runs only inside the
 * loop's calls, never while the batch is being sent or stepped (cp__batch_may_complete): p may
 * be gone after it. */
void cp__batch_complete(cp_pipeline *p);

/* The command's outcome is final (err: why, when not done). A part may complete its split
 * command. The batch is completed when this was its last command, inside the loop only. */
void cp__batch_finish(cp_pipeline *p, uint32_t tag, cp_outcome outcome, int err);

/* The command's answer came (anything but a redirect or a retry): its outcome is final. */
static inline void cp__batch_answered(cp_pipeline *p, uint32_t tag, redisReply *r, uint64_t now) {
    cp__cmd *cmd = cp__get(p, tag);
    cmd->reply = r;
    cmd->done_ns = now;
    cp__batch_finish(p, tag, CP_DONE, 0);
}

/* The outcome of a command given up: "unknown" when it was ever written (it may have run),
 * else "not executed"; a transaction's members end together, with its last. */
void cp__batch_give_up(cp_pipeline *p, uint32_t tag, int written, int err);

/* Some batch needs the timer at once (a batch finished outside the loop's calls). */
void cp__batch_wake_soon(cp__client *c);

/* Runs the callbacks put off (cp__batch_may_call_back): the loop's entry points call it first
 * and last. */
void cp__batch_flush_deferred(cp__client *c);

/* Ends every command of every batch now (code why), closing connections with requests on them:
 * written ones end unknown, the rest not executed. For cp_free and a loop that cannot go on. */
void cp__batch_cancel_all(cp__client *c, int code, const char *why);

#endif
