/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Async commands: cp_async_command, cp_async_command_argv and cp_async_command_script. Commands
 * sent between two of the loop's calls (or from the callbacks of one) share a batch, the client's
 * open one, so they run with one retry budget and go out in one write per node when the loop next
 * says it may write; the batch is sealed when the loop's call returns, and recycled once its last
 * command ended. Each command gets the callback it was sent with, called once from the loop. One
 * thread, the client's.
 */
#include "lib/base/alloc.h"
#include "lib/api/events.h"
#include "lib/client/script.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>

/* The batch this turn's commands go into: the open one, a spare one, or a new one. */
static cp_pipeline *open_batch(cp__client *c) {
    if (c->open != NULL)
        return c->open;
    cp_pipeline *p = c->spare;
    if (p != NULL)
        c->spare = p->next_spare;
    else if ((p = cp_pipeline_new(&c->pub)) == NULL)
        return NULL;
    p->kind = CP__BATCH_ASYNC;
    p->sealed = 0;
    p->next_spare = NULL;
    cp__send_start(p, 0); /* empty: links it and starts its retry budget */
    c->open = p;
    return p;
}

/* Checks that a command may be sent now. 0 or the CP_E* refusal (recorded on the client). */
static int may_send(cp__client *c) {
    if (!cp__events_async_ok(c) || c->closing)
        return cp__client_err(c, CP_EINVAL, "async command: %s",
                              c->closing ? "the client is being freed"
                                         : "the client is not on an event loop (cp_attach)");
    if (c->pending >= c->max_pending)
        return cp__client_err(c, CP_ELIMIT, "async command: %zu commands queued or in flight",
                              c->pending);
    return 0;
}

/* A send refused after the turn's batch was opened: the loop still hears of what opening it
 * started (a refresh, say). */
static int refused(cp__client *c, int code, const char *why) {
    cp__events_after_call(c);
    return cp__client_err(c, code, "async command: %s", why);
}

/* The append itself refused the command: a CP_EINVAL carries its reason on the client already
 * (pipeline.c: a connection-state command, a bad format). */
static int append_refused(cp__client *c, int rc) {
    if (rc != CP_EINVAL)
        return refused(c, rc, cp_strerror(rc));
    cp__events_after_call(c);
    return rc;
}

/* The command just appended to p (index i, its bytes from off) gets its callback and goes on
 * its way; a command whose keys span slots is taken back and refused. */
static int submit(cp__client *c, cp_pipeline *p, size_t off, cp_callback *cb, void *privdata,
                  unsigned flags) {
    size_t i = p->cmds.n - 1;
    cp__cmd *cmd = &p->cmds.v[i];
    if (cmd->slot == CP__SLOT_CROSS && !(cmd->flags & (CP__F_SPLIT | CP__F_TX))) {
        p->cmds.n--;
        p->arena.len = off;
        return refused(c, CP_ECROSSSLOT, "keys in different slots");
    }
    if (i >= p->capcbs) {
        size_t ncap = p->capcbs ? p->capcbs * 2 : 64;
        cp__cb *v = cp__realloc(p->cbs, ncap * sizeof(*v));
        if (v == NULL) {
            p->cmds.n--;
            p->arena.len = off;
            return refused(c, CP_ENOMEM, "out of memory");
        }
        p->cbs = v;
        p->capcbs = ncap;
    }
    p->cbs[i] = (cp__cb){cb, privdata};
    if (flags & CP_CMD_IDEMPOTENT)
        cmd->flags |= CP__F_IDEMPOTENT;
    if (!(cmd->flags & CP__F_TX)) {
        cp__send_add(p, (uint32_t)i);
    } else if (cmd->flags & CP__F_TXEND) { /* the unit is whole: it goes now, as one */
        const cp__txn *t = cp__txn_of(p, cmd);
        for (uint32_t j = t->first; j <= t->last; j++)
            cp__send_add(p, j);
    } /* else a transaction's member: held until its EXEC (or the end of the turn) */
    cp__events_after_call(c);
    return 0;
}

/* The turn's batch for one more command given as arguments (cp_async_command_argv, _script),
 * once the client may send and cb and flags are valid; NULL with *rc the refusal. */
static cp_pipeline *batch_for_argv(cp__client *c, cp_callback *cb, unsigned flags, int *rc) {
    if ((*rc = may_send(c)) != 0)
        return NULL;
    if (cb == NULL || (flags & ~CP_CMD_IDEMPOTENT)) {
        *rc = cp__client_err(c, CP_EINVAL, "async command: %s",
                             cb == NULL ? "no callback" : "unknown flags");
        return NULL;
    }
    cp_pipeline *p = open_batch(c);
    if (p == NULL)
        *rc = cp__client_err(c, CP_ENOMEM, "out of memory");
    return p;
}

int cp_async_command_argv(cp_client *pc, cp_callback *cb, void *privdata, unsigned flags, int argc,
                          const char **argv, const size_t *argvlen) {
    cp__client *c = cp__client_of(pc);
    int rc;
    cp_pipeline *p = batch_for_argv(c, cb, flags, &rc);
    if (p == NULL)
        return rc;
    size_t off = p->arena.len;
    if ((rc = cp__pipeline_append_argv(p, argc, argv, argvlen, -1)) != 0)
        return append_refused(c, rc);
    return submit(c, p, off, cb, privdata, flags);
}

int cp_async_command_script(cp_client *pc, cp_callback *cb, void *privdata, unsigned flags,
                            const cp_script *s, int numkeys, int argc, const char **argv,
                            const size_t *argvlen) {
    cp__client *c = cp__client_of(pc);
    int rc;
    cp_pipeline *p = batch_for_argv(c, cb, flags, &rc);
    if (p == NULL)
        return rc;
    size_t off = p->arena.len;
    if ((rc = cp__script_append(p, s, numkeys, argc, argv, argvlen)) != 0)
        return append_refused(c, rc);
    return submit(c, p, off, cb, privdata, flags);
}

/* An async command in the printf form, to its keys' node (CP__TO_KEYS), every master or one
 * node. */
static int command_to(cp_client *pc, int to, cp_callback *cb, void *privdata, const char *fmt,
                      va_list ap) {
    cp__client *c = cp__client_of(pc);
    int rc = may_send(c);
    if (rc != 0)
        return rc;
    if (cb == NULL)
        return cp__client_err(c, CP_EINVAL, "async command: no callback");
    cp_pipeline *p = open_batch(c);
    if (p == NULL)
        return cp__client_err(c, CP_ENOMEM, "out of memory");
    size_t off = p->arena.len;
    rc = to == CP__TO_KEYS ? cp__pipeline_appendv(p, fmt, ap)
                           : cp__pipeline_append_to(p, to, fmt, ap);
    if (rc == CP_EINVAL && to >= 0)
        return refused(c, rc, "no such node");
    if (rc != 0)
        return append_refused(c, rc);
    return submit(c, p, off, cb, privdata, 0);
}

int cp_async_command(cp_client *pc, cp_callback *cb, void *privdata, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = command_to(pc, CP__TO_KEYS, cb, privdata, fmt, ap);
    va_end(ap);
    return rc;
}

int cp_async_command_all(cp_client *pc, cp_callback *cb, void *privdata, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = command_to(pc, CP__TO_ALL, cb, privdata, fmt, ap);
    va_end(ap);
    return rc;
}

int cp_async_command_node(cp_client *pc, int node, cp_callback *cb, void *privdata, const char *fmt,
                          ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = command_to(pc, cp__node_arg(node), cb, privdata, fmt, ap);
    va_end(ap);
    return rc;
}
