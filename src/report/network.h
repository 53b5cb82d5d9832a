/* SPDX-License-Identifier: BSD-3-Clause
 *
 * report.md's "The network" section (private to src/report/): for a compare run, or a sweep
 * point, whose links between hosts went through the wire (`--rtt`, `--sweep rtt=...`), the
 * latency each crossing adds (the RTT), the hops per request of each setup and proxy placement
 * (the crossings a request makes, read from the links results.json recorded), and each case's
 * measured p50 beside RTT x hops (and, under an rtt sweep, beside its own p50 at RTT 0). Pure
 * over the borrowed document and summary; any thread; never prints.
 */
#ifndef CLUSTERPIPE_REPORT_NETWORK_H
#define CLUSTERPIPE_REPORT_NETWORK_H

#include <jansson.h>

#include "report/summary.h"
#include "util/sbuf.h"

/* Where a setup's links cross hosts: the share of the client's links that cross, and (behind a
 * proxy) the share of the proxies' links to the servers that cross. Read from the first
 * topology of the setup that recorded links; else, for a run without a wire, from the rule
 * `up --rtt` places hosts by (src/orch/links.c): every redis-server a host of its own, the
 * client one more, so a cluster client's link crosses (1, no proxy); twemproxy's by its proxy
 * placement (the document's, else "servers"): servers 1 and (N-1)/N with N servers, clients 0
 * and 1, tier 1 and 1. */
typedef struct cp__rpt_hops {
    double client, proxy;  /* shares in [0, 1]; proxy 0 without a proxy */
    const char *placement; /* borrowed: the proxies' placement; NULL without a proxy */
    int from_links;        /* 1: read from recorded links; 0: from the rule */
} cp__rpt_hops;

/* The hops of `setup` in doc. 0, or -1 when the document has no successful run of it (nothing
 * says whether it has a proxy). */
int cp__rpt_hops_of(const json_t *doc, const char *setup, cp__rpt_hops *h);

/* Host boundaries one request crosses, on average over the links: client + proxy share. Holds
 * for keys spread evenly over the servers. */
double cp__rpt_hops_per_request(const cp__rpt_hops *h);

/* Host boundaries a batch of `pipeline` requests on one connection waits for: a proxy answers
 * a connection's requests in order, so the batch waits for its slowest key, and the proxy's
 * crossing counts when any of its keys crosses: client + 1 - (1 - proxy)^pipeline. At depth 1,
 * the hops per request. */
double cp__rpt_hops_per_batch(const cp__rpt_hops *h, int pipeline);

/* Appends "## The network" to b when some run had an RTT above 0; nothing otherwise. */
void cp__rpt_network_md(cp__sbuf *b, const json_t *doc, const cp__rpt_summary *s);

#endif /* CLUSTERPIPE_REPORT_NETWORK_H */
