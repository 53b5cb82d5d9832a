/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The RTT model (src/report/rttmodel.h) against the wire, on real servers: for the cluster and
 * for twemproxy with a proxy on each redis host (`servers`, the default placement), GET at depth
 * 1 and pipelined GET at depth 10, through the wire at 0.25 ms and at 1 ms, the throughput the
 * model predicts from a run at RTT 0 (no wire) is within 15% of the throughput measured, when the
 * machine was the test's own (check_setup says why, and what it does otherwise).
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
 * - The RTT given to the model is the one the wire had during the runs, from its own account
 *   (`stats`: each delivery's lateness against its due), 2 x (delay + mean lateness) on the
 *   client's links and on the proxies'. On an idle machine that is the setting (within the
 *   wire's accuracy, test_wire_real); on a loaded one the wire is woken late and adds more (280
 *   to 700 us at 0.25 ms at load average 1.4 to 10), as a real network's ping shows its own
 *   RTT. It must be at least 0.8 x the setting; the model's numbers at the setting are printed
 *   beside. A probe's PINGs through the wire against direct, used before, read 30 to 40 us less
 *   than the wire's account at 0.25 ms (most of the cluster's shortfall there at load average 4
 *   to 6), and its PING loop loaded the machine.
 * - The hops: the client's link, plus the proxy's when a key of the batch crosses, 1 - (1 -
 *   share)^depth, with the share of GETs that crossed from the connection's proxy to another
 *   host's redis (INFO keyspace_hits). `plan`'s rule takes 1 - 1/N, right for connections spread
 *   over the proxies; one connection has one proxy, and ketama gives the 4 redis 34, 14, 9 and
 *   43% of the keys, so 0.63 crossed here, not 0.75 (1.63 hops at depth 1; the ratio with the
 *   rule's hops is printed beside). The rule itself is checked against the recorded links.
 * - What a wrong model fails: ignoring the RTT (it would predict the RTT-0 throughput, 4 to 40
 *   times the measured), or giving twemproxy the cluster's one hop (checked: at 1 ms and depth 1
 *   the measured throughput is more than 15% below what one hop predicts). Prints each point's
 *   numbers. Single-threaded but for the run at RTT 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "fixture.h"

#include "bench/cpu.h"
#include "bench/engine.h"
#include "bench/load.h"
#include "bench/target.h"
#include "report/network.h"
#include "report/rttmodel.h"
#include "util/clock.h"
#include "wire/control.h"

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
#define SHARDS 4  /* twemproxy's redis hosts (the rule: 3 keys in 4 cross, 1.75 hops) */
#define MASTERS 1 /* the cluster's (why one: the top of the file) */
#define ROUNDS 10
#define RUN_SECONDS 0.15
#define NRTT 3
#define NDEPTH 2

/* Other work on the machine during the runs, in cores, past which the points are printed and not
 * held (check_setup says why). */
#define OUTSIDE_MAX_CORES 0.25

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

/* What the runs of one setup, depth and RTT added up to: requests, seconds, CPU, and through
 * the wire its account of what it added. Means over all of them are what Little's law relates. */
typedef struct tally {
    double ops, seconds, cpu_s;
    /* The wire's timed deliveries and their summed lateness (ns), [0] on the client's links,
     * [1] on the proxies' (wire/control.h) */
    double deliveries[2], late_ns[2];
} tally;

/* Adds sign x the wire's account of f's links (its "stats") to t. */
static void wire_account(cp_fixture *f, double sign, tally *t) {
    char out[8192], err[256];
    if (cp__wire_ask(cp_topo_wire_control(f->topo), "stats", out, sizeof(out), 2000, err,
                     sizeof(err)) != 0)
        fail_msg("wire stats: %s", err);
    char *save = NULL;
    for (char *line = strtok_r(out, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        const char *at = strstr(line, " deliveries ");
        unsigned long long n = 0;
        long long late = 0;
        assert_non_null(at);
        assert_int_equal(sscanf(at, " deliveries %llu late %lld", &n, &late), 2);
        int proxy = strncmp(line, "link client-", 12) != 0;
        t->deliveries[proxy] += sign * (double)n;
        t->late_ns[proxy] += sign * (double)late;
    }
}

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
 * load of the machine; the wire's account of its deliveries read around the run. */
static void measure_pair(cp_fixture *zero, cp_fixture *wired, int pipeline, tally *base,
                         tally *through) {
    side_run side = {.f = zero, .pipeline = pipeline, .t = base};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, side_main, &side), 0);
    char err[1024];
    wire_account(wired, -1, through);
    int rc = run_bench(wired, pipeline, through, err, sizeof(err));
    wire_account(wired, 1, through);
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

/* The GETs redis-server proc i of f answered (INFO's keyspace_hits: every GET here hits). */
static double gets_at(cp_fixture *f, size_t i) {
    redisContext *c = redisConnect("127.0.0.1", cp_topo_proc(f->topo, i)->port);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    redisReply *r = redisCommand(c, "INFO stats");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    const char *at = strstr(r->str, "keyspace_hits:");
    assert_non_null(at);
    double hits = atof(at + strlen("keyspace_hits:"));
    freeReplyObject(r);
    redisFree(c);
    return hits;
}

/* The share of the GETs a twemproxy topology f answered that crossed from the proxy the runs
 * went through (the one whose client link carried the most) to another host's redis. */
static double crossing_share(cp_fixture *f) {
    char out[8192], err[256];
    if (cp__wire_ask(cp_topo_wire_control(f->topo), "stats", out, sizeof(out), 2000, err,
                     sizeof(err)) != 0)
        fail_msg("wire stats: %s", err);
    char used[64] = "";
    unsigned long long most = 0;
    char *save = NULL;
    for (char *line = strtok_r(out, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        char name[64];
        unsigned long long up = 0;
        const char *at = strstr(line, " up ");
        if (sscanf(line, "link %63s", name) == 1 && at != NULL &&
            sscanf(at, " up %llu", &up) == 1 && strncmp(name, "client-", 7) == 0 && up > most) {
            most = up;
            snprintf(used, sizeof(used), "%s", name);
        }
    }
    int proxy = -1, local = -1;
    for (size_t i = 0; i < cp_topo_nlinks(f->topo); i++)
        if (strcmp(cp_topo_link(f->topo, i)->name, used) == 0)
            proxy = cp_topo_link(f->topo, i)->to;
    for (size_t i = 0; i < cp_topo_nlinks(f->topo); i++) {
        const cp_link *l = cp_topo_link(f->topo, i);
        if (l->from == proxy && !l->crosses)
            local = l->to;
    }
    assert_int_ge(local, 0);
    double all = 0, here = 0;
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++)
        if (cp_topo_proc(f->topo, i)->role == CP_ROLE_SHARD) {
            double g = gets_at(f, i);
            all += g;
            here += (int)i == local ? g : 0;
        }
    assert_double_gt(all, 0);
    return 1 - here / all;
}

/* CPU seconds the machine has spent, every core, /proc/stat's first line: all but idle and iowait
 * (steal included: a virtual machine's time taken by its host). */
static double machine_busy_s(void) {
    FILE *f = fopen("/proc/stat", "r");
    assert_non_null(f);
    unsigned long long v[8] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    assert_int_equal(n, 8);
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
}

/* CPU seconds this test's own processes have spent: itself (every thread) and every process of
 * the topologies f[0..NRTT), the wire's included. */
static double own_s(cp_fixture *const *f) {
    cp__cpu_times t;
    assert_int_equal(cp__cpu_read_self(&t), 0);
    double sum = cp__cpu_total(&t);
    for (int k = 0; k < NRTT; k++)
        for (size_t i = 0; i < cp_topo_nprocs(f[k]->topo); i++) {
            assert_int_equal(cp__cpu_read_pid(cp_topo_proc(f[k]->topo, i)->pid, &t, NULL), 0);
            sum += cp__cpu_total(&t);
        }
    return sum;
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
    double t0 = (double)cp__now_ns() / 1e9, busy0 = machine_busy_s(), own0 = own_s(f);
    for (int round = 0; round < ROUNDS; round++)
        for (int d = 0; d < NDEPTH; d++)
            for (int k = 1; k < NRTT; k++) {
                measure_pair(f[0], f[k], depths[d], &base[d][k], &wired[d][k]);
            }
    double outside =
        (machine_busy_s() - busy0 - (own_s(f) - own0)) / ((double)cp__now_ns() / 1e9 - t0);
    double cross[NRTT] = {0, 0, 0};
    for (int k = 1; k < NRTT; k++)
        cross[k] = kind == CP_TOPO_TWEMPROXY ? crossing_share(f[k]) : 0;
    for (int k = 0; k < NRTT; k++)
        assert_int_equal(cp_fixture_stop(f[k]), 0);
    double ratio[NDEPTH][NRTT], one_hop[NDEPTH][NRTT], rtt[NDEPTH][NRTT];
    for (int d = 0; d < NDEPTH; d++)
        for (int k = 1; k < NRTT; k++) {
            const tally *w = &wired[d][k];
            double link_rtt[2] = {0, 0}; /* what the wire added, client's links and proxies' */
            for (int j = 0; j < 2; j++)
                if (w->deliveries[j] > 0)
                    link_rtt[j] = (double)rtts[k] + 2 * w->late_ns[j] / w->deliveries[j];
            assert_double_gt(w->deliveries[0], 0);
            cp__rpt_hops real = {1, cross[k], NULL, 0};
            double hops_client = 1, hops_proxy = cp__rpt_hops_per_batch(&real, depths[d]) - 1;
            double hops = hops_client + hops_proxy;
            rtt[d][k] = (hops_client * link_rtt[0] + hops_proxy * link_rtt[1]) / hops;
            double rule = cp__rpt_hops_per_batch(&h, depths[d]), measured = w->ops / w->seconds;
            cp__rtt_base b;
            base_of(&base[d][k], lanes, depths[d], &b);
            cp__rtt_prediction p, p1, set, pr;
            assert_int_equal(cp__rtt_predict(&b, hops, rtt[d][k], &p), 0);
            assert_int_equal(cp__rtt_predict(&b, 1, link_rtt[0], &p1), 0);
            assert_int_equal(cp__rtt_predict(&b, hops, (double)rtts[k], &set), 0);
            assert_int_equal(cp__rtt_predict(&b, rule, rtt[d][k], &pr), 0);
            ratio[d][k] = measured / p.ops_per_sec;
            one_hop[d][k] = measured / p1.ops_per_sec;
            printf("%s depth %d, RTT set %llu us, the wire's %.0f us (client %.0f, proxy %.0f): "
                   "hops %.3f (crossing share %.3f; rule %.2f); at RTT 0 %.0f ops/s, L0 %.0f us; "
                   "through the wire predicted %.0f ops/s, measured %.0f: measured / predicted "
                   "%.3f (with one hop %.3f; at the RTT set %.3f; with the rule's hops %.3f)\n",
                   setup, depths[d], rtts[k] / 1000, rtt[d][k] / 1000, link_rtt[0] / 1000,
                   link_rtt[1] / 1000, hops, cross[k], rule, b.ops_per_sec, p.service_us,
                   p.ops_per_sec, measured, ratio[d][k], one_hop[d][k], measured / set.ops_per_sec,
                   measured / pr.ops_per_sec);
        }
    /* Held at both RTTs, when the machine was this test's own: other work beside its processes
     * under OUTSIDE_MAX_CORES over the runs (it runs alone in the suite: tests/CMakeLists.txt).
     * On such a machine 0.25 ms came out at 1.00 to 1.11 and 1 ms at 0.97 to 1.03 (10 runs,
     * every point; ASan's build alike, 7 runs; docs/performance.md); beside one busy loop (0.7 to
     * 0.9 cores of other work) still within 0.96 to 1.04, beside two (1.0 to 1.1) out: 0.84 and
     * 1.18 at 0.25 ms. With other work on both cores (load average 1.4 to 11.6, 42 runs) the
     * points moved out of 15% at 0.25 ms (0.76 to 1.28) and now and then at 1 ms (0.82 to 0.85,
     * the cluster, in 8 of the runs): on the client's host, not the network. L0
     * then moves 4x with the load (twemproxy at depth 10: 250 to 1250 us, the order of the
     * 0.25 ms RTT); the proxy serves its own host's keys while the crossing ones wait on the wire,
     * hiding more of a longer L0 than the additive model allows; and the cluster's client and
     * redis each wait for a core after each wait on the wire, up to 230 us a request beyond L0
     * and the wire's account. A model of this host's scheduler is not what plan predicts: on such
     * a machine the points are printed with the other work measured, and not held. */
    printf("%s: other work on the machine during the runs: %.2f cores (held below %.2f)\n", setup,
           outside, OUTSIDE_MAX_CORES);
    for (int d = 0; d < NDEPTH; d++)
        for (int k = 1; k < NRTT; k++) {
            assert_double_ge(rtt[d][k], 0.8 * (double)rtts[k]);
            if (outside >= OUTSIDE_MAX_CORES)
                continue;
            assert_double_ge(ratio[d][k], 0.85);
            assert_double_le(ratio[d][k], 1.15);
        }
    if (outside >= OUTSIDE_MAX_CORES)
        print_message("%s: not held, the machine was busy with other work (%.2f cores)\n", setup,
                      outside);
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
