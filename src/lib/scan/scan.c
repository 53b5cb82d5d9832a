/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The cluster SCAN (cp_scan_*): every key of every master, with Redis's SCAN guarantee for the
 * whole cluster (a key present from the first call to the last is returned at least once) while
 * slots migrate. A blocking client (cp_scan_next) or an event-loop one (cp_scan_next_async).
 * The iterator owns two pipelines on the client (freed with it, before the client), its slot
 * tables and the batch it builds; each batch handed out is the caller's. One thread at a time,
 * the client's.
 *
 * Two phases. A key is certain to be returned when its slot gets a certificate, and the scan
 * ends only when all 16384 slots have one (docs/commands.md, "Cluster SCAN", says what holds).
 *
 * 1. Every master of the map read at the first call is walked with SCAN cursor [MATCH] [COUNT]
 *    [TYPE] until the cursor comes back 0. In the same pipeline as its first SCAN the master is
 *    asked, in this order, for its MIGRATE count (INFO commandstats: keys leave a node only by
 *    MIGRATE) and its own view (CLUSTER NODES); after its last SCAN for both again. A slot the
 *    master served in both views without a MIGRATING/IMPORTING mark, while its MIGRATE count did
 *    not move, is certified: when the walk started every key of the slot was on that master
 *    (resharding moves keys only out of a MIGRATING slot, and sets the new owner only once they
 *    all arrived), none left it during the walk, and SCAN returns every key that stays on the
 *    node from its first call to its last.
 * 2. Every other slot is listed at the master that serves it now: CLUSTER COUNTKEYSINSLOT, then
 *    MULTI, CLUSTER NODES, CLUSTER GETKEYSINSLOT (room for twice the count), EXEC. The node's
 *    view and its keys of the slot come from one instant: when the view says it serves the slot
 *    without a mark, those are all the slot's keys then (certified). Otherwise the view names
 *    where to look next (the owner, the node the slot migrates to or is imported from), and the
 *    slot is listed again there, with a growing pause while nothing gets certified. A slot
 *    stuck half-migrated (an interrupted resharding) is certified by its two nodes together when
 *    neither runs a MIGRATE meanwhile: their counts, then both listings (the source's view says
 *    MIGRATING to the target, the target's IMPORTING from the source), then their counts again.
 *    MATCH is applied here by the client (glob.h, as the server matches), TYPE by a TYPE per key.
 *    No certificate for the retry budget (cp_options.retry_budget_ms) ends the scan CP_ETIMEDOUT.
 *
 * The files: this one holds the engine (advance), both drivers and the API; scanwalk.c phase 1,
 * scanlist.c phase 2, scanstep.c the helpers both call, scanstate.h the state they share.
 *
 * One engine, two drivers. The steps are written once (advance): each runs until it needs what
 * only its driver can do, asks for it (a pipeline run, a pause, a re-read of the slot map) and
 * goes on from where it stopped (s->sub) with the answer. cp_scan_next drives it with cp_exec,
 * a sleep and cp_refresh; cp_scan_next_async with cp_exec_async, a wake of the client's timer
 * (events.h) and the in-band refresh, whose end wakes it too: nothing there blocks.
 *
 * A step that fails (a node unreachable, an error reply) returns its CP_E* code with the
 * client's errstr and starts over at the next call: it tries the same step again.
 */
#include "lib/base/alloc.h"
#include "lib/scan/scanlist.h"
#include "lib/scan/scanstep.h"
#include "lib/scan/scanwalk.h"
#include "util/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the async driver's wake is for. */
enum { W_PAUSE, W_REFRESH, W_RESULT };

/* ---- the engine ---- */

/* The step failed: it starts over at the next call, and nothing of it is kept. */
static int failed(cp_scan *s, int rc) {
    s->sub = CP__SCAN_S_BEGIN;
    s->nkeys = 0;
    if (s->chunk_view) {
        cp__slotmap_free(&s->view->map);
        s->chunk_view = 0;
    }
    return rc;
}

/* Runs the scan until it needs its driver (ASK_*) or has a batch or its end for the caller
 * (GOT_*), or a step failed (a CP_E*, the client's errstr set). The driver does what was
 * asked, puts its result in s->io, and calls again. */
static int advance(cp_scan *s) {
    while (s->out == NULL) {
        /* Back from the driver with a failed run or refresh: the step ends with it. */
        int rc = s->sub != CP__SCAN_S_BEGIN && s->sub != CP__SCAN_S_PAUSED ? s->io : 0;
        if (rc == 0) {
            switch (s->phase) {
            case CP__SCAN_PH_START:
                rc = cp__scan_start(s);
                break;
            case CP__SCAN_PH_MASTERS:
                rc = s->sub == CP__SCAN_S_BEGIN ? cp__scan_walk_ask(s) : cp__scan_walk_take(s);
                break;
            case CP__SCAN_PH_REREAD_START:
                rc = cp__scan_reread_start(s);
                break;
            case CP__SCAN_PH_REREAD:
                rc = cp__scan_reread_step(s);
                break;
            default:
                return CP__SCAN_GOT_END;
            }
        }
        if (rc < 0)
            return failed(s, rc);
        if (rc != CP__SCAN_STEP_ON)
            return rc;
    }
    return CP__SCAN_GOT_BATCH;
}

/* ---- the blocking driver ---- */

/* Runs p: 0 when every command got an answer, else the first failure as the client's error. */
static int run(cp_scan *s, cp_pipeline *p) {
    if (cp_exec(p) == 0)
        return 0;
    int code = cp_pipeline_err(p);
    return cp__scan_err(s, code ? code : CP_EPARTIAL, "%s", cp_pipeline_errstr(p));
}

int cp_scan_next(cp_scan *s, redisReply **keys) {
    if (s == NULL || keys == NULL) {
        if (s != NULL)
            cp__scan_err(s, CP_EINVAL, "cp_scan_next: keys is NULL");
        return CP_EINVAL;
    }
    *keys = NULL;
    if (!cp__client_blocking(s->c))
        return cp__scan_err(s, CP_EINVAL,
                            "cp_scan_next: not a blocking client (cp_scan_next_async on a loop)");
    for (;;) {
        int rc = advance(s);
        switch (rc) {
        case CP__SCAN_ASK_RUN:
            s->io = run(s, s->run);
            break;
        case CP__SCAN_ASK_PAUSE:
            cp__sleep_ms(s->pause_ms);
            break;
        case CP__SCAN_ASK_REFRESH:
            s->io = cp_refresh(&s->c->pub);
            break;
        case CP__SCAN_GOT_BATCH:
            *keys = s->out;
            s->out = NULL;
            s->c->pub.err = 0;
            s->c->pub.errstr[0] = '\0';
            return 1;
        case CP__SCAN_GOT_END:
            return 0;
        default:
            return rc;
        }
    }
}

/* ---- the async driver ---- */

/* 0 when every command of p got an answer, else the first failure as the client's error (as
 * run() for cp_exec). */
static int ran_ok(cp_scan *s, const cp_pipeline *p) {
    for (size_t i = 0; i < cp_count(p); i++)
        if (cp_get_outcome(p, i) != CP_DONE) {
            int code = cp_pipeline_err(p);
            return cp__scan_err(s, code ? code : CP_EPARTIAL, "%s",
                                code ? cp_pipeline_errstr(p) : "a command did not complete");
        }
    return 0;
}

/* How the refresh the step waited for went, as cp_refresh tells it. */
static int refresh_result(cp_scan *s) {
    cp__client *c = s->c;
    if (c->refresh.err == 0)
        return 0;
    return cp__client_err(c, c->refresh.err, "no node gave a slot map: %s",
                          c->refresh.errstr[0] ? c->refresh.errstr : cp_strerror(c->refresh.err));
}

/* The call's end: the step under way is over, its callback is called, last (it may free the
 * scan, or start the next call). */
static void deliver(cp_scan *s, int rc) {
    cp__client *c = s->c;
    redisReply *keys = NULL;
    if (c->closing && rc != CP_ECANCELED) /* cp_free: the scan is over (a batch stays in it) */
        rc = cp__scan_err(s, CP_ECANCELED, "the client was freed");
    if (rc == CP__SCAN_GOT_BATCH) {
        keys = s->out;
        s->out = NULL;
        c->pub.err = 0;
        c->pub.errstr[0] = '\0';
        rc = 1;
    } else if (rc == CP__SCAN_GOT_END) {
        rc = 0;
    }
    cp_scan_callback *cb = s->cb;
    void *data = s->cb_data;
    s->cb = NULL;
    c->pending--;
    cb(s, rc, keys, data);
}

/* The call ends with rc: now from the loop, or from its next call when this is still inside
 * cp_scan_next_async (a callback never runs inside the call that asked for it). */
static void finish(cp_scan *s, int rc) {
    if (!s->in_call) {
        deliver(s, rc);
        return;
    }
    s->result = rc;
    if (rc < 0)
        snprintf(s->errstr, sizeof(s->errstr), "%s", s->c->pub.errstr);
    s->wait = W_RESULT;
    cp__events_wake_at(s->c, &s->wake, 1);
}

static void ran(cp_pipeline *p, void *data);

/* Runs the steps until one waits for the loop (a pipeline, the timer, the map) or the call
 * ends. Nothing here waits. */
static void drive(cp_scan *s) {
    cp__client *c = s->c;
    for (;;) {
        int rc = advance(s);
        if (rc < 0 || rc == CP__SCAN_GOT_BATCH || rc == CP__SCAN_GOT_END) {
            finish(s, rc);
            return;
        }
        if (c->closing) { /* cp_free is ending everything: the step cannot go on */
            finish(s, failed(s, cp__scan_err(s, CP_ECANCELED, "the client was freed")));
            return;
        }
        switch (rc) {
        case CP__SCAN_ASK_RUN: /* on in ran(), once every command has its outcome */
            if (cp_exec_async(s->run, ran, s) == 0)
                return;
            s->io = cp__scan_err(s, cp_pipeline_err(s->run), "%s", cp_pipeline_errstr(s->run));
            break;
        case CP__SCAN_ASK_PAUSE: /* on in woken() */
            s->wait = W_PAUSE;
            cp__events_wake_at(c, &s->wake, cp__now_ns() + (uint64_t)s->pause_ms * 1000000u);
            return;
        default: /* ASK_REFRESH: the in-band refresh, every node then the seeds as cp_refresh */
            cp__send_refresh_now(c);
            if (c->refresh.running) { /* on in woken() when it has ended */
                s->wait = W_REFRESH;
                cp__events_wake_after_refresh(c, &s->wake);
                return;
            }
            s->io = refresh_result(s); /* it could not start */
        }
    }
}

static void ran(cp_pipeline *p, void *data) {
    cp_scan *s = data;
    s->io = ran_ok(s, p);
    drive(s);
}

static void woken(void *data, int err) {
    cp_scan *s = data;
    if (err != 0) { /* cp_free: the step cannot go on */
        failed(s, 0);
        deliver(s, cp__scan_err(s, err, "the client was freed"));
        return;
    }
    switch (s->wait) {
    case W_RESULT:
        if (s->result < 0)
            cp__client_err(s->c, s->result, "%s", s->errstr);
        deliver(s, s->result);
        return;
    case W_REFRESH:
        s->io = refresh_result(s);
        break;
    default:
        break;
    }
    drive(s);
}

int cp_scan_next_async(cp_scan *s, cp_scan_callback *cb, void *privdata) {
    if (s == NULL)
        return CP_EINVAL;
    cp__client *c = s->c;
    const char *why = cb == NULL                ? "no callback"
                      : s->cb != NULL           ? "a call of this scan is under way"
                      : c->closing              ? "the client is being freed"
                      : !cp__events_async_ok(c) ? "not an event-loop client on a loop (cp_attach; "
                                                  "cp_scan_next on a blocking one)"
                                                : NULL;
    if (why != NULL)
        return cp__scan_err(s, CP_EINVAL, "cp_scan_next_async: %s", why);
    s->cb = cb;
    s->cb_data = privdata;
    c->pending++; /* the call is pending until its callback (cp_loop_run waits for it) */
    s->in_call = 1;
    drive(s);
    s->in_call = 0;
    cp__events_after_call(c); /* the loop hears of what the step started */
    return 0;
}

/* ---- the API ---- */

cp_scan *cp_scan_new(cp_client *pc, const char *match, long count, const char *type) {
    if (pc == NULL)
        return NULL;
    cp__client *c = cp__client_of(pc);
    cp_scan *s = cp__calloc(1, sizeof(*s));
    if (s == NULL)
        goto oom;
    s->c = c;
    s->count = count;
    s->calls0 = -1;
    s->wake.fn = woken;
    s->wake.data = s;
    strcpy(s->cursor, "0");
    if (match != NULL && strcmp(match, "*") != 0) { /* "*" alone: no filter, as SCAN has it */
        s->matchlen = strlen(match);
        if ((s->match = cp__strdup(match)) == NULL)
            goto oom;
    }
    if (type != NULL && (s->type = cp__strdup(type)) == NULL)
        goto oom;
    s->p = cp_pipeline_new(pc);
    s->tp = cp_pipeline_new(pc);
    s->mine = cp__calloc(1, CP_SLOTS);
    s->done = cp__calloc(1, CP_SLOTS);
    s->view = cp__malloc(sizeof(*s->view));
    s->from = cp__malloc(sizeof(int16_t) * CP_SLOTS);
    s->pair_from = cp__malloc(sizeof(int16_t) * CP_SLOTS);
    s->pair_to = cp__malloc(sizeof(int16_t) * CP_SLOTS);
    s->groups = cp__malloc(sizeof(cp__scan_group) * 2 * CP__SCAN_PAIRS);
    if (s->p == NULL || s->tp == NULL || s->mine == NULL || s->done == NULL || s->view == NULL ||
        s->from == NULL || s->pair_from == NULL || s->pair_to == NULL || s->groups == NULL)
        goto oom;
    return s;
oom:
    cp_scan_free(s);
    cp__client_err(c, CP_ENOMEM, "out of memory");
    return NULL;
}

void cp_scan_get_stats(const cp_scan *s, cp_scan_stats *out) {
    if (out != NULL)
        *out = s != NULL ? s->st : (cp_scan_stats){0};
}

void cp_scan_free(cp_scan *s) {
    if (s == NULL)
        return;
    if (s->cb != NULL) { /* an async call under way ends without its callback */
        cp__events_wake_cancel(s->c, &s->wake);
        s->c->pending--;
    }
    if (s->chunk_view)
        cp__slotmap_free(&s->view->map);
    cp_pipeline_free(s->p); /* a running one is detached: it finishes on its own */
    cp_pipeline_free(s->tp);
    cp_reply_free(s->out);
    cp__free(s->match);
    cp__free(s->type);
    cp__free(s->masters);
    cp__free(s->mine);
    cp__free(s->done);
    cp__free(s->view);
    cp__free(s->from);
    cp__free(s->pair_from);
    cp__free(s->pair_to);
    cp__free(s->groups);
    cp__free(s->keys);
    cp__free(s);
}
