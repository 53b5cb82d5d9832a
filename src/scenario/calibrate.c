/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The open-loop case's calibration (scenario.h): a short closed-loop run of the case's workload
 * on its loaded topology, whose throughput halved is the rate the measured run offers. Blocks
 * for the calibration; calling thread only.
 */
#include "scenario/scenario.h"

#include <stdio.h>

/* The open-loop case's rate: half of what a short closed-loop run of the same workload measured
 * on the loaded topology, so the load is below capacity and a drop is the topology's doing. */
#define CALIBRATION_S 3.0
int cp__scn_calibrate(const cp__scn_opts *o, cp__session *ss, const char *name,
                      const cp__bench_target *target, json_t *c, double *rate, char *err,
                      size_t errlen) {
    cp__bench_config cfg;
    cp__bench_config_init(&cfg);
    cfg.threads = o->threads;
    cfg.clients = o->clients;
    cfg.pipeline = o->pipeline;
    cfg.requests = 0;
    cfg.duration_s = CALIBRATION_S;
    cfg.ratio_set = o->ratio_set;
    cfg.ratio_get = o->ratio_get;
    cfg.commands = o->commands;
    cfg.keys = o->keys;
    cfg.value_size = o->value_size;
    cfg.dist = o->dist;
    cfg.retry_budget_ms = o->retry_budget_ms;
    cfg.command_line = "calibration";
    cfg.cancel = o->cancel;
    cp__bench_result r;
    cp__session_say(ss, "%s: %.0f s closed loop to measure capacity", name, CALIBRATION_S);
    int rc = cp__bench_run(target, &cfg, &r, err, errlen);
    if (rc == 0 && r.ops_per_sec <= 0) {
        snprintf(err, errlen, "the calibration run answered nothing");
        rc = -1;
    }
    if (rc == 0) {
        *rate = r.ops_per_sec / 2;
        json_object_set_new(c, "calibration",
                            json_pack("{s:f,s:f,s:f}", "seconds", CALIBRATION_S, "ops_per_sec",
                                      r.ops_per_sec, "offered_rate", *rate));
        cp__session_say(ss, "%s: capacity %.0f ops/s; the run offers %.0f ops/s, open loop", name,
                        r.ops_per_sec, *rate);
    }
    cp__bench_result_free(&r);
    return rc == 0 && !cp__session_cancelled(ss) ? 0 : -1;
}
