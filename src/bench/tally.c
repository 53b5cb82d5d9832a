/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The tally of replies (tally.h): every command of a finished batch accounted (account.c):
 * its outcome, its latency from cp_timing into the second it ended in (seconds.c), GET values
 * verified against their keys (keyspace.c). A --command run checks each reply as its template
 * says (template.h) and counts it in the template's own part as well as in the run's totals;
 * the choice is made once per batch, so the GET/SET path does not test for it per request.
 *
 * Ownership: the counters' table (x->tally.ctr) is allocated and freed here; the replies stay
 * their pipeline's, reset here once accounted. One thread, the worker's.
 */
#include "bench/tally.h"

#include <stdlib.h>

/* Counters: the last reply a client got for a (key, template), in a table of CTR_SLOTS entries
 * per worker thread, keyed by a hash of the three (a collision only forgets an entry). */
#define CTR_SLOTS 16384u
typedef struct cp__ctr_entry {
    uint64_t id; /* 0: empty */
    long long last;
} cp__ctr_entry;

int cp__tally_init(cp__wctx *x) {
    const cp__cmdset *set = x->spec->cmds;
    if (set != NULL && set->any_counter)
        x->tally.ctr = calloc(CTR_SLOTS, sizeof(*x->tally.ctr));
    return set != NULL && set->any_counter && x->tally.ctr == NULL ? CP_ENOMEM : 0;
}

void cp__tally_destroy(cp__wctx *x) {
    free(x->tally.ctr);
    x->tally.ctr = NULL;
}

static void record_mismatch(cp__wctx *x, cp__client_state *cs, const char *key, size_t keylen,
                            const char *what, const char *command) {
    const cp__run_spec *s = x->spec;
    cp__acct_mismatch(&x->w->acct, x->time.slot, s->map,
                      s->map != NULL ? NULL : &s->endpoints[cs->endpoint], key, keylen, what,
                      command);
}

/* Checks the value of GET number i of the batch against its key. */
static void verify_get(cp__wctx *x, cp__flight *fl, size_t i, const redisReply *r, int hit,
                       cp__tally *t) {
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
    else if (s->acked != NULL && version < fl->batch.kver[i]) {
        t->stale++;
        t->stale_cached += hit != 0;
    }
}

/* A read's latency into the cache's split: answered by the client-side cache (sent_ns ==
 * done_ns, closed loop) or by a server. Only runs with a cache come here (a test per request of
 * a flag fixed for the run). */
static void split_cached(cp__wctx *x, cp_pipeline *p, size_t i, uint64_t lat_ns) {
    cp__acct *a = &x->w->acct;
    cp__hist_record_ns(cp_reply_cached(p, i) ? &a->cache_hit : &a->cache_miss, lat_ns);
}

/* A reply of template t for request i that is not what it should be. The sample names the key
 * the command was for (its first argument, made from __key__). */
static void template_mismatch(cp__wctx *x, cp__flight *fl, size_t i, const cp__template *t,
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
static const char *value_wrong(cp__wctx *x, cp__flight *fl, size_t i, const redisReply *r) {
    if (r->type != REDIS_REPLY_STRING)
        return "not a string";
    cp__verify_result vr =
        cp__value_verify(x->spec->vf, r->str, r->len, fl->batch.keys + i * x->ls.keystride,
                         fl->batch.keylen[i], NULL);
    return vr == CP__VERIFY_OK ? NULL : cp__verify_result_str(vr);
}

/* A counter's reply: an integer, and (closed loop, where a client's commands for a key end in
 * the order they were sent) above the last this client got for the key from this template. */
static const char *counter_wrong(cp__wctx *x, cp__flight *fl, size_t i, const redisReply *r) {
    if (r->type != REDIS_REPLY_INTEGER)
        return "not an integer";
    if (x->sched.open_loop)
        return NULL;
    uint64_t id = cp__key_hash(fl->batch.keys + i * x->ls.keystride, fl->batch.keylen[i]);
    id ^= ((uint64_t)fl->cs->g->gindex + 1) * 0x9e3779b97f4a7c15ull;
    id = (id * CP__COMMANDS_MAX + fl->batch.op[i]) | 1;
    cp__ctr_entry *e = &x->tally.ctr[(id >> 1) & (CTR_SLOTS - 1)];
    int back = e->id == id && r->integer <= e->last;
    e->id = id;
    e->last = r->integer;
    return back ? "counter did not grow" : NULL;
}

/* An array, or what RESP3 answers in its place: a map (HGETALL) or a set (SMEMBERS). */
static int is_list(const redisReply *r) {
    return r->type == CP_REPLY_ARRAY || r->type == CP_REPLY_MAP || r->type == CP_REPLY_SET;
}

/* The values of a list reply: every stride-th element from first (RESP2's flat HGETALL or
 * WITHSCORES; RESP3's map has the same layout), or the element first of every pair where RESP3
 * pairs what RESP2 flattens (ZRANGE ... WITHSCORES: [member, score] each). Nil elements pass. */
static const char *values_wrong(cp__wctx *x, cp__flight *fl, size_t i, const cp__template *t,
                                const redisReply *r) {
    if (!is_list(r))
        return "not an array";
    int pairs = t->stride == 2 && r->type == CP_REPLY_ARRAY && r->elements > 0 &&
                r->element[0]->type == CP_REPLY_ARRAY;
    size_t from = pairs ? 0 : (size_t)t->first, step = pairs ? 1 : (size_t)t->stride;
    for (size_t e = from; e < r->elements; e += step) {
        const redisReply *v = r->element[e];
        if (pairs) {
            if (v->type != CP_REPLY_ARRAY || v->elements != 2)
                return "not a pair";
            v = v->element[t->first];
        }
        const char *why = v->type == REDIS_REPLY_NIL ? NULL : value_wrong(x, fl, i, v);
        if (why != NULL)
            return why;
    }
    return NULL;
}

/* Checks the reply of request i (template t; not nil, not an empty array). */
static void check_template(cp__wctx *x, cp__flight *fl, size_t i, const cp__template *t,
                           const redisReply *r, cp__tally *tl) {
    const char *why = NULL;
    tl->checked++;
    x->w->acct.cmd[fl->batch.op[i]].verify_checked++;
    switch (t->check) {
    case CP__CHECK_VALUE:
        why = value_wrong(x, fl, i, r);
        break;
    case CP__CHECK_VALUES:
        why = values_wrong(x, fl, i, t, r);
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
static void finish_templates(cp__wctx *x, cp__flight *fl) {
    const cp__run_spec *s = x->spec;
    const cp__cmdset *set = s->cmds;
    cp_pipeline *p = fl->p;
    cp__hist *hist = &x->time.slot->hist;
    cp__bench_cmd_result *parts = x->w->acct.cmd;
    int per_cmd = set->n > 1;
    int cached = s->client_cache != NULL;
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
        uint64_t sent, done, lat = UINT64_MAX; /* UINT64_MAX: no timing */
        if (cp_timing(p, i, &sent, &done) == 0 && done >= sent) {
            if (fl->intended_ns != 0 && fl->intended_ns < sent)
                sent = fl->intended_ns;
            lat = done - sent;
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
            if (cached && lat != UINT64_MAX)
                split_cached(x, p, i, lat);
            if (r->type == REDIS_REPLY_NIL ||
                (t->check == CP__CHECK_VALUES && is_list(r) && r->elements == 0)) {
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
    cp__acct_add(&x->w->acct, x->time.slot, &tl);
    cp_pipeline_reset(p);
}

void cp__tally_batch(cp__wctx *x, cp__flight *fl) {
    const cp__run_spec *s = x->spec;
    if (s->cmds != NULL) { /* once per batch */
        finish_templates(x, fl);
        return;
    }
    cp_pipeline *p = fl->p;
    cp__hist *hist = &x->time.slot->hist;
    size_t n = cp_count(p);
    cp__tally t = {0};
    int cached = s->client_cache != NULL;
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
        uint64_t sent, done, lat = UINT64_MAX; /* UINT64_MAX: no timing */
        if (cp_timing(p, i, &sent, &done) == 0 && done >= sent) {
            if (fl->intended_ns != 0 && fl->intended_ns < sent)
                sent = fl->intended_ns;
            lat = done - sent;
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
        if (cached && lat != UINT64_MAX)
            split_cached(x, p, i, lat);
        if (r->type == REDIS_REPLY_NIL)
            t.misses++;
        else if (s->verify)
            verify_get(x, fl, i, r, cached && cp_reply_cached(p, i), &t);
    }
    cp__hist_record_n_ns(hist, run_ns, run); /* the main thread merges the seconds' histograms */
    cp__acct_add(&x->w->acct, x->time.slot, &t);
    cp_pipeline_reset(p);
}
