/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `load`: writes keys [0, N) once each with verifiable values, pipelined over every node, with
 * the same worker threads as `bench` (each client walks its own contiguous range of keys, so the
 * clients together cover every key exactly once), then checks that the servers hold exactly N
 * keys (DBSIZE summed over the cluster's masters or a twemproxy topology's shards).
 *
 * Nothing outlives the call except what it writes into the caller's cp__load_result. Runs on the
 * calling thread, which also receives the progress callback; never prints.
 */
#include "bench/load.h"

#include "bench/limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/plan.h"
#include "bench/run.h"
#include "bench/target.h"

void cp__load_config_init(cp__load_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    cfg->keys = 100000;
    cp__value_sizes_fixed(&cfg->value_size, 64);
    cfg->pipeline = 0; /* by target: CP__LOAD_PIPELINE_CLUSTER or _PROXY */
    cfg->threads = 2;
    cfg->clients = 0;
    cfg->version = 1;
    cfg->check_dbsize = true;
}

typedef struct load_ctx {
    const cp__load_config *cfg;
} load_ctx;

static void tick(void *ud, uint64_t elapsed_ns, uint64_t ops, uint64_t errors,
                 uint64_t mismatches) {
    const load_ctx *l = ud;
    (void)mismatches;
    if (l->cfg->progress == NULL)
        return;
    cp__load_progress p;
    p.done = ops;
    p.total = l->cfg->keys;
    p.failed = errors;
    p.elapsed = (double)elapsed_ns / 1e9;
    p.rate = p.elapsed > 0 ? (double)ops / p.elapsed : 0;
    l->cfg->progress(l->cfg->progress_ud, &p);
}

/* Sums DBSIZE over the servers that hold keys; notes why when that cannot be done. A cluster is
 * asked through the library, which sends DBSIZE to every master and sums the answers; a proxy's
 * shards are asked one by one (the proxy itself does not answer DBSIZE). */
static int check_dbsize(const cp__bench_target *t, const cp__target_ctx *ctx, cp__load_result *out,
                        char *err, size_t errlen) {
    if (ctx->commands != NULL) {
        long long n = cp__node_dbsize(ctx->commands);
        if (n < 0) {
            snprintf(err, errlen, "DBSIZE check: the cluster's masters did not all answer: %s",
                     ctx->commands->errstr);
            return (int)n;
        }
        out->dbsize_checked = 1;
        out->dbsize = n;
        return 0;
    }
    int counted = 0;
    long long sum = 0;
    for (int i = 0; i < ctx->nservers; i++) {
        const cp__server *s = &ctx->servers[i];
        if (!s->holds_keys)
            continue;
        char cerr[256];
        cp_client *c = cp__target_node_connect(t, s->addr.host, s->addr.port, cerr, sizeof(cerr));
        if (c == NULL) {
            snprintf(err, errlen, "DBSIZE check: %s", cerr);
            return CP_ECONNECT;
        }
        long long n = cp__node_dbsize(c);
        cp_free(c);
        if (n < 0) {
            snprintf(err, errlen, "DBSIZE check: %s:%d did not answer DBSIZE", s->addr.host,
                     s->addr.port);
            return (int)n;
        }
        sum += n;
        counted++;
    }
    if (counted == 0) {
        snprintf(out->note, sizeof(out->note),
                 "key count not checked: the servers behind an external proxy are unknown "
                 "(use --dir with a topology started by 'clusterpipe up')");
        return 0;
    }
    out->dbsize_checked = 1;
    out->dbsize = sum;
    return 0;
}

int cp__load_mset_check(int mset, const cp__value_sizes *value_size, char *err, size_t errlen) {
    size_t vmax = cp__value_sizes_max(value_size);
    if (mset <= 1 || (size_t)mset * vmax <= CP__LOAD_MSET_MAX_BYTES)
        return 0;
    snprintf(err, errlen, "--mset %d x --value-size %zu%s is more than %u MiB per command", mset,
             vmax, cp__value_sizes_varied(value_size) ? " (the largest)" : "",
             CP__LOAD_MSET_MAX_BYTES >> 20);
    return CP_EINVAL;
}

int cp__load_run(const cp__bench_target *t, const cp__load_config *cfg, cp__load_result *out,
                 char *err, size_t errlen) {
    memset(out, 0, sizeof(*out));
    err[0] = '\0';
    if (cfg->keys == 0 || cfg->pipeline < 0 || cfg->mset < 0 || cfg->mset > 65535 ||
        cfg->threads < CP__THREADS_MIN || cfg->threads > CP__THREADS_MAX || cfg->clients < 0 ||
        (cfg->clients > 0 && cfg->clients < cfg->threads) ||
        cp__value_sizes_min(&cfg->value_size) == 0) {
        snprintf(err, errlen,
                 "bad load configuration (--keys, --pipeline, --mset, --threads, --clients "
                 "and --value-size must be > 0, --mset <= 65535, clients >= threads)");
        return CP_EINVAL;
    }
    cp__run_spec *spec = calloc(1, sizeof(*spec));
    if (spec == NULL) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    cp__target_ctx ctx;
    cp__worker *w = NULL;
    int rc = cp__target_prepare(t, cfg->key_prefix, cfg->key_layout, cfg->keys, &cfg->value_size,
                                true, spec, &ctx, err, errlen);
    if (rc != 0)
        goto done;
    spec->retry_budget_ms = -1;
    spec->cpus = cfg->cpus;
    spec->threads = cfg->threads;
    spec->clients = cfg->clients > 0 ? cfg->clients : cfg->threads * 4;
    if ((uint64_t)spec->clients > cfg->keys)
        spec->clients = cfg->keys < (uint64_t)spec->threads ? spec->threads : (int)cfg->keys;
    spec->batch = cfg->pipeline > 0               ? (size_t)cfg->pipeline
                  : t->mode == CP__TARGET_CLUSTER ? CP__LOAD_PIPELINE_CLUSTER
                                                  : CP__LOAD_PIPELINE_PROXY;
    out->pipeline = (int)spec->batch;
    spec->mset_keys = cfg->mset > 0                   ? cfg->mset
                      : t->mode == CP__TARGET_CLUSTER ? CP__LOAD_MSET_CLUSTER
                                                      : CP__LOAD_MSET_PROXY;
    size_t vmax = cp__value_sizes_max(&cfg->value_size);
    if (cfg->mset == 0 && (size_t)spec->mset_keys * vmax > CP__LOAD_MSET_MAX_BYTES) {
        size_t fit = CP__LOAD_MSET_MAX_BYTES / vmax; /* big values: fewer per MSET */
        spec->mset_keys = fit > 1 ? (int)fit : 1;
    }
    out->mset = spec->mset_keys;
    if ((rc = cp__load_mset_check(spec->mset_keys, &cfg->value_size, err, errlen)) != 0)
        goto done;
    spec->lanes = cp__lane_count(t->mode, ctx.masters);
    spec->exact_cover = true;
    spec->ratio_set = 1;
    spec->ratio_get = 0;
    spec->keys = cfg->keys;
    spec->dist.kind = CP__DIST_SEQUENTIAL;
    spec->verify = false;
    spec->version = cfg->version ? cfg->version : 1;

    load_ctx l = {cfg};
    cp__run_hooks h = {NULL, NULL, tick, 250000000ull, cfg->cancel, &l};
    uint64_t start_ns;
    rc = cp__run_execute(spec, &h, &w, &start_ns, err, errlen);
    if (rc != 0)
        goto done;
    uint64_t end = start_ns;
    for (int i = 0; i < spec->threads; i++) {
        out->written += w[i].acct.sets;
        out->failed += w[i].acct.failed;
        out->unknown += w[i].acct.unknown;
        if (w[i].finish_ns > end)
            end = w[i].finish_ns;
        if (err[0] == '\0' && w[i].acct.first_error[0] != '\0')
            snprintf(err, errlen, "%s", w[i].acct.first_error);
    }
    out->seconds = (double)(end - start_ns) / 1e9;
    out->keys_per_sec = out->seconds > 0 ? (double)out->written / out->seconds : 0;
    tick(&l, end - start_ns, out->written, out->failed + out->unknown, 0);
    if (cfg->cancel != NULL && *cfg->cancel) {
        snprintf(err, errlen, "interrupted after %llu of %llu keys",
                 (unsigned long long)out->written, (unsigned long long)cfg->keys);
        rc = CP_EPARTIAL;
        goto done;
    }
    if (out->written != cfg->keys) {
        char first[256];
        snprintf(first, sizeof(first), "%s", err);
        snprintf(err, errlen, "%llu of %llu keys not written (%llu failed, %llu unknown)%s%s",
                 (unsigned long long)(cfg->keys - out->written), (unsigned long long)cfg->keys,
                 (unsigned long long)out->failed, (unsigned long long)out->unknown,
                 first[0] ? ": " : "", first);
        rc = CP_EPARTIAL;
        goto done;
    }
    err[0] = '\0';
    if (cfg->check_dbsize) {
        rc = check_dbsize(t, &ctx, out, err, errlen);
        if (rc == 0 && out->dbsize_checked && out->dbsize != (long long)cfg->keys) {
            snprintf(err, errlen, "the servers hold %lld keys, expected exactly %llu", out->dbsize,
                     (unsigned long long)cfg->keys);
            rc = CP_EPARTIAL;
        }
    }
done:
    cp__workers_free(w, spec->threads);
    cp__target_ctx_free(&ctx);
    free(spec);
    return rc;
}
