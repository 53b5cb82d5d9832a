/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The capacity plan (private to src/report/; `clusterpipe plan` and report.md's section): the
 * CPU each component spent per operation in a "clusterpipe.compare/1" document, turned into the
 * cores each architecture needs for a target rate, per component:
 *
 *     cores = rate x CPU-us per op / 1,000,000 / target utilisation
 *
 * with the CPU per op the median over the point's successful repeats. A point is one measured
 * workload of one setup (call type, pipeline depth, connections, value size, shards); a sweep
 * gives many. Given a workload, each setup's closest point is used (the distance is the sum of
 * |log(asked / measured)| over the dimensions asked for), else every point is listed.
 *
 * Plain data and pure functions over a borrowed document; the markdown is a new string the
 * caller frees. Any thread.
 */
#ifndef CLUSTERPIPE_REPORT_CAPACITY_H
#define CLUSTERPIPE_REPORT_CAPACITY_H

#include <stddef.h>

#include <jansson.h>

#define CP__PLAN_MAX_POINTS 128
#define CP__PLAN_COMPONENTS 3 /* redis, proxy, client */

/* The user's workload; a field <= 0 is not asked for. */
typedef struct cp__plan_workload {
    int pipeline, clients, shards;
    double value_size;
} cp__plan_workload;

typedef struct cp__plan_opts {
    double rate;        /* ops/s to plan for, > 0 */
    double target_util; /* (0, 1]: the share of each core the plan lets the component use */
    cp__plan_workload want;
    int at_zero_only; /* 1: only the points measured without a wire (RTT 0): plan --rtt's bases */
} cp__plan_opts;

typedef struct cp__plan_point {
    char setup[32], call[32];
    int pipeline, clients, shards;
    double value_size;
    double rtt_ns; /* round trip of the links between hosts (the run's rtt_ns), 0: none */
    int nruns;     /* successful runs the medians come from */
    double us[CP__PLAN_COMPONENTS];    /* median CPU-us per op; NaN: not measured */
    double cores[CP__PLAN_COMPONENTS]; /* rate x us / 1e6 / util; NaN: not measured */
    int whole[CP__PLAN_COMPONENTS];    /* cores rounded up (0 for a component that spent none) */
    double ops_per_sec;                /* median throughput measured at this point */
    double latency_us;                 /* median of the runs' mean latency; NaN: none */
    int lanes; /* connections per client: a cluster client's lanes (workload.masters), else 1 */
} cp__plan_point;

/* The points of doc (successful runs only), each with its cores for o; when o->want asks for a
 * workload, only each setup's closest point. Returns 0 with *n points in out[0..max), or
 * CP_EINVAL with err (bad rate or utilisation, no successful run with CPU measured). */
int cp__plan_points(const json_t *doc, const cp__plan_opts *o, cp__plan_point *out, size_t max,
                    size_t *n, char *err, size_t errlen);

/* The plan as markdown: the table, how each number was computed, and the assumptions (the
 * utilisation, loopback hiding the network's cost, the measuring machine's cores as the unit).
 * heading: "#" or "##" level of its title. NULL with err when cp__plan_points fails or out of
 * memory. */
char *cp__plan_md(const json_t *doc, const cp__plan_opts *o, const char *heading, char *err,
                  size_t errlen);

#endif /* CLUSTERPIPE_REPORT_CAPACITY_H */
