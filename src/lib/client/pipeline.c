/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Pipelines: append commands, then execute them all at once. Execution routes each command to
 * the node serving its slot, writes to every node before reading any, reads replies as they come
 * on all connections (poll), and follows the cluster's answers: MOVED (patch the slot, resend),
 * ASK (ASKING + resend, map untouched), TRYAGAIN/CLUSTERDOWN/LOADING and broken connections
 * (retry rounds with exponential backoff and jitter inside the client's retry budget). Every
 * command ends with an outcome (done / not executed / unknown) and, when the server answered, its
 * reply, in append order.
 *
 * This file builds pipelines and reads their results; exec.c runs them.
 *
 * The pipeline owns its arena (commands' bytes), the replies until taken, and the parts of split
 * multi-key commands; it borrows its client. One thread.
 */
#include "lib/base/alloc.h"
#include "lib/client/pipeline.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cp_pipeline *cp_pipeline_new(cp_client *c) {
    cp_pipeline *p = cp__calloc(1, sizeof(*p));
    if (p != NULL) {
        p->c = cp__client_of(c);
        p->next_node = CP__TO_KEYS;
        p->watch_slot = CP__SLOT_NONE;
    }
    return p;
}

void cp_pipeline_reset(cp_pipeline *p) {
    if (p->running) /* its commands are on the wire: nothing of it may go */
        return;
    cp__arena_reset(&p->replies);
    p->cmds.n = p->parts.n = 0;
    p->arena.len = 0;
    p->nretry = 0;
    p->remaining = 0;
    p->retry_at = 0;
    p->round = 0;
    p->executed = 0;
    p->ntxns = 0;
    p->txn_open = 0;
    p->multi_open = 0;
    p->nevals = 0;
    p->watch_slot = CP__SLOT_NONE;
    p->err = 0;
}

void cp_pipeline_free(cp_pipeline *p) {
    if (p == NULL)
        return;
    if (p->running) { /* replies are still to be built in it: the core frees it when done */
        p->orphan = 1;
        p->done = NULL;
        return;
    }
    cp__pipeline_destroy(p);
}

void cp__pipeline_destroy(cp_pipeline *p) {
    cp__arena_free(&p->replies);
    cp__buf_free(&p->arena);
    cp__free(p->cmds.v);
    cp__free(p->parts.v);
    cp__free(p->retry);
    cp__free(p->errstr);
    cp__free(p->argv);
    cp__free(p->argvlen);
    cp__free(p->txns);
    cp__free(p->evals);
    if (p->capcbs > 0) /* async batches' and refresh requests' own callback arrays */
        cp__free(p->cbs);
    cp__free(p);
}

/* memcmp(a, b, len) == 0 for a command name of 1 to 16 bytes (what the memo keeps): two
 * overlapping loads from each side, a few instructions where a byte loop or a memcmp call cost
 * twenty or more per command. */
static int same_name(const char *a, const char *b, size_t len) {
    uint64_t x0, x1, y0, y1;
    if (len >= 8) {
        memcpy(&x0, a, 8), memcpy(&x1, a + len - 8, 8);
        memcpy(&y0, b, 8), memcpy(&y1, b + len - 8, 8);
        return x0 == y0 && x1 == y1;
    }
    if (len >= 4) {
        uint32_t u0, u1, v0, v1;
        memcpy(&u0, a, 4), memcpy(&u1, a + len - 4, 4);
        memcpy(&v0, b, 4), memcpy(&v1, b + len - 4, 4);
        return u0 == v0 && u1 == v1;
    }
    if (len >= 2) {
        uint16_t u0, u1, v0, v1;
        memcpy(&u0, a, 2), memcpy(&u1, a + len - 2, 2);
        memcpy(&v0, b, 2), memcpy(&v1, b + len - 2, 2);
        return u0 == v0 && u1 == v1;
    }
    return a[0] == b[0];
}

/* CP__F_CACHE for a read the client-side cache may answer (CP__DESC_CACHE, cache.h), routed
 * by its keys to the slot's master, outside a transaction. */
static inline uint16_t cache_flag(const cp__client *c, unsigned desc) {
    return c->cache != NULL && (desc & CP__DESC_CACHE) && c->read_from == CP_READ_MASTER
               ? CP__F_CACHE
               : 0;
}

/* What a command's descriptor flags (CP__DESC_*) make of it: read-only (re-sent after an
 * unknown outcome) when either table says so (the server flags PING, ECHO and INFO neither
 * read-only nor write, the built-in table marks them safe); else, with a client-side cache, it
 * drops entries when it goes, unless the server calls it a pub/sub command (PUBLISH, SPUBLISH:
 * they change no key). Anything else may write, scripts and EXEC too, which the server does not
 * flag "write". */
static inline uint16_t name_flags(const cp__client *c, unsigned desc) {
    if (desc & CP__DESC_READONLY)
        return CP__F_READONLY;
    return c->cache != NULL && !(desc & CP__DESC_PUBSUB) ? CP__F_DROPS : 0;
}

/* Describes argv in *d (cmddesc.h), with the name's part from the memo when it holds the name
 * for the client's table, and kept there when it did not. */
static void describe(cp_pipeline *p, int argc, const char *const *argv, const size_t *argvlen,
                     unsigned want, cp__cmddesc *d) {
    const char *name = argv[0];
    size_t len = argvlen[0];
    const cp__cmdtable *t = p->c->cmdtab;
    cp__cmdmemo *m = p->memo;
    for (int i = 0; i < CP__MEMO; i++) /* an empty memo entry has len 0: never an empty name's */
        if (m[i].len == len && len > 0 && m[i].n.t == t && same_name(m[i].name, name, len)) {
            cp__cmddesc_fill(d, t, &m[i].n, argc, argv, argvlen, want);
            return;
        }
    cp__cmddesc_fill(d, t, NULL, argc, argv, argvlen, want);
    if (len > 0 && len <= sizeof(m[0].name)) {
        memmove(&m[1], &m[0], (CP__MEMO - 1) * sizeof(m[0]));
        memcpy(m[0].name, name, len);
        m[0].len = len;
        m[0].n = d->name;
        m[0].flags = name_flags(p->c, d->name.flags) | cache_flag(p->c, d->name.flags);
    }
}

/* ---- transactions ---- */

/* Folds slot s (a slot, CP__SLOT_NONE or CP__SLOT_CROSS) into *slot, a unit's so far. */
static void unify_slot(int *slot, int s) {
    if (s == CP__SLOT_CROSS || (s >= 0 && *slot >= 0 && s != *slot))
        *slot = CP__SLOT_CROSS;
    else if (s >= 0 && *slot != CP__SLOT_CROSS)
        *slot = s;
}

/* Gives every member of unit t the unit's slot: the one slot of their keys and of the WATCHes
 * before it in this batch (a WATCH guards only its own node's EXEC); CP__SLOT_CROSS when they
 * span slots; slot 0 when none has a key (any node would do, but all must go to the same
 * one). */
static void txn_unify(cp_pipeline *p, const cp__txn *t) {
    int slot = p->watch_slot;
    p->watch_slot = CP__SLOT_NONE;
    for (uint32_t i = t->first; i <= t->last && slot != CP__SLOT_CROSS; i++)
        unify_slot(&slot, p->cmds.v[i].slot);
    if (slot == CP__SLOT_NONE)
        slot = 0;
    for (uint32_t i = t->first; i <= t->last; i++)
        p->cmds.v[i].slot = slot;
}

int cp__txn_record(cp_pipeline *p, size_t i, unsigned cmdflags) {
    cp__cmd *cmd = &p->cmds.v[i];
    if (cmdflags & CP__CMD_WATCH) {
        cmd->flags |= CP__F_WATCH;
        if (!p->txn_open)
            unify_slot(&p->watch_slot, cmd->slot);
    }
    if (!p->txn_open) {
        if (!(cmdflags & CP__CMD_MULTI))
            return 0; /* an EXEC without MULTI goes alone: the server answers it */
        if (p->ntxns == p->captxns) {
            size_t ncap = p->captxns ? p->captxns * 2 : 4;
            cp__txn *v = cp__realloc(p->txns, ncap * sizeof(*v));
            if (v == NULL)
                return CP_ENOMEM;
            p->txns = v;
            p->captxns = ncap;
        }
        p->txns[p->ntxns++] = (cp__txn){(uint32_t)i, (uint32_t)i, -1, 0, 0};
        p->txn_open = 1;
    }
    cp__txn *t = &p->txns[p->ntxns - 1];
    cmd->flags |= CP__F_TX;
    cmd->part0 = (uint32_t)(p->ntxns - 1);
    t->last = (uint32_t)i;
    if (cmdflags & CP__CMD_EXEC) {
        cmd->flags |= CP__F_TXEND;
        p->txn_open = 0;
        txn_unify(p, t);
    }
    return 0;
}

long cp__txn_refuse_open(cp_pipeline *p) {
    if (!p->txn_open)
        return -1;
    cp__txn *t = &p->txns[p->ntxns - 1];
    t->last = (uint32_t)(p->cmds.n - 1);
    p->cmds.v[t->last].flags |= CP__F_TXEND;
    for (uint32_t i = t->first; i <= t->last; i++)
        p->cmds.v[i].slot = CP__SLOT_REFUSED;
    p->txn_open = 0;
    return (long)(p->ntxns - 1);
}

/* A command refused at its append (it is not recorded): the reason goes to the pipeline and to
 * the client, where cp_command and the async calls report it. Returns CP_EINVAL. */
static int refuse_append(cp_pipeline *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int refuse_append(cp_pipeline *p, const char *fmt, ...) {
    char why[CP_ERRSTR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    cp__pipeline_set_err(p, CP_EINVAL, "%s", why);
    return cp__client_err(p->c, CP_EINVAL, "%s", why);
}

/* Records the command just written to arena[off..) whose arguments are argv: describes it once
 * (cmddesc.h), then takes its keys' slot (or the caller's: slot >= 0) and flags from the
 * descriptor, and splits it when its keys span slots and splitting is on. */
static int record(cp_pipeline *p, size_t off, int argc, const char *const *argv,
                  const size_t *argvlen, int slot) {
    cp__client *c = p->c;
    int to = p->next_node;
    cp__cmddesc d;
    describe(p, argc, argv, argvlen,
             c->cluster && slot < 0 && !(to >= 0 && !p->txn_open) ? CP__DESC_WANT_SLOT : 0, &d);
    const cp__cmdinfo *ci = d.name.ci;
    if (d.refusal != NULL) {
        p->arena.len = off;
        return refuse_append(p, "%s", d.refusal);
    }
    cp__cmd *cmd = cp__cmdvec_add(&p->cmds);
    if (cmd == NULL) {
        p->arena.len = off;
        return CP_ENOMEM;
    }
    cmd->off = off;
    cmd->len = (uint32_t)(p->arena.len - off);
    cmd->flags = name_flags(c, d.flags);
    cmd->merge = (uint8_t)ci->merge;
    cmd->slot = CP__SLOT_NONE;
    /* A command that may block on the server runs on a pool connection of its own (pool.h),
     * unless it is in a transaction, where the server never blocks it. */
    if ((d.flags & CP__DESC_BLOCKING) && !p->txn_open) {
        cmd->flags |= CP__F_BLOCKING;
        cmd->block_ms = d.block_ms;
    } else if ((d.flags & CP__DESC_WAIT) && !p->txn_open) {
        cmd->flags |= CP__F_WAIT; /* it stays, and holds its connection's I/O deadline */
        cmd->block_ms = d.block_ms;
    }
    p->next_node = CP__TO_KEYS;
    if (!c->cluster) {
        if (ci->flags & (CP__CMD_MULTI | CP__CMD_EXEC)) /* for a script's choice, script.c */
            p->multi_open = (ci->flags & CP__CMD_MULTI) != 0;
        return 0;
    }
    if (to >= 0 && !p->txn_open) { /* cp_append_node: that node, whatever the keys */
        cmd->slot = CP__SLOT_NODE;
        cmd->node = to;
        cmd->merge = CP__MERGE_NONE;
        return 0;
    }
    if (slot >= 0) {
        cmd->slot = slot;
        if (to == CP__TO_KEYS && !p->txn_open &&
            !(ci->flags & (CP__CMD_MULTI | CP__CMD_WATCH | CP__CMD_ALL | CP__CMD_SUBALL))) {
            cmd->flags |= cache_flag(c, d.flags);
            return 0; /* the caller's slot, one node: no unit, fan-out or split to consider */
        }
    } else {
        cmd->slot = d.slot;
    }
    if ((p->txn_open || (ci->flags & (CP__CMD_MULTI | CP__CMD_WATCH))) &&
        cp__txn_record(p, p->cmds.n - 1, ci->flags) != 0) {
        p->cmds.n--;
        p->arena.len = off;
        return CP_ENOMEM;
    }
    if ((ci->flags & CP__CMD_UNWATCH) && !p->txn_open) {
        p->watch_slot = CP__SLOT_NONE; /* the next unit is guarded by no WATCH before this */
        cmd->flags |= CP__F_WATCH;     /* its parts' answers end their nodes' WATCH marks */
    }
    cp__merge fan = cmd->flags & CP__F_TX ? CP__MERGE_NONE : d.fan;
    if (to == CP__TO_ALL && !(cmd->flags & CP__F_TX) && fan == CP__MERGE_NONE)
        fan = CP__MERGE_NODES;   /* cp_append_all of anything else: one reply per master */
    if (fan != CP__MERGE_NONE) { /* to every master, whatever its keys */
        cmd->merge = (uint8_t)fan;
        int rc = cp__fan_out(p, p->cmds.n - 1);
        if (rc != 0) {
            p->cmds.n--;
            p->arena.len = off;
        }
        return rc;
    }
    uint16_t cache =
        to == CP__TO_KEYS && !(cmd->flags & (CP__F_TX | CP__F_WATCH)) ? cache_flag(c, d.flags) : 0;
    if (cmd->slot >= 0)
        cmd->flags |= cache;
    if (cmd->slot == CP__SLOT_CROSS && (ci->flags & CP__CMD_SPLIT) && !(cmd->flags & CP__F_TX) &&
        (c->flags & CP_OPT_SPLIT_MULTIKEY)) {
        int rc = cp__split(p, p->cmds.n - 1, d.split_first, d.split_step, d.nsplit);
        if (rc != 0) {
            p->cmds.n--;
            p->arena.len = off;
            return rc;
        }
        for (uint32_t j = 0; j < p->cmds.v[p->cmds.n - 1].nparts; j++) /* each part one slot's */
            p->parts.v[p->cmds.v[p->cmds.n - 1].part0 + j].flags |= cache;
    }
    return 0;
}

/* record() for the common append: the caller's slot, a cluster client, no unit open and a name
 * the memo holds whose descriptor says it is plain (CP__DESC_PLAIN: no container, unit,
 * every-master, connection or blocking command). Kept apart so that it runs without the general
 * path's setup; the fields are record()'s. 1 when it recorded the command, 0 when record()
 * must. */
static inline int record_at_slot(cp_pipeline *p, size_t off, const char *const *argv,
                                 const size_t *argvlen, int slot) {
    if (slot < 0 || !p->c->cluster || p->txn_open || p->next_node != CP__TO_KEYS ||
        p->cmds.n == p->cmds.cap || argvlen[0] == 0)
        return 0;
    const cp__cmdmemo *m = &p->memo[0];
    while (m->len != argvlen[0] || m->n.t != p->c->cmdtab || !same_name(m->name, argv[0], m->len))
        if (++m == p->memo + CP__MEMO)
            return 0;
    if (!(m->n.flags & CP__DESC_PLAIN))
        return 0;
    cp__cmd *cmd = &p->cmds.v[p->cmds.n++];
    *cmd = (cp__cmd){.off = off,
                     .len = (uint32_t)(p->arena.len - off),
                     .slot = slot,
                     .node = -1,
                     .parent = -1,
                     .flags = m->flags,
                     .merge = (uint8_t)m->n.ci->merge};
    return 1;
}

int cp__pipeline_append_argv(cp_pipeline *p, int argc, const char **argv, const size_t *argvlen,
                             int slot) {
    if (argc <= 0)
        return refuse_append(p, "a command needs at least its name (argc %d)", argc);
    size_t off = p->arena.len;
    if (argvlen == NULL) {
        if (cp__pipeline_argv_reserve(p, (size_t)argc) != 0)
            return CP_ENOMEM;
        for (int i = 0; i < argc; i++)
            p->argvlen[i] = strlen(argv[i]);
        argvlen = p->argvlen;
    }
    if (cp__format_argv(&p->arena, argc, argv, argvlen) != 0)
        return CP_ENOMEM;
    if (record_at_slot(p, off, argv, argvlen, slot))
        return 0;
    return record(p, off, argc, argv, argvlen, slot);
}

int cp_append_argv(cp_pipeline *p, int argc, const char **argv, const size_t *argvlen) {
    return p->executed ? CP_EINVAL : cp__pipeline_append_argv(p, argc, argv, argvlen, -1);
}

int cp_append_argv_slot(cp_pipeline *p, int argc, const char **argv, const size_t *argvlen,
                        unsigned slot) {
    if (p->executed || slot >= CP_SLOTS)
        return CP_EINVAL;
    return cp__pipeline_append_argv(p, argc, argv, argvlen, (int)slot);
}

/* Records arena[off..) (already formatted) after parsing its arguments back out of it. */
static int record_formatted(cp_pipeline *p, size_t off) {
    const char *cmd = p->arena.data + off;
    size_t len = p->arena.len - off;
    int argc = cp__parse_command(cmd, len, p->argv, p->argvlen, (int)p->capargv);
    if (argc > (int)p->capargv) {
        if (cp__pipeline_argv_reserve(p, (size_t)argc) != 0) {
            p->arena.len = off;
            return CP_ENOMEM;
        }
        argc = cp__parse_command(cmd, len, p->argv, p->argvlen, (int)p->capargv);
    }
    if (argc <= 0) {
        p->arena.len = off;
        return refuse_append(p, "not a RESP command (an array of bulk strings)");
    }
    return record(p, off, argc, p->argv, p->argvlen, -1);
}

int cp__pipeline_appendv(cp_pipeline *p, const char *fmt, va_list ap) {
    size_t off = p->arena.len;
    if (cp__pipeline_argv_reserve(p, 16) != 0)
        return CP_ENOMEM;
    int argc = cp__format_va(&p->arena, fmt, ap, p->argv, p->argvlen, (int)p->capargv);
    if (argc == CP_EINVAL)
        return refuse_append(p, "cannot format the command (format string \"%.60s\")", fmt);
    if (argc < 0)
        return argc;
    if (argc == 0 || argc > (int)p->capargv) /* none, or more than the scratch holds: parse */
        return record_formatted(p, off);
    return record(p, off, argc, p->argv, p->argvlen, -1);
}

int cp_append(cp_pipeline *p, const char *fmt, ...) {
    if (p->executed)
        return CP_EINVAL;
    va_list ap;
    va_start(ap, fmt);
    int rc = cp__pipeline_appendv(p, fmt, ap);
    va_end(ap);
    return rc;
}

int cp__pipeline_append_to(cp_pipeline *p, int to, const char *fmt, va_list ap) {
    if (to >= 0 && to >= p->c->nnodes)
        return CP_EINVAL;
    p->next_node = to;
    int rc = cp__pipeline_appendv(p, fmt, ap);
    p->next_node = CP__TO_KEYS; /* also when formatting failed before record() */
    return rc;
}

int cp_append_all(cp_pipeline *p, const char *fmt, ...) {
    if (p->executed)
        return CP_EINVAL;
    va_list ap;
    va_start(ap, fmt);
    int rc = cp__pipeline_append_to(p, CP__TO_ALL, fmt, ap);
    va_end(ap);
    return rc;
}

int cp_append_node(cp_pipeline *p, int node, const char *fmt, ...) {
    if (p->executed)
        return CP_EINVAL;
    va_list ap;
    va_start(ap, fmt);
    int rc = cp__pipeline_append_to(p, cp__node_arg(node), fmt, ap);
    va_end(ap);
    return rc;
}

int cp_append_formatted(cp_pipeline *p, const char *cmd, size_t len) {
    if (p->executed || len == 0)
        return CP_EINVAL;
    size_t off = p->arena.len;
    if (cp__pipeline_argv_reserve(p, 16) != 0 || cp__buf_append(&p->arena, cmd, len) != 0)
        return CP_ENOMEM;
    return record_formatted(p, off);
}

int cp_set_flags(cp_pipeline *p, size_t i, unsigned flags) {
    if (i >= p->cmds.n || (flags & ~CP_CMD_IDEMPOTENT))
        return CP_EINVAL;
    if (flags & CP_CMD_IDEMPOTENT)
        p->cmds.v[i].flags |= CP__F_IDEMPOTENT;
    return 0;
}

size_t cp_count(const cp_pipeline *p) {
    return p->cmds.n;
}

const redisReply *cp_reply(const cp_pipeline *p, size_t i) {
    return i < p->cmds.n ? p->cmds.v[i].reply : NULL;
}

redisReply *cp_take_reply(cp_pipeline *p, size_t i) {
    if (i >= p->cmds.n)
        return NULL;
    redisReply *r = cp__reply_dup(p->cmds.v[i].reply);
    p->cmds.v[i].reply = NULL;
    return r;
}

cp_outcome cp_get_outcome(const cp_pipeline *p, size_t i) {
    return i < p->cmds.n ? (cp_outcome)p->cmds.v[i].outcome : CP_PENDING;
}

int cp_timing(const cp_pipeline *p, size_t i, uint64_t *sent_ns, uint64_t *done_ns) {
    if (i >= p->cmds.n || p->cmds.v[i].outcome != CP_DONE)
        return CP_EINVAL;
    const cp__cmd *cmd = &p->cmds.v[i];
    if (cmd->flags & CP__F_SPLIT) { /* a split command spans its first send to its last answer */
        uint64_t s = UINT64_MAX, d = 0;
        for (uint32_t j = 0; j < cmd->nparts; j++) {
            const cp__cmd *part = &p->parts.v[cmd->part0 + j];
            s = part->sent_ns < s ? part->sent_ns : s;
            d = part->done_ns > d ? part->done_ns : d;
        }
        *sent_ns = s;
        *done_ns = d;
        return 0;
    }
    *sent_ns = cmd->sent_ns;
    *done_ns = cmd->done_ns;
    return 0;
}

int cp_running(const cp_pipeline *p) {
    return p->running;
}

int cp_pipeline_err(const cp_pipeline *p) {
    return p->err;
}

const char *cp_pipeline_errstr(const cp_pipeline *p) {
    return cp__pipeline_errstr(p);
}

int cp_reply_cached(const cp_pipeline *p, size_t i) {
    return i < p->cmds.n && p->cmds.v[i].outcome == CP_DONE && cp__cmd_cached(p, &p->cmds.v[i]);
}
