/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The blocking calls, on the same core as everything else: cp_connect, cp_exec, cp_command (and
 * cp_command_script), cp_refresh. A blocking client runs on a cp_loop of its own (made here, freed
 * by cp_free through the pointer left in the client) and each call turns that loop until its work
 * is done, bounded by the client's timeouts and retry budget. cp_command is a pipeline of one on
 * the pipeline the client caches (c->single). One thread at a time, as the client.
 */
#include "lib/api/events.h"
#include "lib/client/lifecycle.h"
#include "lib/client/script.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void own_loop_free(void *l) {
    cp_loop_free(l);
}

/* One turn of the client's own loop, waiting up to timeout_ms (-1: until something happens); a
 * loop that cannot poll ends everything in flight. */
static void turn_within(cp__client *c, int timeout_ms) {
    if (cp_loop_run_once(c->own_loop, timeout_ms) < 0) {
        char why[64];
        snprintf(why, sizeof(why), "poll: %s", strerror(errno));
        cp__batch_cancel_all(c, CP_EIO, why);
    }
}

static void turn(cp__client *c) {
    turn_within(c, -1);
}

cp_client *cp_connect(const cp_options *opt) {
    cp__client *c = cp__client_create(opt);
    if (c == NULL || c->pub.err != 0)
        return (cp_client *)c;
    if ((c->own_loop = cp_loop_new()) == NULL) {
        cp__client_err(c, CP_ENOMEM, "out of memory");
        return &c->pub;
    }
    c->own_loop_free = own_loop_free;
    cp_loop_attach(c->own_loop, &c->pub);
    if (c->cluster) {
        cp_refresh(&c->pub);
        while (c->cmdtab_state == 1) /* the COMMAND table asked beside the map */
            turn(c);
        /* The map's connections were for the map: closed, as every connection opens on first
         * use (a program with a client per master would hold one more to a seed each). */
        for (int n = 0; n < c->nnodes; n++)
            if (c->nodes[n].conn.fcount == 0 && c->nodes[n].q.n == 0) {
                cp__lifecycle_closing(c, n, 0, "not needed after the slot map");
                cp__client_close_node(c, n);
            }
        return &c->pub;
    }
    /* Connect now so an unreachable endpoint or a wrong password is reported here. */
    cp__conn *conn = &c->nodes[0].conn;
    if (cp__client_connect_node(c, 0) == 0) {
        cp__lifecycle_check_up(c, 0); /* a connect that completed at once, no handshake */
        cp__events_after_call(c);
        while (conn->state != CP__CONN_READY && conn->state != CP__CONN_CLOSED)
            turn(c);
    }
    if (conn->state != CP__CONN_READY) {
        /* A connection that failed in its handshake (a silent peer under HELLO or AUTH) was
         * closed, which clears its error: the node keeps the last one. */
        const cp__node_life *l = &c->nodes[0].life;
        int code = conn->err ? conn->err : l->last_err ? l->last_err : CP_ECONNECT;
        cp__client_err(c, code, "%s",
                       conn->errstr[0]     ? conn->errstr
                       : l->last_errstr[0] ? l->last_errstr
                                           : "could not connect");
    }
    return &c->pub;
}

int cp_refresh(cp_client *pc) {
    cp__client *c = cp__client_of(pc);
    if (!c->cluster)
        return 0;
    if (!cp__client_blocking(c))
        return cp__client_err(c, CP_EINVAL, "cp_refresh: not a blocking client");
    unsigned gen = c->refresh.generation;
    cp__send_refresh_now(c);
    cp__events_after_call(c);
    while (c->refresh.generation == gen && c->refresh.running)
        turn(c);
    if (c->refresh.err != 0)
        return cp__client_err(c, c->refresh.err, "no node gave a slot map: %s",
                              c->refresh.errstr[0] ? c->refresh.errstr
                                                   : cp_strerror(c->refresh.err));
    c->pub.err = 0;
    c->pub.errstr[0] = '\0';
    return 0;
}

/* 0 when every command ended CP_DONE, else CP_EPARTIAL with the first failure described. */
static int result(cp_pipeline *p) {
    for (size_t i = 0; i < p->cmds.n; i++) {
        if (p->cmds.v[i].outcome != CP_DONE) {
            if (p->err == 0)
                cp__pipeline_set_err(p, CP_EPARTIAL, "command %zu did not complete", i);
            return CP_EPARTIAL;
        }
    }
    return 0;
}

int cp_exec(cp_pipeline *p) {
    cp__client *c = p->c;
    if (!cp__client_blocking(c)) {
        cp__pipeline_set_err(p, CP_EINVAL, "cp_exec: not a blocking client (use cp_exec_async)");
        return CP_EINVAL;
    }
    if (p->executed)
        return CP_EINVAL;
    /* A refresh the last batch started is waited for: a blocking client's batch starts from
     * the newest map it asked for, as it always did. */
    while (c->refresh.running)
        turn(c);
    /* A blocking client reads only inside its calls: with a client-side cache, what its
     * connections received since the last one (invalidations, a closed connection) is read
     * before any read of this batch may be answered from the cache. */
    if (c->cache != NULL)
        turn_within(c, 0);
    cp__send_start(p, 1);
    cp__events_after_call(c);
    while (p->running)
        turn(c);
    return result(p);
}

/* A pipeline of one command, reusing the client's cached pipeline. */
static redisReply *run_single(cp__client *c) {
    cp_pipeline *p = c->single;
    int rc = cp_exec(p);
    redisReply *r = NULL;
    if (cp_get_outcome(p, 0) == CP_DONE)
        r = cp_take_reply(p, 0);
    else
        cp__client_err(c, rc ? cp_pipeline_err(p) : CP_EPARTIAL, "%s", cp_pipeline_errstr(p));
    cp_pipeline_reset(p);
    return r;
}

static int ensure_single(cp__client *c) {
    if (!cp__client_blocking(c))
        return cp__client_err(c, CP_EINVAL, "cp_command: not a blocking client");
    if (c->single == NULL && (c->single = cp_pipeline_new(&c->pub)) == NULL)
        return cp__client_err(c, CP_ENOMEM, "out of memory");
    cp_pipeline_reset(c->single);
    return 0;
}

redisReply *cp_command(cp_client *pc, const char *fmt, ...) {
    cp__client *c = cp__client_of(pc);
    if (ensure_single(c) != 0)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    int rc = cp__pipeline_appendv(c->single, fmt, ap);
    va_end(ap);
    if (rc != 0) {
        if (rc != CP_EINVAL) /* a refusal's reason is on the client already */
            cp__client_err(c, rc, "cannot format command: %s", cp_strerror(rc));
        return NULL;
    }
    return run_single(c);
}

/* cp_command to every master, or to one node (to >= 0). */
static redisReply *command_to(cp__client *c, int to, const char *fmt, va_list ap) {
    if (ensure_single(c) != 0)
        return NULL;
    int rc = cp__pipeline_append_to(c->single, to, fmt, ap);
    if (rc == CP_EINVAL && to >= 0)
        cp__client_err(c, rc, "no such node");
    else if (rc != 0 && rc != CP_EINVAL)
        cp__client_err(c, rc, "%s", cp_strerror(rc));
    if (rc != 0)
        return NULL;
    return run_single(c);
}

redisReply *cp_command_all(cp_client *pc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = command_to(cp__client_of(pc), CP__TO_ALL, fmt, ap);
    va_end(ap);
    return r;
}

redisReply *cp_command_node(cp_client *pc, int node, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = command_to(cp__client_of(pc), cp__node_arg(node), fmt, ap);
    va_end(ap);
    return r;
}

redisReply *cp_command_argv(cp_client *pc, int argc, const char **argv, const size_t *argvlen) {
    cp__client *c = cp__client_of(pc);
    if (ensure_single(c) != 0)
        return NULL;
    int rc = cp_append_argv(c->single, argc, argv, argvlen);
    if (rc != 0) {
        if (rc != CP_EINVAL)
            cp__client_err(c, rc, "cannot append command: %s", cp_strerror(rc));
        return NULL;
    }
    return run_single(c);
}

redisReply *cp_command_script(cp_client *pc, const cp_script *s, int numkeys, int argc,
                              const char **argv, const size_t *argvlen) {
    cp__client *c = cp__client_of(pc);
    if (ensure_single(c) != 0)
        return NULL;
    int rc = cp__script_append(c->single, s, numkeys, argc, argv, argvlen);
    if (rc != 0) {
        if (rc != CP_EINVAL)
            cp__client_err(c, rc, "cannot append script: %s", cp_strerror(rc));
        return NULL;
    }
    return run_single(c);
}
