/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `bench` runs: configuration defaults and checks, and cp__bench_run, which resolves the target
 * (target.c), sets up CPU sources for every component, runs the workers (run.c) and gathers one
 * cp__bench_result: counts, merged latency histogram, library counters, CPU over the measured
 * interval only, the per-second timeline, the environment and, for --command runs, each
 * template's part.
 *
 * The result owns its timeline and commands (cp__bench_result_free). Admin connections used for
 * INFO CPU are opened and closed here. Runs on the calling thread, which also receives the progress
 * callback; never prints.
 */
#include "bench/engine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/cpu.h"
#include "bench/limits.h"
#include "bench/nodes.h"
#include "bench/plan.h"
#include "bench/run.h"
#include "bench/target.h"
#include "util/cpuset.h"
#include "util/env.h"

/* ---- configuration -------------------------------------------------------------------------- */

void cp__bench_config_init(cp__bench_config *cfg) {
    memset(cfg, 0, sizeof(*cfg));
    cfg->threads = 1;
    cfg->clients = 50;
    cfg->pipeline = 1;
    cfg->requests = 100000;
    cfg->duration_s = 0;
    cfg->ratio_set = 0;
    cfg->ratio_get = 1;
    cfg->keys = 100000;
    cp__value_sizes_fixed(&cfg->value_size, 64);
    cfg->dist.kind = CP__DIST_UNIFORM;
    cfg->verify = true;
    cfg->seed = 1;
    cfg->retry_budget_ms = -1;
}

int cp__bench_config_check(const cp__bench_config *cfg, char *err, size_t errlen) {
#define BAD(...)                                                                                   \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return CP_EINVAL;                                                                          \
    } while (0)
    if (cfg->threads < CP__THREADS_MIN || cfg->threads > CP__THREADS_MAX)
        BAD("--threads must be in [%d, %d]", CP__THREADS_MIN, CP__THREADS_MAX);
    if (cfg->clients < cfg->threads)
        BAD("--clients (%d) must be >= --threads (%d)", cfg->clients, cfg->threads);
    if (cfg->clients > CP__CLIENTS_MAX)
        BAD("--clients must be <= %d", CP__CLIENTS_MAX);
    if (cfg->pipeline < CP__PIPELINE_MIN || cfg->pipeline > CP__PIPELINE_MAX)
        BAD("--pipeline must be in [%d, %d]", CP__PIPELINE_MIN, CP__PIPELINE_MAX);
    if (cfg->max_inflight != 0 &&
        (cfg->max_inflight < cfg->pipeline || cfg->max_inflight > CP__MAX_INFLIGHT_MAX))
        BAD("--max-inflight must be in [--pipeline (%d), %d]", cfg->pipeline, CP__MAX_INFLIGHT_MAX);
    if (cfg->requests == 0 && !(cfg->duration_s > 0))
        BAD("one of --requests N (N > 0) or --duration S (S > 0) is needed");
    if (cfg->ratio_set == 0 && cfg->ratio_get == 0)
        BAD("--ratio 0:0 runs nothing");
    if (cfg->keys == 0)
        BAD("--keys must be > 0");
    size_t vmin = cp__value_sizes_min(&cfg->value_size);
    if (cfg->value_size.n < 1 || cfg->value_size.n > CP__VALUE_SIZES_MAX || vmin == 0 ||
        cp__value_sizes_max(&cfg->value_size) > CP__VALUE_MAX_SIZE)
        BAD("--value-size must be in [1, %u]", CP__VALUE_MAX_SIZE);
    if (cfg->rate < 0)
        BAD("--rate must be >= 0");
    if (cfg->dist.kind == CP__DIST_ZIPF && !(cfg->dist.zipf_s > 0))
        BAD("--key-dist zipf:S needs S > 0");
    if (cp__dist_check(&cfg->dist, cfg->keys) != 0)
        BAD("--key-dist gaussian:C,S: the centre C (%g) must be a key index below --keys (%llu)",
            cfg->dist.centre, (unsigned long long)cfg->keys);
    if (cfg->acked_versions != NULL && (!cfg->verify || cfg->keys < (uint64_t)cfg->clients))
        BAD("version tracking needs verification and --keys >= --clients");
    if (cfg->acked_versions != NULL && cfg->commands != NULL)
        BAD("per-key version tracking follows SETs: not with --command");
    if (cfg->commands != NULL && (cfg->commands->n < 1 || cfg->commands->n > CP__COMMANDS_MAX))
        BAD("between 1 and %d --command are needed", CP__COMMANDS_MAX);
    size_t maxkey = cp__key_max_len_of(cfg->key_prefix, cfg->key_layout, cfg->keys);
    if (maxkey == 0)
        BAD("bad key prefix");
    if (cfg->verify && vmin < cp__value_min_size(maxkey))
        BAD("--value-size %zu cannot hold a verifiable value for keys of %zu bytes (minimum "
            "%zu; or use --no-verify)",
            vmin, maxkey, cp__value_min_size(maxkey));
    return 0;
#undef BAD
}

/* ---- environment ---------------------------------------------------------------------------- */

/* Redis version from the first server that answers INFO, nutcracker's from a proxy stats port. */
static void read_versions(const cp__bench_target *t, const cp__target_ctx *ctx,
                          cp__bench_result *out) {
    char err[256];
    if (ctx->map != NULL || t->topo != NULL) {
        for (int i = 0; i < ctx->nservers && out->redis_version[0] == '\0'; i++) {
            const cp__server *s = &ctx->servers[i];
            if (s->comp != CP__CPU_REDIS)
                continue;
            cp_client *c = cp__target_node_connect(t, s->addr.host, s->addr.port, err, sizeof(err));
            if (c == NULL)
                continue;
            cp__node_version(c, out->redis_version, sizeof(out->redis_version));
            cp_free(c);
        }
    }
    for (int i = 0; i < ctx->nservers && out->nutcracker_version[0] == '\0'; i++) {
        const cp__server *s = &ctx->servers[i];
        if (s->comp == CP__CPU_PROXY && s->stats_port > 0)
            cp__nutcracker_version(s->addr.host, s->stats_port, out->nutcracker_version,
                                   sizeof(out->nutcracker_version));
    }
}

/* ---- the run ----------------------------------------------------------------------------------
 */

typedef struct bench_ctx {
    const cp__bench_config *cfg;
    cp__bench_result *out;
    const cp__target_ctx *tctx;
    cp__cpu_source *src; /* one per server, then the client */
    cp_client **admin;   /* remote sources: INFO CPU connections (NULL entries for local) */
    int nsrc;
    size_t captl;
    uint64_t total_ops, total_errors, total_mism;
    int oom;
} bench_ctx;

/* Samples every CPU source: "before" right before the interval, "after" right after it. */
static void sample_cpu(bench_ctx *b, int after) {
    for (int i = 0; i < b->nsrc; i++) {
        cp__cpu_source *s = &b->src[i];
        if (s->kind != CP__CPU_SRC_REMOTE) {
            /* A first "after" right away: a process that dies before the first per-second
             * sample then counts up to that instant instead of becoming unmeasurable. */
            if (!after)
                cp__cpu_source_before(s);
            cp__cpu_source_after(s);
            continue;
        }
        cp__cpu_times tm;
        if (b->admin[i] == NULL || cp__node_info_cpu(b->admin[i], &tm) != 0)
            continue;
        if (after)
            cp__cpu_source_set_after(s, &tm);
        else
            cp__cpu_source_set_before(s, &tm);
    }
}

/* Every worker is waiting at the gate: the one moment all of them exist, so the placement they
 * really got is read here (the main thread is the only other one, and is left out). */
static void record_placement(cp__bench_result *out) {
    cpu_set_t seen;
    int nthreads = 0;
    if (cp__cpuset_other_threads(&seen, &nthreads) == 0 && nthreads > 0)
        cp__cpuset_format(&seen, out->client_threads_cpus, sizeof(out->client_threads_cpus));
}

static void before_go(void *ud) {
    bench_ctx *b = ud;
    record_placement(b->out);
    if (b->cfg->on_ready != NULL)
        b->cfg->on_ready(b->cfg->on_ready_ud);
    sample_cpu(ud, 0);
}

/* A --duration run knows its seconds: the timeline is allocated and written once before the
 * run (a second of slack for the last partial one), so that it costs no memory while the run
 * goes on (an hours-long soak reads the process's memory; 88 bytes a second, 317 KB an hour).
 * A --requests run grows it by doubling. 0 or CP_ENOMEM. */
static int reserve_timeline(bench_ctx *b, const cp__bench_config *cfg) {
    if (cfg->requests > 0 || !(cfg->duration_s > 0))
        return 0;
    size_t n = (size_t)cfg->duration_s + 2;
    cp__bench_result *r = b->out;
    r->timeline = malloc(n * sizeof(*r->timeline));
    if (r->timeline == NULL)
        return CP_ENOMEM;
    memset(r->timeline, 0, n * sizeof(*r->timeline));
    b->captl = n;
    return 0;
}

static void on_second(void *ud, uint64_t sec, const cp__sec_slot *sum) {
    bench_ctx *b = ud;
    const cp__hist *h = &sum->hist;
    uint64_t ops = sum->ops, errors = sum->errors, mismatches = sum->mismatches;
    cp__bench_result *r = b->out;
    /* Local processes are sampled every second too: one that dies mid-run then still counts up
     * to its last sample instead of making its component unmeasurable. */
    for (int i = 0; i < b->nsrc; i++)
        if (b->src[i].kind == CP__CPU_SRC_PID)
            cp__cpu_source_after(&b->src[i]);
    cp__hist_merge(&r->latency, h);
    if (r->ntimeline == b->captl) {
        size_t ncap = b->captl ? b->captl * 2 : 64;
        cp__bench_second *n = realloc(r->timeline, ncap * sizeof(*n));
        if (n == NULL) {
            b->oom = 1;
            return;
        }
        r->timeline = n;
        b->captl = ncap;
    }
    cp__bench_second *s = &r->timeline[r->ntimeline++];
    s->t = (double)(sec + 1);
    s->ops = ops;
    s->errors = errors;
    s->p50_us = cp__hist_count(h) ? cp__hist_percentile_us(h, 50.0) : 0;
    s->p99_us = cp__hist_count(h) ? cp__hist_percentile_us(h, 99.0) : 0;
    s->p999_us = cp__hist_count(h) ? cp__hist_percentile_us(h, 99.9) : 0;
    s->gets = sum->gets;
    s->misses = sum->misses;
    s->stale = sum->stale;
    s->moved = sum->moved;
    s->ask = sum->ask;
    b->total_ops += ops;
    b->total_errors += errors;
    b->total_mism += mismatches;
    if (b->cfg->progress != NULL) {
        cp__bench_progress p;
        memset(&p, 0, sizeof(p));
        p.elapsed = s->t;
        p.ops = b->total_ops;
        p.errors = b->total_errors;
        p.ops_per_sec = (double)ops;
        p.p99_us = s->p99_us;
        p.mismatches = b->total_mism;
        if (b->cfg->requests > 0)
            p.fraction = (double)(b->total_ops + b->total_errors) / (double)b->cfg->requests;
        else
            p.fraction = s->t / b->cfg->duration_s;
        if (p.fraction > 1)
            p.fraction = 1;
        b->cfg->progress(b->cfg->progress_ud, &p);
    }
}

/* Sets up one CPU source per measured process (plus the client) and, for remote masters, the
 * connection INFO CPU is read on. has_cpu_* say which components can be reported. */
static int setup_cpu(bench_ctx *b, const cp__bench_target *t) {
    const cp__target_ctx *ctx = b->tctx;
    cp__bench_result *out = b->out;
    b->src = calloc((size_t)ctx->nservers + 1, sizeof(*b->src));
    b->admin = calloc((size_t)ctx->nservers + 1, sizeof(*b->admin));
    if (b->src == NULL || b->admin == NULL)
        return CP_ENOMEM;
    int remote_ok = 1, nredis = 0;
    for (int i = 0; i < ctx->nservers; i++) {
        const cp__server *s = &ctx->servers[i];
        if (s->pid > 0) {
            cp__cpu_source_pid(&b->src[b->nsrc++], s->comp, s->pid);
        } else {
            char err[256];
            cp__cpu_source_remote(&b->src[b->nsrc], s->comp);
            b->admin[b->nsrc] =
                cp__target_node_connect(t, s->addr.host, s->addr.port, err, sizeof(err));
            remote_ok &= b->admin[b->nsrc] != NULL;
            b->nsrc++;
        }
        nredis += s->comp == CP__CPU_REDIS;
        out->has_cpu_wire |= s->comp == CP__CPU_WIRE;
        out->has_cpu_replicas |= s->replica;
    }
    cp__cpu_source_self(&b->src[b->nsrc++]);
    out->has_cpu_client = true;
    /* redis: every server measurable (local, or remote that answered); an external proxy's
     * backends are unknown. proxy: none exists in cluster mode (0 is the truth); measurable
     * for a local twemproxy topology; unknown behind an external proxy. */
    out->has_cpu_redis = nredis > 0 && remote_ok;
    out->has_cpu_proxy = t->mode == CP__TARGET_CLUSTER || t->topo != NULL;
    return 0;
}

/* Sums the per-component CPU deltas; a component with a source that could not be read is not
 * measurable (never reported as a smaller number). */
static void finish_cpu(bench_ctx *b) {
    cp__cpu_totals tot;
    cp__cpu_sum(b->src, (size_t)b->nsrc, &tot);
    cp__bench_result *out = b->out;
    out->cpu_redis = tot.seconds[CP__CPU_REDIS];
    out->cpu_proxy = tot.seconds[CP__CPU_PROXY];
    out->cpu_client = tot.seconds[CP__CPU_CLIENT];
    out->cpu_wire = tot.seconds[CP__CPU_WIRE];
    if (tot.missing[CP__CPU_WIRE] > 0)
        out->has_cpu_wire = false;
    if (tot.missing[CP__CPU_REDIS] > 0)
        out->has_cpu_redis = false;
    if (tot.missing[CP__CPU_PROXY] > 0)
        out->has_cpu_proxy = false;
    if (tot.missing[CP__CPU_CLIENT] > 0)
        out->has_cpu_client = false;
    /* The replicas' part: sources follow the servers one for one (the client's comes last). */
    out->cpu_replicas = 0;
    for (int i = 0; i < b->tctx->nservers; i++) {
        double d;
        if (!b->tctx->servers[i].replica)
            continue;
        if (cp__cpu_source_delta(&b->src[i], &d))
            out->cpu_replicas += d;
        else
            out->has_cpu_replicas = false;
    }
}

/* A --command run: every worker's part of each template. With one template its latencies are
 * the run's (the workers record them once). */
static void gather_commands(cp__worker *w, int n, cp__bench_result *out) {
    for (int t = 0; t < n; t++)
        for (size_t k = 0; k < out->ncommands; k++) {
            const cp__bench_cmd_result *a = &w[t].acct.cmd[k];
            cp__bench_cmd_result *c = &out->commands[k];
            c->ops += a->ops;
            c->failed_ops += a->failed_ops;
            c->error_replies += a->error_replies;
            c->unknown_ops += a->unknown_ops;
            c->reads += a->reads;
            c->misses += a->misses;
            c->verify_checked += a->verify_checked;
            c->verify_mismatches += a->verify_mismatches;
            cp__hist_merge(&c->latency, &a->latency);
        }
    if (out->ncommands == 1)
        out->commands[0].latency = out->latency;
}

/* Adds every worker's counts, samples and histogram into the result. */
/* The workers' lifecycle events of the measured run into out, in time order; the same event
 * (type and node) of several clients within a second is one, counting its clients. */
static void gather_events(cp__worker *w, int n, uint64_t start_ns, cp__bench_result *out) {
    for (int t = 0; t < n; t++) {
        out->events_lost += w[t].events_lost;
        for (int i = 0; i < w[t].nevents; i++) {
            const cp__bench_event *e = &w[t].events[i];
            if (e->at_ns < start_ns)
                continue; /* connecting and warming up, before the run */
            size_t k = 0;
            for (; k < out->nevents; k++) {
                cp__bench_event *o = &out->events[k];
                uint64_t d = o->at_ns > e->at_ns ? o->at_ns - e->at_ns : e->at_ns - o->at_ns;
                if (o->type == e->type && strcmp(o->addr, e->addr) == 0 && d < 1000000000ull) {
                    o->clients++;
                    if (e->at_ns < o->at_ns)
                        o->at_ns = e->at_ns; /* the first client's time */
                    break;
                }
            }
            if (k < out->nevents)
                continue;
            if (out->nevents == CP__BENCH_EVENTS) {
                out->events_lost++;
                continue;
            }
            out->events[out->nevents++] = *e;
        }
    }
    for (size_t i = 1; i < out->nevents; i++) /* insertion sort: at most 64 */
        for (size_t j = i; j > 0 && out->events[j].at_ns < out->events[j - 1].at_ns; j--) {
            cp__bench_event tmp = out->events[j];
            out->events[j] = out->events[j - 1];
            out->events[j - 1] = tmp;
        }
    for (size_t i = 0; i < out->nevents; i++)
        out->events[i].t = (double)(out->events[i].at_ns - start_ns) / 1e9;
}

/* A worker's part of the client-side cache's numbers. */
static void gather_cache(const cp__worker *x, cp__bench_cache_result *c) {
    const cp_cache_stats *a = &x->cache;
    c->stats.hits += a->hits;
    c->stats.misses += a->misses;
    c->stats.stored += a->stored;
    c->stats.not_stored += a->not_stored;
    c->stats.invalidations += a->invalidations;
    c->stats.dropped += a->dropped;
    c->stats.node_drops += a->node_drops;
    c->stats.evictions += a->evictions;
    c->stats.entries += a->entries;
    c->stats.bytes += a->bytes;
    cp__hist_merge(&c->hit_latency, &x->acct.cache_hit);
    cp__hist_merge(&c->miss_latency, &x->acct.cache_miss);
}

static void gather(cp__worker *w, int n, uint64_t start_ns, cp__bench_result *out) {
    uint64_t end = start_ns, first_fail = 0, last_fail = 0;
    if (out->commands != NULL)
        gather_commands(w, n, out);
    for (int t = 0; t < n; t++) {
        cp__worker *x = &w[t];
        out->ops += x->acct.ops;
        out->gets += x->acct.gets;
        out->sets += x->acct.sets;
        out->misses += x->acct.misses;
        out->failed_ops += x->acct.failed;
        out->error_replies += x->acct.error_replies;
        out->shed_ops += x->acct.shed;
        out->unknown_ops += x->acct.unknown;
        out->verify_checked += x->acct.checked;
        out->verify_mismatches += x->acct.mismatches;
        out->stale_reads += x->acct.stale;
        out->stale_cached += x->acct.stale_cached;
        if (x->acct.first_fail_ns != 0 && (first_fail == 0 || x->acct.first_fail_ns < first_fail))
            first_fail = x->acct.first_fail_ns;
        if (x->acct.last_fail_ns > last_fail)
            last_fail = x->acct.last_fail_ns;
        for (size_t i = 0; i < x->acct.nmismatch && out->nmismatch < CP__BENCH_MISMATCH_SAMPLES;
             i++)
            out->mismatch[out->nmismatch++] = x->acct.mismatch[i];
        if (out->first_error[0] == '\0' && x->acct.first_error[0] != '\0')
            snprintf(out->first_error, sizeof(out->first_error), "%s", x->acct.first_error);
        out->stats.moved += x->stats.moved;
        out->stats.ask += x->stats.ask;
        out->stats.tryagain += x->stats.tryagain;
        out->stats.clusterdown += x->stats.clusterdown;
        out->stats.loading += x->stats.loading;
        out->stats.io_retries += x->stats.io_retries;
        out->stats.refreshes += x->stats.refreshes;
        if (out->cache.on)
            gather_cache(x, &out->cache);
        if (x->finish_ns > end)
            end = x->finish_ns;
    }
    gather_events(w, n, start_ns, out);
    if (out->first_error[0] == '\0' && out->shed_ops > 0) /* only shed (flight.c) */
        snprintf(out->first_error, sizeof(out->first_error), "%s",
                 "not sent (shed): a lane had --max-inflight requests in flight");
    out->seconds = (double)(end - start_ns) / 1e9;
    out->start_ns = start_ns;
    if (first_fail != 0) {
        out->first_failure_s = first_fail > start_ns ? (double)(first_fail - start_ns) / 1e9 : 0;
        out->last_failure_s = last_fail > start_ns ? (double)(last_fail - start_ns) / 1e9 : 0;
    }
    out->ops_per_sec = out->seconds > 0 ? (double)out->ops / out->seconds : 0;
    /* The last second is partial: stamp it with the real end. */
    if (out->ntimeline > 0 && out->timeline[out->ntimeline - 1].t > out->seconds)
        out->timeline[out->ntimeline - 1].t = out->seconds;
}

static void result_init(cp__bench_result *out) {
    memset(out, 0, sizeof(*out));
    cp__hist_init(&out->latency);
    cp__hist_init(&out->cache.hit_latency);
    cp__hist_init(&out->cache.miss_latency);
    out->first_failure_s = out->last_failure_s = -1;
    cp__env env;
    cp__env_probe(&env);
    out->cores = env.cores;
    snprintf(out->cpu_model, sizeof(out->cpu_model), "%s", env.cpu_model);
}

int cp__bench_run(const cp__bench_target *t, const cp__bench_config *cfg, cp__bench_result *out,
                  char *err, size_t errlen) {
    result_init(out);
    err[0] = '\0';
    int rc = cp__bench_config_check(cfg, err, errlen);
    if (rc != 0)
        return rc;
    cp__run_spec *spec = calloc(1, sizeof(*spec));
    cp__target_ctx ctx;
    memset(&ctx, 0, sizeof(ctx));
    bench_ctx b;
    memset(&b, 0, sizeof(b));
    cp__worker *w = NULL;
    if (spec == NULL) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    /* The library refuses the cache elsewhere too; said here in the CLI's words first. */
    if (cfg->client_cache != NULL && t->mode != CP__TARGET_CLUSTER) {
        snprintf(err, errlen,
                 "--client-cache needs a Redis Cluster target: twemproxy (or a plain "
                 "endpoint) cannot track keys for the client (CLIENT TRACKING)");
        rc = CP_EINVAL;
        goto done;
    }
    out->cache.on = cfg->client_cache != NULL;
    rc = cp__target_prepare(t, cfg->key_prefix, cfg->key_layout, cfg->keys, &cfg->value_size,
                            cfg->verify, spec, &ctx, err, errlen);
    if (rc != 0)
        goto done;
    out->masters = ctx.masters;
    spec->io_timeout_ms = cfg->io_timeout_ms;
    spec->retry_budget_ms = cfg->retry_budget_ms;
    spec->read_from = cfg->read_from;
    spec->client_cache = cfg->client_cache;
    spec->threads = cfg->threads;
    spec->clients = cfg->clients;
    spec->batch = cfg->pipeline > 0 ? (size_t)cfg->pipeline : 1;
    spec->max_inflight =
        cfg->max_inflight > 0 ? (size_t)cfg->max_inflight : CP__MAX_INFLIGHT_DEFAULT;
    if (spec->max_inflight < spec->batch) /* the default at a deeper --pipeline: a batch */
        spec->max_inflight = spec->batch;
    spec->lanes = cp__lane_count(t->mode, ctx.masters);
    spec->requests = cfg->requests;
    spec->duration_ns = cfg->requests > 0 ? 0 : (uint64_t)(cfg->duration_s * 1e9);
    spec->ratio_set = cfg->ratio_set;
    spec->ratio_get = cfg->ratio_get;
    spec->cmds = cfg->commands;
    spec->keys = cfg->keys;
    spec->dist = cfg->dist;
    spec->seed = cfg->seed;
    spec->verify = cfg->verify;
    spec->rate = cfg->rate;
    spec->version = 2; /* load writes version 1 */
    spec->acked = cfg->acked_versions;
    spec->cpus = cfg->cpus;

    if (cfg->commands != NULL) {
        out->commands = calloc((size_t)cfg->commands->n, sizeof(*out->commands));
        if (out->commands == NULL) {
            snprintf(err, errlen, "out of memory");
            rc = CP_ENOMEM;
            goto done;
        }
        out->ncommands = (size_t)cfg->commands->n;
        for (size_t k = 0; k < out->ncommands; k++)
            cp__hist_init(&out->commands[k].latency);
    }
    read_versions(t, &ctx, out);
    b.cfg = cfg;
    b.out = out;
    b.tctx = &ctx;
    if ((rc = setup_cpu(&b, t)) != 0) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    if ((rc = reserve_timeline(&b, cfg)) != 0) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    cp__run_hooks h = {before_go, on_second, NULL, 0, cfg->cancel, &b};
    uint64_t start_ns;
    rc = cp__run_execute(spec, &h, &w, &start_ns, err, errlen);
    if (rc == 0) {
        sample_cpu(&b, 1);
        finish_cpu(&b);
        gather(w, spec->threads, start_ns, out);
        if (b.oom) {
            snprintf(err, errlen, "out of memory keeping the timeline");
            rc = CP_ENOMEM;
        }
    }
done:
    cp__workers_free(w, spec->threads);
    for (int i = 0; b.admin != NULL && i < b.nsrc; i++)
        if (b.admin[i] != NULL)
            cp_free(b.admin[i]);
    free(b.admin);
    free(b.src);
    cp__target_ctx_free(&ctx);
    free(spec);
    return rc;
}

void cp__bench_result_free(cp__bench_result *r) {
    free(r->timeline);
    r->timeline = NULL;
    r->ntimeline = 0;
    free(r->commands);
    r->commands = NULL;
    r->ncommands = 0;
}

int cp__bench_result_failed(const cp__bench_result *r) {
    return r->failed_ops > 0 || r->unknown_ops > 0 || r->verify_mismatches > 0;
}
