/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Summary of a compare run (private to src/report/): groups the runs of a
 * "clusterpipe.compare/1" document into cases (setup x call type, e.g. "twemproxy" x "GET"),
 * reduces each metric over the case's repeats to median, min and max (for --command runs also
 * each command's ops/s and latency), and provides the math the table and report share:
 * cluster/twemproxy ratios of medians and "is this difference inside the noise" (min-max spreads
 * overlap).
 *
 * A value that is absent or JSON null in a run (proxy CPU of an external deployment, a run that
 * could not start) is not a zero: it is left out, and a metric with no value at all is "n/a"
 * (n == 0). Everything is plain data: a cp__rpt_summary is caller-allocated and holds borrowed
 * pointers into the results document (which must outlive it); nothing allocates. Pure
 * functions, any thread.
 */
#ifndef CLUSTERPIPE_REPORT_SUMMARY_H
#define CLUSTERPIPE_REPORT_SUMMARY_H

#include <stddef.h>

#include <jansson.h>

/* Median and spread of one metric over the repeats of a case. n == 0: not measurable. */
typedef struct cp__rpt_stat {
    double med, min, max;
    int n; /* values present */
} cp__rpt_stat;

/* The metrics the report shows, in the order of cp__rpt_metric_info(). */
typedef enum cp__rpt_metric {
    CP__M_SECONDS = 0, /* time taken */
    CP__M_CPU_REDIS,   /* CPU-seconds, summed over the redis servers */
    CP__M_CPU_CLIENT,
    CP__M_CPU_PROXY,
    CP__M_CPU_TOTAL,
    CP__M_OPS_PER_SEC,
    CP__M_P50,
    CP__M_P99,
    CP__M_US_REDIS, /* CPU microseconds per op */
    CP__M_US_PROXY,
    CP__M_US_CLIENT,
    CP__M_US_TOTAL,
    CP__M_OPS,
    /* the replicas' part of the Redis CPU (cpu_*.replicas: compare --replica-reads), and the
     * masters' (Redis less replicas; all of it for a setup without replicas) */
    CP__M_CPU_REPLICAS,
    CP__M_CPU_MASTERS,
    CP__M_US_REPLICAS,
    CP__M_US_MASTERS,
    /* the client-side cache's runs (client_cache.*: compare's cluster-cached): the share of
     * cacheable reads it answered, the keys the servers' invalidations named */
    CP__M_CACHE_HIT_RATIO,
    CP__M_CACHE_INVALIDATIONS,
    /* the wire's CPU (cpu_*.wire: a run through the emulated network, --rtt): a component of
     * its own, in no total */
    CP__M_CPU_WIRE,
    CP__M_US_WIRE,
    CP__NMETRIC
} cp__rpt_metric;

typedef struct cp__rpt_metric_desc {
    const char *label;     /* column header, e.g. "time taken (s)" */
    const char *short_;    /* in sentences, e.g. "time taken" */
    const char *obj, *key; /* where it lives in a bench object: obj.key, or key when obj NULL */
    int decimals;          /* for printing; -1: adaptive (latencies) */
    int higher_is_better;  /* ops/s: 1; times, CPU, latency: 0 */
} cp__rpt_metric_desc;

const cp__rpt_metric_desc *cp__rpt_metric_info(cp__rpt_metric m);

#define CP__RPT_MAX_CASES 32
#define CP__RPT_MAX_COMMANDS 16 /* --command templates per run (bench/template.h) */

/* One --command of a case: its part of the runs (their "commands"[k]), over the repeats. */
typedef struct cp__rpt_cmd {
    char name[32];             /* "HSET" */
    char text[64];             /* the template, cut to fit */
    int verified;              /* its replies were checked (in the first run that has it) */
    cp__rpt_stat ops_per_sec;  /* the command's own ops/s within its runs */
    cp__rpt_stat p50, p99;     /* its latency_us */
    double failed, mismatches; /* failed + unknown ops, verify mismatches: summed over runs */
} cp__rpt_cmd;

typedef struct cp__rpt_case {
    char name[64];  /* "twemproxy GET" */
    char setup[32]; /* "twemproxy", "cluster" (from the run, else the name's first word) */
    char call[32];  /* "GET", "pipelined GET" (from the run, else the rest of the name) */
    int pipeline;   /* workload.pipeline of the first run, 0 when unknown */
    size_t nruns;
    size_t nfailed;          /* runs with an error, failed/unknown ops or mismatches */
    int total_partial;       /* a component that exists (redis, client, and the proxy unless
                                the setup is a cluster) was not measured in some run: the
                                total CPU is then a lower bound, not comparable */
    const char *first_error; /* borrowed: the first run's "error" or "first_error", else NULL */
    cp__rpt_stat m[CP__NMETRIC];
    const json_t *median_run; /* borrowed: the run whose time is closest to the median (its
                                 latency curve is the one drawn) */
    size_t ncmds;             /* --command runs: the commands of the first run (0: GET runs) */
    cp__rpt_cmd cmd[CP__RPT_MAX_COMMANDS];
} cp__rpt_case;

typedef struct cp__rpt_summary {
    cp__rpt_case cases[CP__RPT_MAX_CASES];
    size_t ncases;
    size_t nruns, nfailed;
    int repeat; /* "repeat" of the document, else the largest nruns of a case */
} cp__rpt_summary;

/* Median (mean of the two middle values for an even count), min and max of the values of v that
 * are not NaN. Sorts a copy, so v is unchanged; at most 1024 values are used. */
void cp__rpt_stat_of(const double *v, size_t n, cp__rpt_stat *out);

/* 1 when both stats have values and their [min, max] ranges intersect: with repeats, the
 * difference between the two medians is then inside the run-to-run noise. */
int cp__rpt_overlap(const cp__rpt_stat *a, const cp__rpt_stat *b);

/* num.med / den.med; NaN when either is n/a or den.med is 0. */
double cp__rpt_ratio(const cp__rpt_stat *num, const cp__rpt_stat *den);

/* Formats one value with `decimals` (-1: adaptive, 3 significant figures, at least 0
 * decimals), "n/a" when NaN. */
void cp__rpt_fmt_value(char *buf, size_t len, double v, int decimals);

/* Formats a stat: "n/a"; "12.34" for one value or when spread is 0; "12.34 [11.90-12.80]" when
 * spread is 1 and the case had more than one value whose min and max differ once formatted. */
void cp__rpt_fmt_stat(char *buf, size_t len, const cp__rpt_stat *s, int decimals, int spread);

/* One metric from one run (bench object), NaN when absent or null. cpu_seconds.total and
 * cpu_us_per_op.total fall back to the sum of the components present. */
double cp__rpt_run_value(const json_t *run, cp__rpt_metric m);

/* num / den of metric m between two cases (e.g. cluster / twemproxy), NaN when either is n/a,
 * den is 0, or m is a CPU total and either total is partial (comparing a total that lacks the
 * redis or proxy share with a complete one would mislead). */
double cp__rpt_case_ratio(const cp__rpt_case *num, const cp__rpt_case *den, cp__rpt_metric m);

/* 1 when the case's value of m cannot be compared: m is a CPU total and the total is partial. */
int cp__rpt_case_partial(const cp__rpt_case *c, cp__rpt_metric m);

/* 1 when the run failed: it has an "error", or failed_ops, unknown_ops or verify.mismatches
 * is non-zero. */
int cp__rpt_run_failed(const json_t *run);

/* Groups doc["runs"] into cases by name (in order of first appearance) and fills *out.
 * Returns 0, or CP_EINVAL when there are no runs or more than CP__RPT_MAX_CASES cases (err
 * says which). */
int cp__rpt_summarize(const json_t *doc, cp__rpt_summary *out, char *err, size_t errlen);

/* The setup compare --replica-reads adds: the cluster with a replica per master, read on the
 * replicas. */
#define CP__RPT_SETUP_REPLICAS "cluster-replicas"

/* The setup compare --setups ...,cluster-cached adds: the cluster, its clients with the
 * client-side cache. */
#define CP__RPT_SETUP_CACHED "cluster-cached"

/* 1 for a Redis Cluster setup ("cluster", "cluster-replicas", "cluster-cached"): no proxy. */
int cp__rpt_setup_is_cluster(const char *setup);

/* The case with this setup and call type, NULL when absent. */
const cp__rpt_case *cp__rpt_find(const cp__rpt_summary *s, const char *setup, const char *call);

#endif /* CLUSTERPIPE_REPORT_SUMMARY_H */
