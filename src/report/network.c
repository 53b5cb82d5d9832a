/* SPDX-License-Identifier: BSD-3-Clause
 *
 * "The network" section of report.md (network.h): hops per request from the recorded links,
 * RTT x hops beside each case's measured p50. Pure over borrowed jansson values; any thread.
 */
#include "report/network.h"

#include "report/table.h"
#include "util/dur.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The rule, for a setup whose runs had no wire: a proxy's runs say mode "proxy". */
static int hops_by_rule(const json_t *doc, const char *setup, cp__rpt_hops *h) {
    size_t i;
    const json_t *run, *t;
    const json_t *found = NULL;
    json_array_foreach(json_object_get(doc, "runs"), i, run) {
        const char *name = json_string_value(json_object_get(run, "setup"));
        if (name != NULL && strcmp(name, setup) == 0 &&
            json_is_string(json_object_get(run, "mode"))) {
            found = run;
            break;
        }
    }
    if (found == NULL)
        return -1;
    h->client = 1;
    h->proxy = 0;
    h->placement = NULL;
    h->from_links = 0;
    if (strcmp(json_string_value(json_object_get(found, "mode")), "proxy") != 0)
        return 0;
    h->placement =
        json_string_value(json_object_get(json_object_get(doc, "placement"), "proxy_placement"));
    json_array_foreach(json_object_get(doc, "topologies"), i, t) {
        if (h->placement == NULL)
            h->placement = json_string_value(json_object_get(t, "proxy_placement"));
    }
    if (h->placement == NULL)
        h->placement = "servers";
    const json_t *n = json_object_get(found, "shards");
    if (!json_is_number(n))
        n = json_object_get(json_object_get(doc, "settings"), "shards");
    double shards = json_is_number(n) ? json_number_value(n) : 0;
    if (strcmp(h->placement, "clients") == 0)
        h->client = 0, h->proxy = 1;
    else if (strcmp(h->placement, "tier") == 0 || shards < 1)
        h->proxy = 1;
    else
        h->proxy = (shards - 1) / shards;
    return 0;
}

int cp__rpt_hops_of(const json_t *doc, const char *setup, cp__rpt_hops *h) {
    size_t i, k;
    const json_t *t, *l;
    json_array_foreach(json_object_get(doc, "topologies"), i, t) {
        const char *name = json_string_value(json_object_get(t, "setup"));
        const json_t *links = json_object_get(t, "links");
        if (name == NULL || strcmp(name, setup) != 0 || json_array_size(links) == 0)
            continue;
        /* [0]: the client's links, [1]: the proxies' links to the servers */
        double crossing[2] = {0, 0}, all[2] = {0, 0};
        json_array_foreach(links, k, l) {
            const char *from = json_string_value(json_object_get(l, "from"));
            int proxy = from != NULL && strcmp(from, "client") != 0;
            all[proxy]++;
            crossing[proxy] += json_is_true(json_object_get(l, "crosses"));
        }
        h->client = all[0] > 0 ? crossing[0] / all[0] : 0;
        h->proxy = all[1] > 0 ? crossing[1] / all[1] : 0;
        h->placement = json_string_value(json_object_get(t, "proxy_placement"));
        h->from_links = 1;
        return 0;
    }
    return hops_by_rule(doc, setup, h);
}

double cp__rpt_hops_per_request(const cp__rpt_hops *h) {
    return h->client + h->proxy;
}

double cp__rpt_hops_per_batch(const cp__rpt_hops *h, int pipeline) {
    return h->client + 1 - pow(1 - h->proxy, pipeline > 1 ? pipeline : 1);
}

/* The round trip a case's runs had: the median run's "rtt_ns", else the settings', else 0. */
static double case_rtt_ns(const json_t *doc, const cp__rpt_case *c) {
    const json_t *v = json_object_get(c->median_run, "rtt_ns");
    if (!json_is_number(v))
        v = json_object_get(json_object_get(doc, "settings"), "rtt_ns");
    return json_is_number(v) ? json_number_value(v) : 0;
}

/* The case of the same setup and pipeline depth at RTT 0 (an rtt sweep's first point), NULL
 * when the run had none. */
static const cp__rpt_case *at_zero(const json_t *doc, const cp__rpt_summary *s,
                                   const cp__rpt_case *c) {
    for (size_t i = 0; i < s->ncases; i++) {
        const cp__rpt_case *z = &s->cases[i];
        if (strcmp(z->setup, c->setup) == 0 && z->pipeline == c->pipeline &&
            json_is_number(json_object_get(z->median_run, "rtt_ns")) && case_rtt_ns(doc, z) == 0)
            return z;
    }
    return NULL;
}

static int any_rtt(const json_t *doc, const cp__rpt_summary *s) {
    for (size_t i = 0; i < s->ncases; i++)
        if (case_rtt_ns(doc, &s->cases[i]) > 0)
            return 1;
    return 0;
}

static void fmt(char *buf, size_t len, double v, int decimals) {
    cp__rpt_fmt_value(buf, len, v, decimals);
}

void cp__rpt_network_md(cp__sbuf *b, const json_t *doc, const cp__rpt_summary *s) {
    if (!any_rtt(doc, s))
        return;
    int baseline = 0;
    for (size_t i = 0; i < s->ncases && !baseline; i++)
        baseline = case_rtt_ns(doc, &s->cases[i]) > 0 && at_zero(doc, s, &s->cases[i]) != NULL;
    cp__sbuf_puts(
        b, "## The network\n\n"
           "Every link between two hosts went through the wire (`clusterpipe wire`), which holds "
           "each direction for half the round trip: **the latency added per hop is the RTT**. "
           "Every redis-server is a host of its own and the client one more. **Hops per "
           "request** count the host boundaries one request crosses, read from the links "
           "results.json recorded (the share of the client's links that cross, plus the share "
           "of the proxies' links to the servers that cross): a cluster client sends each "
           "request to the master of its key, 1 crossing; twemproxy with a nutcracker on each "
           "redis host (`servers`, the published setup) crosses to a proxy, and the proxy "
           "crosses again for the keys whose server is on another host, 1 + (N-1)/N with N "
           "servers; with a sidecar proxy on the client's host (`clients`) only the proxy's "
           "link crosses, 1; with proxies on hosts of their own (`tier`), 2. Shares are over "
           "the links, so they hold for keys spread evenly over the servers.\n\n"
           "RTT x hops is the least the network adds to a request; the measured p50 above it is "
           "the servers', the proxies' and the client's own time, and with pipelining the wait "
           "behind the requests ahead on the connection.\n\n");
    cp__sbuf_printf(b,
                    "| setup | proxy placement | call type | RTT | hops per request | RTT x hops "
                    "(us) | p50 (us) |%s\n| :-- | :-- | :-- | --: | --: | --: | --: |%s\n",
                    baseline ? " p50 added over RTT 0 (us) |" : "", baseline ? " --: |" : "");
    for (size_t i = 0; i < s->ncases; i++) {
        const cp__rpt_case *c = &s->cases[i];
        cp__rpt_hops hp;
        int known = cp__rpt_hops_of(doc, c->setup, &hp) == 0 && hp.from_links;
        const char *placement = known ? hp.placement : NULL;
        double hops = known ? cp__rpt_hops_per_request(&hp) : NAN;
        double rtt_ns = case_rtt_ns(doc, c);
        char rtt[32], h[32], model[32], p50[32];
        cp__dur_format((uint64_t)rtt_ns, rtt, sizeof(rtt));
        fmt(h, sizeof(h), hops, 2);
        fmt(model, sizeof(model), hops * rtt_ns / 1000, 0);
        fmt(p50, sizeof(p50), c->m[CP__M_P50].n ? c->m[CP__M_P50].med : NAN, -1);
        cp__sbuf_printf(b, "| %s | %s | %s | %s | %s | %s | %s |", c->setup,
                        placement ? placement : "-", c->call, rtt, h, model, p50);
        if (baseline) {
            const cp__rpt_case *z = at_zero(doc, s, c);
            char added[32];
            fmt(added, sizeof(added),
                z != NULL && z->m[CP__M_P50].n && c->m[CP__M_P50].n
                    ? c->m[CP__M_P50].med - z->m[CP__M_P50].med
                    : NAN,
                0);
            cp__sbuf_printf(b, " %s |", added);
        }
        cp__sbuf_puts(b, "\n");
    }
    /* The published claim as numbers: what twemproxy's extra hop costs over the cluster's. */
    cp__rpt_hops tw_hops, cl_hops;
    if (cp__rpt_hops_of(doc, "twemproxy", &tw_hops) == 0 && tw_hops.from_links &&
        cp__rpt_hops_of(doc, "cluster", &cl_hops) == 0 && cl_hops.from_links) {
        const char *placement = tw_hops.placement;
        double tw = cp__rpt_hops_per_request(&tw_hops), cl = cp__rpt_hops_per_request(&cl_hops);
        cp__sbuf_printf(b,
                        "\nThe extra hop: a request through twemproxy (%s placement) crosses %.2f "
                        "host boundaries against the cluster's %.2f, so the network alone adds "
                        "%.2f x RTT to each of its requests over the cluster's.\n",
                        placement ? placement : "servers", tw, cl, tw - cl);
    }
    cp__sbuf_puts(b, "\n");
}
