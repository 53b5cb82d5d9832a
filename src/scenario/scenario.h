/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Scenarios (private to src/scenario/; used by `clusterpipe scenario`): what each architecture
 * does to live traffic when the topology changes under it.
 *
 *   reshard   a fifth shard is added under a verified SET/GET load: the cluster gets a new master
 *             and a fifth of the slots move to it live (from each of the 4 masters); twemproxy
 *             gets a fifth server in every proxy's config and the proxies restart one by one.
 *   failover  one master (cluster, one replica per master) or one server (twemproxy, with
 *             auto_eject_hosts true and false) is killed with SIGKILL under load and restarted
 *             later.
 *   partition one link of the emulated network (the wire, orch/links.h) carries nothing for
 *             --down seconds, its connections left open: the client's link to one master
 *             (cluster), or one proxy's link to one redis (twemproxy, with nutcracker's
 *             `timeout:` set and not); then it heals.
 *   slow-link the same link gains --delay each way for --down seconds.
 *
 * The last two need a wire: their topologies always start with one (rtt_ns, default 100 us).
 * Each of their cases probes every shard through the faulted proxy (twemproxy) or the client's
 * own path (cluster) with a GET every 50 ms during the fault, so the report has each
 * shard's latency apart from the load's.
 *
 * Each case runs on its own topology, one at a time (never two running together): up, load N
 * keys, run the bench engine in a thread for the duration (every SET's version tracked per key,
 * every GET verified), do the event from the calling thread after the warm-up, join, read every
 * key back, down. The results document ("clusterpipe.scenario/1") holds, per case, the bench
 * object with its per-second timeline, the event times, the read-back and the summary numbers.
 *
 * Processes: orchestration runs on the calling thread only (the servers are ephemeral, and
 * PR_SET_PDEATHSIG ties them to the thread that spawned them: the caller's, which outlives the
 * bench thread); every topology is stopped by PID after its case, also on failure and on cancel.
 *
 * Ownership: cp__scn_run returns a new jansson reference (json_decref). The analysis functions
 * are pure. The render step writes DIR/timeline.{png,svg}, DIR/timeline.gp and DIR/report.md
 * atomically (src/report/ helpers). Threads: cp__scn_run blocks and must be called from the
 * thread that will live longest (the main thread); hooks are called from that thread. Never
 * prints.
 */
#ifndef CLUSTERPIPE_SCENARIO_H
#define CLUSTERPIPE_SCENARIO_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "bench/engine.h"
#include "bench/readback.h"
#include "bench/session.h"
#include "orch/orch.h"
#include "report/charts.h"

#define CP__SCENARIO_SCHEMA "clusterpipe.scenario/1"

typedef enum cp__scn_kind {
    CP__SCN_RESHARD = 1,
    CP__SCN_FAILOVER = 2,
    CP__SCN_PARTITION = 3,
    CP__SCN_SLOW_LINK = 4,
} cp__scn_kind;

/* 1 for the scenarios whose fault is on the wire (partition, slow-link). */
int cp__scn_kind_wire(cp__scn_kind k);

typedef struct cp__scn_opts {
    cp__scn_kind kind;
    uint64_t keys;              /* loaded, then read and written by the load */
    cp__value_sizes value_size; /* bytes per value: one size, or a key's (bench/keyspace.h) */
    cp__dist dist;              /* key distribution of the load (default uniform) */
    double duration_s;          /* measured run per case */
    double warmup_s;            /* the event starts this long after the run started */
    double down_s;              /* failover: the killed server is restarted this long after the kill
                                   (cluster: and not before the replica took over); partition,
                                   slow-link: how long the fault lasts */
    uint64_t rtt_ns;            /* > 0: every topology starts with the wire (cp_up_opts.rtt_ns);
                                   partition and slow-link need one (default 100 us) */
    uint64_t jitter_ns;         /* adjacent to rtt_ns: the CLI's --rtt fills both */
    uint64_t delay_ns;          /* slow-link: added each way for the fault (default 50 ms) */
    const char *clusterpipe;    /* the binary that runs `wire` (borrowed); NULL: $PATH */
    int persistence; /* failover: servers keep an append-only file (fsync every second), so
                        a restarted server comes back with what it had written to disk */
    unsigned ratio_set, ratio_get;
    /* --command: the templates the load runs instead of SET:GET (borrowed); NULL: SET:GET.
     * Without SETs no per-key version is tracked and nothing is read back afterwards: no stale
     * reads or lost writes are measured, the rest is (failures, misses of the verified reads,
     * redirects, the dip). */
    const cp__cmdset *commands;
    int threads, clients, pipeline;
    int retry_budget_ms;      /* < 0: library default, 0: none (CP_RETRY_NONE) */
    const char *only;         /* NULL: every case; else the cases whose setup is this */
    const char *command_line; /* for the document (borrowed) */
    const char *version;      /* clusterpipe's version, for the document (borrowed) */
    /* A directory (existing, borrowed) that gets each case's latency distribution as
     * "<case>.hgrm" (bench --hdr-file's format), and with --command one file per command beside
     * it, named in the case's bench object ("hgrm", commands[].hgrm); NULL: none. */
    const char *hgrm_dir;
    /* Progress lines (no newline), the caller prints them. Calling thread only. NULL: none. */
    void (*log)(void *ud, const char *line);
    /* Every process spawned (PID + start time), e.g. for a final "nothing left" check. */
    void (*on_spawn)(void *ud, const cp_proc *p);
    void *ud;
    const volatile sig_atomic_t *cancel; /* non-zero: stop everything, stop the servers */
} cp__scn_opts;

/* 200000 keys of 100 bytes, 30 s, warm-up 5 s, down 8 s, 1:9, 4 threads, 16 clients, pipeline
 * 4, library retry budget; failover with persistence, the others without; partition and
 * slow-link with a 100 us wire, slow-link's delay 50 ms. */
void cp__scn_opts_init(cp__scn_opts *o, cp__scn_kind kind);

/* Checks the options (warm-up inside the duration, keys >= clients, ...). Returns 0 or CP_EINVAL
 * with the reason, naming the CLI flag, in err. */
int cp__scn_opts_check(const cp__scn_opts *o, char *err, size_t errlen);

/* "reshard" / "failover" / "partition" / "slow-link"; NULL for anything else. */
const char *cp__scn_kind_name(cp__scn_kind k);

/* Runs every case. *doc is always set (a document with what was measured, each case with an
 * "error" when it could not run to the end). Returns 0 when every case ran to the end, else -1
 * (*doc says which and why; "failed": true). Blocks for the whole scenario. */
int cp__scn_run(const cp__scn_opts *o, json_t **doc);

/* The open-loop case's rate (calibrate.c): half what a short closed-loop run of o's workload
 * measured on target; recorded in c["calibration"]. 0, or -1 with err (also when cancelled). */
int cp__scn_calibrate(const cp__scn_opts *o, cp__session *ss, const char *name,
                      const cp__bench_target *target, json_t *c, double *rate, char *err,
                      size_t errlen);

/* ---- faults on the wire (fault.c) ------------------------------------------------------------ */

/* partition / slow-link on a running case: puts the fault on the link (cluster: the client's
 * link to the first master; twemproxy: the first proxy's link to the first shard not on its
 * host), probes every shard through the load's path each 50 ms for o->down_s or until
 * stop(ud), heals, and probes the faulted shard until it answers. Records c["fault"] (the link,
 * its bytes at the block and at the heal, each shard's probe, the recovery, and for a cluster
 * partition whether the master is still master). *start_ns, *heal_ns: when the fault began and
 * healed (CLOCK_MONOTONIC; 0: it did not). Returns 0, or a CP_E* code with err. Blocks for the
 * fault; calling thread only. */
int cp__scn_wire_fault(const cp__scn_opts *o, cp__session *ss, cp_topo *t,
                       int (*stop)(const void *ud), const void *ud, json_t *c, uint64_t *start_ns,
                       uint64_t *heal_ns, char *err, size_t errlen);

/* After the run: c["fault"].bytes_after_heal, the link's bytes since the heal. */
void cp__scn_fault_after(const cp_topo *t, json_t *c);

/* ---- analysis (pure) ------------------------------------------------------------------------ */

/* Sums of the per-second timeline over a phase [from, to): each second (t-1, t] belongs to the
 * phase holding its middle. */
typedef struct cp__scn_phase {
    double from, to;
    int seconds;
    uint64_t ops, errors, gets, misses, stale, moved, ask;
} cp__scn_phase;

typedef struct cp__scn_stats {
    cp__scn_phase before, during, after; /* [0, event) [event, back) [back, end) */
    double warmup_median_ops; /* median ops/s of the full seconds that ended by the event */
    double min_ops;           /* lowest full second overlapping [event, back + 1) */
    double min_ops_t;         /* its end time */
    double dip;               /* 1 - min_ops / warmup_median_ops, >= 0; NaN when unknown */
    double after_median_ops;  /* median ops/s of the full seconds after back + 1 */
    /* Full seconds overlapping [event, back + 1) with fewer than half the warm-up median's ops:
     * how many, and from the start of the first to the end of the last (NaN when none). Failures
     * alone miss a stall: requests retried by the client fail late or not at all. */
    int low_seconds;
    double low_from, low_to;
} cp__scn_stats;

/* Analyses a timeline (entries in time order, the last one possibly partial) around an event
 * that started at `event` and whose effects were over at `back` (seconds since the start of the
 * run). A partial second counts in the sums but not in medians or the minimum. */
void cp__scn_analyze(const cp__bench_second *tl, size_t n, double event, double back,
                     cp__scn_stats *out);

/* Open loop at `rate` ops/s: the lowest share of the offered load answered in a full second
 * that ended after `event` (*at: its end time). NaN when there is none. */
double cp__scn_min_answered_share(const cp__bench_second *tl, size_t n, double event, double rate,
                                  double *at);

/* Median of v[0..n) (sorts v). NaN when n == 0. */
double cp__scn_median(double *v, size_t n);

/* ---- a case's numbers as JSON (summary.c; pure, new references, NULL on OOM) ----------------- */

/* The numbers the report shows for a case of kind `kind`: from its result r, its timeline
 * analysed around the event [t_start, t_end] (seconds since the run's start), the read-back rb
 * (have_rb 0: none), and for an open-loop case its offered rate (0: closed loop). */
json_t *cp__scn_summary_json(cp__scn_kind kind, const cp__bench_result *r,
                             const cp__readback_result *rb, int have_rb, double t_start,
                             double t_end, double rate);

/* The read-back's counts. */
json_t *cp__scn_readback_json(const cp__readback_result *rb);

/* ---- rendering ------------------------------------------------------------------------------ */

/* The gnuplot script of the timeline chart (ops/s, failed requests/s, misses and stale reads/s
 * of every case, events as vertical lines) drawing timeline.png and timeline.svg (plus the
 * `suffix` variable). malloc'd, NULL on OOM or when the document has no timeline. Pure. */
char *cp__scn_chart_script(const json_t *doc);

/* report.md for the document: a factual summary per case, the numbers, the chart (or why it is
 * missing: chart_err non-NULL), how to read it, commands and environment. malloc'd, NULL on
 * OOM. Pure. */
char *cp__scn_report_md(const json_t *doc, const char *chart_err);

/* Writes DIR/timeline.gp, DIR/timeline.{png,svg} and DIR/report.md. A chart failure is not
 * fatal: *charts_ok = 0 and chart_err says why (report.md says so too). Returns 0, or CP_EIO /
 * CP_ENOMEM with err set when report.md could not be written. Blocks while gnuplot runs. */
int cp__scn_render(const char *dir, const json_t *doc, const cp__rpt_chart_opts *co, int *charts_ok,
                   char *chart_err, size_t chart_errlen, char *err, size_t errlen);

#endif /* CLUSTERPIPE_SCENARIO_H */
