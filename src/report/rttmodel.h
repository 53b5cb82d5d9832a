/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The RTT model (private to src/report/; `clusterpipe plan --rtt` and report.md): a closed loop's
 * latency and throughput at a round trip D between hosts, predicted from the same loop measured
 * at RTT 0 (no wire).
 *
 * The loop keeps in_flight requests outstanding: connections x lanes x pipeline depth (a
 * cluster client has a lane per master, a proxy's client one per connection). By Little's law
 * each request took in_flight / throughput at RTT 0: the service time L0, what the servers,
 * proxies and client (and the wait behind other requests) cost. Through a network it also waits
 * hops x D, the host boundaries its batch crosses (network.h: cp__rpt_hops_per_batch), so
 *
 *     latency(D)    = L0 + hops x D
 *     throughput(D) = min(in_flight / latency(D), cores x 1,000,000 / CPU-us per op)
 *
 * with the CPU per op of every component at RTT 0 and the measuring machine's cores. For a
 * target rate the loop needs rate x latency(D) requests in flight, so that many divided by the
 * lanes and depth of a connection, rounded up, connections.
 *
 * Plain data and pure functions over a borrowed document; the markdown goes into the caller's
 * buffer or a new string the caller frees. Any thread.
 */
#ifndef CLUSTERPIPE_REPORT_RTTMODEL_H
#define CLUSTERPIPE_REPORT_RTTMODEL_H

#include <stddef.h>

#include <jansson.h>

#include "report/capacity.h"
#include "util/sbuf.h"

/* What a closed loop measured at RTT 0. */
typedef struct cp__rtt_base {
    double ops_per_sec;   /* throughput, > 0 */
    double in_flight;     /* requests it kept outstanding, > 0 */
    double cpu_us_per_op; /* every component's CPU per op; NaN or <= 0: not measured */
    double cores;         /* cores of the machine it ran on; <= 0: unknown */
} cp__rtt_base;

typedef struct cp__rtt_prediction {
    double service_us;  /* L0 = in_flight / throughput at RTT 0 */
    double latency_us;  /* L0 + hops x D */
    double ops_per_sec; /* min(in_flight / latency, cpu_bound) */
    double cpu_bound;   /* cores x 1e6 / CPU-us per op; INFINITY when either is unknown */
} cp__rtt_prediction;

/* The prediction at rtt_ns for a loop whose requests cross `hops` host boundaries. Returns 0,
 * or -1 (out untouched) when the base has no throughput or nothing in flight, or hops or
 * rtt_ns is negative or NaN. */
int cp__rtt_predict(const cp__rtt_base *b, double hops, double rtt_ns, cp__rtt_prediction *out);

/* The base of a capacity point (capacity.h) measured at RTT 0, with the document's cores. */
void cp__rtt_base_of(const json_t *doc, const cp__plan_point *p, cp__rtt_base *out);

/* `plan --rtt`: for each point at RTT 0 that o selects (o->at_zero_only is set by the caller),
 * its latency and throughput predicted at rtt_ns beside any run at rtt_ns of the same workload
 * in doc, and for o->rate the requests in flight and connections it needs, and the cores (the
 * capacity plan's). heading: "#" or "##". NULL with err when no point at RTT 0 has a successful
 * run, or out of memory. */
char *cp__rtt_plan_md(const json_t *doc, const cp__plan_opts *o, double rtt_ns, const char *heading,
                      char *err, size_t errlen);

/* report.md's "Predicted beside measured": each point of doc measured through the wire
 * (RTT > 0), its measured latency and throughput beside the model's from the same workload's
 * run at RTT 0 in doc, or a note where doc has none. Nothing when no point had an RTT. */
void cp__rtt_report_md(cp__sbuf *b, const json_t *doc);

#endif /* CLUSTERPIPE_REPORT_RTTMODEL_H */
