/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Accounting of a worker's finished commands (see account.h): failures and their first
 * message, mismatch samples, and the per-batch tally into the totals, the second and the live
 * counters.
 *
 * Nothing allocates; every function runs on the worker thread that owns the cp__acct.
 */
#include "bench/account.h"

#include "util/clock.h"

#include <stdio.h>
#include <string.h>

void cp__acct_note_error(cp__acct *a, const char *fmt, const char *msg) {
    if (a->first_error[0] == '\0')
        snprintf(a->first_error, sizeof(a->first_error), fmt, msg);
}

void cp__acct_failure(cp__acct *a, cp_pipeline *p, cp_outcome oc, const redisReply *r,
                      uint64_t keys) {
    if (oc == CP_UNKNOWN) {
        a->unknown += keys;
        cp__acct_note_error(a, "%s", cp_pipeline_errstr(p));
        return;
    }
    a->failed += keys;
    if (oc == CP_DONE && r != NULL && r->type == REDIS_REPLY_ERROR) {
        a->error_replies++;
        cp__acct_note_error(a, "error reply: %s", r->str);
    } else {
        cp__acct_note_error(
            a, "%s", r != NULL && r->type == REDIS_REPLY_ERROR ? r->str : cp_pipeline_errstr(p));
    }
}

void cp__acct_cmd_failure(cp__acct *a, unsigned k, cp_outcome oc, const redisReply *r) {
    cp__bench_cmd_result *c = &a->cmd[k];
    if (oc == CP_UNKNOWN) {
        c->unknown_ops++;
        return;
    }
    c->failed_ops++;
    if (oc == CP_DONE && r != NULL && r->type == REDIS_REPLY_ERROR)
        c->error_replies++;
}

void cp__acct_mismatch(cp__acct *a, cp__sec_slot *sl, const cp__nodemap *map,
                       const cp__node_addr *ep, const char *key, size_t keylen, const char *what,
                       const char *command) {
    a->mismatches++;
    sl->mismatches++;
    if (a->nmismatch >= CP__BENCH_MISMATCH_SAMPLES)
        return;
    cp__bench_mismatch *m = &a->mismatch[a->nmismatch++];
    if (keylen > CP__KEY_MAX_LEN)
        keylen = CP__KEY_MAX_LEN;
    snprintf(m->command, sizeof(m->command), "%s", command != NULL ? command : "");
    memcpy(m->key, key, keylen);
    m->key[keylen] = '\0';
    m->slot = cp_keyslot(key, keylen);
    if (map != NULL)
        cp__nodemap_key_node(map, key, keylen, m->node, sizeof(m->node));
    else
        snprintf(m->node, sizeof(m->node), "%s:%d", ep->host, ep->port);
    snprintf(m->what, sizeof(m->what), "%s", what);
}

void cp__acct_add(cp__acct *a, cp__sec_slot *sl, const cp__tally *t) {
    if (t->errors > 0) {
        uint64_t now = cp__now_ns();
        if (a->first_fail_ns == 0)
            a->first_fail_ns = now;
        a->last_fail_ns = now;
    }
    a->ops += t->ops;
    a->sets += t->sets;
    a->gets += t->gets;
    a->misses += t->misses;
    a->checked += t->checked;
    a->stale += t->stale;
    a->stale_cached += t->stale_cached;
    sl->ops += t->ops;
    sl->errors += t->errors;
    sl->gets += t->gets;
    sl->misses += t->misses;
    sl->stale += t->stale;
    atomic_store_explicit(&a->live_ops, a->ops, memory_order_relaxed);
    atomic_store_explicit(&a->live_errors, a->failed + a->unknown, memory_order_relaxed);
    atomic_store_explicit(&a->live_mismatches, a->mismatches, memory_order_relaxed);
}
