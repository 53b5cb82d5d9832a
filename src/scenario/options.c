/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A scenario's options (scenario.h): their defaults per scenario, the scenario's name, and the
 * check a run starts with (its own bounds, then whatever the bench engine would refuse, so a bad
 * flag fails before any server starts). Pure functions of the caller's struct; any thread.
 */
#include "scenario/scenario.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

void cp__scn_opts_init(cp__scn_opts *o, cp__scn_kind kind) {
    memset(o, 0, sizeof(*o));
    o->kind = kind;
    o->keys = 200000;
    cp__value_sizes_fixed(&o->value_size, 100);
    o->dist.kind = CP__DIST_UNIFORM;
    o->duration_s = 30;
    o->warmup_s = 5;
    o->down_s = 8;
    o->ratio_set = 1;
    o->ratio_get = 9;
    o->threads = 4;
    o->clients = 16;
    o->pipeline = 4;
    o->retry_budget_ms = -1;
    o->persistence = kind == CP__SCN_FAILOVER;
    o->rtt_ns = cp__scn_kind_wire(kind) ? 100000 : 0;
    o->delay_ns = 50000000;
}

int cp__scn_kind_wire(cp__scn_kind k) {
    return k == CP__SCN_PARTITION || k == CP__SCN_SLOW_LINK;
}

const char *cp__scn_kind_name(cp__scn_kind k) {
    switch (k) {
    case CP__SCN_RESHARD:
        return "reshard";
    case CP__SCN_FAILOVER:
        return "failover";
    case CP__SCN_PARTITION:
        return "partition";
    case CP__SCN_SLOW_LINK:
        return "slow-link";
    }
    return NULL;
}

int cp__scn_opts_check(const cp__scn_opts *o, char *err, size_t errlen) {
    if (cp__scn_kind_name(o->kind) == NULL) {
        snprintf(err, errlen, "which scenario? reshard, failover, partition or slow-link");
        return CP_EINVAL;
    }
    if (!(o->warmup_s >= 1) || !(o->duration_s > o->warmup_s)) {
        snprintf(err, errlen, "--warmup must be >= 1 and less than --duration");
        return CP_EINVAL;
    }
    if (cp__scn_kind_wire(o->kind) && o->rtt_ns == 0) {
        snprintf(err, errlen, "--rtt: %s needs the wire, whose round trip must be > 0",
                 cp__scn_kind_name(o->kind));
        return CP_EINVAL;
    }
    if (o->kind == CP__SCN_SLOW_LINK && o->delay_ns == 0) {
        snprintf(err, errlen, "--delay must be > 0");
        return CP_EINVAL;
    }
    if (cp__scn_kind_wire(o->kind) && !(o->warmup_s + o->down_s < o->duration_s)) {
        snprintf(err, errlen,
                 "--warmup + --down must be less than --duration: the heal is part of the run");
        return CP_EINVAL;
    }
    if ((o->kind == CP__SCN_FAILOVER || cp__scn_kind_wire(o->kind)) && !(o->down_s > 0)) {
        snprintf(err, errlen, "--down must be > 0");
        return CP_EINVAL;
    }
    if (o->only && strcmp(o->only, "cluster") != 0 && strcmp(o->only, "twemproxy") != 0) {
        snprintf(err, errlen, "--only: '%s' is not cluster or twemproxy", o->only);
        return CP_EINVAL;
    }
    if (o->keys > UINT32_MAX) {
        snprintf(err, errlen, "--keys must be < 2^32");
        return CP_EINVAL;
    }
    /* what the engine itself would refuse */
    cp__bench_config c;
    cp__bench_config_init(&c);
    c.threads = o->threads;
    c.clients = o->clients;
    c.pipeline = o->pipeline;
    c.requests = 0;
    c.duration_s = o->duration_s;
    c.ratio_set = o->ratio_set;
    c.ratio_get = o->ratio_get;
    c.keys = o->keys;
    c.value_size = o->value_size;
    c.dist = o->dist;
    c.commands = o->commands;
    _Atomic uint32_t dummy;
    if (o->commands == NULL)
        c.acked_versions = &dummy; /* checked, never used */
    return cp__bench_config_check(&c, err, errlen);
}
