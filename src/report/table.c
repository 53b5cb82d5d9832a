/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Renders table.md (report/table.h) from a cp__rpt_summary: a tiny fixed-size Markdown table
 * builder with padded columns, the three tables, the published reference and the noise
 * sentence. Stack memory only, except the returned string (caller frees). Any thread.
 */
#include "report/table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const cp__rpt_ref cp__rpt_published[CP__RPT_NREF] = {
    {"twemproxy", "GET", 140, 52920},
    {"twemproxy", "pipelined GET", 35, 12950},
    {"cluster", "GET", 67, 24522},
    {"cluster", "pipelined GET", 29, 10324},
};

const cp__rpt_ref *cp__rpt_ref_find(const char *setup, const char *call) {
    for (size_t i = 0; i < CP__RPT_NREF; i++)
        if (strcmp(cp__rpt_published[i].setup, setup) == 0 &&
            strcmp(cp__rpt_published[i].call, call) == 0)
            return &cp__rpt_published[i];
    return NULL;
}

/* ---- a padded Markdown table ---------------------------------------------------------------- */

#define MD_COLS 12
#define MD_ROWS (CP__RPT_MAX_CASES + 1)
#define MD_CELL 64

typedef struct mdtable {
    int ncols, nrows;
    int right[MD_COLS]; /* right-align (numbers) */
    char cell[MD_ROWS][MD_COLS][MD_CELL];
} mdtable;

static void md_set(mdtable *t, int row, int col, const char *s) {
    snprintf(t->cell[row][col], MD_CELL, "%s", s);
    if (row >= t->nrows)
        t->nrows = row + 1;
}

/* Pads every column to its widest cell: valid Markdown that also lines up in a terminal. */
static void md_emit(const mdtable *t, cp__sbuf *b) {
    size_t w[MD_COLS] = {0};
    for (int r = 0; r < t->nrows; r++)
        for (int c = 0; c < t->ncols; c++) {
            size_t n = strlen(t->cell[r][c]);
            w[c] = n > w[c] ? n : w[c];
        }
    for (int r = 0; r < t->nrows; r++) {
        cp__sbuf_puts(b, "|");
        for (int c = 0; c < t->ncols; c++)
            cp__sbuf_printf(b, t->right[c] && r > 0 ? " %*s |" : " %-*s |", (int)w[c],
                            t->cell[r][c]);
        cp__sbuf_puts(b, "\n");
        if (r == 0) {
            cp__sbuf_puts(b, "|");
            for (int c = 0; c < t->ncols; c++) {
                cp__sbuf_puts(b, t->right[c] ? " " : " :");
                for (size_t k = 0; k < w[c] - 1; k++)
                    cp__sbuf_puts(b, "-");
                cp__sbuf_puts(b, t->right[c] ? ": |" : " |");
            }
            cp__sbuf_puts(b, "\n");
        }
    }
}

static void md_stat(mdtable *t, int row, int col, const cp__rpt_stat *s, int decimals, int spread) {
    char buf[MD_CELL];
    cp__rpt_fmt_stat(buf, sizeof(buf), s, decimals, spread);
    md_set(t, row, col, buf);
}

/* A partial total (some component n/a) is a lower bound and printed as one: ">= 0.53". */
static void md_total(mdtable *t, int row, int col, const cp__rpt_stat *s, int decimals, int spread,
                     int partial) {
    char buf[MD_CELL], val[MD_CELL - 4];
    cp__rpt_fmt_stat(val, sizeof(val), s, decimals, spread);
    snprintf(buf, sizeof(buf), "%s%s", partial && s->n > 0 ? ">= " : "", val);
    md_set(t, row, col, buf);
}

/* A cluster has no proxy: its twemproxy cells are "-" (nothing there), which is different
 * from "n/a" (a proxy that exists but could not be measured) and from a measured 0. */
static int no_proxy(const cp__rpt_case *k) {
    return cp__rpt_setup_is_cluster(k->setup);
}

/* ---- the tables ---------------------------------------------------------------------------- */

/* 1 when some case measured the wire (a run through the emulated network): its CPU then gets
 * a column of its own, beside the total and never in it. */
static int has_wire(const cp__rpt_summary *s) {
    for (size_t i = 0; i < s->ncases; i++)
        if (s->cases[i].m[CP__M_CPU_WIRE].n > 0)
            return 1;
    return 0;
}

/* The wire's column of a case: its value, or "-" for a case that ran without a wire. */
static void md_wire(mdtable *t, int row, int col, const cp__rpt_case *k, cp__rpt_metric m,
                    int spread) {
    if (k->m[m].n == 0)
        md_set(t, row, col, "-");
    else
        md_stat(t, row, col, &k->m[m], 2, spread);
}

/* Table 1: the published experiment's columns, then throughput and latency, and the wire's CPU
 * when there was one. */
static void table_main(const cp__rpt_summary *s, int spread, cp__sbuf *b) {
    static const cp__rpt_metric cols[] = {CP__M_SECONDS, CP__M_CPU_REDIS, CP__M_CPU_CLIENT,
                                          CP__M_CPU_PROXY, CP__M_CPU_TOTAL};
    mdtable t;
    memset(&t, 0, sizeof(t));
    t.ncols = 11;
    md_set(&t, 0, 0, "setup");
    md_set(&t, 0, 1, "call type");
    for (int c = 0; c < 5; c++) {
        md_set(&t, 0, 2 + c, cp__rpt_metric_info(cols[c])->label);
        t.right[2 + c] = 1;
    }
    md_set(&t, 0, 7, "total CPU (%CPU x s)");
    md_set(&t, 0, 8, "ops/s");
    md_set(&t, 0, 9, "p50 (us)");
    md_set(&t, 0, 10, "p99 (us)");
    for (int c = 7; c < 11; c++)
        t.right[c] = 1;
    int wire = has_wire(s);
    if (wire) {
        t.ncols = 12;
        md_set(&t, 0, 11, "wire CPU-s (not in total)");
        t.right[11] = 1;
    }
    for (size_t i = 0; i < s->ncases; i++) {
        const cp__rpt_case *k = &s->cases[i];
        int r = (int)i + 1;
        md_set(&t, r, 0, k->setup);
        md_set(&t, r, 1, k->call);
        for (int c = 0; c < 5; c++)
            if (cols[c] == CP__M_CPU_PROXY && no_proxy(k))
                md_set(&t, r, 2 + c, "-");
            else
                md_total(&t, r, 2 + c, &k->m[cols[c]], cp__rpt_metric_info(cols[c])->decimals,
                         spread, cp__rpt_case_partial(k, cols[c]));
        cp__rpt_stat cyc = k->m[CP__M_CPU_TOTAL];
        cyc.med *= 100, cyc.min *= 100, cyc.max *= 100;
        md_total(&t, r, 7, &cyc, 0, spread, k->total_partial);
        md_stat(&t, r, 8, &k->m[CP__M_OPS_PER_SEC], 0, spread);
        md_stat(&t, r, 9, &k->m[CP__M_P50], -1, spread);
        md_stat(&t, r, 10, &k->m[CP__M_P99], -1, spread);
        if (wire)
            md_wire(&t, r, 11, k, CP__M_CPU_WIRE, spread);
    }
    md_emit(&t, b);
}

/* Table 2: where the CPU goes, per operation, and whether every run was clean. */
static void table_per_op(const cp__rpt_summary *s, int spread, cp__sbuf *b) {
    static const cp__rpt_metric cols[] = {CP__M_US_REDIS, CP__M_US_PROXY, CP__M_US_CLIENT,
                                          CP__M_US_TOTAL};
    mdtable t;
    memset(&t, 0, sizeof(t));
    t.ncols = 8;
    md_set(&t, 0, 0, "setup");
    md_set(&t, 0, 1, "call type");
    md_set(&t, 0, 2, "pipeline");
    t.right[2] = 1;
    for (int c = 0; c < 4; c++) {
        md_set(&t, 0, 3 + c, cp__rpt_metric_info(cols[c])->label);
        t.right[3 + c] = 1;
    }
    md_set(&t, 0, 7, "runs");
    int wire = has_wire(s);
    if (wire) {
        t.ncols = 9;
        md_set(&t, 0, 8, "wire us/op (not in total)");
        t.right[8] = 1;
    }
    for (size_t i = 0; i < s->ncases; i++) {
        const cp__rpt_case *k = &s->cases[i];
        int r = (int)i + 1;
        char buf[MD_CELL];
        md_set(&t, r, 0, k->setup);
        md_set(&t, r, 1, k->call);
        if (k->pipeline > 0)
            snprintf(buf, sizeof(buf), "%d", k->pipeline);
        else
            snprintf(buf, sizeof(buf), "n/a");
        md_set(&t, r, 2, buf);
        for (int c = 0; c < 4; c++)
            if (cols[c] == CP__M_US_PROXY && no_proxy(k))
                md_set(&t, r, 3 + c, "-");
            else
                md_total(&t, r, 3 + c, &k->m[cols[c]], 2, spread, cp__rpt_case_partial(k, cols[c]));
        if (k->nfailed == 0)
            snprintf(buf, sizeof(buf), "%zu ok", k->nruns);
        else
            snprintf(buf, sizeof(buf), "FAILED %zu of %zu", k->nfailed, k->nruns);
        md_set(&t, r, 7, buf);
        if (wire)
            md_wire(&t, r, 8, k, CP__M_US_WIRE, spread);
    }
    md_emit(&t, b);
}

static void fmt_ratio(char *buf, size_t len, double r) {
    if (isnan(r))
        snprintf(buf, len, "n/a");
    else
        snprintf(buf, len, "%.2fx", r);
}

/* Table 3: cluster / twemproxy per call type, with the published ratio beside ours. Returns
 * the number of rows (call types measured on both setups). */
static int table_ratio(const cp__rpt_summary *s, cp__sbuf *b) {
    static const cp__rpt_metric cols[] = {CP__M_SECONDS, CP__M_CPU_TOTAL, CP__M_OPS_PER_SEC,
                                          CP__M_P99};
    mdtable t;
    memset(&t, 0, sizeof(t));
    t.ncols = 7;
    md_set(&t, 0, 0, "call type");
    md_set(&t, 0, 1, "time taken");
    md_set(&t, 0, 2, "total CPU");
    md_set(&t, 0, 3, "ops/s");
    md_set(&t, 0, 4, "p99");
    md_set(&t, 0, 5, "published time");
    md_set(&t, 0, 6, "published CPU");
    for (int c = 1; c < 7; c++)
        t.right[c] = 1;
    int r = 0;
    for (size_t i = 0; i < s->ncases; i++) {
        const cp__rpt_case *tw = &s->cases[i];
        if (strcmp(tw->setup, "twemproxy") != 0)
            continue;
        const cp__rpt_case *cl = cp__rpt_find(s, "cluster", tw->call);
        if (cl == NULL)
            continue;
        r++;
        char buf[MD_CELL];
        md_set(&t, r, 0, tw->call);
        for (int c = 0; c < 4; c++) {
            fmt_ratio(buf, sizeof(buf), cp__rpt_case_ratio(cl, tw, cols[c]));
            md_set(&t, r, 1 + c, buf);
        }
        const cp__rpt_ref *rt = cp__rpt_ref_find("twemproxy", tw->call);
        const cp__rpt_ref *rc = cp__rpt_ref_find("cluster", tw->call);
        fmt_ratio(buf, sizeof(buf), rt && rc ? rc->seconds / rt->seconds : NAN);
        md_set(&t, r, 5, buf);
        fmt_ratio(buf, sizeof(buf), rt && rc ? rc->cpu_cycles / rt->cpu_cycles : NAN);
        md_set(&t, r, 6, buf);
    }
    if (r > 0)
        md_emit(&t, b);
    return r;
}

/* A setup's row beside the plain cluster's, per call type (compare's cluster-replicas and
 * cluster-cached): the call type, the setup, seven metrics (the cluster's row shows "-" for the
 * two only the setup has), and one of them against the cluster's. */
typedef struct beside_spec {
    const char *setup;
    const char *head[10];
    cp__rpt_metric cols[7];
    cp__rpt_metric only[2]; /* the setup's own metrics: "-" in the cluster's row */
    cp__rpt_metric vs;      /* the last column: the setup's over the cluster's */
    const char *intro;
} beside_spec;

/* Writes sp's table. Returns the number of rows (0: no runs of sp->setup, nothing written). */
static int table_beside(const cp__rpt_summary *s, int spread, cp__sbuf *b, const beside_spec *sp) {
    mdtable t;
    memset(&t, 0, sizeof(t));
    t.ncols = 10;
    for (int c = 0; c < 10; c++) {
        md_set(&t, 0, c, sp->head[c]);
        t.right[c] = c >= 2;
    }
    int r = 0;
    for (size_t i = 0; i < s->ncases && r + 2 < MD_ROWS; i++) {
        const cp__rpt_case *own = &s->cases[i];
        if (strcmp(own->setup, sp->setup) != 0)
            continue;
        const cp__rpt_case *rows[2] = {cp__rpt_find(s, "cluster", own->call), own};
        for (int x = 0; x < 2; x++) {
            const cp__rpt_case *k = rows[x];
            if (k == NULL)
                continue;
            r++;
            md_set(&t, r, 0, k->call);
            md_set(&t, r, 1, k->setup);
            for (int c = 0; c < 7; c++)
                if (x == 0 && (sp->cols[c] == sp->only[0] || sp->cols[c] == sp->only[1]))
                    md_set(&t, r, 2 + c, "-");
                else
                    md_stat(&t, r, 2 + c, &k->m[sp->cols[c]],
                            cp__rpt_metric_info(sp->cols[c])->decimals, spread);
            char buf[MD_CELL] = "-";
            if (x == 1 && rows[0] != NULL)
                fmt_ratio(buf, sizeof(buf), cp__rpt_case_ratio(own, rows[0], sp->vs));
            md_set(&t, r, 9, buf);
        }
    }
    if (r == 0)
        return 0;
    cp__sbuf_puts(b, sp->intro);
    md_emit(&t, b);
    return r;
}

/* compare --replica-reads: the cluster-replicas row (reads on the replicas) beside the plain
 * cluster's (reads on the masters), the Redis CPU split into the masters' and the replicas'
 * part, and the masters' CPU per op against the plain cluster's. */
static const beside_spec replicas_table = {
    CP__RPT_SETUP_REPLICAS,
    {"call type", "setup", "ops/s", "p50 (us)", "p99 (us)", "masters CPU-s", "replicas CPU-s",
     "masters us/op", "replicas us/op", "masters us/op vs cluster"},
    {CP__M_OPS_PER_SEC, CP__M_P50, CP__M_P99, CP__M_CPU_MASTERS, CP__M_CPU_REPLICAS,
     CP__M_US_MASTERS, CP__M_US_REPLICAS},
    {CP__M_CPU_REPLICAS, CP__M_US_REPLICAS},
    CP__M_US_MASTERS,
    "\nReads on replicas (" CP__RPT_SETUP_REPLICAS ": the cluster with a replica per master, every "
    "read sent to a replica) beside the cluster's reads on the masters; masters CPU = Redis CPU "
    "less the replicas' (below 1x: the masters work less per op):\n\n"};

/* compare --setups ...,cluster-cached: the cluster-cached row (its clients with the client-side
 * cache) beside the plain cluster's, with the cache's hit ratio and invalidations (writes of a
 * --ratio mix invalidate) and the CPU per op over every op, hits included, so that the two rows
 * compare like for like. */
static const beside_spec cached_table = {
    CP__RPT_SETUP_CACHED,
    {"call type", "setup", "ops/s", "p50 (us)", "p99 (us)", "hit ratio", "invalidations",
     "Redis us/op", "client us/op", "Redis us/op vs cluster"},
    {CP__M_OPS_PER_SEC, CP__M_P50, CP__M_P99, CP__M_CACHE_HIT_RATIO, CP__M_CACHE_INVALIDATIONS,
     CP__M_US_REDIS, CP__M_US_CLIENT},
    {CP__M_CACHE_HIT_RATIO, CP__M_CACHE_INVALIDATIONS},
    CP__M_US_REDIS,
    "\nClient-side cache (" CP__RPT_SETUP_CACHED ": the cluster, every client with a client-side "
    "cache, RESP3) beside the plain cluster; CPU per op counts every op, the cache's hits "
    "included (below 1x: the servers work less per op):\n\n"};

/* --command runs: per call type, a row per command with its ops/s and latency on each setup and
 * the cluster/twemproxy ratios. Returns the number of tables. */
static int table_commands(const cp__rpt_summary *s, int spread, cp__sbuf *b) {
    static const char *const setups[2] = {"twemproxy", "cluster"};
    int tables = 0;
    for (size_t i = 0; i < s->ncases; i++) {
        const cp__rpt_case *k = &s->cases[i];
        if (k->ncmds == 0)
            continue;
        int seen = 0; /* one table per call type: at its first case */
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(s->cases[j].call, k->call) == 0 && s->cases[j].ncmds > 0;
        if (seen)
            continue;
        const cp__rpt_case *by[2] = {cp__rpt_find(s, setups[0], k->call),
                                     cp__rpt_find(s, setups[1], k->call)};
        mdtable t;
        memset(&t, 0, sizeof(t));
        t.ncols = 12;
        static const char *const head[12] = {"#",
                                             "command",
                                             "check",
                                             "twemproxy ops/s",
                                             "cluster ops/s",
                                             "ops/s ratio",
                                             "twemproxy p50 (us)",
                                             "cluster p50 (us)",
                                             "twemproxy p99 (us)",
                                             "cluster p99 (us)",
                                             "p99 ratio",
                                             "runs"};
        for (int c = 0; c < 12; c++) {
            md_set(&t, 0, c, head[c]);
            t.right[c] = c == 0 || (c >= 3 && c <= 10);
        }
        size_t n = k->ncmds;
        for (int x = 0; x < 2; x++)
            if (by[x] != NULL && by[x]->ncmds > n)
                n = by[x]->ncmds;
        for (size_t c = 0; c < n && c + 1 < MD_ROWS; c++) {
            int r = (int)c + 1;
            const cp__rpt_cmd *m[2] = {NULL, NULL};
            for (int x = 0; x < 2; x++)
                m[x] = by[x] != NULL && c < by[x]->ncmds ? &by[x]->cmd[c] : NULL;
            const cp__rpt_cmd *any = m[0] != NULL ? m[0] : m[1];
            char buf[MD_CELL];
            snprintf(buf, sizeof(buf), "%zu", c + 1);
            md_set(&t, r, 0, buf);
            md_set(&t, r, 1, any != NULL ? any->text : "?");
            md_set(&t, r, 2, any != NULL && any->verified ? "verified" : "counted");
            static const cp__rpt_stat none = {NAN, NAN, NAN, 0};
            for (int x = 0; x < 2; x++) {
                md_stat(&t, r, 3 + x, m[x] ? &m[x]->ops_per_sec : &none, 0, spread);
                md_stat(&t, r, 6 + x, m[x] ? &m[x]->p50 : &none, -1, spread);
                md_stat(&t, r, 8 + x, m[x] ? &m[x]->p99 : &none, -1, spread);
            }
            fmt_ratio(buf, sizeof(buf),
                      m[0] && m[1] ? cp__rpt_ratio(&m[1]->ops_per_sec, &m[0]->ops_per_sec) : NAN);
            md_set(&t, r, 5, buf);
            fmt_ratio(buf, sizeof(buf), m[0] && m[1] ? cp__rpt_ratio(&m[1]->p99, &m[0]->p99) : NAN);
            md_set(&t, r, 10, buf);
            double failed = 0, mism = 0;
            for (int x = 0; x < 2; x++)
                if (m[x] != NULL)
                    failed += m[x]->failed, mism += m[x]->mismatches;
            if (failed == 0 && mism == 0)
                snprintf(buf, sizeof(buf), "ok");
            else
                snprintf(buf, sizeof(buf), "FAILED: %.0f failed, %.0f mismatched", failed, mism);
            md_set(&t, r, 11, buf);
        }
        cp__sbuf_printf(b,
                        "\nPer command, %s (each command's own ops/s and latency within its "
                        "runs; ratio: cluster / twemproxy):\n\n",
                        k->call);
        md_emit(&t, b);
        tables++;
    }
    return tables;
}

/* The noise test compares, per call type, the min-max spreads of the four headline metrics:
 * overlapping spreads mean the repeats cannot tell the two setups apart on that metric. */
void cp__rpt_noise(const cp__rpt_summary *s, cp__sbuf *b) {
    static const cp__rpt_metric ms[] = {CP__M_SECONDS, CP__M_CPU_TOTAL, CP__M_OPS_PER_SEC,
                                        CP__M_P99};
    char inside[1024] = "", outside[1024] = "";
    int nin = 0, nout = 0, pairs = 0, single = 0;
    for (size_t i = 0; i < s->ncases; i++) {
        const cp__rpt_case *tw = &s->cases[i];
        if (strcmp(tw->setup, "twemproxy") != 0)
            continue;
        const cp__rpt_case *cl = cp__rpt_find(s, "cluster", tw->call);
        if (cl == NULL)
            continue;
        pairs++;
        for (size_t j = 0; j < sizeof(ms) / sizeof(ms[0]); j++) {
            const cp__rpt_stat *a = &tw->m[ms[j]], *c = &cl->m[ms[j]];
            if (a->n == 0 || c->n == 0 || cp__rpt_case_partial(tw, ms[j]) ||
                cp__rpt_case_partial(cl, ms[j]))
                continue;
            if (a->n < 2 || c->n < 2) {
                single = 1;
                continue;
            }
            int ov = cp__rpt_overlap(a, c);
            char *dst = ov ? inside : outside;
            size_t used = strlen(dst);
            snprintf(dst + used, 1024 - used, "%s%s %s", (ov ? nin : nout) ? ", " : "", tw->call,
                     cp__rpt_metric_info(ms[j])->short_);
            ov ? nin++ : nout++;
        }
    }
    if (pairs == 0) {
        cp__sbuf_puts(b, "No call type was measured on both twemproxy and the cluster, so there "
                         "is no ratio to judge against the noise.");
        return;
    }
    if (single || nin + nout == 0) {
        cp__sbuf_puts(b, "Noise: each case ran once, so run-to-run noise is unknown; run with "
                         "`--repeat 3` (or more) to see which cluster/twemproxy differences "
                         "are larger than it.");
        return;
    }
    cp__sbuf_printf(b, "Noise (%d repeats per case, min-max spread): ", s->repeat);
    if (nin == 0)
        cp__sbuf_printf(b, "every cluster/twemproxy difference above is outside the noise "
                           "(the spreads do not overlap).");
    else if (nout == 0)
        cp__sbuf_printf(b,
                        "every cluster/twemproxy difference above is inside the noise "
                        "(the spreads overlap): %s.",
                        inside);
    else
        cp__sbuf_printf(b, "inside the noise (spreads overlap): %s; outside it: %s.", inside,
                        outside);
}

/* table.md: short headings so the printed text explains itself, then the three tables. */
char *cp__rpt_table_md(const cp__rpt_summary *s) {
    cp__sbuf b = CP__SBUF_INIT;
    int spread = s->repeat > 1;
    if (spread)
        cp__sbuf_printf(&b, "Each cell: median of %d runs [min-max].\n\n", s->repeat);
    table_main(s, spread, &b);
    cp__sbuf_puts(&b, "\nCPU microseconds per operation, by component:\n\n");
    table_per_op(s, spread, &b);
    cp__sbuf_puts(&b, "\ncluster / twemproxy (below 1x: the cluster takes less time or CPU; "
                      "ops/s above 1x: the cluster is faster):\n\n");
    if (table_ratio(s, &b) == 0)
        cp__sbuf_puts(&b, "(no call type ran on both setups)\n");
    cp__sbuf_puts(&b, "\n");
    cp__rpt_noise(s, &b);
    cp__sbuf_puts(&b, "\n");
    table_beside(s, spread, &b, &replicas_table);
    table_beside(s, spread, &b, &cached_table);
    table_commands(s, spread, &b);
    return cp__sbuf_take(&b);
}
