/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A running batch's side of the core (batch.h): the client's list of running batches, each
 * command's final outcome and its callback, a split command completed by its last part, a
 * transaction ended as one, and the batch completed once the last outcome is in. No I/O. One
 * thread, the client's.
 */
#include "lib/batch.h"

void cp__batch_link(cp_pipeline *p) {
    cp__client *c = p->c;
    p->running = 1;
    p->prev_run = NULL;
    p->next_run = c->running;
    if (c->running != NULL)
        c->running->prev_run = p;
    c->running = p;
}

static void unlink_running(cp_pipeline *p) {
    cp__client *c = p->c;
    if (p->prev_run != NULL)
        p->prev_run->next_run = p->next_run;
    else
        c->running = p->next_run;
    if (p->next_run != NULL)
        p->next_run->prev_run = p->prev_run;
    p->prev_run = p->next_run = NULL;
    p->running = 0;
}

void cp__batch_complete(cp_pipeline *p) {
    cp__client *c = p->c;
    unlink_running(p);
    if (p->kind == CP__BATCH_USER) /* the caller hears of them now (or never: it let go) */
        c->pending -= p->npending;
    p->npending = 0;
    if (p->orphan) {
        cp__pipeline_destroy(p);
        return;
    }
    if (p->kind == CP__BATCH_REFRESH) {
        cp__pipeline_destroy(p);
        return;
    }
    if (p->kind == CP__BATCH_ASYNC) {
        cp_pipeline_reset(p);
        p->next_spare = c->spare;
        c->spare = p;
        return;
    }
    if (p->done != NULL) {
        cp_exec_callback *done = p->done;
        p->done = NULL;
        done(p, p->done_data);
    }
}

/* Calls command i's callback (async batches), now or put off (cp__batch_may_call_back). */
static void notify(cp_pipeline *p, uint32_t i) {
    cp__client *c = p->c;
    if (!cp__batch_may_call_back(c) && cp__queue_push(&c->deferred, p, i) == 0) {
        cp__batch_wake_at(c, 1);
        return;
    }
    if (p->kind == CP__BATCH_ASYNC)
        c->pending--; /* delivered */
    cp__cmd *cmd = &p->cmds.v[i];
    cp__cb cb = p->cbs[i];
    int err = cmd->outcome == CP_DONE ? 0 : cmd->err;
    cp_response r = {(cp_outcome)cmd->outcome,
                     cmd->reply,
                     err,
                     err == 0 ? "" : (err == p->err ? p->errstr : cp_strerror(err)),
                     cmd->sent_ns,
                     cmd->done_ns};
    cb.fn(&p->c->pub, &r, cb.data); /* last: it may send commands into this very batch */
}

void cp__batch_finish(cp_pipeline *p, uint32_t tag, cp_outcome outcome, int err) {
    cp__cmd *cmd = cp__get(p, tag);
    cmd->outcome = (uint8_t)outcome;
    cmd->err = (int8_t)err;
    p->remaining--;
    if (cmd->parent >= 0) {
        uint32_t parent = (uint32_t)cmd->parent;
        if (err != 0 && p->cmds.v[parent].err == 0)
            p->cmds.v[parent].err = (int8_t)err; /* the split command's reason */
        if (--p->cmds.v[parent].pending == 0) {
            cp__merge_parts(p, parent);
            if (p->cbs != NULL)
                notify(p, parent);
        }
    } else if (p->cbs != NULL) {
        notify(p, tag);
    }
    if (p->running && cp__batch_finished(p)) {
        if (cp__batch_may_complete(p))
            cp__batch_complete(p);
        else
            cp__batch_wake_at(p->c, 1); /* from the loop's next call, or the stepping one's end */
    }
}

void cp__batch_wake_soon(cp__client *c) {
    cp__batch_wake_at(c, 1);
}

void cp__batch_flush_deferred(cp__client *c) {
    while (c->deferred.n > 0) {
        cp__qent e = cp__queue_pop(&c->deferred);
        notify(e.p, e.tag);
    }
}

/* A member of unit t failed to get its answer (connection broken, timed out, cancelled). The
 * unit ends with its last member, which the same failure always reaches after the others (they
 * are on one connection, in order): then every member still waiting ends unknown if EXEC was
 * written (it may have run), else not executed (an unfinished MULTI runs nothing). */
static void txn_lost(cp_pipeline *p, uint32_t tag, int written, int err) {
    cp__cmd *cmd = cp__get(p, tag);
    if (written)
        cmd->flags |= CP__F_WRITTEN;
    if (!(cmd->flags & CP__F_TXEND))
        return;
    const cp__txn *t = cp__txn_of(p, cmd);
    cp_outcome outcome = (cmd->flags & CP__F_WRITTEN) ? CP_UNKNOWN : CP_NOT_EXECUTED;
    for (uint32_t i = t->first; i <= t->last; i++)
        if (p->cmds.v[i].outcome == CP_PENDING)
            cp__batch_finish(p, i, outcome, err);
}

void cp__batch_give_up(cp_pipeline *p, uint32_t tag, int written, int err) {
    cp__cmd *cmd = cp__get(p, tag);
    if (cmd->flags & CP__F_TX) {
        txn_lost(p, tag, written, err);
        return;
    }
    if (cmd->outcome == CP_PENDING)
        cp__batch_finish(
            p, tag, written || (cmd->flags & CP__F_WRITTEN) ? CP_UNKNOWN : CP_NOT_EXECUTED, err);
}
