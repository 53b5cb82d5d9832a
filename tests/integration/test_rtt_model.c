/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The RTT model (src/report/rttmodel.h) against the wire, on real servers: for the cluster and
 * for twemproxy with a proxy on each redis host (`servers`, the default placement), GET at depth
 * 1 and pipelined GET at depth 10, the model's throughput at 0.25 ms and 1 ms, predicted from a
 * run at RTT 0, is within 15% of the throughput measured through the wire.
 *
 * Robust under a loaded machine by design: each setup runs as three topologies at once (RTT 0
 * without a wire, 0.25 ms and 1 ms), and the runs go in rounds, the three of a round one after
 * the other (in an order that turns each round), each round's runs through the wire predicted
 * from that round's run at RTT 0; the median over the rounds of measured / predicted is what
 * must lie in [0.85, 1.15]. One connection (the cluster client's four lanes, twemproxy's one)
 * keeps the RTT-0 run from waiting behind requests of its own, so the network's share of the
 * latency dominates at both round trips. What a wrong model fails: ignoring the RTT (predicted
 * = RTT 0's throughput, 4 to 40 times the measured), or giving twemproxy the cluster's one hop
 * (checked: at 1 ms twemproxy's measured throughput is more than 15% below what one hop
 * predicts). The hops come from the rule `plan` uses for runs without a wire, checked against
 * the links the wired topology recorded. Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "fixture.h"

#include "bench/engine.h"
#include "bench/load.h"
#include "bench/target.h"
#include "report/network.h"
#include "report/rttmodel.h"
#include "report/summary.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEYS 1000
#define SHARDS 4
#define ROUNDS 5
#define RUN_SECONDS 0.4
#define NRTT 3
#define NDEPTH 2

static const unsigned long long rtts[NRTT] = {0, 250000, 1000000};
static const int depths[NDEPTH] = {1, 10};

static cp_fixture *start(cp_topo_kind kind, unsigned long long rtt_ns) {
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.kind = kind;
    o.shards = SHARDS;
    o.proxies = kind == CP_TOPO_TWEMPROXY ? SHARDS : 0;
    o.no_password = 1;
    o.rtt_ns = rtt_ns;
    o.proxy_placement = CP_PROXIES_WITH_SERVERS;
    o.clusterpipe = CP_BINARY;
    cp_fixture *f = cp_fixture_start(&o);
    assert_non_null(f);
    cp__bench_target t;
    assert_int_equal(cp__bench_target_from_topo(&t, f->topo, NULL, NULL), 0);
    cp__load_config lc;
    cp__load_config_init(&lc);
    lc.keys = KEYS;
    cp__load_result lr;
    char err[1024];
    if (cp__load_run(&t, &lc, &lr, err, sizeof(err)) != 0)
        fail_msg("load: %s", err);
    return f;
}

/* One verified GET run of RUN_SECONDS over one connection at depth `pipeline`, as the model's
 * base sees it: throughput, requests in flight, CPU of every component per op. */
static void measure(cp_fixture *f, int pipeline, cp__rtt_base *out) {
    cp__bench_target t;
    char err[1024];
    assert_int_equal(cp__bench_target_from_topo(&t, f->topo, NULL, NULL), 0);
    cp__bench_config cfg;
    cp__bench_config_init(&cfg);
    cfg.threads = 1;
    cfg.clients = 1;
    cfg.pipeline = pipeline;
    cfg.requests = 0;
    cfg.duration_s = RUN_SECONDS;
    cfg.ratio_set = 0;
    cfg.ratio_get = 1;
    cfg.keys = KEYS;
    cp__bench_result *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    if (cp__bench_run(&t, &cfg, r, err, sizeof(err)) != 0)
        fail_msg("bench: %s", err);
    assert_int_equal(r->failed_ops, 0);
    assert_int_equal(r->verify_mismatches, 0);
    assert_int_gt(r->ops, 0);
    int lanes = cp_topo_get_kind(f->topo) == CP_TOPO_CLUSTER ? r->masters : 1;
    out->ops_per_sec = r->ops_per_sec;
    out->in_flight = (double)cfg.clients * lanes * pipeline;
    out->cpu_us_per_op = r->has_cpu_redis && r->has_cpu_proxy && r->has_cpu_client
                             ? (r->cpu_redis + r->cpu_proxy + r->cpu_client) / (double)r->ops * 1e6
                             : 0;
    out->cores = (double)sysconf(_SC_NPROCESSORS_ONLN);
    cp__bench_result_free(r);
    free(r);
}

/* The hops plan uses for a run without a wire (the placement rule), which must be the shares
 * of crossing links the wired topology f recorded. */
static void hops_of(cp_fixture *f, const char *setup, cp__rpt_hops *h) {
    int proxied = cp_topo_get_kind(f->topo) == CP_TOPO_TWEMPROXY;
    json_t *doc = json_pack("{s:[{s:s,s:s,s:i}]}", "runs", "setup", setup, "mode",
                            proxied ? "proxy" : "cluster", "shards", SHARDS);
    assert_non_null(doc);
    assert_int_equal(cp__rpt_hops_of(doc, setup, h), 0);
    assert_int_equal(h->from_links, 0);
    json_decref(doc);
    double crossing[2] = {0, 0}, all[2] = {0, 0};
    for (size_t i = 0; i < cp_topo_nlinks(f->topo); i++) {
        const cp_link *l = cp_topo_link(f->topo, i);
        int from_proxy = l->from != CP_LINK_CLIENT;
        all[from_proxy]++;
        crossing[from_proxy] += l->crosses;
    }
    assert_double_eq(h->client, crossing[0] / all[0]);
    assert_double_eq(h->proxy, all[1] > 0 ? crossing[1] / all[1] : 0);
}

static double median(double *v, size_t n) {
    cp__rpt_stat st;
    cp__rpt_stat_of(v, n, &st);
    return st.med;
}

static void check_setup(cp_topo_kind kind, const char *setup) {
    cp_fixture *f[NRTT];
    for (int k = 0; k < NRTT; k++)
        f[k] = start(kind, rtts[k]);
    cp__rpt_hops h;
    hops_of(f[1], setup, &h);
    /* [depth][rtt]: measured, predicted, measured / predicted, and / predicted with one hop */
    double meas[NDEPTH][NRTT][ROUNDS], pred[NDEPTH][NRTT][ROUNDS], ratio[NDEPTH][NRTT][ROUNDS],
        one_hop[NDEPTH][NRTT][ROUNDS];
    for (int round = 0; round < ROUNDS; round++)
        for (int d = 0; d < NDEPTH; d++) {
            cp__rtt_base got[NRTT];
            for (int j = 0; j < NRTT; j++) {
                int k = (j + round) % NRTT; /* each round in a turned order */
                measure(f[k], depths[d], &got[k]);
            }
            double hops = cp__rpt_hops_per_batch(&h, depths[d]);
            for (int k = 1; k < NRTT; k++) {
                cp__rtt_prediction p, p1;
                assert_int_equal(cp__rtt_predict(&got[0], hops, (double)rtts[k], &p), 0);
                assert_int_equal(cp__rtt_predict(&got[0], 1, (double)rtts[k], &p1), 0);
                meas[d][k][round] = got[k].ops_per_sec;
                pred[d][k][round] = p.ops_per_sec;
                ratio[d][k][round] = got[k].ops_per_sec / p.ops_per_sec;
                one_hop[d][k][round] = got[k].ops_per_sec / p1.ops_per_sec;
            }
        }
    for (int k = 0; k < NRTT; k++)
        assert_int_equal(cp_fixture_stop(f[k]), 0);
    for (int d = 0; d < NDEPTH; d++)
        for (int k = 1; k < NRTT; k++) {
            double r = median(ratio[d][k], ROUNDS);
            printf("%s depth %d at %llu us: hops %.2f, predicted %.0f ops/s, measured %.0f "
                   "(medians over %d rounds), measured / predicted %.3f (rounds:",
                   setup, depths[d], rtts[k] / 1000, cp__rpt_hops_per_batch(&h, depths[d]),
                   median(pred[d][k], ROUNDS), median(meas[d][k], ROUNDS), ROUNDS, r);
            for (int round = 0; round < ROUNDS; round++)
                printf(" %.3f", ratio[d][k][round]);
            printf("); with one hop %.3f\n", median(one_hop[d][k], ROUNDS));
            assert_double_ge(r, 0.85);
            assert_double_le(r, 1.15);
        }
    if (kind == CP_TOPO_TWEMPROXY) /* the second hop is there: one hop would miss it */
        assert_double_lt(median(one_hop[0][2], ROUNDS), 0.85);
}

static void test_cluster(void **state) {
    (void)state;
    check_setup(CP_TOPO_CLUSTER, "cluster");
}

static void test_twemproxy_servers(void **state) {
    (void)state;
    check_setup(CP_TOPO_TWEMPROXY, "twemproxy");
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cluster),
        cmocka_unit_test(test_twemproxy_servers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
