/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The per-thread event loop of the bench engine: each worker thread owns an epoll instance and
 * its share of the clients (per master a lane: a cp_client + a cp_pipeline), composes each
 * lane's batch from its queue (lanes.c), runs it with cp_exec_async, and accounts every finished
 * command (account.c): per-request latency from cp_timing, outcomes, verification of GET
 * replies, the second it ended in (seconds.c). A --command run composes each request from its
 * template (template.c) instead, checks replies as the template says and counts each template's
 * part too; the choice is made once per batch, so the GET/SET path does not test for it per
 * request. Routing, redirects and retries are entirely the library's.
 *
 * The worker is an event-loop adapter of its own (cp_event_ops over its epoll): the library
 * says when to watch an fd for writing and when to wake it up. Syscalls are the cost that
 * matters on loopback, so fds are registered once, level-triggered, for reading; EPOLLOUT only
 * while a socket would block. A batch then costs one send per node, one recv per node (usually)
 * and a share of one epoll_wait. Library timers are run by a sweep every 10 ms, or at once when
 * the library asks for "now".
 *
 * Ownership: a worker owns its clients, pipelines, batch metadata and epoll fd; the epoll fd
 * and the loop's scratch are freed when cp__worker_main returns, the rest by cp__worker_free.
 * Threads: see worker.h; everything non-atomic in a cp__worker is touched by its own thread
 * until pthread_join.
 */
#include "bench/worker.h"

#include "bench/target.h"
#include "util/clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000ull
#define SWEEP_NS 10000000ull /* how often library timers (I/O timeouts, retries) are checked */
#define MAX_EVENTS 256

/* A lane is idle until its --rate slot, executing a batch, waiting for keys (its group's key
 * stream is blocked on a full lane), draining (stopped, open-loop batches still in flight), or
 * done. */
enum { CS_IDLE = 0, CS_EXEC = 1, CS_DONE = 2, CS_WAIT = 3, CS_DRAIN = 4 };

/* Open loop (--rate): batches a lane may have in flight at once before it sheds load (counted as
 * errors, "not sent"), so a dead master costs bounded memory. At the budget's 3 s and a lane's
 * share of any rate this bench reaches, a few hundred are in flight at most. */
#define FLIGHTS_MAX 4096
#define CATCH_UP_MAX 8 /* batches a late open-loop lane sends before the loop reads again */
#define STR_(x) #x
#define STR(x) STR_(x)

/* A batch in flight: its pipeline and what its commands are. Closed loop: the lane's one
 * flight, whose batch is a view of the lane's queue (valid until its next take). Open loop: any
 * number, each with a copy of its batch. */
typedef struct flight {
    cp_pipeline *p;
    cp__reqbuf batch;
    uint16_t *cmdkeys;    /* MSET batches: keys of each of its commands, in order */
    uint64_t intended_ns; /* open loop: when the schedule sent it (latency counts from here) */
    int owned;            /* batch holds buffers of its own */
    struct cp__client_state *cs;
    struct flight *next_free;
} flight;

/* A lane: one cp_client and its pipeline. In cluster mode a client has one lane per master and
 * a lane's batches carry the keys the slot map places on its master (the library still routes
 * every command and follows redirects), so each master sees P requests in flight per lane and a
 * lane goes on as soon as its own master has answered. Batches spread over every master instead
 * wait for the slowest one, and the servers then idle between bursts: measured at depth 10,
 * 1.5x the throughput at 0.8x the servers' CPU per request. Proxy mode: one lane per client. */
struct cp__client_state {
    cp_client *c;
    flight first;         /* closed loop's flight; open loop's first */
    flight *free_flights; /* open loop: flights done, for reuse */
    int inflight;         /* open loop: flights running */
    cp__group *g;
    int lane;     /* master index (cluster), 0 (proxy) */
    int endpoint; /* proxy: index into spec->endpoints */
    int state;
    uint64_t next_start_ns; /* --rate: when the next batch may start */
    cp__reqbuf *queue;      /* requests for the next batches: its group's queue[lane] */
    uint64_t timer_at;      /* the library's timer for this client (0: none) */
    struct wctx *x;
    cp_stats base; /* counters when the measured interval began */
};

typedef struct wctx {
    cp__worker *w;
    const cp__run_spec *spec;
    int epfd;
    uint64_t start_ns, end_ns; /* end_ns: duration mode only */
    uint64_t cur_sec;          /* second being filled */
    cp__sec_slot *slot;
    uint64_t next_sweep;
    int active; /* clients not done */
    uint64_t rate_interval_ns;
    char *valbuf;      /* values of the command being composed: largest size x keys per command */
    const char **argv; /* MSET's arguments (load with mset_keys > 1) */
    size_t *argvlen;
    flight **finished; /* batches that ended in this wake-up (run_loop) */
    int nfinished, capfinished;
    int open_loop;       /* --rate: batches go out on schedule, whatever the answers do */
    uint64_t soonest;    /* earliest library timer asked for since the last sweep (0: none) */
    uint64_t next_start; /* --rate: earliest slot of an idle lane (0: none) */
    cp__lanes ls;        /* the clients' key streams */
    /* --command runs (NULL otherwise): the command being composed's mixed arguments, the __tag__
     * and the __otherkey__ keys of its request (keystride bytes each, prefix written once), and
     * the counters' last replies (CTR_SLOTS entries, see counter_wrong) */
    char *scratch, *tagbuf, *otherbuf;
    const char **other;
    size_t *otherlen;
    struct ctr_entry *ctr;
} wctx;

/* Counters: the last reply a client got for a (key, template), in a table of CTR_SLOTS entries
 * per worker thread, keyed by a hash of the three (a collision only forgets an entry). */
#define CTR_SLOTS 16384u
typedef struct ctr_entry {
    uint64_t id; /* 0: empty */
    long long last;
} ctr_entry;

/* ---- the library's hooks over this worker's epoll ---------------------------------------------
 * The loop pointer is the lane (cp__client_state); a connection's slot holds the events it is
 * registered with, plus REGISTERED once it is in epoll. */

#define REGISTERED 0x100u

static void set_interest(cp__client_state *cs, int fd, void **slot, unsigned on, unsigned off) {
    unsigned old = (unsigned)(uintptr_t)*slot, now = ((old | on) & ~off) | REGISTERED;
    if (now == old)
        return;
    struct epoll_event ev = {0};
    ev.events = ((now & CP_EV_READ) ? EPOLLIN : 0) | ((now & CP_EV_WRITE) ? EPOLLOUT : 0);
    ev.data.u64 = ((uint64_t)(uint32_t)(cs - cs->x->w->cs) << 32) | (uint32_t)fd;
    if (epoll_ctl(cs->x->epfd, (old & REGISTERED) ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) != 0)
        cp__acct_note_error(&cs->x->w->acct, "epoll_ctl: %s", strerror(errno));
    *slot = (void *)(uintptr_t)now;
}

static void ev_add_read(void *loop, cp_client *c, int fd, void **slot) {
    (void)c;
    set_interest(loop, fd, slot, CP_EV_READ, 0);
}

static void ev_del_read(void *loop, cp_client *c, int fd, void **slot) {
    (void)c;
    set_interest(loop, fd, slot, 0, CP_EV_READ);
}

static void ev_add_write(void *loop, cp_client *c, int fd, void **slot) {
    (void)c;
    set_interest(loop, fd, slot, CP_EV_WRITE, 0);
}

static void ev_del_write(void *loop, cp_client *c, int fd, void **slot) {
    (void)c;
    set_interest(loop, fd, slot, 0, CP_EV_WRITE);
}

static void ev_cleanup(void *loop, cp_client *c, int fd, void **slot) {
    (void)c;
    cp__client_state *cs = loop;
    if ((uintptr_t)*slot & REGISTERED)
        epoll_ctl(cs->x->epfd, EPOLL_CTL_DEL, fd, NULL);
    *slot = NULL;
}

static void ev_set_timer(void *loop, cp_client *c, long ms) {
    (void)c;
    cp__client_state *cs = loop;
    if (ms < 0) {
        cs->timer_at = 0;
        return;
    }
    cs->timer_at = cp__now_ns() + (uint64_t)ms * 1000000ull;
    if (cs->x->soonest == 0 || cs->timer_at < cs->x->soonest)
        cs->x->soonest = cs->timer_at;
}

static const cp_event_ops worker_ops = {ev_add_read, ev_del_read,  ev_add_write, ev_del_write,
                                        ev_cleanup,  ev_set_timer, NULL /* detach */};

/* ---- seconds -------------------------------------------------------------------------------- */

static void open_slot(wctx *x, uint64_t sec) {
    x->slot = cp__sec_open(&x->w->ring, sec);
    x->cur_sec = sec;
}

/* Redirects followed in the second being closed: the library counts them per client, so the
 * second gets the growth of the sum since the last close (once a second, not per batch). */
static void slot_redirects(wctx *x) {
    cp__worker *w = x->w;
    uint64_t sum[2] = {0, 0};
    for (int i = 0; i < w->ncs; i++) {
        cp_stats st;
        if (w->cs[i].c == NULL)
            continue;
        cp_get_stats(w->cs[i].c, &st);
        sum[0] += st.moved - w->cs[i].base.moved;
        sum[1] += st.ask - w->cs[i].base.ask;
    }
    x->slot->moved = sum[0] - w->redirects_seen[0];
    x->slot->ask = sum[1] - w->redirects_seen[1];
    w->redirects_seen[0] = sum[0];
    w->redirects_seen[1] = sum[1];
}

static void close_seconds(wctx *x, uint64_t now) {
    while (now >= x->start_ns + (x->cur_sec + 1) * NS) {
        slot_redirects(x);
        cp__sec_close(&x->w->ring, x->cur_sec + 1);
        open_slot(x, x->cur_sec + 1);
    }
}

/* ---- batches -------------------------------------------------------------------------------- */

static void record_mismatch(wctx *x, cp__client_state *cs, const char *key, size_t keylen,
                            const char *what, const char *command) {
    const cp__run_spec *s = x->spec;
    cp__acct_mismatch(&x->w->acct, x->slot, s->map,
                      s->map != NULL ? NULL : &s->endpoints[cs->endpoint], key, keylen, what,
                      command);
}

/* Checks the value of GET number i of the batch against its key. */
static void verify_get(wctx *x, flight *fl, size_t i, const redisReply *r, cp__tally *t) {
    const cp__run_spec *s = x->spec;
    cp__client_state *cs = fl->cs;
    const char *key = fl->batch.keys + i * x->ls.keystride;
    size_t klen = fl->batch.keylen[i];
    t->checked++;
    if (r->type != REDIS_REPLY_STRING) {
        record_mismatch(x, cs, key, klen, "not a string", NULL);
        return;
    }
    uint32_t version = 0;
    cp__verify_result vr = cp__value_verify(s->vf, r->str, r->len, key, klen, &version);
    if (vr != CP__VERIFY_OK)
        record_mismatch(x, cs, key, klen, cp__verify_result_str(vr), NULL);
    else if (s->acked != NULL && version < fl->batch.kver[i])
        t->stale++;
}

/* Accounts every command of the finished batch and resets the pipeline for the next one. Open
 * loop: a command's latency counts from when the schedule sent its batch, so waiting for a
 * stalled node shows in the percentiles instead of delaying the next sends (coordinated
 * omission). */
static void finish_templates(wctx *x, flight *fl);

static void finish_batch(wctx *x, flight *fl) {
    const cp__run_spec *s = x->spec;
    if (s->cmds != NULL) { /* once per batch */
        finish_templates(x, fl);
        return;
    }
    cp_pipeline *p = fl->p;
    cp__hist *hist = &x->slot->hist;
    size_t n = cp_count(p);
    cp__tally t = {0};
    /* Replies parsed in one wake-up share their clock reading, and a batch's requests their
     * send's, so latencies come in runs of equal values: a run is one histogram update. */
    uint64_t run_ns = 0, run = 0;
    for (size_t i = 0; i < n; i++) {
        cp_outcome oc = cp_get_outcome(p, i);
        const redisReply *r = cp_reply(p, i);
        uint64_t keys = fl->cmdkeys != NULL ? fl->cmdkeys[i] : 1;
        if (oc != CP_DONE || r == NULL || r->type == REDIS_REPLY_ERROR) {
            cp__acct_failure(&x->w->acct, p, oc, r, keys);
            t.errors += keys;
            continue;
        }
        uint64_t sent, done;
        if (cp_timing(p, i, &sent, &done) == 0 && done >= sent) {
            if (fl->intended_ns != 0 && fl->intended_ns < sent)
                sent = fl->intended_ns;
            if (done - sent != run_ns) {
                cp__hist_record_n_ns(hist, run_ns, run);
                run_ns = done - sent;
                run = 0;
            }
            run++;
        }
        if (fl->cmdkeys != NULL) { /* an MSET: load, no version tracking */
            t.ops += keys;
            t.sets += keys;
            continue;
        }
        t.ops++;
        if (fl->batch.op[i]) {
            t.sets++;
            if (s->acked != NULL && r->type == REDIS_REPLY_STATUS) /* one writer per key */
                atomic_store_explicit(&s->acked[fl->batch.kidx[i]], fl->batch.kver[i],
                                      memory_order_relaxed);
            continue;
        }
        t.gets++;
        if (r->type == REDIS_REPLY_NIL)
            t.misses++;
        else if (s->verify)
            verify_get(x, fl, i, r, &t);
    }
    cp__hist_record_n_ns(hist, run_ns, run); /* the main thread merges the seconds' histograms */
    cp__acct_add(&x->w->acct, x->slot, &t);
    cp_pipeline_reset(p);
}

/* ---- --command runs ---------------------------------------------------------------------------
 * Each request of a batch is its template (batch.op) expanded for its key; its reply is checked
 * as the template says (template.h) and counted in the template's own part as well as in the
 * run's totals. */

/* The request's placeholders, the __otherkey__ keys drawn now from its client's own stream. */
static void subst_of(wctx *x, const cp__template *t, cp__group *g, const char *key, size_t klen,
                     cp__tmpl_subst *sub) {
    const cp__run_spec *s = x->spec;
    *sub = (cp__tmpl_subst){key, klen, NULL, 0, NULL, 0, x->other, x->otherlen};
    if (t->ndata > 0) {
        cp__value_fill(s->vf, key, klen, s->version, x->valbuf);
        sub->data = x->valbuf;
        sub->datalen = cp__value_len(s->vf, key, klen);
    }
    if (t->ntag > 0) {
        sub->taglen = cp__key_tag(key, klen, x->tagbuf);
        sub->tag = x->tagbuf;
    }
    for (unsigned j = 0; j < t->nother; j++)
        x->otherlen[j] = cp__key_format_digits(s->kf, cp__keygen_next(&g->okg),
                                               x->otherbuf + j * x->ls.keystride);
}

static size_t compose_templates(wctx *x, flight *fl) {
    const cp__cmdset *set = x->spec->cmds;
    const cp__reqbuf b = fl->batch;
    for (size_t i = 0; i < b.n; i++) {
        const cp__template *t = &set->t[b.op[i]];
        cp__tmpl_subst sub;
        subst_of(x, t, fl->cs->g, b.keys + i * x->ls.keystride, b.keylen[i], &sub);
        int argc = cp__template_expand(t, &sub, x->scratch, x->argv, x->argvlen);
        int rc = t->by_slot ? cp_append_argv_slot(fl->p, argc, x->argv, x->argvlen, b.slot[i])
                            : cp_append_argv(fl->p, argc, x->argv, x->argvlen);
        if (rc != 0) { /* out of memory: run what is appended */
            cp__acct_note_error(&x->w->acct, "%s", "out of memory composing a batch");
            fl->batch.n = i;
            return i;
        }
    }
    return b.n;
}

/* A reply of template t for request i that is not what it should be. The sample names the key
 * the command was for (its first argument, made from __key__). */
static void template_mismatch(wctx *x, flight *fl, size_t i, const cp__template *t,
                              const char *what) {
    const char *key = fl->batch.keys + i * x->ls.keystride;
    size_t klen = fl->batch.keylen[i];
    char tag[CP__KEY_MAX_LEN + 2], arg[CP__KEY_MAX_LEN];
    cp__tmpl_subst sub = {key, klen, NULL, 0, tag, cp__key_tag(key, klen, tag), NULL, NULL};
    size_t alen = cp__template_arg(t, 1, &sub, arg, sizeof(arg));
    x->w->acct.cmd[fl->batch.op[i]].verify_mismatches++;
    record_mismatch(x, fl->cs, arg, alen, what, t->name);
}

/* A string of the reply: a value of __key__? NULL when it is, else why not. */
static const char *value_wrong(wctx *x, flight *fl, size_t i, const redisReply *r) {
    if (r->type != REDIS_REPLY_STRING)
        return "not a string";
    cp__verify_result vr =
        cp__value_verify(x->spec->vf, r->str, r->len, fl->batch.keys + i * x->ls.keystride,
                         fl->batch.keylen[i], NULL);
    return vr == CP__VERIFY_OK ? NULL : cp__verify_result_str(vr);
}

/* A counter's reply: an integer, and (closed loop, where a client's commands for a key end in
 * the order they were sent) above the last this client got for the key from this template. */
static const char *counter_wrong(wctx *x, flight *fl, size_t i, const redisReply *r) {
    if (r->type != REDIS_REPLY_INTEGER)
        return "not an integer";
    if (x->open_loop)
        return NULL;
    uint64_t id = cp__key_hash(fl->batch.keys + i * x->ls.keystride, fl->batch.keylen[i]);
    id ^= ((uint64_t)fl->cs->g->gindex + 1) * 0x9e3779b97f4a7c15ull;
    id = (id * CP__COMMANDS_MAX + fl->batch.op[i]) | 1;
    ctr_entry *e = &x->ctr[(id >> 1) & (CTR_SLOTS - 1)];
    int back = e->id == id && r->integer <= e->last;
    e->id = id;
    e->last = r->integer;
    return back ? "counter did not grow" : NULL;
}

/* Checks the reply of request i (template t; not nil, not an empty array). */
static void check_template(wctx *x, flight *fl, size_t i, const cp__template *t,
                           const redisReply *r, cp__tally *tl) {
    const char *why = NULL;
    tl->checked++;
    x->w->acct.cmd[fl->batch.op[i]].verify_checked++;
    switch (t->check) {
    case CP__CHECK_VALUE:
        why = value_wrong(x, fl, i, r);
        break;
    case CP__CHECK_VALUES:
        if (r->type != REDIS_REPLY_ARRAY) {
            why = "not an array";
            break;
        }
        for (size_t e = (size_t)t->first; e < r->elements && why == NULL; e += (size_t)t->stride)
            if (r->element[e]->type != REDIS_REPLY_NIL)
                why = value_wrong(x, fl, i, r->element[e]);
        break;
    case CP__CHECK_COUNTER:
        why = counter_wrong(x, fl, i, r);
        break;
    case CP__CHECK_NONE:
        break;
    }
    if (why != NULL)
        template_mismatch(x, fl, i, t, why);
}

/* finish_batch for a --command run: the same accounting, and each template's part. With one
 * template its latencies are the run's (the engine copies them), else each run of equal
 * latencies of one template is one update of its histogram. */
static void finish_templates(wctx *x, flight *fl) {
    const cp__run_spec *s = x->spec;
    const cp__cmdset *set = s->cmds;
    cp_pipeline *p = fl->p;
    cp__hist *hist = &x->slot->hist;
    cp__bench_cmd_result *parts = x->w->acct.cmd;
    int per_cmd = set->n > 1;
    size_t n = cp_count(p);
    cp__tally tl = {0};
    uint64_t run_ns = 0, run = 0, crun_ns = 0, crun = 0;
    unsigned ck = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned k = fl->batch.op[i];
        const cp__template *t = &set->t[k];
        cp_outcome oc = cp_get_outcome(p, i);
        const redisReply *r = cp_reply(p, i);
        if (oc != CP_DONE || r == NULL || r->type == REDIS_REPLY_ERROR) {
            cp__acct_failure(&x->w->acct, p, oc, r, 1);
            cp__acct_cmd_failure(&x->w->acct, k, oc, r);
            tl.errors++;
            continue;
        }
        uint64_t sent, done;
        if (cp_timing(p, i, &sent, &done) == 0 && done >= sent) {
            if (fl->intended_ns != 0 && fl->intended_ns < sent)
                sent = fl->intended_ns;
            uint64_t lat = done - sent;
            if (lat != run_ns) {
                cp__hist_record_n_ns(hist, run_ns, run);
                run_ns = lat;
                run = 0;
            }
            run++;
            if (per_cmd && (k != ck || lat != crun_ns)) {
                cp__hist_record_n_ns(&parts[ck].latency, crun_ns, crun);
                ck = k;
                crun_ns = lat;
                crun = 0;
            }
            crun++;
        }
        tl.ops++;
        parts[k].ops++;
        if (t->read) {
            tl.gets++;
            parts[k].reads++;
            if (r->type == REDIS_REPLY_NIL || (t->check == CP__CHECK_VALUES &&
                                               r->type == REDIS_REPLY_ARRAY && r->elements == 0)) {
                tl.misses++;
                parts[k].misses++;
                continue;
            }
        }
        if (s->verify && t->check != CP__CHECK_NONE)
            check_template(x, fl, i, t, r, &tl);
    }
    cp__hist_record_n_ns(hist, run_ns, run);
    if (per_cmd)
        cp__hist_record_n_ns(&parts[ck].latency, crun_ns, crun);
    cp__acct_add(&x->w->acct, x->slot, &tl);
    cp_pipeline_reset(p);
}

/* load: the batch as MSETs, each of the adjacent keys that share a slot (up to mset_keys). A
 * server then parses, looks up, executes and answers one command per group instead of one per
 * key. Returns the keys appended. */
static size_t compose_mset(wctx *x, flight *fl) {
    const cp__run_spec *s = x->spec;
    const cp__reqbuf b = fl->batch;
    size_t vs = s->vf->value_size, ncmd = 0;
    for (size_t i = 0; i < b.n;) {
        int argc = 1;
        size_t j = i;
        x->argv[0] = "MSET";
        x->argvlen[0] = 4;
        while (j < b.n && b.slot[j] == b.slot[i] && j - i < (size_t)s->mset_keys) {
            const char *key = b.keys + j * x->ls.keystride;
            char *val = x->valbuf + (j - i) * vs;
            cp__value_fill(s->vf, key, b.keylen[j], s->version, val);
            x->argv[argc] = key;
            x->argvlen[argc++] = b.keylen[j];
            x->argv[argc] = val;
            x->argvlen[argc++] = cp__value_len(s->vf, key, b.keylen[j]);
            j++;
        }
        if (cp_append_argv_slot(fl->p, argc, x->argv, x->argvlen, b.slot[i]) != 0) { /* OOM */
            cp__acct_note_error(&x->w->acct, "%s", "out of memory composing a batch");
            fl->batch.n = i;
            return i;
        }
        fl->cmdkeys[ncmd++] = (uint16_t)(j - i);
        i = j;
    }
    return b.n;
}

/* Appends lane cs's next batch to flight fl's pipeline. */
static size_t compose_batch(wctx *x, cp__client_state *cs, flight *fl) {
    const cp__run_spec *s = x->spec;
    if (fl->owned) { /* open loop: the batch outlives the lane's next take */
        cp__reqbuf view;
        cp__lanes_take(&x->ls, cs->queue, &view);
        cp__reqbuf_copy(&x->ls, &fl->batch, &view);
    } else {
        cp__lanes_take(&x->ls, cs->queue, &fl->batch);
    }
    if (fl->cmdkeys != NULL)
        return compose_mset(x, fl);
    if (s->cmds != NULL)
        return compose_templates(x, fl);
    cp__reqbuf b = fl->batch;
    for (size_t i = 0; i < b.n; i++) {
        const char *key = b.keys + i * x->ls.keystride;
        size_t klen = b.keylen[i];
        int rc;
        if (b.op[i]) {
            cp__value_fill(s->vf, key, klen, b.kver != NULL ? b.kver[i] : s->version, x->valbuf);
            const char *argv[3] = {"SET", key, x->valbuf};
            size_t lens[3] = {3, klen, cp__value_len(s->vf, key, klen)};
            rc = cp_append_argv_slot(fl->p, 3, argv, lens, b.slot[i]);
        } else {
            const char *argv[2] = {"GET", key};
            size_t lens[2] = {3, klen};
            rc = cp_append_argv_slot(fl->p, 2, argv, lens, b.slot[i]);
        }
        if (rc != 0) { /* out of memory: run what is appended */
            cp__acct_note_error(&x->w->acct, "%s", "out of memory composing a batch");
            fl->batch.n = i;
            return i;
        }
    }
    return b.n;
}

/* A lane with no more batches to start: done once nothing of it is in flight. */
static void lane_stop(wctx *x, cp__client_state *cs) {
    if (cs->inflight > 0) {
        cs->state = CS_DRAIN;
        return;
    }
    cs->state = CS_DONE;
    x->active--;
}

/* A flight for the lane's next batch: closed loop its one flight; open loop a free one, or a
 * new one (with buffers of its own) while fewer than FLIGHTS_MAX are in flight. NULL: shed. */
static flight *flight_get(wctx *x, cp__client_state *cs) {
    flight *fl = cs->free_flights;
    if (fl != NULL) {
        cs->free_flights = fl->next_free;
        return fl;
    }
    if (!x->open_loop || cs->inflight >= FLIGHTS_MAX)
        return NULL;
    const cp__run_spec *s = x->spec;
    fl = calloc(1, sizeof(*fl));
    if (fl == NULL)
        return NULL;
    fl->cs = cs;
    fl->owned = 1;
    fl->p = cp_pipeline_new(cs->c);
    int bad = fl->p == NULL || cp__reqbuf_alloc(&x->ls, &fl->batch, s->batch) != 0;
    if (!bad && s->mset_keys > 1)
        bad = (fl->cmdkeys = malloc(s->batch * sizeof(*fl->cmdkeys))) == NULL;
    if (bad) {
        cp_pipeline_free(fl->p);
        cp__reqbuf_free(&fl->batch);
        free(fl);
        return NULL;
    }
    return fl;
}

static void flight_put(cp__client_state *cs, flight *fl) {
    fl->next_free = cs->free_flights;
    cs->free_flights = fl;
}

/* Frees the lane's flights (all done); the first is part of the lane. */
static void flights_free(cp__client_state *cs) {
    while (cs->free_flights != NULL) {
        flight *fl = cs->free_flights;
        cs->free_flights = fl->next_free;
        cp_pipeline_free(fl->p);
        fl->p = NULL;
        if (fl->owned)
            cp__reqbuf_free(&fl->batch);
        free(fl->cmdkeys);
        fl->cmdkeys = NULL;
        if (fl != &cs->first)
            free(fl);
    }
}

/* cp_exec_async's callback: the batch is accounted and the lane moves on after this wake-up's
 * events (run_loop), so the next batches go out together. */
static void batch_done(cp_pipeline *p, void *data) {
    (void)p;
    flight *fl = data;
    wctx *x = fl->cs->x;
    if (x->nfinished == x->capfinished) {
        int ncap = x->capfinished * 2;
        flight **v = realloc(x->finished, (size_t)ncap * sizeof(*v));
        if (v == NULL) { /* cannot queue it: account it now */
            finish_batch(x, fl);
            fl->cs->inflight--;
            flight_put(fl->cs, fl);
            return;
        }
        x->finished = v;
        x->capfinished = ncap;
    }
    x->finished[x->nfinished++] = fl;
}

/* Open loop at FLIGHTS_MAX: the lane's next batch is not sent but counted, as errors. */
static void shed(wctx *x, cp__client_state *cs) {
    cp__reqbuf view;
    cp__lanes_take(&x->ls, cs->queue, &view);
    cp__tally t = {0};
    t.errors = view.n;
    x->w->acct.failed += view.n; /* not executed: never sent */
    cp__acct_add(&x->w->acct, x->slot, &t);
    cp__acct_note_error(&x->w->acct, "%s",
                        "not sent: the lane had " STR(FLIGHTS_MAX) " batches in flight");
    cs->g->sent += view.n;
}

/* Decides what lane cs does next after a batch (or at the start, or when its --rate slot came):
 * stop, wait for its rate slot or for keys, or start the next batch. Closed loop: one batch at a
 * time. Open loop: batches whose slot has come go out, whatever is still in flight, at most
 * `max` of them now. */
static void lane_next(wctx *x, cp__client_state *cs, uint64_t now, int max) {
    cp__group *g = cs->g;
    for (int sent = 0;; sent++) {
        int stop = cp__gate_stopping(x->w->gate);
        if (stop || (x->end_ns != 0 && now >= x->end_ns)) {
            lane_stop(x, cs);
            return;
        }
        if (x->rate_interval_ns != 0) {
            cs->next_start_ns = x->start_ns + g->sent * x->rate_interval_ns;
            /* Behind schedule, an open-loop lane sends a few batches and lets the loop read
             * replies before it catches up further: the lateness shows in the latencies. */
            if (now < cs->next_start_ns || sent >= max) {
                cs->state = CS_IDLE;
                if (x->next_start == 0 || cs->next_start_ns < x->next_start)
                    x->next_start = cs->next_start_ns;
                return;
            }
        }
        cp__lanes_fill(&x->ls, g, cs->lane);
        if (cs->queue->n == 0) {
            if (g->issued >= g->quota && !g->has_carry)
                lane_stop(x, cs);
            else
                cs->state = CS_WAIT; /* another lane's queue is full: it frees the stream */
            return;
        }
        flight *fl = flight_get(x, cs);
        if (fl == NULL) {
            shed(x, cs);
            continue;
        }
        fl->intended_ns = x->open_loop ? cs->next_start_ns : 0;
        if (compose_batch(x, cs, fl) == 0) {
            flight_put(cs, fl);
            lane_stop(x, cs);
            return;
        }
        g->sent += fl->batch.n;
        cs->state = CS_EXEC;
        cs->inflight++;
        if (cp_exec_async(fl->p, batch_done, fl) == 0) {
            if (!x->open_loop)
                return;
        } else {
            finish_batch(x, fl); /* refused: every command counts as not executed */
            cs->inflight--;
            flight_put(cs, fl);
        }
        now = cp__now_ns();
    }
}

/* After lane cs finished a batch: its next one (at most max of them, open loop), then any lane
 * of its client that was waiting for the key stream (which cs just moved). */
static void advance(wctx *x, cp__client_state *cs, uint64_t now, int max) {
    lane_next(x, cs, now, max);
    cp__group *g = cs->g;
    for (int again = 1; again;) {
        again = 0;
        for (int l = 0; l < x->ls.lanes; l++) {
            cp__client_state *o = &x->w->cs[g->lane0 + l];
            if (o->state != CS_WAIT)
                continue;
            lane_next(x, o, now, max);
            again |= o->state != CS_WAIT;
        }
    }
}

/* Accounts the batches that ended; closed loop: starts each lane's next one. A draining lane is
 * done with its last. */
static void advance_finished(wctx *x, uint64_t now) {
    for (int k = 0; k < x->nfinished; k++) {
        flight *fl = x->finished[k];
        finish_batch(x, fl);
        fl->cs->inflight--;
        flight_put(fl->cs, fl);
    }
    int n = x->nfinished;
    x->nfinished = 0;
    for (int k = 0; k < n; k++) {
        cp__client_state *cs = x->finished[k]->cs;
        if (cs->state == CS_DRAIN && cs->inflight == 0)
            lane_stop(x, cs);
        else if (!x->open_loop && cs->state == CS_EXEC && cs->inflight == 0) {
            cs->state = CS_IDLE;
            advance(x, cs, now, CATCH_UP_MAX);
        }
    }
}

/* Runs library timers (I/O timeouts, retry rounds) that are due; starts lanes whose rate slot
 * came, and lanes waiting for keys once the run must stop. */
static void sweep(wctx *x, uint64_t now) {
    cp__worker *w = x->w;
    int stop = cp__gate_stopping(w->gate) || (x->end_ns != 0 && now >= x->end_ns);
    x->soonest = 0;
    for (int i = 0; i < w->ncs; i++) {
        cp__client_state *cs = &w->cs[i];
        if (cs->timer_at != 0 && now >= cs->timer_at) {
            cs->timer_at = 0;
            cp_on_timer(cs->c);
        }
        if (cs->timer_at != 0 && (x->soonest == 0 || cs->timer_at < x->soonest))
            x->soonest = cs->timer_at;
    }
    advance_finished(x, now);
    x->next_start = 0;
    /* The lanes of a client share its schedule. The slots that came go round its lanes, one
     * batch each in turn, starting one lane further each round: a stopped master's lane (idle
     * with batches in flight, its keys always queued) takes its share of the offered load and
     * no more, whatever lane it is, and the lanes of the masters that answer take theirs. A lane
     * without keys passes its turn. */
    if (x->rate_interval_ns != 0) {
        int lanes = x->ls.lanes;
        for (int base = 0; base + lanes <= w->ncs; base += lanes) {
            cp__group *g = w->cs[base].g;
            for (int round = 0, moved = 1; moved && round < CATCH_UP_MAX; round++) {
                moved = 0;
                uint32_t turn = g->rate_turn++;
                for (int k = 0; k < lanes; k++) {
                    cp__client_state *cs = &w->cs[base + (int)((turn + (uint32_t)k) % lanes)];
                    if (cs->state != CS_IDLE || now < cs->next_start_ns)
                        continue;
                    uint64_t before = g->sent;
                    advance(x, cs, now, 1);
                    moved |= g->sent != before;
                }
            }
        }
    }
    for (int i = 0; i < w->ncs; i++) {
        cp__client_state *cs = &w->cs[i];
        if (cs->state == CS_WAIT && stop)
            advance(x, cs, now, CATCH_UP_MAX);
        else if (cs->state == CS_IDLE && x->rate_interval_ns != 0 &&
                 (x->next_start == 0 || cs->next_start_ns < x->next_start))
            x->next_start = cs->next_start_ns;
    }
}

static void run_loop(wctx *x) {
    cp__worker *w = x->w;
    struct epoll_event evs[MAX_EVENTS];
    uint64_t now = cp__now_ns();
    x->next_sweep = now + SWEEP_NS;
    for (int i = 0; i < w->ncs; i++)
        if (w->cs[i].state == CS_IDLE)
            advance(x, &w->cs[i], now, CATCH_UP_MAX);
    while (x->active > 0) {
        close_seconds(x, now);
        uint64_t wake = x->next_sweep;
        uint64_t sec_end = x->start_ns + (x->cur_sec + 1) * NS;
        if (sec_end < wake)
            wake = sec_end;
        if (x->soonest != 0 && x->soonest < wake)
            wake = x->soonest;
        if (x->next_start != 0 && x->next_start < wake)
            wake = x->next_start;
        int timeout = wake <= now ? 0 : (int)((wake - now + 999999) / 1000000);
        int n = epoll_wait(x->epfd, evs, MAX_EVENTS, timeout);
        if (n < 0 && errno != EINTR) {
            cp__acct_note_error(&w->acct, "epoll_wait: %s", strerror(errno));
            break;
        }
        now = cp__now_ns();
        for (int k = 0; k < n; k++) {
            cp__client_state *cs = &w->cs[evs[k].data.u64 >> 32];
            int fd = (int)(uint32_t)evs[k].data.u64;
            uint32_t e = evs[k].events;
            cp_on_ready(cs->c, fd,
                        ((e & (EPOLLIN | EPOLLHUP | EPOLLERR)) ? CP_EV_READ : 0) |
                            ((e & (EPOLLOUT | EPOLLERR)) ? CP_EV_WRITE : 0));
        }
        /* Next batches go out together after every reply of this wake-up was read, so each
         * server receives them in one burst and handles them in one pass of its event loop
         * instead of waking up once per lane (measured: fewer server wake-ups, less server
         * CPU per request). */
        advance_finished(x, now);
        if (now >= x->next_sweep || (x->soonest != 0 && now >= x->soonest) ||
            (x->next_start != 0 && now >= x->next_start)) {
            sweep(x, now);
            if (now >= x->next_sweep)
                x->next_sweep = now + SWEEP_NS;
        }
    }
}

/* ---- setup ---------------------------------------------------------------------------------- */

static int setup_err(cp__worker *w, int code, const char *fmt, const char *a, const char *b) {
    if (w->setup_err == 0) {
        w->setup_err = code;
        snprintf(w->setup_errstr, sizeof(w->setup_errstr), fmt, a, b);
    }
    return code;
}

/* Appends a PING for the lane's master (cluster: the node of that address; a master the client
 * does not know by it gets a PING wherever the library sends one) or the proxy. */
static int warm_ping(wctx *x, cp__client_state *cs, cp_pipeline *p) {
    const cp__run_spec *s = x->spec;
    if (s->map != NULL) {
        const cp__node_addr *m = &s->map->masters[cs->lane];
        for (size_t i = 0; i < cp_node_count(cs->c); i++) {
            cp_node_info ni;
            if (cp_node_get(cs->c, i, &ni) == 0 && ni.port == m->port &&
                strcmp(ni.host, m->host) == 0)
                return cp_append_node(p, i, "PING");
        }
    }
    return cp_append(p, "PING");
}

/* Connects lane cs and runs one untimed GET on its master (or the proxy), so its connection is
 * open and authenticated before the measured interval, and an unusable target fails here (the
 * lanes of a client together probe every master). */
static int setup_client(wctx *x, cp__client_state *cs) {
    const cp__run_spec *s = x->spec;
    cp__worker *w = x->w;
    char ep[CP__HOST_MAX + 16];
    cp_options opt = CP_OPTIONS_INIT;
    if (s->mode == CP__TARGET_CLUSTER) {
        opt.seeds = s->seeds;
        opt.commands_from = s->commands;
        opt.read_from = s->read_from;
        if (s->cmds != NULL && s->cmds->any_other) /* MGET __key__ __otherkey__ and the like */
            opt.flags |= CP_OPT_SPLIT_MULTIKEY;
    } else {
        const cp__node_addr *a = &s->endpoints[cs->endpoint];
        snprintf(ep, sizeof(ep), strchr(a->host, ':') ? "[%s]:%d" : "%s:%d", a->host, a->port);
        opt.endpoint = ep;
    }
    cp__bench_target_options(s->target, &opt);
    if (s->io_timeout_ms > 0)
        opt.io_timeout_ms = s->io_timeout_ms;
    /* < 0: the library's default; 0: no retries (--retry-budget 0), the library's CP_RETRY_NONE */
    if (s->retry_budget_ms >= 0)
        opt.retry_budget_ms = s->retry_budget_ms > 0 ? s->retry_budget_ms : CP_RETRY_NONE;
    cs->c = cp_connect(&opt);
    if (cs->c == NULL)
        return setup_err(w, CP_ENOMEM, "%s%s", "out of memory", "");
    if (cs->c->err != 0)
        return setup_err(w, cs->c->err, "cannot reach %.60s: %.180s",
                         s->mode == CP__TARGET_CLUSTER ? "the cluster" : ep, cs->c->errstr);
    cs->x = x;
    flight *fl = &cs->first;
    fl->cs = cs;
    fl->p = cp_pipeline_new(cs->c);
    flight_put(cs, fl);
    if (s->mset_keys > 1)
        fl->cmdkeys = malloc(s->batch * sizeof(*fl->cmdkeys));
    /* Open loop: batches in flight outlive the lane's next take, so each has a copy. */
    fl->owned = x->open_loop;
    if (fl->p == NULL || (s->mset_keys > 1 && fl->cmdkeys == NULL) ||
        (fl->owned && cp__reqbuf_alloc(&x->ls, &fl->batch, s->batch) != 0))
        return setup_err(w, CP_ENOMEM, "%s%s", "out of memory", "");

    /* The lane's master (cluster) or the proxy. A --command run sends a PING there instead of
     * a GET, so that the servers' count of each of its commands is the run's. */
    char key[CP__KEY_MAX_LEN];
    uint64_t probe = s->map != NULL ? s->probe_keys[cs->lane] : 0;
    int warm = 0;
    if (s->cmds != NULL) {
        warm = warm_ping(x, cs, fl->p) == 0;
    } else if (probe != UINT64_MAX) {
        size_t klen = cp__key_format(s->kf, probe, key);
        const char *argv[2] = {"GET", key};
        size_t lens[2] = {3, klen};
        warm = cp_append_argv(fl->p, 2, argv, lens) == 0;
    }
    int rc = warm > 0 ? cp_exec(fl->p) : 0;
    if (rc != 0)
        return setup_err(w, rc, "target not serving: %s%s", cp_pipeline_errstr(fl->p), "");
    for (size_t i = 0; i < cp_count(fl->p); i++) {
        const redisReply *r = cp_reply(fl->p, i);
        if (r != NULL && r->type == REDIS_REPLY_ERROR)
            return setup_err(w, CP_ESERVER, "target not serving: %s%s", r->str, "");
    }
    cp_pipeline_reset(fl->p);
    /* From here on the client runs on this worker's epoll, without ever blocking. */
    return cp_attach(cs->c, &worker_ops, cs) == 0
               ? 0
               : setup_err(w, CP_EINVAL, "%s%s", "cp_attach failed", "");
}

/* The loop's own allocations and the clients' streams; a failure is the worker's setup error. */
/* A --command run's scratch (see wctx). Returns 0 or CP_ENOMEM. */
static int setup_templates(wctx *x) {
    const cp__cmdset *set = x->spec->cmds;
    size_t scratch = 1, nother = 1, ks = x->ls.keystride;
    for (int k = 0; k < set->n; k++) {
        size_t n = cp__template_scratch(&set->t[k], ks, x->spec->vf->value_size);
        scratch = n > scratch ? n : scratch;
        nother = set->t[k].nother > nother ? set->t[k].nother : nother;
    }
    x->scratch = malloc(scratch);
    x->tagbuf = malloc(ks + 2);
    x->otherbuf = malloc(nother * ks);
    x->other = malloc(nother * sizeof(*x->other));
    x->otherlen = malloc(nother * sizeof(*x->otherlen));
    if (set->any_counter)
        x->ctr = calloc(CTR_SLOTS, sizeof(*x->ctr));
    if (x->scratch == NULL || x->tagbuf == NULL || x->otherbuf == NULL || x->other == NULL ||
        x->otherlen == NULL || (set->any_counter && x->ctr == NULL))
        return CP_ENOMEM;
    for (size_t j = 0; j < nother; j++) { /* only the digits change */
        memcpy(x->otherbuf + j * ks, x->spec->kf->prefix, x->spec->kf->prefix_len);
        x->other[j] = x->otherbuf + j * ks;
    }
    return 0;
}

static void setup_loop(wctx *x) {
    cp__worker *w = x->w;
    const cp__run_spec *s = x->spec;
    x->epfd = epoll_create1(EPOLL_CLOEXEC);
    size_t per_cmd = s->mset_keys > 1 ? (size_t)s->mset_keys : 1; /* keys per command, at most */
    size_t nargs = 1 + 2 * per_cmd;
    if (s->cmds != NULL)
        nargs = CP__TEMPLATE_ARGS_MAX;
    x->valbuf = malloc(s->vf->value_size * per_cmd + 1);
    x->argv = malloc(nargs * sizeof(*x->argv));
    x->argvlen = malloc(nargs * sizeof(*x->argvlen));
    int lanes_rc = cp__lanes_init(&x->ls, s, w->ncs);
    if (lanes_rc == 0 && s->cmds != NULL)
        lanes_rc = setup_templates(x);
    x->open_loop = s->rate > 0 && s->mset_keys <= 1;
    x->capfinished = w->ncs > 0 ? w->ncs : 1;
    x->finished = malloc((size_t)x->capfinished * sizeof(*x->finished));
    if (x->epfd < 0 || x->valbuf == NULL || x->argv == NULL || x->argvlen == NULL ||
        lanes_rc != 0 || x->finished == NULL) {
        setup_err(w, CP_ENOMEM, "%s%s", "cannot create the event loop", "");
        return;
    }
    for (int i = 0; i < w->nclients && w->setup_err == 0; i++) {
        cp__group *g = &w->groups[i];
        g->lane0 = i * x->ls.lanes;
        int rc = cp__group_init(&x->ls, g, w->first_client + i);
        if (rc != 0) {
            setup_err(w, rc, "%s%s", rc == CP_EINVAL ? "bad key distribution" : "out of memory",
                      "");
            break;
        }
        for (int l = 0; l < x->ls.lanes && w->setup_err == 0; l++) {
            cp__client_state *cs = &w->cs[g->lane0 + l];
            cs->g = g;
            cs->lane = l;
            cs->queue = &g->queue[l];
            cs->endpoint = s->nendpoints > 0 ? g->gindex % s->nendpoints : 0;
            if (setup_client(x, cs) == 0)
                cp_get_stats(cs->c, &cs->base);
        }
    }
}

/* The library's counters over the measured interval, summed over the worker's clients. */
static void sum_stats(cp__worker *w) {
    for (int i = 0; w->cs != NULL && i < w->ncs; i++) {
        cp__client_state *cs = &w->cs[i];
        if (cs->c == NULL)
            continue;
        cp_stats st;
        cp_get_stats(cs->c, &st);
        w->stats.moved += st.moved - cs->base.moved;
        w->stats.ask += st.ask - cs->base.ask;
        w->stats.tryagain += st.tryagain - cs->base.tryagain;
        w->stats.clusterdown += st.clusterdown - cs->base.clusterdown;
        w->stats.loading += st.loading - cs->base.loading;
        w->stats.io_retries += st.io_retries - cs->base.io_retries;
        w->stats.refreshes += st.refreshes - cs->base.refreshes;
    }
}

void *cp__worker_main(void *arg) {
    cp__worker *w = arg;
    const cp__run_spec *s = w->spec;
    wctx x;
    memset(&x, 0, sizeof(x));
    x.w = w;
    x.spec = s;
    if (w->setup_err == 0)
        setup_loop(&x);
    else
        x.epfd = -1;
    int abort = cp__gate_arrive(w->gate, &x.start_ns);
    if (!abort && w->setup_err == 0) {
        if (s->requests == 0 && !s->exact_cover)
            x.end_ns = x.start_ns + s->duration_ns;
        if (s->rate > 0)
            x.rate_interval_ns = (uint64_t)((double)s->clients * 1e9 / s->rate);
        x.active = w->ncs;
        open_slot(&x, 0);
        run_loop(&x);
        w->finish_ns = cp__now_ns();
        close_seconds(&x, w->finish_ns);
        slot_redirects(&x);
        cp__sec_close(&w->ring, x.cur_sec + 1);
    }
    sum_stats(w);
    /* The clients' hooks point into this frame and its epoll: they go first. */
    for (int i = 0; w->cs != NULL && i < w->ncs; i++) {
        cp_free(w->cs[i].c); /* ends what is still in flight (an aborted run): done callbacks */
        w->cs[i].c = NULL;
        for (int k = 0; k < x.nfinished; k++) { /* after the run: not accounted */
            x.finished[k]->cs->inflight--;
            flight_put(x.finished[k]->cs, x.finished[k]);
        }
        x.nfinished = 0;
        flights_free(&w->cs[i]); /* idle pipelines: freeing one touches no client */
    }
    if (x.epfd >= 0)
        close(x.epfd);
    free(x.valbuf);
    free(x.argv);
    free(x.argvlen);
    free(x.finished);
    free(x.scratch);
    free(x.tagbuf);
    free(x.otherbuf);
    free(x.other);
    free(x.otherlen);
    free(x.ctr);
    cp__lanes_free(&x.ls);
    cp__sec_end(&w->ring);
    return NULL;
}

void cp__worker_init(cp__worker *w, const cp__run_spec *spec, cp__gate *gate, int index,
                     int first_client, int nclients) {
    w->spec = spec;
    w->gate = gate;
    w->index = index;
    w->first_client = first_client;
    w->nclients = nclients;
    w->ncs = nclients * spec->lanes;
    w->cs = calloc((size_t)w->ncs, sizeof(*w->cs));
    w->groups = calloc((size_t)nclients, sizeof(*w->groups));
    if (spec->cmds != NULL &&
        (w->acct.cmd = calloc((size_t)spec->cmds->n, sizeof(*w->acct.cmd))) != NULL)
        for (int k = 0; k < spec->cmds->n; k++)
            cp__hist_init(&w->acct.cmd[k].latency);
    if (w->cs == NULL || w->groups == NULL || (spec->cmds != NULL && w->acct.cmd == NULL)) {
        w->setup_err = CP_ENOMEM;
        snprintf(w->setup_errstr, sizeof(w->setup_errstr), "out of memory");
    }
}

void cp__worker_free(cp__worker *w) {
    for (int i = 0; w->cs != NULL && i < w->ncs; i++) {
        cp__client_state *cs = &w->cs[i];
        if (cs->c != NULL)
            cp_free(cs->c);
        flights_free(cs);
    }
    free(w->cs);
    for (int i = 0; w->groups != NULL && i < w->nclients; i++)
        cp__group_free(&w->groups[i], w->spec->lanes);
    free(w->groups);
    free(w->acct.cmd);
    w->acct.cmd = NULL;
}
