/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Sweep charts and report section (sweep.h): one row per point and setup, from the summary's
 * cases (medians over repeats) and the median run's server connections. Pure except the gnuplot
 * child that charts.c runs. Any thread.
 */
#include "report/sweep.h"

#include "clusterpipe/clusterpipe.h"
#include "report/io.h"
#include "report/network.h"
#include "util/dur.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS CP__RPT_MAX_CASES

/* One point of one setup, as drawn. */
typedef struct row {
    const char *setup;
    double x;     /* the swept value (rtt: in microseconds) */
    double value; /* the swept value as recorded (rtt: ns) */
    double us[4]; /* redis, proxy, client, total CPU-us per op; NaN: n/a */
    double ops, p50, p99;
    double conns;   /* client connections summed over the redis servers (probe excluded) */
    double mem_per; /* mean memory per connection over the redis servers that gained some */
} row;

const char *cp__rpt_sweep_param(const json_t *doc) {
    const json_t *sw = json_object_get(json_object_get(doc, "settings"), "sweep");
    return json_string_value(json_object_get(sw, "param"));
}

static int is_rtt_sweep(const json_t *doc) {
    const char *p = cp__rpt_sweep_param(doc);
    return p != NULL && strcmp(p, "rtt") == 0;
}

static double med(const cp__rpt_case *c, cp__rpt_metric m) {
    return c->m[m].n > 0 ? c->m[m].med : NAN;
}

/* The redis servers' side of the median run: connections and their cost. */
static void connections(const json_t *run, row *r) {
    r->conns = r->mem_per = NAN;
    const json_t *servers = json_object_get(run, "servers"), *sv;
    size_t i;
    double conns = 0, mem = 0;
    int nredis = 0, nmem = 0;
    json_array_foreach(servers, i, sv) {
        const json_t *cc = json_object_get(sv, "connected_clients");
        if (!json_is_number(cc))
            continue;                       /* a proxy */
        conns += json_number_value(cc) - 1; /* the probe's own connection */
        nredis++;
        const json_t *m = json_object_get(sv, "memory_per_connection");
        if (json_is_number(m))
            mem += json_number_value(m), nmem++;
    }
    if (nredis > 0)
        r->conns = conns;
    if (nmem > 0)
        r->mem_per = mem / nmem;
}

static int by_setup_then_x(const void *a, const void *b) {
    const row *x = a, *y = b;
    int c = strcmp(x->setup, y->setup);
    return c != 0 ? -c : (x->x > y->x) - (x->x < y->x); /* twemproxy before cluster */
}

/* The rows of the sweep, sorted; returns how many. An rtt sweep's x is in microseconds, the
 * unit its latencies are in. */
static size_t rows_of(const json_t *doc, const cp__rpt_summary *s, row *rows) {
    double xscale = is_rtt_sweep(doc) ? 1e-3 : 1;
    size_t n = 0;
    for (size_t i = 0; i < s->ncases && n < MAX_ROWS; i++) {
        const cp__rpt_case *c = &s->cases[i];
        const json_t *run = c->median_run;
        const json_t *v = json_object_get(json_object_get(run, "sweep"), "value");
        if (!json_is_number(v))
            continue;
        row *r = &rows[n++];
        r->setup = c->setup;
        r->value = json_number_value(v);
        r->x = r->value * xscale;
        r->us[0] = med(c, CP__M_US_REDIS);
        r->us[1] = med(c, CP__M_US_PROXY);
        r->us[2] = med(c, CP__M_US_CLIENT);
        r->us[3] = med(c, CP__M_US_TOTAL);
        r->ops = med(c, CP__M_OPS_PER_SEC);
        r->p50 = med(c, CP__M_P50);
        r->p99 = med(c, CP__M_P99);
        connections(run, r);
    }
    qsort(rows, n, sizeof(*rows), by_setup_then_x);
    return n;
}

static void put_num(cp__sbuf *b, double v) {
    if (isnan(v))
        cp__sbuf_puts(b, " ?");
    else
        cp__sbuf_printf(b, " %.6g", v);
}

/* One data block per setup: x, us redis proxy client total, ops, p99, conns, mem_per, p50. */
static void data_blocks(cp__sbuf *b, const row *rows, size_t n) {
    static const char *const setups[] = {"twemproxy", "cluster"};
    for (size_t k = 0; k < 2; k++) {
        cp__sbuf_printf(b, "$%s << EOD\n", setups[k]);
        for (size_t i = 0; i < n; i++) {
            if (strcmp(rows[i].setup, setups[k]) != 0)
                continue;
            put_num(b, rows[i].x);
            for (int c = 0; c < 4; c++)
                put_num(b, rows[i].us[c]);
            put_num(b, rows[i].ops);
            put_num(b, rows[i].p99);
            put_num(b, rows[i].conns);
            put_num(b, rows[i].mem_per);
            put_num(b, rows[i].p50);
            cp__sbuf_puts(b, "\n");
        }
        cp__sbuf_puts(b, "EOD\n");
    }
}

/* Log x when the values span a decade or more: pipeline 1..50 or clients 10..5000 would
 * otherwise crowd the small values into the left edge. */
static int log_x(const row *rows, size_t n) {
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; i < n; i++) {
        lo = rows[i].x < lo ? rows[i].x : lo;
        hi = rows[i].x > hi ? rows[i].x : hi;
    }
    return n > 0 && lo > 0 && hi / lo >= 10;
}

static void axes(cp__sbuf *b, const char *param, int logx) {
    cp__sbuf_printf(b,
                    "reset\n"
                    "set datafile missing '?'\n"
                    "set grid\n"
                    "set key top right\n"
                    "set xlabel '%s'\n"
                    "%s",
                    param, logx ? "set logscale x\n" : "");
}

static void chart_cpu(cp__sbuf *b, const char *param, int logx, int svg) {
    cp__rpt_chart_terminal(b, svg, "sweep_cpu", 900, 560);
    axes(b, param, logx);
    unsigned tw = cp__rpt_setup_color("twemproxy"), cl = cp__rpt_setup_color("cluster");
    cp__sbuf_printf(b,
                    "set title 'CPU microseconds per GET by component (lower is better)'\n"
                    "set ylabel 'CPU-us per op'\n"
                    "set yrange [0:*]\n"
                    "plot $twemproxy using 1:5 with linespoints lw 2 lc rgb '#%06x' pt 7 "
                    "title 'twemproxy total', \\\n"
                    "     '' using 1:2 with linespoints dt 2 lc rgb '#e41a1c' pt 7 "
                    "title 'twemproxy: redis', \\\n"
                    "     '' using 1:3 with linespoints dt 2 lc rgb '#ff7f00' pt 7 "
                    "title 'twemproxy: nutcracker', \\\n"
                    "     '' using 1:4 with linespoints dt 2 lc rgb '#377eb8' pt 7 "
                    "title 'twemproxy: client', \\\n"
                    "     $cluster using 1:5 with linespoints lw 2 lc rgb '#%06x' pt 5 "
                    "title 'cluster total', \\\n"
                    "     '' using 1:2 with linespoints dt 3 lc rgb '#e41a1c' pt 5 "
                    "title 'cluster: redis', \\\n"
                    "     '' using 1:4 with linespoints dt 3 lc rgb '#377eb8' pt 5 "
                    "title 'cluster: client'\n"
                    "unset output\n",
                    tw, cl);
}

/* Two panels against the swept value, one line per setup: columns ya and yb of the blocks. */
static void chart_pair(cp__sbuf *b, const char *name, const char *param, int logx, int svg,
                       const char *title, const char *ta, int ya, const char *la, const char *tb,
                       int yb, const char *lb, int logy_b) {
    cp__rpt_chart_terminal(b, svg, name, 1000, 520);
    axes(b, param, logx);
    unsigned tw = cp__rpt_setup_color("twemproxy"), cl = cp__rpt_setup_color("cluster");
    cp__sbuf_printf(b, "set multiplot layout 1,2 title '%s'\n", title);
    cp__sbuf_printf(b,
                    "set title '%s'\nset ylabel '%s'\nset yrange [0:*]\n"
                    "plot $twemproxy using 1:%d with linespoints lw 2 lc rgb '#%06x' pt 7 "
                    "title 'twemproxy', \\\n"
                    "     $cluster using 1:%d with linespoints lw 2 lc rgb '#%06x' pt 5 "
                    "title 'cluster'\n",
                    ta, la, ya, tw, ya, cl);
    cp__sbuf_printf(b,
                    "set title '%s'\nset ylabel '%s'\n%s"
                    "plot $twemproxy using 1:%d with linespoints lw 2 lc rgb '#%06x' pt 7 "
                    "title 'twemproxy', \\\n"
                    "     $cluster using 1:%d with linespoints lw 2 lc rgb '#%06x' pt 5 "
                    "title 'cluster'\n"
                    "unset multiplot\nunset output\n",
                    tb, lb, logy_b ? "set logscale y\nset yrange [*:*]\n" : "set yrange [0:*]\n",
                    yb, tw, yb, cl);
}

static int is_clients_sweep(const json_t *doc) {
    const char *p = cp__rpt_sweep_param(doc);
    return p != NULL && strcmp(p, "clients") == 0;
}

char *cp__rpt_sweep_script(const json_t *doc, const cp__rpt_summary *s) {
    const char *param = cp__rpt_sweep_param(doc);
    if (param == NULL)
        return NULL;
    int rtt = is_rtt_sweep(doc);
    if (rtt)
        param = "round trip of each link between hosts (us)";
    row rows[MAX_ROWS];
    size_t n = rows_of(doc, s, rows);
    int logx = log_x(rows, n);
    cp__sbuf b = CP__SBUF_INIT;
    cp__sbuf_puts(&b, "# clusterpipe compare --sweep: redraw with `gnuplot sweep.gp`\n"
                      "if (!exists('suffix')) suffix = ''\n");
    data_blocks(&b, rows, n);
    for (int svg = 0; svg < 2; svg++) {
        chart_cpu(&b, param, logx, svg);
        chart_pair(&b, "sweep_perf", param, logx, svg, "Throughput and p99 latency",
                   "throughput (higher is better)", 6, "ops/s", "p99 latency (lower is better)", 7,
                   "us", 1);
        if (is_clients_sweep(doc))
            chart_pair(&b, "sweep_connections", param, logx, svg,
                       "What the redis servers hold, all clients connected",
                       "client connections, all redis servers together", 8, "connections",
                       "memory per connection (used_memory grown / connections added)", 9, "bytes",
                       0);
        if (rtt)
            chart_pair(&b, "sweep_latency", param, logx, svg, "Latency against the round trip",
                       "p50 latency (lower is better)", 10, "us", "p99 latency (lower is better)",
                       7, "us", 0);
    }
    return cp__sbuf_take(&b);
}

int cp__rpt_sweep_charts(const char *dir, const json_t *doc, const cp__rpt_summary *s,
                         const cp__rpt_chart_opts *o, char *err, size_t errlen) {
    if (cp__rpt_sweep_param(doc) == NULL)
        return 0;
    char *script = cp__rpt_sweep_script(doc, s);
    if (script == NULL) {
        snprintf(err, errlen, "out of memory writing the sweep chart script");
        return CP_ENOMEM;
    }
    static const char *const plain[] = {"sweep_cpu", "sweep_perf", NULL};
    static const char *const clients[] = {"sweep_cpu", "sweep_perf", "sweep_connections", NULL};
    static const char *const rtt[] = {"sweep_cpu", "sweep_perf", "sweep_latency", NULL};
    const char *const *names = is_clients_sweep(doc) ? clients : is_rtt_sweep(doc) ? rtt : plain;
    int rc = cp__rpt_gnuplot(dir, "sweep.gp", script, names, o, err, errlen);
    free(script);
    return rc;
}

static void cell(cp__sbuf *b, double v, int decimals) {
    if (isnan(v))
        cp__sbuf_puts(b, " n/a |");
    else
        cp__sbuf_printf(b, " %.*f |", decimals, v);
}

void cp__rpt_sweep_md(cp__sbuf *b, const json_t *doc, const cp__rpt_summary *s,
                      const char *chart_err) {
    const char *param = cp__rpt_sweep_param(doc);
    if (param == NULL)
        return;
    row rows[MAX_ROWS];
    size_t n = rows_of(doc, s, rows);
    int clients = is_clients_sweep(doc), rtt = is_rtt_sweep(doc);
    cp__sbuf_printf(b, "## Sweep: %s\n\n", param);
    cp__sbuf_printf(b,
                    "Every point ran on both architectures, one setup at a time, with every other "
                    "setting as above; each value is the median over the point's repeats.\n\n");
    cp__rpt_hops hops;
    const char *placement = rtt && cp__rpt_hops_of(doc, "twemproxy", &hops) == 0 && hops.from_links
                                ? hops.placement
                                : NULL;
    if (placement != NULL)
        cp__sbuf_printf(b,
                        "twemproxy's proxies were placed `%s` (`--proxy-placement`); the hops "
                        "per request of each setup are in \"The network\" below.\n\n",
                        placement);
    if (chart_err != NULL)
        cp__sbuf_printf(b, "Sweep charts not drawn: %s\n\n", chart_err);
    else
        cp__sbuf_printf(b,
                        "![CPU us per op by component against %s](sweep_cpu.png)\n\n"
                        "![Throughput and p99 against %s](sweep_perf.png)\n\n%s%s",
                        param, param,
                        clients ? "![Connections the redis servers hold and their cost]"
                                  "(sweep_connections.png)\n\n"
                                : "",
                        rtt ? "![p50 and p99 against the round trip](sweep_latency.png)\n\n" : "");
    cp__sbuf_printf(
        b,
        "| %s | setup | ops/s | p50 (us) | p99 (us) | CPU-us/op redis | proxy | client | "
        "total |%s\n| --: | :-- | --: | --: | --: | --: | --: | --: | --: |%s\n",
        param, clients ? " redis-side connections | memory per connection (B) |" : "",
        clients ? " --: | --: |" : "");
    for (size_t i = 0; i < n; i++) {
        const row *r = &rows[i];
        char x[32];
        if (rtt)
            cp__dur_format((uint64_t)r->value, x, sizeof(x));
        else
            snprintf(x, sizeof(x), "%.0f", r->x);
        cp__sbuf_printf(b, "| %s | %s |", x, r->setup);
        cell(b, r->ops, 0);
        cell(b, r->p50, 0);
        cell(b, r->p99, 0);
        for (int c = 0; c < 4; c++)
            cell(b, r->us[c], 2);
        if (clients) {
            cell(b, r->conns, 0);
            cell(b, r->mem_per, 0);
        }
        cp__sbuf_puts(b, "\n");
    }
    const json_t *fd = json_object_get(json_object_get(doc, "settings"), "fd_limit");
    if (clients && json_is_object(fd))
        cp__sbuf_printf(b,
                        "\nFile descriptors: the largest point needed about %.0f; the soft limit "
                        "was %.0f and is %.0f, the hard limit %.0f.\n",
                        json_number_value(json_object_get(fd, "needed")),
                        json_number_value(json_object_get(fd, "soft_before")),
                        json_number_value(json_object_get(fd, "soft")),
                        json_number_value(json_object_get(fd, "hard")));
    if (clients)
        cp__sbuf_puts(b, "\nredis-side connections: the client connections all redis servers "
                         "hold together once every client has connected (read at the start gate, "
                         "this probe's own connection left out). Behind twemproxy they stay at "
                         "proxies x server_connections per server whatever the clients; a "
                         "cluster master holds one per client.\n");
    cp__sbuf_puts(b, "\n");
}
