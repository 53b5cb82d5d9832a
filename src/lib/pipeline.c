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
 * The pipeline owns its arena (commands' bytes), the replies until taken, and the parts of split
 * multi-key commands; it borrows its client. One thread.
 */
#include "lib/pipeline.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";

cp_pipeline *cp_pipeline_new(cp_client *c) {
    cp_pipeline *p = calloc(1, sizeof(*p));
    if (p != NULL)
        p->c = cp__client_of(c);
    return p;
}

static void free_replies(cp__cmdvec *v) {
    for (size_t i = 0; i < v->n; i++)
        if (v->v[i].reply != NULL)
            freeReplyObject(v->v[i].reply);
}

void cp_pipeline_reset(cp_pipeline *p) {
    free_replies(&p->cmds);
    free_replies(&p->parts);
    p->cmds.n = p->parts.n = 0;
    p->arena.len = 0;
    p->nretry = 0;
    p->remaining = 0;
    p->retry_at = 0;
    p->round = 0;
    p->executed = 0;
    p->err = 0;
    p->errstr[0] = '\0';
}

void cp_pipeline_free(cp_pipeline *p) {
    if (p == NULL)
        return;
    cp_pipeline_reset(p);
    cp__buf_free(&p->arena);
    free(p->cmds.v);
    free(p->parts.v);
    free(p->retry);
    free(p->argv);
    free(p->argvlen);
    free(p);
}

cp__cmd *cp__cmdvec_add(cp__cmdvec *v) {
    if (v->n == v->cap) {
        size_t ncap = v->cap ? v->cap * 2 : 64;
        cp__cmd *n = realloc(v->v, ncap * sizeof(*n));
        if (n == NULL)
            return NULL;
        v->v = n;
        v->cap = ncap;
    }
    cp__cmd *c = &v->v[v->n++];
    memset(c, 0, sizeof(*c));
    c->parent = -1;
    c->next = CP__NIL;
    return c;
}

int cp__pipeline_argv_reserve(cp_pipeline *p, size_t n) {
    if (n <= p->capargv)
        return 0;
    const char **a = realloc(p->argv, n * sizeof(*a));
    if (a != NULL)
        p->argv = a;
    size_t *l = realloc(p->argvlen, n * sizeof(*l));
    if (l != NULL)
        p->argvlen = l;
    if (a == NULL || l == NULL)
        return CP_ENOMEM;
    p->capargv = n;
    return 0;
}

static void set_err(cp_pipeline *p, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Keeps the first failure of an exec: later ones are usually its consequences. */
static void set_err(cp_pipeline *p, int code, const char *fmt, ...) {
    if (p->err != 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    p->err = code;
    vsnprintf(p->errstr, sizeof(p->errstr), fmt, ap);
    va_end(ap);
}

/* Records the command just written to arena[off..) whose arguments are argv: finds its keys and
 * slot, flags, and splits it when its keys span slots and splitting is on. */
static int record(cp_pipeline *p, size_t off, int argc, const char *const *argv,
                  const size_t *argvlen) {
    cp__client *c = p->c;
    const cp__cmdinfo *ci = cp__cmd_lookup(argv[0], argvlen[0]);
    cp__cmd *cmd = cp__cmdvec_add(&p->cmds);
    if (cmd == NULL) {
        p->arena.len = off;
        return CP_ENOMEM;
    }
    cmd->off = off;
    cmd->len = (uint32_t)(p->arena.len - off);
    cmd->flags = (ci->flags & CP__CMD_READONLY) ? CP__F_READONLY : 0;
    cmd->merge = (uint8_t)ci->merge;
    cmd->slot = CP__SLOT_NONE;
    if (!c->cluster)
        return 0;
    int first, step;
    int nkeys = cp__cmd_keyspan(ci, argc, argv, argvlen, &first, &step);
    for (int k = 0; k < nkeys; k++) {
        int a = first + k * step;
        int s = (int)cp_keyslot(argv[a], argvlen[a]);
        if (k == 0)
            cmd->slot = s;
        else if (s != cmd->slot) {
            cmd->slot = CP__SLOT_CROSS;
            break;
        }
    }
    if (cmd->slot == CP__SLOT_CROSS && (ci->flags & CP__CMD_SPLIT) &&
        (c->flags & CP_OPT_SPLIT_MULTIKEY)) {
        int rc = cp__split(p, p->cmds.n - 1);
        if (rc != 0) {
            p->cmds.n--;
            p->arena.len = off;
            return rc;
        }
    }
    return 0;
}

int cp_append_argv(cp_pipeline *p, int argc, const char **argv, const size_t *argvlen) {
    if (argc <= 0 || p->executed)
        return CP_EINVAL;
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
    return record(p, off, argc, argv, argvlen);
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
        return CP_EINVAL;
    }
    return record(p, off, argc, p->argv, p->argvlen);
}

int cp__pipeline_appendv(cp_pipeline *p, const char *fmt, va_list ap) {
    if (p->executed)
        return CP_EINVAL;
    size_t off = p->arena.len;
    if (cp__pipeline_argv_reserve(p, 16) != 0)
        return CP_ENOMEM;
    int rc = cp__format_va(&p->arena, fmt, ap);
    return rc != 0 ? rc : record_formatted(p, off);
}

int cp_append(cp_pipeline *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = cp__pipeline_appendv(p, fmt, ap);
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
    redisReply *r = p->cmds.v[i].reply;
    p->cmds.v[i].reply = NULL;
    return r;
}

cp_outcome cp_get_outcome(const cp_pipeline *p, size_t i) {
    return i < p->cmds.n ? (cp_outcome)p->cmds.v[i].outcome : CP_PENDING;
}

int cp_pipeline_err(const cp_pipeline *p) {
    return p->err;
}

const char *cp_pipeline_errstr(const cp_pipeline *p) {
    return p->errstr;
}

/* ---- execution --------------------------------------------------------------------------------
 */

static cp__cmd *get(cp_pipeline *p, uint32_t tag) {
    return (tag & CP__PART_TAG) ? &p->parts.v[tag & ~CP__PART_TAG] : &p->cmds.v[tag];
}

static void set_reply(cp__cmd *cmd, redisReply *r) {
    if (cmd->reply != NULL)
        freeReplyObject(cmd->reply);
    cmd->reply = r;
}

/* The command's outcome is final. A part may complete its split command. */
static void finish(cp_pipeline *p, uint32_t tag, cp_outcome outcome) {
    cp__cmd *cmd = get(p, tag);
    cmd->outcome = (uint8_t)outcome;
    p->remaining--;
    if (cmd->parent >= 0) {
        cp__cmd *parent = &p->cmds.v[cmd->parent];
        if (--parent->pending == 0)
            cp__merge_parts(p, (size_t)cmd->parent);
    }
}

static void enqueue(cp_pipeline *p, int n, uint32_t tag) {
    cp__node *node = &p->c->nodes[n];
    get(p, tag)->next = CP__NIL;
    if (node->qtail == CP__NIL)
        node->qhead = tag;
    else
        get(p, node->qtail)->next = tag;
    node->qtail = tag;
}

static void route(cp_pipeline *p, uint32_t tag) {
    cp__client *c = p->c;
    cp__cmd *cmd = get(p, tag);
    int n = 0;
    if (c->cluster) {
        n = cmd->slot >= 0 ? c->slot_node[cmd->slot] : -1;
        /* No known owner: any master answers with MOVED or CLUSTERDOWN, which we follow. */
        if (n < 0)
            n = cp__client_any_node(c);
    }
    enqueue(p, n, tag);
}

/* Backoff for retry round r: 2 ms doubling up to 512 ms, with jitter in [half, full]. */
static uint64_t backoff_ns(cp_pipeline *p) {
    unsigned shift = p->round < 8 ? p->round : 8;
    uint64_t base = 2000000ull << shift;
    return base / 2 + cp__client_rand(p->c, (uint32_t)(base / 2));
}

/* Puts a command aside for the next retry round, or ends it when the budget is spent: "unknown"
 * when it was ever written (it may have run), else "not executed". */
static void retry_later(cp_pipeline *p, uint32_t tag) {
    cp__cmd *cmd = get(p, tag);
    uint64_t now = cp__now_ns();
    if (now >= p->deadline) {
        finish(p, tag, (cmd->flags & CP__F_WRITTEN) ? CP_UNKNOWN : CP_NOT_EXECUTED);
        return;
    }
    if (p->nretry == p->capretry) {
        size_t ncap = p->capretry ? p->capretry * 2 : 64;
        uint32_t *r = realloc(p->retry, ncap * sizeof(*r));
        if (r == NULL) {
            set_err(p, CP_ENOMEM, "out of memory");
            finish(p, tag, (cmd->flags & CP__F_WRITTEN) ? CP_UNKNOWN : CP_NOT_EXECUTED);
            return;
        }
        p->retry = r;
        p->capretry = ncap;
    }
    p->retry[p->nretry++] = tag;
    if (p->retry_at == 0) {
        p->retry_at = now + backoff_ns(p);
        if (p->retry_at > p->deadline)
            p->retry_at = p->deadline;
    }
}

/* A written command lost its connection before the answer: re-send it only when that cannot
 * change data twice (read-only, or the caller flagged it idempotent). */
static void lost_in_flight(cp_pipeline *p, uint32_t tag) {
    cp__cmd *cmd = get(p, tag);
    cmd->flags |= CP__F_WRITTEN;
    if (cmd->flags & (CP__F_READONLY | CP__F_IDEMPOTENT)) {
        p->c->stats.io_retries++;
        retry_later(p, tag);
    } else {
        finish(p, tag, CP_UNKNOWN);
    }
}

/* Node n's connection is unusable: requests written on it end unknown (or are retried when
 * safe), requests not yet written go to the next retry round, and the map is re-read then. */
static void fail_node(cp_pipeline *p, int n, int code, const char *why) {
    cp__client *c = p->c;
    cp__conn *conn = &c->nodes[n].conn;
    set_err(p, code, "%s:%d: %s", c->nodes[n].host, c->nodes[n].port, why);
    for (size_t i = 0; i < conn->fcount; i++) {
        uint32_t tag = cp__conn_tag(conn, i);
        if (tag == CP__ASKING_TAG)
            continue;
        if (cp__conn_was_written(conn, i))
            lost_in_flight(p, tag);
        else
            retry_later(p, tag);
    }
    cp__conn_close(conn);
    c->nodes[n].failed_ns = cp__now_ns();
    while (c->nodes[n].qhead != CP__NIL) {
        uint32_t tag = c->nodes[n].qhead;
        c->nodes[n].qhead = get(p, tag)->next;
        retry_later(p, tag);
    }
    c->nodes[n].qtail = CP__NIL;
    c->need_refresh = 1;
}

/* Connects node n if needed, moves queued commands into its output buffer (bounded) and writes
 * as much as the socket takes. */
static void pump(cp_pipeline *p, int n) {
    cp__client *c = p->c;
    if (c->nodes[n].conn.fd < 0) {
        if (c->nodes[n].qhead == CP__NIL)
            return;
        if (cp__client_connect_node(c, n) != 0) {
            fail_node(p, n, c->nodes[n].conn.err, c->nodes[n].conn.errstr);
            return;
        }
    }
    cp__node *node = &c->nodes[n];
    cp__conn *conn = &node->conn;
    for (;;) {
        while (node->qhead != CP__NIL && conn->olen - conn->opos < CP__OBUF_SOFT_LIMIT) {
            uint32_t tag = node->qhead;
            cp__cmd *cmd = get(p, tag);
            node->qhead = cmd->next;
            if (node->qhead == CP__NIL)
                node->qtail = CP__NIL;
            int rc = 0;
            if (cmd->flags & CP__F_ASKING) {
                cmd->flags &= (uint8_t)~CP__F_ASKING;
                rc = cp__conn_push(conn, asking_cmd, sizeof(asking_cmd) - 1, CP__ASKING_TAG);
            }
            if (rc == 0)
                rc = cp__conn_push(conn, p->arena.data + cmd->off, cmd->len, tag);
            if (rc != 0) {
                set_err(p, CP_ENOMEM, "out of memory");
                finish(p, tag, CP_NOT_EXECUTED);
            }
        }
        int rc = cp__conn_flush(conn);
        if (rc < 0) {
            fail_node(p, n, rc, conn->errstr);
            return;
        }
        if (rc == 1 || node->qhead == CP__NIL)
            return;
    }
}

/* Acts on one reply: the answer, or a redirect / retry the caller never sees. */
static void on_reply(cp_pipeline *p, int n, uint32_t tag, redisReply *r) {
    cp__client *c = p->c;
    if (tag == CP__ASKING_TAG) { /* its command's own reply tells what happened */
        freeReplyObject(r);
        return;
    }
    cp__cmd *cmd = get(p, tag);
    int slot = 0, port = 0, m;
    char host[CP__HOSTLEN];
    cp__errkind kind =
        c->cluster ? cp__classify(r, &slot, host, sizeof(host), &port) : CP__ERR_NONE;
    switch (kind) {
    case CP__ERR_MOVED:
    case CP__ERR_ASK:
        if (kind == CP__ERR_MOVED)
            c->stats.moved++;
        else
            c->stats.ask++;
        if (++cmd->redirects > c->max_redirects) {
            set_err(p, CP_EREDIRECT, "more than %d redirects: %.60s", c->max_redirects, r->str);
            set_reply(cmd, r);
            finish(p, tag, CP_NOT_EXECUTED);
            return;
        }
        /* Redis may leave the host out (":port"): it means the host we asked. */
        m = cp__client_node(c, host[0] ? host : c->nodes[n].host, port);
        if (m < 0) {
            set_err(p, m, "cannot add node %s:%d", host, port);
            set_reply(cmd, r);
            finish(p, tag, CP_NOT_EXECUTED);
            return;
        }
        freeReplyObject(r);
        if (kind == CP__ERR_MOVED) {
            c->slot_node[slot] = (int16_t)m;
            c->nodes[m].is_master = 1;
            c->need_refresh = 1; /* the rest of the map is read once, before the next batch */
        } else {
            cmd->flags |= CP__F_ASKING;
        }
        enqueue(p, m, tag);
        return;
    case CP__ERR_TRYAGAIN:
    case CP__ERR_CLUSTERDOWN:
    case CP__ERR_LOADING:
        if (kind == CP__ERR_TRYAGAIN)
            c->stats.tryagain++;
        else if (kind == CP__ERR_CLUSTERDOWN) {
            c->stats.clusterdown++;
            c->need_refresh = 1;
        } else
            c->stats.loading++;
        /* Kept so that a command given up at the end of the budget shows why. */
        set_reply(cmd, r);
        if (cp__now_ns() >= p->deadline)
            set_err(p, CP_ESERVER, "retry budget spent: %.80s", r->str);
        retry_later(p, tag);
        return;
    default:
        set_reply(cmd, r);
        finish(p, tag, CP_DONE);
    }
}

/* Reads what node n has sent and acts on every complete reply. Replies that arrived before an
 * EOF or error are still delivered; only then is the connection failed. */
static void drain(cp_pipeline *p, int n) {
    cp__client *c = p->c;
    int rc = cp__conn_fill(&c->nodes[n].conn);
    for (;;) {
        redisReply *r = NULL;
        uint32_t tag;
        /* on_reply may add nodes (realloc): re-read c->nodes[n] every time. */
        int got = cp__conn_reply(&c->nodes[n].conn, &r, &tag);
        if (got == 0)
            break;
        if (got < 0) {
            fail_node(p, n, got, c->nodes[n].conn.errstr);
            return;
        }
        on_reply(p, n, tag, r);
    }
    if (rc < 0)
        fail_node(p, n, rc, c->nodes[n].conn.errstr);
}

/* Starts the next retry round: re-read the map when something failed, re-route in order. */
static void run_retries(cp_pipeline *p) {
    cp__client *c = p->c;
    p->retry_at = 0;
    p->round++;
    /* Refreshes are spaced so a cluster in failover is not hammered. */
    if (c->cluster && c->need_refresh && cp__now_ns() - c->last_refresh_ns >= 50000000ull)
        cp__client_refresh(c);
    size_t n = p->nretry;
    p->nretry = 0;
    for (size_t i = 0; i < n; i++)
        route(p, p->retry[i]);
}

/* Ends every command still without an outcome (a safety net that should never fire). */
static void abandon(cp_pipeline *p) {
    for (size_t i = 0; i < p->cmds.n; i++)
        if (p->cmds.v[i].outcome == CP_PENDING && !(p->cmds.v[i].flags & CP__F_SPLIT))
            finish(p, (uint32_t)i, CP_UNKNOWN);
    for (size_t j = 0; j < p->parts.n; j++)
        if (p->parts.v[j].outcome == CP_PENDING)
            finish(p, CP__PART_TAG | (uint32_t)j, CP_UNKNOWN);
    p->remaining = 0;
}

/* Waits for readiness on every connection with work, bounded by the nearest I/O timeout or
 * retry round, then reads, writes, and runs timers. */
static void wait_and_dispatch(cp_pipeline *p) {
    cp__client *c = p->c;
    struct pollfd stackfds[64];
    int stackidx[64];
    struct pollfd *fds = stackfds;
    int *idx = stackidx;
    if (c->nnodes > 64) {
        fds = malloc((size_t)c->nnodes * sizeof(*fds));
        idx = malloc((size_t)c->nnodes * sizeof(*idx));
        if (fds == NULL || idx == NULL) {
            free(fds == stackfds ? NULL : fds);
            free(idx == stackidx ? NULL : idx);
            set_err(p, CP_ENOMEM, "out of memory");
            return;
        }
    }
    uint64_t now = cp__now_ns(), wake = p->retry_at;
    uint64_t io_ns = (uint64_t)c->copts.io_timeout_ms * 1000000ull;
    int nfds = 0;
    for (int n = 0; n < c->nnodes; n++) {
        cp__conn *conn = &c->nodes[n].conn;
        int out = conn->olen > conn->opos || c->nodes[n].qhead != CP__NIL;
        if (conn->fd < 0 || (conn->fcount == 0 && !out))
            continue;
        fds[nfds] =
            (struct pollfd){.fd = conn->fd, .events = (short)(POLLIN | (out ? POLLOUT : 0))};
        idx[nfds++] = n;
        uint64_t due = conn->last_io_ns + io_ns;
        if (conn->fcount > 0 && (wake == 0 || due < wake))
            wake = due;
    }
    int timeout = -1;
    if (wake != 0)
        timeout = wake <= now ? 0 : (int)((wake - now + 999999) / 1000000);
    if (nfds == 0 && wake == 0) {
        /* Nothing in flight and nothing scheduled cannot happen with commands remaining; end
         * rather than wait forever if it ever does. */
        set_err(p, CP_EINVAL, "internal error: %zu commands with nowhere to go", p->remaining);
        abandon(p);
    } else if (poll(fds, (nfds_t)nfds, timeout) > 0) {
        for (int k = 0; k < nfds; k++) {
            int n = idx[k];
            if (fds[k].revents & (POLLIN | POLLHUP | POLLERR))
                drain(p, n);
            if ((fds[k].revents & POLLOUT) && c->nodes[n].conn.fd == fds[k].fd)
                pump(p, n);
        }
    }
    if (fds != stackfds) {
        free(fds);
        free(idx);
    }
    now = cp__now_ns();
    for (int n = 0; n < c->nnodes; n++) {
        cp__conn *conn = &c->nodes[n].conn;
        if (conn->fd >= 0 && conn->fcount > 0 && now - conn->last_io_ns >= io_ns)
            fail_node(p, n, CP_ETIMEDOUT, "no reply within the I/O timeout");
    }
    if (p->retry_at != 0 && cp__now_ns() >= p->retry_at)
        run_retries(p);
}

/* Routes every command: parts of split commands instead of their parent; a command whose keys
 * span slots without splitting is refused here, without being sent. */
static void begin(cp_pipeline *p) {
    cp__client *c = p->c;
    p->executed = 1;
    p->remaining = 0;
    p->round = 0;
    p->retry_at = 0;
    p->nretry = 0;
    /* The map is re-read at most once per batch, lazily, after a MOVED in an earlier one. */
    if (c->cluster && c->need_refresh)
        cp__client_refresh(c);
    p->deadline = cp__now_ns() + (uint64_t)c->retry_budget_ms * 1000000ull;
    for (size_t i = 0; i < p->cmds.n; i++) {
        cp__cmd *cmd = &p->cmds.v[i];
        if (cmd->flags & CP__F_SPLIT) {
            cmd->pending = cmd->nparts;
            for (uint32_t j = 0; j < cmd->nparts; j++)
                p->parts.v[cmd->part0 + j].flags |= cmd->flags & CP__F_IDEMPOTENT;
            continue;
        }
        if (cmd->slot == CP__SLOT_CROSS) {
            set_err(p, CP_ECROSSSLOT, "command %zu: keys in different slots", i);
            set_reply(cmd, cp__error_reply("CROSSSLOT Keys in request don't hash to the same "
                                           "slot (refused by the client)"));
            cmd->outcome = CP_NOT_EXECUTED;
            continue;
        }
        p->remaining++;
        route(p, (uint32_t)i);
    }
    for (size_t j = 0; j < p->parts.n; j++) {
        p->remaining++;
        route(p, CP__PART_TAG | (uint32_t)j);
    }
}

int cp_exec(cp_pipeline *p) {
    if (p->executed)
        return CP_EINVAL;
    cp__client *c = p->c;
    begin(p);
    while (p->remaining > 0) {
        for (int n = 0; n < c->nnodes && p->remaining > 0; n++)
            pump(p, n);
        if (p->remaining > 0)
            wait_and_dispatch(p);
    }
    for (size_t i = 0; i < p->cmds.n; i++) {
        if (p->cmds.v[i].outcome != CP_DONE) {
            if (p->err == 0)
                set_err(p, CP_EPARTIAL, "command %zu did not complete", i);
            return CP_EPARTIAL;
        }
    }
    return 0;
}
