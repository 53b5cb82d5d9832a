/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Batches in flight (flight.h). Closed loop, a lane has one batch in flight and starts its next
 * as soon as the last one's replies were accounted. Open loop (--rate), each lane's batches go
 * out on the schedule of its client, whatever is still in flight, up to spec->max_inflight
 * requests of them (--max-inflight; past it the lane's batches are shed: not sent, counted as
 * failed and as shed), so a dead master costs bounded memory: a waiting request holds its
 * flight and the library's pipeline (docs/performance.md says how many bytes). A lane
 * whose key stream is blocked by another lane's full queue waits until that lane moves it; a
 * lane with nothing more to start is done once nothing of it is in flight. Routing, redirects
 * and retries are entirely the library's: a batch is composed (compose.c), run with
 * cp_exec_async, and tallied (tally.c) when its callback came.
 *
 * Ownership: a lane owns its flights (the first is part of the lane; open-loop ones are
 * allocated here, a few kept for reuse while the lane has others in flight and freed once it
 * has none (flight_put), the first freed by cp__flights_free); the list of finished
 * batches (x->sched) is allocated and freed here. One thread, the worker's.
 */
#include "bench/flight.h"

#include "bench/compose.h"
#include "bench/tally.h"
#include "util/clock.h"

#include <stdlib.h>

#define CATCH_UP_MAX 8 /* batches a late open-loop lane sends before the loop reads again */
/* Idle flights a lane keeps for reuse while it has some in flight: a catch-up burst's worth. */
#define FLIGHTS_SPARE CATCH_UP_MAX

/* A lane with no more batches to start: done once nothing of it is in flight. */
static void lane_stop(cp__wctx *x, cp__client_state *cs) {
    if (cs->inflight > 0) {
        cs->state = CP__LANE_DRAIN;
        return;
    }
    cs->state = CP__LANE_DONE;
    x->sched.active--;
}

/* A flight for the lane's next batch: closed loop its one flight; open loop, while a whole
 * batch more stays within max_inflight requests in flight, a free one or a new one (with
 * buffers of its own). NULL: shed. */
static cp__flight *flight_get(cp__wctx *x, cp__client_state *cs) {
    const cp__run_spec *s = x->spec;
    if (x->sched.open_loop && cs->inflight_reqs + s->batch > s->max_inflight)
        return NULL;
    cp__flight *fl = cs->free_flights;
    if (fl != NULL) {
        cs->free_flights = fl->next_free;
        cs->nfree--;
        return fl;
    }
    if (!x->sched.open_loop)
        return NULL;
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

/* Frees a flight that is not running: its pipeline (and so what the library keeps in it for
 * reuse: commands, reply chunks), its buffers, and itself unless it is the lane's first. */
static void flight_destroy(cp__client_state *cs, cp__flight *fl) {
    cp_pipeline_free(fl->p);
    fl->p = NULL;
    if (fl->owned)
        cp__reqbuf_free(&fl->batch);
    free(fl->cmdkeys);
    fl->cmdkeys = NULL;
    if (fl != &cs->first)
        free(fl);
}

/* Flight fl ended (answered, or refused at its start): no longer in flight. */
static void flight_ended(cp__client_state *cs, const cp__flight *fl) {
    cs->inflight--;
    cs->inflight_reqs -= fl->batch.n;
}

static void flight_keep(cp__client_state *cs, cp__flight *fl) {
    fl->next_free = cs->free_flights;
    cs->free_flights = fl;
    cs->nfree++;
}

/* A flight done: kept for the lane's next batches, at most FLIGHTS_SPARE of them idle, and
 * only while the lane still has batches in flight. Once nothing of it is in flight, the lane is
 * back to its first flight alone, as before any stall: a stall (a master down, a slot migrating)
 * leaves a lane with as many flights as it had waiting, and keeping them would hold the stall's
 * peak for the rest of the run, each deeper stall raising it (issue 45). */
static void flight_put(cp__client_state *cs, cp__flight *fl) {
    if (fl != &cs->first && (cs->inflight == 0 || cs->nfree >= FLIGHTS_SPARE)) {
        flight_destroy(cs, fl);
        fl = NULL;
    }
    if (fl != NULL)
        flight_keep(cs, fl);
    if (cs->inflight > 0)
        return;
    for (cp__flight **pp = &cs->free_flights; *pp != NULL;) {
        cp__flight *f = *pp;
        if (f == &cs->first) {
            pp = &f->next_free;
            continue;
        }
        *pp = f->next_free;
        cs->nfree--;
        flight_destroy(cs, f);
    }
}

void cp__flights_free(cp__client_state *cs) {
    while (cs->free_flights != NULL) {
        cp__flight *fl = cs->free_flights;
        cs->free_flights = fl->next_free;
        cs->nfree--;
        flight_destroy(cs, fl);
    }
}

/* cp_exec_async's callback: the batch is accounted and the lane moves on after this wake-up's
 * events (run_loop), so the next batches go out together. */
static void batch_done(cp_pipeline *p, void *data) {
    (void)p;
    cp__flight *fl = data;
    cp__wctx *x = fl->cs->x;
    if (x->sched.nfinished == x->sched.capfinished) {
        int ncap = x->sched.capfinished * 2;
        cp__flight **v = realloc(x->sched.finished, (size_t)ncap * sizeof(*v));
        if (v == NULL) { /* cannot queue it: account it now */
            cp__tally_batch(x, fl);
            flight_ended(fl->cs, fl);
            flight_keep(fl->cs, fl); /* not freed from inside its own pipeline's callback */
            return;
        }
        x->sched.finished = v;
        x->sched.capfinished = ncap;
    }
    x->sched.finished[x->sched.nfinished++] = fl;
}

/* Open loop at max_inflight: the lane's next batch is not sent but counted, as errors (failed,
 * and of them shed). Its reason is not the run's first error: a shed run's first error is the
 * first failure of a request that was sent, if any (engine.c names shedding otherwise). */
static void shed(cp__wctx *x, cp__client_state *cs) {
    cp__reqbuf view;
    cp__lanes_take(&x->ls, cs->queue, &view);
    cp__tally t = {0};
    t.errors = view.n;
    x->w->acct.failed += view.n; /* never sent */
    x->w->acct.shed += view.n;
    cp__acct_add(&x->w->acct, x->time.slot, &t);
    cs->g->sent += view.n;
}

/* Decides what lane cs does next after a batch (or at the start, or when its --rate slot came):
 * stop, wait for its rate slot or for keys, or start the next batch. Closed loop: one batch at a
 * time. Open loop: batches whose slot has come go out, whatever is still in flight, at most
 * `max` of them now. */
static void lane_next(cp__wctx *x, cp__client_state *cs, uint64_t now, int max) {
    cp__group *g = cs->g;
    for (int sent = 0;; sent++) {
        int stop = cp__gate_stopping(x->w->gate);
        if (stop || (x->time.end_ns != 0 && now >= x->time.end_ns)) {
            lane_stop(x, cs);
            return;
        }
        if (x->sched.rate_interval_ns != 0) {
            cs->next_start_ns = x->time.start_ns + g->sent * x->sched.rate_interval_ns;
            /* Behind schedule, an open-loop lane sends a few batches and lets the loop read
             * replies before it catches up further: the lateness shows in the latencies. */
            if (now < cs->next_start_ns || sent >= max) {
                cs->state = CP__LANE_IDLE;
                if (x->sched.next_start == 0 || cs->next_start_ns < x->sched.next_start)
                    x->sched.next_start = cs->next_start_ns;
                return;
            }
        }
        cp__lanes_fill(&x->ls, g, cs->lane);
        if (cs->queue->n == 0) {
            if (g->issued >= g->quota && !g->has_carry)
                lane_stop(x, cs);
            else
                cs->state = CP__LANE_WAIT; /* another lane's queue is full: it frees the stream */
            return;
        }
        cp__flight *fl = flight_get(x, cs);
        if (fl == NULL) {
            shed(x, cs);
            continue;
        }
        fl->intended_ns = x->sched.open_loop ? cs->next_start_ns : 0;
        if (cp__compose_batch(x, cs, fl) == 0) {
            flight_put(cs, fl);
            lane_stop(x, cs);
            return;
        }
        g->sent += fl->batch.n;
        cs->state = CP__LANE_EXEC;
        cs->inflight++;
        cs->inflight_reqs += fl->batch.n;
        if (cp_exec_async(fl->p, batch_done, fl) == 0) {
            if (!x->sched.open_loop)
                return;
        } else {
            cp__tally_batch(x, fl); /* refused: every command counts as not executed */
            flight_ended(cs, fl);
            flight_put(cs, fl);
        }
        now = cp__now_ns();
    }
}

/* After lane cs finished a batch: its next one (at most max of them, open loop), then any lane
 * of its client that was waiting for the key stream (which cs just moved). */
static void advance(cp__wctx *x, cp__client_state *cs, uint64_t now, int max) {
    lane_next(x, cs, now, max);
    cp__group *g = cs->g;
    for (int again = 1; again;) {
        again = 0;
        for (int l = 0; l < x->ls.lanes; l++) {
            cp__client_state *o = &x->w->cs[g->lane0 + l];
            if (o->state != CP__LANE_WAIT)
                continue;
            lane_next(x, o, now, max);
            again |= o->state != CP__LANE_WAIT;
        }
    }
}

void cp__flights_finished(cp__wctx *x, uint64_t now) {
    for (int k = 0; k < x->sched.nfinished; k++) {
        cp__flight *fl = x->sched.finished[k];
        cp__tally_batch(x, fl);
        flight_ended(fl->cs, fl);
    }
    int n = x->sched.nfinished;
    x->sched.nfinished = 0;
    for (int k = 0; k < n; k++) {
        cp__client_state *cs = x->sched.finished[k]->cs;
        flight_put(cs, x->sched.finished[k]); /* may free it: only cs from here */
        if (cs->state == CP__LANE_DRAIN && cs->inflight == 0)
            lane_stop(x, cs);
        else if (!x->sched.open_loop && cs->state == CP__LANE_EXEC && cs->inflight == 0) {
            cs->state = CP__LANE_IDLE;
            advance(x, cs, now, CATCH_UP_MAX);
        }
    }
}

int cp__flights_init(cp__wctx *x) {
    const cp__run_spec *s = x->spec;
    x->sched.open_loop = s->rate > 0 && s->mset_keys <= 1;
    x->sched.capfinished = x->w->ncs > 0 ? x->w->ncs : 1;
    x->sched.finished = malloc((size_t)x->sched.capfinished * sizeof(*x->sched.finished));
    return x->sched.finished == NULL ? CP_ENOMEM : 0;
}

void cp__flights_destroy(cp__wctx *x) {
    free(x->sched.finished);
    x->sched.finished = NULL;
}

int cp__flights_first(cp__wctx *x, cp__client_state *cs) {
    const cp__run_spec *s = x->spec;
    cp__flight *fl = &cs->first;
    fl->cs = cs;
    fl->p = cp_pipeline_new(cs->c);
    flight_put(cs, fl);
    if (s->mset_keys > 1)
        fl->cmdkeys = malloc(s->batch * sizeof(*fl->cmdkeys));
    /* Open loop: batches in flight outlive the lane's next take, so each has a copy. */
    fl->owned = x->sched.open_loop;
    if (fl->p == NULL || (s->mset_keys > 1 && fl->cmdkeys == NULL) ||
        (fl->owned && cp__reqbuf_alloc(&x->ls, &fl->batch, s->batch) != 0))
        return CP_ENOMEM;
    return 0;
}

void cp__flights_start(cp__wctx *x, uint64_t now) {
    cp__worker *w = x->w;
    for (int i = 0; i < w->ncs; i++)
        if (w->cs[i].state == CP__LANE_IDLE)
            advance(x, &w->cs[i], now, CATCH_UP_MAX);
}

void cp__flights_sweep(cp__wctx *x, uint64_t now, int stop) {
    cp__worker *w = x->w;
    cp__flights_finished(x, now);
    x->sched.next_start = 0;
    /* The lanes of a client share its schedule. The slots that came go round its lanes, one
     * batch each in turn, starting one lane further each round: a stopped master's lane (idle
     * with batches in flight, its keys always queued) takes its share of the offered load and
     * no more, whatever lane it is, and the lanes of the masters that answer take theirs. A lane
     * without keys passes its turn. */
    if (x->sched.rate_interval_ns != 0) {
        int lanes = x->ls.lanes;
        for (int base = 0; base + lanes <= w->ncs; base += lanes) {
            cp__group *g = w->cs[base].g;
            for (int round = 0, moved = 1; moved && round < CATCH_UP_MAX; round++) {
                moved = 0;
                uint32_t turn = g->rate_turn++;
                for (int k = 0; k < lanes; k++) {
                    cp__client_state *cs = &w->cs[base + (int)((turn + (uint32_t)k) % lanes)];
                    if (cs->state != CP__LANE_IDLE || now < cs->next_start_ns)
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
        if (cs->state == CP__LANE_WAIT && stop)
            advance(x, cs, now, CATCH_UP_MAX);
        else if (cs->state == CP__LANE_IDLE && x->sched.rate_interval_ns != 0 &&
                 (x->sched.next_start == 0 || cs->next_start_ns < x->sched.next_start))
            x->sched.next_start = cs->next_start_ns;
    }
}

void cp__flights_drop(cp__wctx *x) {
    for (int k = 0; k < x->sched.nfinished; k++) {
        flight_ended(x->sched.finished[k]->cs, x->sched.finished[k]);
        flight_put(x->sched.finished[k]->cs, x->sched.finished[k]);
    }
    x->sched.nfinished = 0;
}
