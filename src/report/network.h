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

/* The crossings of a host boundary one request of `setup` makes, on average over its links:
 * the share of the client's links that cross, plus (behind a proxy) the share of the proxies'
 * links to the servers that cross, from the first topology of that setup that recorded links.
 * NaN when none did. *placement gets the topology's proxy placement (NULL: none recorded). */
double cp__rpt_hops_per_request(const json_t *doc, const char *setup, const char **placement);

/* Appends "## The network" to b when some run had an RTT above 0; nothing otherwise. */
void cp__rpt_network_md(cp__sbuf *b, const json_t *doc, const cp__rpt_summary *s);

#endif /* CLUSTERPIPE_REPORT_NETWORK_H */
