/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A running batch's side of the core (batch.h): the client's list of running batches, each
 * command's final outcome and its callback, a split command completed by its last part, a
 * transaction ended as one, and the batch completed once the last outcome is in. No I/O. One
 * thread, the client's.
 */
#include "lib/core/batch.h"

#include <assert.h>

#include "lib/client/fence.h"
#include "lib/client/lifecycle.h"
#include "lib/client/pool.h"

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
    assert(p->remaining == 0);       /* every outcome is in */
    if (p->kind == CP__BATCH_USER) { /* the caller hears of them now (or never: it let go) */
        assert(c->pending >= p->npending);
        c->pending -= p->npending;
    }
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
    if (p->kind == CP__BATCH_ASYNC) {
        assert(c->pending > 0);
        c->pending--; /* delivered */
    }
    cp__cmd *cmd = &p->cmds.v[i];
    cp__cb cb = p->cbs[i];
    int err = cmd->outcome == CP_DONE ? 0 : cmd->err;
    cp_response r = {(cp_outcome)cmd->outcome,
                     cmd->reply,
                     err,
                     err == 0 ? "" : (err == p->err ? cp__pipeline_errstr(p) : cp_strerror(err)),
                     cmd->sent_ns,
                     cmd->done_ns,
                     cmd->outcome == CP_DONE && cp__cmd_cached(p, cmd)};
    cb.fn(&p->c->pub, &r, cb.data); /* last: it may send commands into this very batch */
}

void cp__batch_finish(cp_pipeline *p, uint32_t tag, cp_outcome outcome, int err) {
    cp__cmd *cmd = cp__get(p, tag);
    /* once per command: its callback is called once, its batch counted down once */
    assert(cmd->outcome == CP_PENDING && p->remaining > 0);
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

/* A command a fence held, given up by cp__batch_cancel_all. */
static void give_up_held(cp_pipeline *p, uint32_t tag, void *data) {
    cp__batch_give_up(p, tag, 0, *(const int *)data);
}

/* Ends every command of every batch: what is in flight (unknown when written), queued, held
 * behind a fence or waiting for a retry round, then every batch not completed by that. */
void cp__batch_cancel_all(cp__client *c, int code, const char *why) {
    c->depth++;
    c->closing = 1; /* callbacks run below may not send more: the lists below stay put */
    for (int n = 0; n < c->nnodes; n++) {
        cp__conn *conn = &c->nodes[n].conn;
        for (size_t i = 0; i < conn->fcount; i++) {
            cp__inflight *f = &conn->fifo[(conn->fhead + i) & (conn->fcap - 1)];
            if (f->tag < CP__TAG_INTERNAL && f->arena != NULL) {
                cp_pipeline *p = cp__pipeline_of_arena(f->arena);
                cp__pipeline_set_err(p, code, "%s", why);
                cp__batch_give_up(p, f->tag, cp__conn_was_written(conn, i), code);
            }
        }
        cp__lifecycle_closing(c, n, code, why);
        cp__client_close_node(c, n);
        while (c->nodes[n].q.n > 0) {
            cp__qent e = cp__queue_pop(&c->nodes[n].q);
            cp__pipeline_set_err(e.p, code, "%s", why);
            cp__batch_give_up(e.p, e.tag, 0, code);
        }
    }
    while (c->npool > 0) { /* blocking commands: their connections go too */
        cp__pconn *pc = c->pool[c->npool - 1];
        if (pc->p != NULL) {
            int written = pc->sent && pc->conn.fcount > 0 &&
                          cp__conn_was_written(&pc->conn, pc->conn.fcount - 1);
            cp__pipeline_set_err(pc->p, code, "%s", why);
            cp__batch_give_up(pc->p, pc->tag, written, code);
        }
        cp__pool_remove(c, pc);
    }
    while (c->npool_wait > 0) {
        cp__pwait w = c->pool_wait[--c->npool_wait];
        cp__pipeline_set_err(w.p, code, "%s", why);
        cp__batch_give_up(w.p, w.tag, 0, code);
    }
    cp__fence_drop_all(c, give_up_held, &code);
    cp__batch_flush_deferred(c);
    /* Giving up a batch's last command completes it (it may be reused): start over after each. */
again:
    for (cp_pipeline *p = c->running; p != NULL; p = p->next_run) {
        p->retry_at = 0;
        p->wait_map = 0;
        if (p->nretry == 0)
            continue;
        size_t nr = p->nretry;
        p->nretry = 0;
        cp__pipeline_set_err(p, code, "%s", why);
        for (size_t i = 0; i < nr; i++)
            cp__batch_give_up(p, p->retry[i], 0, code);
        goto again;
    }
    c->refresh.running = 0;
    /* Every command had its outcome above; batches not completed by it yet are now. */
    while (c->running != NULL) {
        cp_pipeline *p = c->running;
        p->remaining = 0;
        p->sealed = 1;
        cp__batch_complete(p);
    }
    c->closing = 0;
    c->depth--;
}
