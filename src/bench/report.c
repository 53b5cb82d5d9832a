/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Bench reports: the "clusterpipe.bench/1" JSON object (the contract in docs/architecture.md) built
 * with jansson (with a part per command for --command runs), a CSV rendering of the same numbers
 * and the .hgrm distributions (the run's, and each command's), written atomically with util/file.h
 * (a reader never sees a partial file under the final name).
 *
 * cp__bench_json returns a new reference the caller json_decref()s; nothing else allocates
 * beyond the call. Pure with respect to the run: reads the result, never changes it. Any thread.
 */
#include "bench/report.h"

#include "bench/target.h"

#include "util/file.h"
#include "util/sbuf.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The JSON name of a lifecycle event's type (the run's "events"). */
static const char *cp__bench_event_name(int type) {
    switch (type) {
    case CP_EVENT_NODE_CONNECTED:
        return "connected";
    case CP_EVENT_NODE_DISCONNECTED:
        return "disconnected";
    case CP_EVENT_MAP_CHANGED:
        return "map_changed";
    case CP_EVENT_NODE_ADDED:
        return "node_added";
    case CP_EVENT_NODE_REMOVED:
        return "node_removed";
    case CP_EVENT_FAILOVER:
        return "failover";
    case CP_EVENT_RESUBSCRIBED:
        return "resubscribed";
    default:
        return "ready";
    }
}

#define STR_(x) #x
#define STR(x) STR_(x)
#define CP_LIB_VERSION STR(CP_VERSION_MAJOR) "." STR(CP_VERSION_MINOR) "." STR(CP_VERSION_PATCH)

/* A number, or null when the quantity could not be measured. */
static json_t *num_or_null(bool has, double v) {
    return has ? json_real(v) : json_null();
}

static json_t *us_per_op(bool has, double seconds, uint64_t ops) {
    if (!has || ops == 0)
        return json_null();
    return json_real(seconds * 1e6 / (double)ops);
}

static json_int_t value_size_number(const cp__value_sizes *z) {
    return (json_int_t)llround(cp__value_sizes_mean(z));
}

static json_t *str_or_null(const char *s) {
    return s != NULL && s[0] != '\0' ? json_string(s) : json_null();
}

/* latency_us: {p50, p90, p99, p999, max, mean, min} of h. */
static json_t *latency_json(const cp__hist *h) {
    json_t *lat = json_object();
    json_object_set_new(lat, "p50", json_real(cp__hist_percentile_us(h, 50)));
    json_object_set_new(lat, "p90", json_real(cp__hist_percentile_us(h, 90)));
    json_object_set_new(lat, "p99", json_real(cp__hist_percentile_us(h, 99)));
    json_object_set_new(lat, "p999", json_real(cp__hist_percentile_us(h, 99.9)));
    json_object_set_new(lat, "max", json_real(cp__hist_max_us(h)));
    json_object_set_new(lat, "mean", json_real(cp__hist_mean_us(h)));
    json_object_set_new(lat, "min", json_real(cp__hist_min_us(h)));
    return lat;
}

/* "client_cache" of a run with the client-side cache: the library's counters over the measured
 * interval summed over the clients, the share of cacheable reads it answered, what it held at
 * the end, and the reads' latencies split by who answered. cpu_us_per_op divides by every op,
 * the cache's hits included, as a run without the cache does (its "per_op" says so). */
static json_t *cache_json(const cp__bench_result *r) {
    const cp_cache_stats *st = &r->cache.stats;
    uint64_t reads = st->hits + st->misses;
    json_t *c = json_object();
    json_object_set_new(c, "hits", json_integer((json_int_t)st->hits));
    json_object_set_new(c, "misses", json_integer((json_int_t)st->misses));
    json_object_set_new(c, "hit_ratio",
                        reads > 0 ? json_real((double)st->hits / (double)reads) : json_null());
    json_object_set_new(c, "stored", json_integer((json_int_t)st->stored));
    json_object_set_new(c, "not_stored", json_integer((json_int_t)st->not_stored));
    json_object_set_new(c, "invalidations", json_integer((json_int_t)st->invalidations));
    json_object_set_new(c, "dropped", json_integer((json_int_t)st->dropped));
    json_object_set_new(c, "node_drops", json_integer((json_int_t)st->node_drops));
    json_object_set_new(c, "evictions", json_integer((json_int_t)st->evictions));
    json_object_set_new(c, "entries", json_integer((json_int_t)st->entries));
    json_object_set_new(c, "bytes", json_integer((json_int_t)st->bytes));
    json_object_set_new(c, "hit_latency_us", latency_json(&r->cache.hit_latency));
    json_object_set_new(c, "miss_latency_us", latency_json(&r->cache.miss_latency));
    json_object_set_new(c, "hit_reads",
                        json_integer((json_int_t)cp__hist_count(&r->cache.hit_latency)));
    json_object_set_new(c, "miss_reads",
                        json_integer((json_int_t)cp__hist_count(&r->cache.miss_latency)));
    json_object_set_new(c, "per_op", json_string("all ops, cache hits included"));
    return c;
}

void cp__bench_json_templates(json_t *o, const cp__cmdset *set) {
    json_t *texts = json_array();
    for (int k = 0; k < set->n; k++)
        json_array_append_new(texts, json_string(set->t[k].text));
    json_object_set_new(o, "commands", texts);
    json_object_set_new(o, "command_ratio", json_string(set->ratio));
}

/* "commands" of a --command run: each template's part. */
static json_t *commands_json(const cp__bench_config *cfg, const cp__bench_result *r) {
    json_t *a = json_array();
    const cp__cmdset *set = cfg->commands;
    for (size_t k = 0; k < r->ncommands && (int)k < set->n; k++) {
        const cp__template *t = &set->t[k];
        const cp__bench_cmd_result *c = &r->commands[k];
        json_t *o = json_object();
        json_object_set_new(o, "command", json_string(t->text));
        json_object_set_new(o, "name", json_string(t->name));
        json_object_set_new(o, "weight", json_integer(set->weight[k]));
        json_object_set_new(o, "ops", json_integer((json_int_t)c->ops));
        json_object_set_new(o, "ops_per_sec",
                            json_real(r->seconds > 0 ? (double)c->ops / r->seconds : 0));
        json_object_set_new(o, "failed_ops", json_integer((json_int_t)c->failed_ops));
        json_object_set_new(o, "error_replies", json_integer((json_int_t)c->error_replies));
        json_object_set_new(o, "unknown_ops", json_integer((json_int_t)c->unknown_ops));
        json_object_set_new(o, "routing", json_string(t->by_slot ? "key slot" : "key specs"));
        json_object_set_new(o, "check", json_string(cp__tmpl_check_str(t->check)));
        json_object_set_new(o, "verified", json_boolean(cfg->verify && t->check != CP__CHECK_NONE));
        json_object_set_new(o, "verify",
                            json_pack("{s:I,s:I}", "checked", (json_int_t)c->verify_checked,
                                      "mismatches", (json_int_t)c->verify_mismatches));
        json_object_set_new(o, "reads", t->read ? json_integer((json_int_t)c->reads) : json_null());
        json_object_set_new(o, "misses",
                            t->read ? json_integer((json_int_t)c->misses) : json_null());
        json_object_set_new(o, "latency_us", latency_json(&c->latency));
        json_array_append_new(a, o);
    }
    return a;
}

json_t *cp__bench_json(const cp__bench_target *t, const cp__bench_config *cfg,
                       const cp__bench_result *r) {
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    char buf[64];
    json_object_set_new(o, "schema", json_string(CP__BENCH_SCHEMA));
    json_object_set_new(o, "topology", json_string(cp__bench_target_topology(t)));
    json_object_set_new(o, "mode",
                        json_string(t->mode == CP__TARGET_CLUSTER ? "cluster" : "proxy"));
    json_object_set_new(o, "endpoints", json_string(t->endpoints));

    json_t *wl = json_object();
    json_object_set_new(wl, "threads", json_integer(cfg->threads));
    json_object_set_new(wl, "clients", json_integer(cfg->clients));
    json_object_set_new(wl, "pipeline", json_integer(cfg->pipeline));
    snprintf(buf, sizeof(buf), "%u:%u", cfg->ratio_set, cfg->ratio_get);
    /* a --command run has no SET:GET mix: its commands and their weights instead */
    json_object_set_new(wl, "ratio", cfg->commands ? json_null() : json_string(buf));
    if (cfg->commands != NULL)
        cp__bench_json_templates(wl, cfg->commands);
    json_object_set_new(wl, "keys", json_integer((json_int_t)cfg->keys));
    /* value_size stays a number (the one size; with several, their mean over the keys, rounded):
     * value_sizes spells the sizes as --value-size takes them. */
    char sizes[256];
    cp__value_sizes_format(&cfg->value_size, sizes, sizeof(sizes));
    json_object_set_new(wl, "value_size", json_integer(value_size_number(&cfg->value_size)));
    json_object_set_new(wl, "value_sizes", json_string(sizes));
    cp__dist_format(&cfg->dist, buf, sizeof(buf));
    json_object_set_new(wl, "key_dist", json_string(buf));
    json_object_set_new(wl, "key_layout", json_string(cp__key_layout_str(cfg->key_layout)));
    json_object_set_new(wl, "requests",
                        cfg->requests ? json_integer((json_int_t)cfg->requests) : json_null());
    json_object_set_new(wl, "duration", cfg->requests ? json_null() : json_real(cfg->duration_s));
    json_object_set_new(wl, "rate", cfg->rate > 0 ? json_real(cfg->rate) : json_null());
    json_object_set_new(wl, "verify", json_boolean(cfg->verify));
    static const char *const read_from[] = {"master", "replica", "replica-preferred"};
    json_object_set_new(
        wl, "read_from",
        json_string(read_from[cfg->read_from >= 0 && cfg->read_from < 3 ? cfg->read_from : 0]));
    json_object_set_new(wl, "protocol", json_integer(t->protocol == 3 ? 3 : 2));
    json_object_set_new(
        wl, "client_cache",
        cfg->client_cache == NULL
            ? json_null()
            : json_pack("{s:I,s:I}", "max_entries",
                        (json_int_t)(cfg->client_cache->max_entries ? cfg->client_cache->max_entries
                                                                    : CP_DEFAULT_CACHE_ENTRIES),
                        "max_bytes",
                        (json_int_t)(cfg->client_cache->max_bytes ? cfg->client_cache->max_bytes
                                                                  : CP_DEFAULT_CACHE_BYTES)));
    json_object_set_new(wl, "seed", json_integer((json_int_t)cfg->seed));
    json_object_set_new(wl, "masters", json_integer(r->masters));
    json_object_set_new(o, "workload", wl);

    json_object_set_new(o, "ops", json_integer((json_int_t)r->ops));
    json_object_set_new(o, "gets", json_integer((json_int_t)r->gets));
    json_object_set_new(o, "sets", json_integer((json_int_t)r->sets));
    json_object_set_new(o, "seconds", json_real(r->seconds));
    json_object_set_new(o, "ops_per_sec", json_real(r->ops_per_sec));

    json_object_set_new(o, "latency_us", latency_json(&r->latency));

    bool has_total = r->has_cpu_redis && r->has_cpu_proxy && r->has_cpu_client;
    double total = r->cpu_redis + r->cpu_proxy + r->cpu_client;
    json_t *cs = json_object();
    json_object_set_new(cs, "redis", num_or_null(r->has_cpu_redis, r->cpu_redis));
    json_object_set_new(cs, "proxy", num_or_null(r->has_cpu_proxy, r->cpu_proxy));
    json_object_set_new(cs, "client", num_or_null(r->has_cpu_client, r->cpu_client));
    json_object_set_new(cs, "total", num_or_null(has_total, total));
    json_object_set_new(cs, "replicas", num_or_null(r->has_cpu_replicas, r->cpu_replicas));
    json_object_set_new(cs, "wire", num_or_null(r->has_cpu_wire, r->cpu_wire)); /* not in total */
    json_object_set_new(o, "cpu_seconds", cs);
    json_t *cu = json_object();
    json_object_set_new(cu, "redis", us_per_op(r->has_cpu_redis, r->cpu_redis, r->ops));
    json_object_set_new(cu, "proxy", us_per_op(r->has_cpu_proxy, r->cpu_proxy, r->ops));
    json_object_set_new(cu, "client", us_per_op(r->has_cpu_client, r->cpu_client, r->ops));
    json_object_set_new(cu, "total", us_per_op(has_total, total, r->ops));
    json_object_set_new(cu, "replicas", us_per_op(r->has_cpu_replicas, r->cpu_replicas, r->ops));
    json_object_set_new(cu, "wire", us_per_op(r->has_cpu_wire, r->cpu_wire, r->ops));
    json_object_set_new(o, "cpu_us_per_op", cu);
    /* How busy the wire was, in cores: above CP__WIRE_BUSY_CORES its own queueing is part of
     * the latencies measured through it. */
    json_object_set_new(o, "wire_cores",
                        num_or_null(r->has_cpu_wire && r->seconds > 0,
                                    r->seconds > 0 ? r->cpu_wire / r->seconds : 0));
    json_object_set_new(o, "client_threads_cpus",
                        r->client_threads_cpus[0] ? json_string(r->client_threads_cpus)
                                                  : json_null());

    json_t *rd = json_object();
    json_object_set_new(rd, "moved", json_integer((json_int_t)r->stats.moved));
    json_object_set_new(rd, "ask", json_integer((json_int_t)r->stats.ask));
    json_object_set_new(o, "redirects", rd);
    json_t *rt = json_object();
    json_object_set_new(rt, "tryagain", json_integer((json_int_t)r->stats.tryagain));
    json_object_set_new(rt, "clusterdown", json_integer((json_int_t)r->stats.clusterdown));
    json_object_set_new(rt, "loading", json_integer((json_int_t)r->stats.loading));
    json_object_set_new(rt, "io", json_integer((json_int_t)r->stats.io_retries));
    json_object_set_new(o, "retries", rt);
    json_object_set_new(o, "refreshes", json_integer((json_int_t)r->stats.refreshes));
    json_object_set_new(o, "failed_ops", json_integer((json_int_t)r->failed_ops));
    json_object_set_new(o, "error_replies", json_integer((json_int_t)r->error_replies));
    json_object_set_new(o, "shed_ops", json_integer((json_int_t)r->shed_ops));
    json_object_set_new(o, "unknown_ops", json_integer((json_int_t)r->unknown_ops));
    json_object_set_new(o, "first_error", str_or_null(r->first_error));

    json_t *vf = json_object();
    json_object_set_new(vf, "enabled", json_boolean(cfg->verify));
    json_object_set_new(vf, "checked", json_integer((json_int_t)r->verify_checked));
    json_object_set_new(vf, "mismatches", json_integer((json_int_t)r->verify_mismatches));
    json_t *samples = json_array();
    for (size_t i = 0; i < r->nmismatch; i++) {
        json_t *m = json_object();
        json_object_set_new(m, "key", json_string(r->mismatch[i].key));
        json_object_set_new(m, "slot", json_integer(r->mismatch[i].slot));
        json_object_set_new(m, "node", json_string(r->mismatch[i].node));
        json_object_set_new(m, "what", json_string(r->mismatch[i].what));
        if (r->mismatch[i].command[0] != '\0')
            json_object_set_new(m, "command", json_string(r->mismatch[i].command));
        json_array_append_new(samples, m);
    }
    json_object_set_new(vf, "samples", samples);
    json_object_set_new(o, "verify", vf);
    json_object_set_new(o, "misses", json_integer((json_int_t)r->misses));
    if (r->cache.on) /* only then: runs without the cache stay as they were */
        json_object_set_new(o, "client_cache", cache_json(r));
    if (cfg->acked_versions != NULL)
        json_object_set_new(o, "stale_reads", json_integer((json_int_t)r->stale_reads));
    if (cfg->acked_versions != NULL && r->cache.on)
        json_object_set_new(o, "stale_reads_cached", json_integer((json_int_t)r->stale_cached));
    json_object_set_new(o, "first_failure_s",
                        r->first_failure_s >= 0 ? json_real(r->first_failure_s) : json_null());
    json_object_set_new(o, "last_failure_s",
                        r->last_failure_s >= 0 ? json_real(r->last_failure_s) : json_null());

    json_t *tl = json_array();
    for (size_t i = 0; i < r->ntimeline; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "t", json_real(r->timeline[i].t));
        json_object_set_new(e, "ops", json_integer((json_int_t)r->timeline[i].ops));
        json_object_set_new(e, "errors", json_integer((json_int_t)r->timeline[i].errors));
        json_object_set_new(e, "p50_us", json_real(r->timeline[i].p50_us));
        json_object_set_new(e, "p99_us", json_real(r->timeline[i].p99_us));
        json_object_set_new(e, "p999_us", json_real(r->timeline[i].p999_us));
        json_object_set_new(e, "gets", json_integer((json_int_t)r->timeline[i].gets));
        json_object_set_new(e, "misses", json_integer((json_int_t)r->timeline[i].misses));
        json_object_set_new(e, "stale", json_integer((json_int_t)r->timeline[i].stale));
        json_object_set_new(e, "moved", json_integer((json_int_t)r->timeline[i].moved));
        json_object_set_new(e, "ask", json_integer((json_int_t)r->timeline[i].ask));
        json_array_append_new(tl, e);
    }
    json_object_set_new(o, "timeline", tl);
    json_t *evs = json_array();
    for (size_t i = 0; i < r->nevents; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "t", json_real(r->events[i].t));
        json_object_set_new(e, "type", json_string(cp__bench_event_name(r->events[i].type)));
        json_object_set_new(e, "node", json_string(r->events[i].addr));
        json_object_set_new(e, "clients", json_integer(r->events[i].clients));
        json_array_append_new(evs, e);
    }
    json_object_set_new(o, "events", evs);
    json_object_set_new(o, "events_lost", json_integer((json_int_t)r->events_lost));

    cp__hist_point pts[64];
    size_t np = cp__hist_curve(&r->latency, 4, pts, sizeof(pts) / sizeof(pts[0]));
    json_t *curve = json_array();
    for (size_t i = 0; i < np; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "percentile", json_real(pts[i].percentile));
        json_object_set_new(e, "value_us", json_real(pts[i].value_us));
        json_array_append_new(curve, e);
    }
    json_object_set_new(o, "latency_curve", curve);

    json_t *ver = json_object();
    json_object_set_new(ver, "redis", str_or_null(r->redis_version));
    json_object_set_new(ver, "nutcracker", str_or_null(r->nutcracker_version));
    json_object_set_new(ver, "clusterpipe", json_string(CP_LIB_VERSION));
    json_object_set_new(o, "versions", ver);
    json_t *mach = json_object();
    json_object_set_new(mach, "cores", json_integer(r->cores));
    json_object_set_new(mach, "cpu_model", str_or_null(r->cpu_model));
    json_object_set_new(o, "machine", mach);
    json_object_set_new(o, "command_line", str_or_null(cfg->command_line));
    if (cfg->commands != NULL && r->commands != NULL)
        json_object_set_new(o, "commands", commands_json(cfg, r));
    return o;
}

static void sb_num(cp__sbuf *b, bool has, double v) {
    if (has)
        cp__sbuf_printf(b, ",%.6f", v);
    else
        cp__sbuf_printf(b, ",");
}

/* Writes b's text to path atomically and frees b. Returns 0, CP_ENOMEM or CP_EIO (err set). */
static int write_sbuf(const char *path, cp__sbuf *b, char *err, size_t errlen) {
    int rc;
    if (b->oom) {
        snprintf(err, errlen, "out of memory");
        rc = CP_ENOMEM;
    } else {
        rc = cp__write_text(path, b->buf, b->len, err, errlen) ? CP_EIO : 0;
    }
    cp__sbuf_free(b);
    return rc;
}

int cp__bench_write_csv(const char *path, const cp__bench_target *t, const cp__bench_config *cfg,
                        const cp__bench_result *r, char *err, size_t errlen) {
    cp__sbuf b = CP__SBUF_INIT;
    char dist[64];
    cp__dist_format(&cfg->dist, dist, sizeof(dist));
    bool has_total = r->has_cpu_redis && r->has_cpu_proxy && r->has_cpu_client;
    double total = r->cpu_redis + r->cpu_proxy + r->cpu_client;
    double ops = r->ops ? (double)r->ops : 1;
    cp__sbuf_printf(&b,
                    "topology,mode,threads,clients,pipeline,ratio,keys,value_size,key_dist,ops,"
                    "seconds,ops_per_sec,p50_us,p90_us,p99_us,p999_us,max_us,cpu_redis_s,"
                    "cpu_proxy_s,cpu_client_s,cpu_total_s,us_per_op_redis,us_per_op_proxy,"
                    "us_per_op_client,us_per_op_total,cpu_replicas_s,us_per_op_replicas,moved,"
                    "ask,tryagain,clusterdown,io_retries,"
                    "failed_ops,unknown_ops,verify_checked,verify_mismatches,misses,value_sizes,"
                    "cache_hits,cache_misses,cache_hit_ratio,cache_invalidations,"
                    "cache_evictions,cache_entries\n");
    char ratio[CP__COMMANDS_MAX * 6 + 4]; /* --command: the weights, quoted */
    if (cfg->commands != NULL)
        snprintf(ratio, sizeof(ratio), "\"%s\"", cfg->commands->ratio);
    else
        snprintf(ratio, sizeof(ratio), "%u:%u", cfg->ratio_set, cfg->ratio_get);
    cp__sbuf_printf(
        &b, "%s,%s,%d,%d,%d,%s,%llu,%lld,%s,%llu,%.6f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f",
        cp__bench_target_topology(t), t->mode == CP__TARGET_CLUSTER ? "cluster" : "proxy",
        cfg->threads, cfg->clients, cfg->pipeline, ratio, (unsigned long long)cfg->keys,
        (long long)value_size_number(&cfg->value_size), dist, (unsigned long long)r->ops,
        r->seconds, r->ops_per_sec, cp__hist_percentile_us(&r->latency, 50),
        cp__hist_percentile_us(&r->latency, 90), cp__hist_percentile_us(&r->latency, 99),
        cp__hist_percentile_us(&r->latency, 99.9), cp__hist_max_us(&r->latency));
    sb_num(&b, r->has_cpu_redis, r->cpu_redis);
    sb_num(&b, r->has_cpu_proxy, r->cpu_proxy);
    sb_num(&b, r->has_cpu_client, r->cpu_client);
    sb_num(&b, has_total, total);
    sb_num(&b, r->has_cpu_redis && r->ops, r->cpu_redis * 1e6 / ops);
    sb_num(&b, r->has_cpu_proxy && r->ops, r->cpu_proxy * 1e6 / ops);
    sb_num(&b, r->has_cpu_client && r->ops, r->cpu_client * 1e6 / ops);
    sb_num(&b, has_total && r->ops, total * 1e6 / ops);
    sb_num(&b, r->has_cpu_replicas, r->cpu_replicas);
    sb_num(&b, r->has_cpu_replicas && r->ops, r->cpu_replicas * 1e6 / ops);
    char sizes[256];
    cp__value_sizes_format(&cfg->value_size, sizes, sizeof(sizes));
    cp__sbuf_printf(&b, ",%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,\"%s\"",
                    (unsigned long long)r->stats.moved, (unsigned long long)r->stats.ask,
                    (unsigned long long)r->stats.tryagain, (unsigned long long)r->stats.clusterdown,
                    (unsigned long long)r->stats.io_retries, (unsigned long long)r->failed_ops,
                    (unsigned long long)r->unknown_ops, (unsigned long long)r->verify_checked,
                    (unsigned long long)r->verify_mismatches, (unsigned long long)r->misses, sizes);
    const cp_cache_stats *cs = &r->cache.stats; /* empty fields without the cache */
    uint64_t reads = cs->hits + cs->misses;
    if (r->cache.on)
        cp__sbuf_printf(&b, ",%llu,%llu", (unsigned long long)cs->hits,
                        (unsigned long long)cs->misses);
    else
        cp__sbuf_puts(&b, ",,");
    sb_num(&b, r->cache.on && reads > 0, (double)cs->hits / (double)(reads ? reads : 1));
    if (r->cache.on)
        cp__sbuf_printf(&b, ",%llu,%llu,%llu\n", (unsigned long long)cs->invalidations,
                        (unsigned long long)cs->evictions, (unsigned long long)cs->entries);
    else
        cp__sbuf_puts(&b, ",,,\n");
    cp__sbuf_printf(&b, "\nt,ops,errors,p99_us,p50_us,p999_us\n");
    for (size_t i = 0; i < r->ntimeline; i++)
        cp__sbuf_printf(&b, "%.3f,%llu,%llu,%.1f,%.1f,%.1f\n", r->timeline[i].t,
                        (unsigned long long)r->timeline[i].ops,
                        (unsigned long long)r->timeline[i].errors, r->timeline[i].p99_us,
                        r->timeline[i].p50_us, r->timeline[i].p999_us);
    if (cfg->commands != NULL && r->ncommands > 0) { /* --command: a row per command */
        cp__sbuf_printf(&b, "\ncommand,name,weight,ops,failed_ops,unknown_ops,misses,"
                            "verify_checked,verify_mismatches,p50_us,p99_us,p999_us\n");
        for (size_t k = 0; k < r->ncommands; k++) {
            const cp__template *tp = &cfg->commands->t[k];
            const cp__bench_cmd_result *c = &r->commands[k];
            cp__sbuf_puts(&b, "\"");
            for (const char *p = tp->text; *p != '\0'; p++) { /* "" inside a quoted field */
                if (*p == '"')
                    cp__sbuf_puts(&b, "\"\"");
                else
                    cp__sbuf_printf(&b, "%c", *p);
            }
            cp__sbuf_printf(
                &b, "\",%s,%u,%llu,%llu,%llu,%llu,%llu,%llu,%.1f,%.1f,%.1f\n", tp->name,
                cfg->commands->weight[k], (unsigned long long)c->ops,
                (unsigned long long)c->failed_ops, (unsigned long long)c->unknown_ops,
                (unsigned long long)c->misses, (unsigned long long)c->verify_checked,
                (unsigned long long)c->verify_mismatches, cp__hist_percentile_us(&c->latency, 50),
                cp__hist_percentile_us(&c->latency, 99), cp__hist_percentile_us(&c->latency, 99.9));
        }
    }
    return write_sbuf(path, &b, err, errlen);
}

int cp__bench_write_hgrm_of(const char *path, const cp__hist *h, char *err, size_t errlen) {
    cp__sbuf b = CP__SBUF_INIT;
    cp__hist_hgrm(h, 5, &b);
    return write_sbuf(path, &b, err, errlen);
}

int cp__bench_write_hgrm(const char *path, const cp__bench_result *r, char *err, size_t errlen) {
    return cp__bench_write_hgrm_of(path, &r->latency, err, errlen);
}

void cp__bench_hgrm_command_path(const char *path, size_t k, const char *name, char *buf,
                                 size_t cap) {
    size_t len = strlen(path);
    if (len >= 5 && strcmp(path + len - 5, ".hgrm") == 0)
        len -= 5;
    char clean[CP__COMMAND_NAME_MAX + 1];
    size_t n = 0;
    for (; name[n] != '\0' && n < CP__COMMAND_NAME_MAX; n++) {
        unsigned char c = (unsigned char)name[n];
        clean[n] = (char)(((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                           (c >= '0' && c <= '9') || c == '_')
                              ? c
                              : '-');
    }
    clean[n] = '\0';
    snprintf(buf, cap, "%.*s-%zu-%s.hgrm", (int)len, path, k + 1, clean);
}

int cp__bench_write_command_hgrms(const char *path, const cp__bench_config *cfg,
                                  const cp__bench_result *r, char *err, size_t errlen) {
    for (size_t k = 0; cfg->commands != NULL && k < r->ncommands; k++) {
        char file[4200];
        cp__bench_hgrm_command_path(path, k, cfg->commands->t[k].name, file, sizeof(file));
        int rc = cp__bench_write_hgrm_of(file, &r->commands[k].latency, err, errlen);
        if (rc != 0)
            return rc;
    }
    return 0;
}
