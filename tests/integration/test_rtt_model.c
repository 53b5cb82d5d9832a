/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The RTT model (src/report/rttmodel.h) against the wire, on real servers: for the cluster and
 * for twemproxy with a proxy on each redis host (`servers`, the default placement), GET at depth
 * 1 and pipelined GET at depth 10, through the wire at 1 ms, the throughput the model predicts
 * from a run at RTT 0 (no wire) is within 15% of the throughput measured; at 0.25 ms it is
 * measured and printed, not held (check_setup says why).
 *
 * Built to hold on a 2-core machine (ctest runs it alone: tests/CMakeLists.txt):
 * - Each setup runs as three topologies at once (RTT 0 without a wire, 0.25 ms, 1 ms), and the
 *   runs go in 10 rounds of short pairs, the run at RTT 0 at the same time as the one through
 *   the wire (a thread each), so that both see the machine's load alike. Little's law relates
 *   means, so each side's requests and seconds are added up over the rounds, and measured /
 *   predicted of those totals must lie in [0.85, 1.15].
 * - One connection, one lane: the cluster has one master (a cluster client keeps a lane per
 *   master, and its hops are 1 whatever their number), twemproxy four redis hosts. So the run at
 *   RTT 0 waits behind no request of its own, and its client sleeps for each reply as through
 *   the wire: with four lanes its one thread always had another lane's reply to handle at RTT 0
 *   and slept only through the wire, where a loaded machine's late wake-ups then cost it 30%
 *   more than the model (0.69 measured / predicted at load average 7, runs one after the
 *   other), a cost of the client's host the model leaves out.
 * - The RTT given to the model is the one the wire had during the run: a probe thread PINGs one
 *   redis-server in turns through a crossing link and directly, and the difference of the means
 *   is the round trip the wire added (means over all the probes of the rounds). On an idle machine
 * that is the setting (within the wire's accuracy, test_wire_real); on a loaded one the wire is
 * woken late and adds more, as a real network's ping shows its own RTT. The probe's RTT must be at
 * least 0.8 x the setting; the model's numbers at the setting are printed beside. What a wrong
 * model fails: ignoring the RTT (it would predict the RTT-0 throughput, 4 to 40 times the
 * measured), or giving twemproxy the cluster's one hop (checked: at 1 ms and depth 1 the measured
 * throughput is more than 15% below what one hop predicts). The hops come from the rule `plan` uses
 * for runs without a wire, checked against the links the wired topology recorded. Prints each
 * point's numbers. Single-threaded but for the probe.
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

#include <hiredis/hiredis.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEYS 1000
#define SHARDS 4  /* twemproxy's redis hosts: 3 keys in 4 cross from the proxy, 1.75 hops */
#define MASTERS 1 /* the cluster's (why one: the top of the file) */
#define ROUNDS 10
#define RUN_SECONDS 0.15
#define NRTT 3
#define NDEPTH 2

static const unsigned long long rtts[NRTT] = {0, 250000, 1000000};
static const int depths[NDEPTH] = {1, 10};

static cp_fixture *start(cp_topo_kind kind, unsigned long long rtt_ns) {
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.kind = kind;
    o.shards = kind == CP_TOPO_TWEMPROXY ? SHARDS : MASTERS;
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

/* What the wire really added to a round trip while a run went: PINGs to one redis-server in
 * turns through a crossing link and directly, the difference of their means (a loaded machine
 * wakes the wire late, so the emulated network's RTT is then above its setting, as a real
 * network's ping shows its own). From a thread of its own, over hiredis connections. */
typedef struct probe {
    int wire_port, direct_port;
    volatile int stop, failed;
    double sum[2];
    long n[2];
    pthread_t th;
} probe;

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void *probe_main(void *arg) {
    probe *p = arg;
    redisContext *c[2] = {redisConnect("127.0.0.1", p->wire_port),
                          redisConnect("127.0.0.1", p->direct_port)};
    while (!p->stop && !p->failed)
        for (int k = 0; k < 2 && !p->failed; k++) {
            double t0 = now_us();
            redisReply *r = c[k] != NULL && !c[k]->err ? redisCommand(c[k], "PING") : NULL;
            if (r == NULL || r->type != REDIS_REPLY_STATUS)
                p->failed = 1;
            freeReplyObject(r);
            p->sum[k] += now_us() - t0;
            p->n[k]++;
        }
    for (int k = 0; k < 2; k++)
        if (c[k] != NULL)
            redisFree(c[k]);
    return NULL;
}

static void probe_start(cp_fixture *f, probe *p) {
    memset(p, 0, sizeof(*p));
    for (size_t i = 0; i < cp_topo_nlinks(f->topo) && p->wire_port == 0; i++) {
        const cp_link *l = cp_topo_link(f->topo, i);
        const cp_proc *to = cp_topo_proc(f->topo, (size_t)l->to);
        if (l->crosses && to->role != CP_ROLE_PROXY) {
            p->wire_port = l->port;
            p->direct_port = to->port;
        }
    }
    assert_int_gt(p->wire_port, 0);
    assert_int_equal(pthread_create(&p->th, NULL, probe_main, p), 0);
}

/* Stops the probe; its round trips (us) through the wire and direct are added to sum and n. */
static void probe_stop(probe *p, double sum[2], long n[2]) {
    p->stop = 1;
    assert_int_equal(pthread_join(p->th, NULL), 0);
    assert_int_equal(p->failed, 0);
    for (int k = 0; k < 2; k++)
        sum[k] += p->sum[k], n[k] += p->n[k];
}

/* What the runs of one setup, depth and RTT added up to: requests, seconds, CPU, and through
 * the wire the probe's round trips. Means over all of them are what Little's law relates. */
typedef struct tally {
    double ops, seconds, cpu_s;
    double probe_us[2]; /* [0] through the wire, [1] direct */
    long probes[2];
} tally;

/* One verified GET run of RUN_SECONDS over one connection at depth `pipeline`, added to t.
 * No cmocka call (it may run off the test's thread): 0, or -1 with err. */
static int run_bench(cp_fixture *f, int pipeline, tally *t, char *err, size_t errlen) {
    cp__bench_target target;
    if (cp__bench_target_from_topo(&target, f->topo, NULL, NULL) != 0) {
        snprintf(err, errlen, "no bench target");
        return -1;
    }
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
    if (r == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = cp__bench_run(&target, &cfg, r, err, errlen);
    if (rc == 0 && (r->failed_ops != 0 || r->verify_mismatches != 0 || r->ops == 0 ||
                    !(r->has_cpu_redis && r->has_cpu_proxy && r->has_cpu_client))) {
        snprintf(err, errlen, "%llu failed, %llu mismatched, %llu ops, CPU measured %d",
                 (unsigned long long)r->failed_ops, (unsigned long long)r->verify_mismatches,
                 (unsigned long long)r->ops,
                 r->has_cpu_redis && r->has_cpu_proxy && r->has_cpu_client);
        rc = -1;
    }
    if (rc == 0) {
        t->ops += (double)r->ops;
        t->seconds += r->seconds;
        t->cpu_s += r->cpu_redis + r->cpu_proxy + r->cpu_client;
    }
    cp__bench_result_free(r);
    free(r);
    return rc == 0 ? 0 : -1;
}

/* The run at RTT 0, on a thread of its own beside the run through the wire. */
typedef struct side_run {
    cp_fixture *f;
    int pipeline, rc;
    tally *t;
    char err[1024];
} side_run;

static void *side_main(void *arg) {
    side_run *s = arg;
    s->rc = run_bench(s->f, s->pipeline, s->t, s->err, sizeof(s->err));
    return NULL;
}

/* A pair: a run on zero (RTT 0) and one on wired at the same time, so that both see the same
 * load of the machine; the wire's round trip probed meanwhile. */
static void measure_pair(cp_fixture *zero, cp_fixture *wired, int pipeline, tally *base,
                         tally *through) {
    side_run side = {.f = zero, .pipeline = pipeline, .t = base};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, side_main, &side), 0);
    probe pr;
    probe_start(wired, &pr);
    char err[1024];
    int rc = run_bench(wired, pipeline, through, err, sizeof(err));
    probe_stop(&pr, through->probe_us, through->probes);
    assert_int_equal(pthread_join(th, NULL), 0);
    if (rc != 0)
        fail_msg("through the wire: %s", err);
    if (side.rc != 0)
        fail_msg("at RTT 0: %s", side.err);
}

/* The model's base from the runs at RTT 0 of a setup whose connection holds `lanes` x depth. */
static void base_of(const tally *t, int lanes, int depth, cp__rtt_base *b) {
    b->ops_per_sec = t->ops / t->seconds;
    b->in_flight = (double)lanes * depth;
    b->cpu_us_per_op = t->cpu_s / t->ops * 1e6;
    b->cores = (double)sysconf(_SC_NPROCESSORS_ONLN);
}

/* The hops plan uses for a run without a wire (the placement rule), which must be the shares
 * of crossing links the wired topology f recorded. */
static void hops_of(cp_fixture *f, const char *setup, cp__rpt_hops *h) {
    int proxied = cp_topo_get_kind(f->topo) == CP_TOPO_TWEMPROXY;
    json_t *doc = json_pack("{s:[{s:s,s:s,s:i}]}", "runs", "setup", setup, "mode",
                            proxied ? "proxy" : "cluster", "shards", proxied ? SHARDS : MASTERS);
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

static void check_setup(cp_topo_kind kind, const char *setup) {
    cp_fixture *f[NRTT];
    for (int k = 0; k < NRTT; k++)
        f[k] = start(kind, rtts[k]);
    cp__rpt_hops h;
    hops_of(f[1], setup, &h);
    int lanes = kind == CP_TOPO_CLUSTER ? MASTERS : 1; /* a cluster client's lane per master */
    /* [depth][rtt]: the runs through the wire at rtt, and the runs at RTT 0 paired with them */
    static tally wired[NDEPTH][NRTT], base[NDEPTH][NRTT];
    memset(wired, 0, sizeof(wired));
    memset(base, 0, sizeof(base));
    for (int round = 0; round < ROUNDS; round++)
        for (int d = 0; d < NDEPTH; d++)
            for (int k = 1; k < NRTT; k++) {
                measure_pair(f[0], f[k], depths[d], &base[d][k], &wired[d][k]);
            }
    for (int k = 0; k < NRTT; k++)
        assert_int_equal(cp_fixture_stop(f[k]), 0);
    double ratio[NDEPTH][NRTT], one_hop[NDEPTH][NRTT], rtt[NDEPTH][NRTT];
    for (int d = 0; d < NDEPTH; d++)
        for (int k = 1; k < NRTT; k++) {
            const tally *w = &wired[d][k];
            assert_int_gt(w->probes[1], 0);
            rtt[d][k] =
                (w->probe_us[0] / (double)w->probes[0] - w->probe_us[1] / (double)w->probes[1]) *
                1000;
            double hops = cp__rpt_hops_per_batch(&h, depths[d]), measured = w->ops / w->seconds;
            cp__rtt_base b;
            base_of(&base[d][k], lanes, depths[d], &b);
            cp__rtt_prediction p, p1, set;
            assert_int_equal(cp__rtt_predict(&b, hops, fmax(rtt[d][k], 0), &p), 0);
            assert_int_equal(cp__rtt_predict(&b, 1, fmax(rtt[d][k], 0), &p1), 0);
            assert_int_equal(cp__rtt_predict(&b, hops, (double)rtts[k], &set), 0);
            ratio[d][k] = measured / p.ops_per_sec;
            one_hop[d][k] = measured / p1.ops_per_sec;
            printf("%s depth %d, RTT set %llu us, the wire's %.0f us: hops %.2f; at RTT 0 %.0f "
                   "ops/s, L0 %.0f us; through the wire predicted %.0f ops/s, measured %.0f: "
                   "measured / predicted %.3f (with one hop %.3f; at the RTT set %.3f)\n",
                   setup, depths[d], rtts[k] / 1000, rtt[d][k] / 1000, hops, b.ops_per_sec,
                   p.service_us, p.ops_per_sec, measured, ratio[d][k], one_hop[d][k],
                   measured / set.ops_per_sec);
        }
    /* Held at 1 ms; the 0.25 ms points are printed, not held. There the RTT is of the order of
     * the service time at RTT 0 (60 to 600 us here), which this test's own load (three
     * topologies, the wire and two runs at once on 2 cores) moves by tens of percent from round
     * to round, and which partly overlaps the wire's wait (a proxy works on one request while
     * another waits on the wire), an overlap the additive model leaves out: run alone on an idle
     * machine, 0.84 to 1.16 were seen there, against 0.91 to 1.08 at 1 ms. */
    for (int d = 0; d < NDEPTH; d++)
        for (int k = 1; k < NRTT; k++) {
            assert_double_ge(rtt[d][k], 0.8 * (double)rtts[k]);
            if (rtts[k] < 1000000)
                continue;
            assert_double_ge(ratio[d][k], 0.85);
            assert_double_le(ratio[d][k], 1.15);
        }
    if (kind == CP_TOPO_TWEMPROXY) /* the second hop is there: one hop would miss it */
        assert_double_lt(one_hop[0][2], 0.85);
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
