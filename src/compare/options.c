/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The compare experiment's options (options.h): the presets, the defaults, what the engine or
 * the endpoint parser would refuse (found before anything starts), and the points and cases the
 * options make. Static data and pure functions; any thread.
 */
#include "compare/options.h"

#include "bench/target.h"
#include "util/errmsg.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* quick: three repeats of everything (so the report can tell noise from difference) well under
 * 2 minutes on a 2-core machine; full: the published scale (10 threads x 1,000,000 GETs each =
 * 10,000,000 per case, 100,000 keys); large: a dataset of 20 million 100-byte keys (a few GB per
 * setup, loaded once per setup). */
static const cp__compare_preset presets[] = {
    {"quick", 10, 10, 10, 100000, 100000, 100, 3},
    {"full", 10, 10, 10, 10000000, 100000, 100, 1},
    {"large", 10, 10, 10, 10000000, 20000000, 100, 1},
};

const cp__compare_preset *cp__compare_preset_find(const char *name) {
    for (size_t i = 0; name != NULL && i < sizeof(presets) / sizeof(presets[0]); i++)
        if (strcmp(presets[i].name, name) == 0)
            return &presets[i];
    return NULL;
}

void cp__compare_opts_init(cp__compare_opts *o, const cp__compare_preset *p) {
    if (p == NULL)
        p = &presets[0];
    memset(o, 0, sizeof(*o));
    o->preset = p->name;
    o->threads = p->threads;
    o->clients = p->threads; /* one connection per thread, like the published experiment */
    o->pipeline = p->pipeline;
    o->requests = p->requests;
    o->keys = p->keys;
    cp__value_sizes_fixed(&o->value_size, p->value_size);
    o->repeat = p->repeat;
    o->dist.kind = CP__DIST_UNIFORM;
    o->verify = 1;
    o->ratio_set = 0;
    o->ratio_get = 1;
}

int cp__cmp_setups_parse(const char *list, unsigned *out, char *err, size_t errlen) {
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"twemproxy", CP__CMP_SETUP_TWEMPROXY},
                 {"cluster", CP__CMP_SETUP_CLUSTER},
                 {"cluster-replicas", CP__CMP_SETUP_REPLICAS},
                 {"cluster-cached", CP__CMP_SETUP_CACHED}};
    *out = 0;
    const char *p = list;
    for (;;) {
        size_t n = strcspn(p, ",");
        unsigned bit = 0;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && bit == 0; i++)
            if (strlen(names[i].name) == n && strncmp(p, names[i].name, n) == 0)
                bit = names[i].bit;
        if (n == 0) {
            cp__seterr(err, errlen, "'%s': an empty name (setups: %s)", list, CP__CMP_SETUP_NAMES);
            return CP_EINVAL;
        }
        if (bit == 0 || (*out & bit) != 0) {
            cp__seterr(err, errlen, "'%.*s' is %s (setups: %s)", (int)n, p,
                       bit == 0 ? "not a setup" : "listed twice", CP__CMP_SETUP_NAMES);
            return CP_EINVAL;
        }
        *out |= bit;
        if (p[n] == '\0')
            return 0;
        p += n + 1;
    }
}

unsigned cp__cmp_setups(const cp__compare_opts *o) {
    if (o->setups != 0)
        return o->setups;
    return CP__CMP_SETUP_TWEMPROXY | CP__CMP_SETUP_CLUSTER |
           (o->replica_reads ? CP__CMP_SETUP_REPLICAS : 0u);
}

const cpu_set_t *cp__cmp_client_cpus(const cp__compare_opts *o) {
    return o->placement != NULL && o->placement->has_client ? &o->placement->client : NULL;
}

json_int_t cp__cmp_size_number(const cp__value_sizes *z) {
    return (json_int_t)llround(cp__value_sizes_mean(z));
}

int cp__cmp_sweeping(const cp__compare_opts *o) {
    return o->sweep != NULL && o->sweep->param != CP__SWEEP_NONE;
}

int cp__cmp_setup_per_point(const cp__compare_opts *o) {
    return cp__cmp_sweeping(o) &&
           (o->sweep->param == CP__SWEEP_SHARDS || o->sweep->param == CP__SWEEP_RTT);
}

int cp__cmp_npoints(const cp__compare_opts *o) {
    return cp__cmp_sweeping(o) ? o->sweep->n : 1;
}

/* ---- points ---- */

void cp__cmp_point_at(const cp__compare_opts *o, int k, cp__cmp_point *pt) {
    memset(pt, 0, sizeof(*pt));
    pt->shards = CP__COMPARE_SHARDS;
    pt->threads = o->threads;
    pt->clients = o->clients;
    pt->pipeline = o->pipeline;
    pt->value_size = o->value_size;
    pt->rtt_ns = o->rtt_ns;
    cp__value_sizes_format(&pt->value_size, pt->sizes, sizeof(pt->sizes));
    if (!cp__cmp_sweeping(o))
        return;
    uint64_t v = o->sweep->values[k];
    switch (o->sweep->param) {
    case CP__SWEEP_PIPELINE:
        pt->pipeline = (int)v;
        break;
    case CP__SWEEP_SHARDS:
        pt->shards = (int)v;
        break;
    case CP__SWEEP_VALUE_SIZE:
        cp__value_sizes_fixed(&pt->value_size, (size_t)v);
        break;
    case CP__SWEEP_CLIENTS:
        pt->clients = (int)v;
        if (pt->threads > pt->clients) /* a thread needs a connection of its own */
            pt->threads = pt->clients;
        break;
    case CP__SWEEP_RTT:
        pt->rtt_ns = v;
        break;
    case CP__SWEEP_NONE:
        break;
    }
    pt->value = v;
    cp__value_sizes_format(&pt->value_size, pt->sizes, sizeof(pt->sizes));
    char shown[32];
    snprintf(pt->label, sizeof(pt->label), "%s=%s", cp__sweep_param_name(o->sweep->param),
             cp__sweep_value_format(o->sweep->param, v, shown, sizeof(shown)));
}

int cp__cmp_cases_of(const cp__compare_opts *o, const cp__cmp_point *pt, cp__cmp_case out[2]) {
    if (pt->label[0] != '\0') {
        out[0].pipeline = pt->pipeline;
        snprintf(out[0].call, sizeof(out[0].call), "%s", pt->label);
        return 1;
    }
    char what[22] = "GET"; /* --command: the commands' label; with "pipelined " in 31 bytes */
    if (o->commands != NULL)
        cp__cmdset_label(o->commands, what, sizeof(what));
    else if (o->ratio_set > 0) /* a mix: "SET:GET 1:4" */
        snprintf(what, sizeof(what), "SET:GET %u:%u", o->ratio_set % 100000u,
                 o->ratio_get % 100000u);
    out[0].pipeline = 1;
    snprintf(out[0].call, sizeof(out[0].call), "%s", what);
    out[1].pipeline = pt->pipeline;
    snprintf(out[1].call, sizeof(out[1].call), "pipelined %s", what);
    return 2;
}

void cp__cmp_bench_config(const cp__compare_opts *o, const cp__cmp_point *pt, int pipeline,
                          uint64_t seed, cp__bench_config *cfg) {
    cp__bench_config_init(cfg);
    cfg->threads = pt->threads;
    cfg->clients = pt->clients;
    cfg->pipeline = pipeline;
    cfg->requests = o->requests;
    cfg->ratio_set = o->ratio_set;
    cfg->ratio_get = o->ratio_get;
    cfg->keys = o->keys;
    cfg->value_size = pt->value_size;
    cfg->dist = o->dist;
    cfg->verify = o->verify;
    cfg->commands = o->commands;
    cfg->seed = seed;
    cfg->progress = o->bench_progress;
    cfg->progress_ud = o->ud;
    cfg->cancel = o->cancel;
    cfg->cpus = cp__cmp_client_cpus(o);
}

/* A cluster client connects to every
 * master (with --replica-reads to every replica too), a proxy client to one proxy; the rest is
 * the engine's and the process's own. */
uint64_t cp__cmp_fds_needed(const cp__compare_opts *o) {
    uint64_t need = 0;
    for (int k = 0; k < cp__cmp_npoints(o); k++) {
        cp__cmp_point pt;
        cp__cmp_point_at(o, k, &pt);
        uint64_t servers =
            (uint64_t)pt.shards * ((cp__cmp_setups(o) & CP__CMP_SETUP_REPLICAS) ? 2u : 1u);
        uint64_t n = (uint64_t)pt.clients * (servers + 1);
        need = n > need ? n : need;
    }
    return need + 256;
}

int cp__compare_opts_check(const cp__compare_opts *o, char *err, size_t errlen) {
    for (int k = 0; k < cp__cmp_npoints(o); k++) {
        cp__cmp_point pt;
        cp__cmp_point_at(o, k, &pt);
        cp__bench_config chk;
        cp__cmp_bench_config(o, &pt, pt.pipeline, 1, &chk);
        if (cp__bench_config_check(&chk, err, errlen) != 0) {
            if (pt.label[0])
                cp__adderr(err, errlen, " (--sweep %s)", pt.label);
            return CP_EINVAL;
        }
        if (pt.shards < 1 || pt.shards > CP__COMPARE_SHARDS_MAX) {
            cp__seterr(err, errlen, "--sweep %s: shards must be in [1, %d]", pt.label,
                       CP__COMPARE_SHARDS_MAX);
            return CP_EINVAL;
        }
    }
    if (cp__cmp_setup_per_point(o) && (o->cluster_eps || o->proxy_eps)) {
        cp__seterr(err, errlen, "--sweep %s=... starts its own setups: not with --cluster/--proxy",
                   cp__sweep_param_name(o->sweep->param));
        return CP_EINVAL;
    }
    if (cp__cmp_sweeping(o) && o->sweep->param == CP__SWEEP_RTT && o->rtt_ns > 0) {
        cp__seterr(err, errlen, "--sweep rtt=... gives each point its round trip: not with --rtt");
        return CP_EINVAL;
    }
    unsigned setups = cp__cmp_setups(o);
    if (o->setups != 0 && (o->cluster_eps || o->proxy_eps) &&
        (((setups & CP__CMP_SETUP_TWEMPROXY) && !o->proxy_eps) ||
         ((setups & (CP__CMP_SETUP_CLUSTER | CP__CMP_SETUP_CACHED)) && !o->cluster_eps))) {
        cp__seterr(err, errlen,
                   "--setups: with endpoints given, twemproxy needs --proxy and cluster, "
                   "cluster-cached need --cluster");
        return CP_EINVAL;
    }
    if (o->commands != NULL && o->ratio_set > 0) {
        cp__seterr(err, errlen,
                   "--ratio is the GET/SET mix: with --command, give the "
                   "commands' weights with --command-ratio");
        return CP_EINVAL;
    }
    if (o->rtt_ns > 0 && (o->cluster_eps || o->proxy_eps)) {
        cp__seterr(err, errlen,
                   "--rtt puts the wire in the setups it starts: not with --cluster/--proxy");
        return CP_EINVAL;
    }
    if ((o->replica_reads || (setups & CP__CMP_SETUP_REPLICAS)) &&
        (o->cluster_eps || o->proxy_eps)) {
        cp__seterr(err, errlen,
                   "--replica-reads starts its own cluster with a replica per master: not with "
                   "--cluster/--proxy");
        return CP_EINVAL;
    }
    if (o->repeat < 1 || o->repeat > CP__COMPARE_REPEAT_MAX) {
        cp__seterr(err, errlen, "--repeat: %d is out of range [1, %d]", o->repeat,
                   CP__COMPARE_REPEAT_MAX);
        return CP_EINVAL;
    }
    cp__bench_target probe;
    if (o->cluster_eps &&
        cp__bench_target_external(&probe, CP__TARGET_CLUSTER, o->cluster_eps, NULL, NULL) != 0) {
        cp__seterr(err, errlen, "--cluster: '%s' is not HOST:PORT[,HOST:PORT...]", o->cluster_eps);
        return CP_EINVAL;
    }
    if (o->proxy_eps &&
        cp__bench_target_external(&probe, CP__TARGET_PROXY, o->proxy_eps, NULL, NULL) != 0) {
        cp__seterr(err, errlen, "--proxy: '%s' is not HOST:PORT[,HOST:PORT...]", o->proxy_eps);
        return CP_EINVAL;
    }
    if (o->password && !o->cluster_eps && !o->proxy_eps) {
        cp__seterr(err, errlen, "--password applies to --cluster/--proxy endpoints");
        return CP_EINVAL;
    }
    const cp__placement *pl = o->placement;
    if (pl != NULL && (o->cluster_eps || o->proxy_eps) &&
        (pl->has_redis || pl->proxy_explicit || pl->side_given)) {
        cp__seterr(err, errlen,
                   "--cpus: only client= applies to --cluster/--proxy endpoints "
                   "(their servers are not started here)");
        return CP_EINVAL;
    }
    return 0;
}
