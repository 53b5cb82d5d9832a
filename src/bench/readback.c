/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Read-back of every key (readback.h): reader threads, each with one cp_client over its own
 * contiguous key range, GET in pipelined batches with cp_exec (routing, redirects and retries are
 * the library's), every reply verified with the key space's value format and compared with the
 * acknowledged version of its key.
 *
 * Ownership: each reader owns its client, pipeline and counters; the main thread sums the
 * counters after pthread_join and frees everything before returning. The version arrays are the
 * caller's and only read here. Never prints.
 */
#include "bench/readback.h"

#include "util/clock.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/keyspace.h"
#include "bench/nodes.h"
#include "bench/target.h"

void cp__readback_config_init(cp__readback_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    cfg->threads = 2;
    cfg->pipeline = 256;
    cp__value_sizes_fixed(&cfg->value_size, 64);
    cfg->retry_budget_ms = -1;
}

typedef struct reader {
    const cp__bench_target *t;
    const cp__readback_config *cfg;
    const cp__keyfmt *kf;
    const cp__valuefmt *vf;
    _Atomic uint32_t *acked;
    const uint32_t *snapshot;
    char endpoint[CP__HOST_MAX + 16]; /* proxy mode */
    uint64_t first, end;              /* key range */
    pthread_t tid;
    int started;
    int err;
    cp__readback_result r; /* this reader's counts */
} reader;

static void note(cp__readback_result *r, const char *what) {
    if (r->first_error[0] == '\0')
        snprintf(r->first_error, sizeof(r->first_error), "%s", what);
}

/* Classifies one reply against the version acknowledged for its key. */
static void classify(reader *rd, uint64_t k, const char *key, size_t klen, const redisReply *rep,
                     cp_outcome oc) {
    cp__readback_result *r = &rd->r;
    uint32_t want = rd->acked ? atomic_load_explicit(&rd->acked[k], memory_order_relaxed) : 1;
    int untouched = rd->snapshot != NULL && rd->snapshot[k] == want;
    r->keys++;
    r->untouched += untouched;
    if (oc != CP_DONE || rep == NULL || rep->type == REDIS_REPLY_ERROR) {
        r->failed++;
        note(r, rep != NULL && rep->type == REDIS_REPLY_ERROR ? rep->str : "no reply");
        return;
    }
    if (rep->type == REDIS_REPLY_NIL) {
        if (want == 0) {
            r->ok++;
            return;
        }
        r->missing++;
        r->lost_run += want >= 2;
        r->untouched_missing += untouched;
        return;
    }
    uint32_t got = 0;
    if (rep->type != REDIS_REPLY_STRING ||
        cp__value_verify(rd->vf, rep->str, rep->len, key, klen, &got) != CP__VERIFY_OK) {
        r->mismatched++;
        return;
    }
    if (got == want) {
        r->ok++;
    } else if (got > want) {
        r->newer++;
    } else {
        r->stale++;
        r->lost_run += want >= 2;
    }
}

/* One reader: connect, then GET its range batch by batch. A batch that fails as a whole (the
 * connection lost) is not retried here: its keys count as failed, like any unanswered read. */
static void *reader_main(void *arg) {
    reader *rd = arg;
    const cp__readback_config *cfg = rd->cfg;
    cp_options opt = CP_OPTIONS_INIT;
    if (rd->t->mode == CP__TARGET_CLUSTER) {
        opt.seeds = rd->t->endpoints;
        opt.read_from = cfg->read_from;
    } else
        opt.endpoint = rd->endpoint;
    cp__bench_target_options(rd->t, &opt); /* password, user and TLS, as every client */
    /* < 0: the library's default; 0: no retries, the library's CP_RETRY_NONE */
    if (cfg->retry_budget_ms >= 0)
        opt.retry_budget_ms = cfg->retry_budget_ms > 0 ? cfg->retry_budget_ms : CP_RETRY_NONE;
    cp_client *c = cp_connect(&opt);
    cp_pipeline *p = c != NULL && c->err == 0 ? cp_pipeline_new(c) : NULL;
    size_t batch = (size_t)cfg->pipeline;
    char *keys = malloc(batch * CP__KEY_MAX_LEN);
    size_t *lens = malloc(batch * sizeof(*lens));
    if (p == NULL || keys == NULL || lens == NULL) {
        rd->err = c == NULL || c->err == 0 ? CP_ENOMEM : c->err;
        snprintf(rd->r.first_error, sizeof(rd->r.first_error), "%s",
                 c == NULL || c->err == 0 ? "out of memory" : c->errstr);
        goto out;
    }
    for (uint64_t k = rd->first; k < rd->end;) {
        if (cfg->cancel != NULL && *cfg->cancel)
            break;
        size_t n = 0;
        for (; n < batch && k + n < rd->end; n++) {
            char *key = keys + n * CP__KEY_MAX_LEN;
            lens[n] = cp__key_format(rd->kf, k + n, key);
            const char *argv[2] = {"GET", key};
            size_t al[2] = {3, lens[n]};
            if (cp_append_argv(p, 2, argv, al) != 0)
                break;
        }
        if (n == 0) {
            rd->err = CP_ENOMEM;
            note(&rd->r, "out of memory");
            break;
        }
        if (cp_exec(p) != 0)
            note(&rd->r, cp_pipeline_errstr(p));
        for (size_t i = 0; i < n; i++)
            classify(rd, k + i, keys + i * CP__KEY_MAX_LEN, lens[i], cp_reply(p, i),
                     cp_get_outcome(p, i));
        cp_pipeline_reset(p);
        k += n;
    }
out:
    free(keys);
    free(lens);
    cp_pipeline_free(p);
    if (c != NULL)
        cp_free(c);
    return NULL;
}

int cp__readback_run(const cp__bench_target *t, const cp__readback_config *cfg,
                     _Atomic uint32_t *acked, const uint32_t *snapshot, cp__readback_result *out,
                     char *err, size_t errlen) {
    memset(out, 0, sizeof(*out));
    err[0] = '\0';
    if (cfg->keys == 0 || cfg->threads < 1 || cfg->threads > 1024 || cfg->pipeline < 1) {
        snprintf(err, errlen, "read-back: keys, threads and pipeline must be > 0");
        return CP_EINVAL;
    }
    cp__keyfmt kf;
    cp__valuefmt vf;
    memset(&vf, 0, sizeof(vf));
    if (cp__keyfmt_init(&kf, cfg->key_prefix, 0) != 0 ||
        cp__valuefmt_init_sizes(&vf, &cfg->value_size, cp__key_max_len(&kf, cfg->keys), true) !=
            0) {
        char vs[256];
        cp__value_sizes_format(&cfg->value_size, vs, sizeof(vs));
        snprintf(err, errlen, "read-back: bad key prefix or value size %.200s", vs);
        return CP_EINVAL;
    }
    cp__node_addr *eps = calloc(CP__NODES_MAX, sizeof(*eps));
    int neps = eps ? cp__addr_list_parse(t->endpoints, eps, CP__NODES_MAX) : CP_ENOMEM;
    int n = cfg->threads;
    if ((uint64_t)n > cfg->keys)
        n = (int)cfg->keys;
    reader *rd = calloc((size_t)n, sizeof(*rd));
    int rc = 0;
    if (neps <= 0 || rd == NULL) {
        snprintf(err, errlen, "read-back: %s", neps <= 0 ? "bad endpoint list" : "out of memory");
        rc = neps <= 0 ? CP_EINVAL : CP_ENOMEM;
        goto out;
    }
    double start = ((double)cp__now_ns() / 1e9);
    for (int i = 0; i < n; i++) {
        rd[i].t = t;
        rd[i].cfg = cfg;
        rd[i].kf = &kf;
        rd[i].vf = &vf;
        rd[i].acked = acked;
        rd[i].snapshot = snapshot;
        rd[i].first = cfg->keys * (uint64_t)i / (uint64_t)n;
        rd[i].end = cfg->keys * (uint64_t)(i + 1) / (uint64_t)n;
        const cp__node_addr *a = &eps[i % neps];
        snprintf(rd[i].endpoint, sizeof(rd[i].endpoint), strchr(a->host, ':') ? "[%s]:%d" : "%s:%d",
                 a->host, a->port);
        if (pthread_create(&rd[i].tid, NULL, reader_main, &rd[i]) != 0) {
            snprintf(err, errlen, "read-back: cannot start a thread");
            rc = CP_ENOMEM;
            break;
        }
        rd[i].started = 1;
    }
    for (int i = 0; i < n; i++) {
        if (!rd[i].started)
            continue;
        pthread_join(rd[i].tid, NULL);
        const cp__readback_result *r = &rd[i].r;
        out->keys += r->keys;
        out->ok += r->ok;
        out->missing += r->missing;
        out->stale += r->stale;
        out->newer += r->newer;
        out->mismatched += r->mismatched;
        out->failed += r->failed;
        out->lost_run += r->lost_run;
        out->untouched += r->untouched;
        out->untouched_missing += r->untouched_missing;
        if (out->first_error[0] == '\0' && r->first_error[0] != '\0')
            snprintf(out->first_error, sizeof(out->first_error), "%s", r->first_error);
        if (rc == 0 && rd[i].err != 0) {
            rc = rd[i].err;
            snprintf(err, errlen, "read-back: %s", r->first_error);
        }
    }
    out->seconds = ((double)cp__now_ns() / 1e9) - start;
out:
    free(rd);
    free(eps);
    cp__valuefmt_free(&vf);
    return rc;
}
