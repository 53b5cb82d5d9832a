/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Charts (report/charts.h): writes a gnuplot script with the data inline and runs gnuplot as a
 * child process tracked by PID (PR_SET_PDEATHSIG, timeout, SIGKILL by PID and reaped on timeout
 * or cancel). The script is generated twice per chart, once per terminal, instead of looping in
 * gnuplot, so it stays readable and works with any gnuplot 5. The calling thread owns the child
 * for its whole life; nothing outlives the call. Never prints.
 */
#include "report/charts.h"

#include "clusterpipe/clusterpipe.h"
#include "report/io.h"
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *const cp__rpt_chart_names[] = {"cpu", "throughput_p99", "latency", NULL};

#define COLOR_TWEMPROXY 0xd95f02
#define COLOR_CLUSTER 0x1b9e77
#define COLOR_OTHER 0x7570b3

unsigned cp__rpt_setup_color(const char *setup) {
    if (strcmp(setup, "twemproxy") == 0)
        return COLOR_TWEMPROXY;
    if (strcmp(setup, "cluster") == 0)
        return COLOR_CLUSTER;
    return COLOR_OTHER;
}

/* Data-block strings are double-quoted; a quote inside a name would end them early. */
static void put_quoted(cp__sbuf *b, const char *s) {
    cp__sbuf_puts(b, "\"");
    for (; *s; s++)
        cp__sbuf_printf(b, "%c", *s == '"' ? '\'' : *s);
    cp__sbuf_puts(b, "\"");
}

/* "?" is the script's missing-data marker: an n/a value is never drawn as zero. */
static void put_num(cp__sbuf *b, double v) {
    if (isnan(v))
        cp__sbuf_puts(b, " ?");
    else
        cp__sbuf_printf(b, " %.6g", v);
}

void cp__rpt_chart_terminal(cp__sbuf *b, int svg, const char *name, int w, int h) {
    if (svg)
        cp__sbuf_printf(b,
                        "set terminal svg size %d,%d dynamic background rgb 'white' "
                        "font 'sans,11' noenhanced\n",
                        w, h);
    else
        cp__sbuf_printf(b,
                        "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
                        "    set terminal pngcairo size %d,%d background rgb 'white' "
                        "font 'sans,10' noenhanced\n"
                        "} else {\n"
                        "    set terminal png size %d,%d background rgb 'white' noenhanced\n"
                        "}\n",
                        w, h, w, h);
    cp__sbuf_printf(b, "set output '%s.%s'.suffix\n", name, svg ? "svg" : "png");
}

static const char *xtic_label = "xtic(strcol(1).\"\\n\".strcol(2))";

/* CPU-seconds stacked by component: where each setup spends its CPU, with the total on top. The
 * emulated wire's CPU (a run with --rtt) stacks above it, hatched: a cost of this machine's
 * emulation, not of the setup, so never inside the total the label gives. */
static void chart_cpu(cp__sbuf *b, const cp__rpt_summary *s, int svg) {
    int proxy_na = 0, wire = 0;
    for (size_t i = 0; i < s->ncases; i++) {
        if (strcmp(s->cases[i].setup, "twemproxy") == 0 && s->cases[i].m[CP__M_CPU_PROXY].n == 0)
            proxy_na = 1;
        wire |= s->cases[i].m[CP__M_CPU_WIRE].n > 0;
    }
    cp__rpt_chart_terminal(b, svg, "cpu", 900, 520);
    cp__sbuf_printf(b,
                    "reset\n"
                    "set datafile missing '?'\n"
                    "set title 'CPU-seconds by component per case (lower is better)'\n"
                    "set ylabel 'CPU-seconds (user + system)'\n"
                    "set style data histograms\n"
                    "set style histogram rowstacked\n"
                    "set style fill solid 0.85 border -1\n"
                    "set boxwidth 0.6\n"
                    "set yrange [0:*]\n"
                    "set offsets 0, 0, graph 0.12, 0\n"
                    "set grid ytics\n"
                    "set bmargin 4\n"
                    "set key top right\n"
                    "plot $cpu using 3:%s title 'redis-server' lc rgb '#e41a1c', \\\n"
                    "     '' using 4 title '%s' lc rgb '#ff7f00', \\\n"
                    "     '' using 5 title 'client (clusterpipe)' lc rgb '#377eb8', \\\n"
                    "%s"
                    "     '' using 0:($6 + $7):(sprintf('%%.2f', $6)) with labels offset 0,0.8 "
                    "notitle\n"
                    "unset output\n",
                    xtic_label, proxy_na ? "twemproxy (n/a: not measurable)" : "twemproxy",
                    wire ? "     '' using 7 title 'wire (emulated network; not in the total)' "
                           "lc rgb '#999999' fill pattern 4, \\\n"
                         : "");
}

/* Throughput and p99 side by side, coloured by setup, with min-max bars over the repeats. */
static void chart_perf(cp__sbuf *b, const cp__rpt_summary *s, int svg) {
    cp__rpt_chart_terminal(b, svg, "throughput_p99", 1000, 520);
    cp__sbuf_printf(b,
                    "reset\n"
                    "set datafile missing '?'\n"
                    "set multiplot layout 1,2 title 'Throughput and p99 latency per case "
                    "(bars: min-max over repeats)'\n"
                    "set style fill solid 0.85 border -1\n"
                    "set boxwidth 0.6\n"
                    "set xrange [-0.6:%g]\n"
                    "set yrange [0:*]\n"
                    "set grid ytics\n"
                    "set bmargin 4\n"
                    "set title 'throughput, ops/s (higher is better)'\n"
                    "plot $perf using 0:3:9:%s with boxes lc rgb variable notitle, \\\n"
                    "     '' using 0:3:4:5 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle\n"
                    "set title 'p99 latency, us (lower is better)'\n"
                    "plot $perf using 0:6:9:%s with boxes lc rgb variable notitle, \\\n"
                    "     '' using 0:6:7:8 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle\n"
                    "unset multiplot\n"
                    "unset output\n",
                    (double)s->ncases - 0.4, xtic_label, xtic_label);
}

/* x position of a percentile on the "nines" axis: 90 -> 1, 99 -> 2, 99.9 -> 3. */
static double nines(double p) {
    return -log10(1.0 - p / 100.0);
}

/* Writes $latN blocks for every case with a curve; returns how many, and the largest x. */
static int latency_blocks(cp__sbuf *b, const cp__rpt_summary *s, int *has, double *xmax) {
    int ncurves = 0;
    *xmax = 1;
    for (size_t i = 0; i < s->ncases; i++) {
        const json_t *curve = json_object_get(s->cases[i].median_run, "latency_curve");
        has[i] = 0;
        if (!json_is_array(curve) || json_array_size(curve) == 0)
            continue;
        cp__sbuf_printf(b, "$lat%zu << EOD\n", i);
        size_t j;
        const json_t *pt;
        int pts = 0;
        json_array_foreach(curve, j, pt) {
            double p = json_number_value(json_object_get(pt, "percentile"));
            double v = json_number_value(json_object_get(pt, "value_us"));
            if (!(p >= 0 && p < 100) || !(v > 0))
                continue; /* p = 100 (the max) has no place on a nines axis */
            double x = nines(p);
            *xmax = x > *xmax ? x : *xmax;
            cp__sbuf_printf(b, "%.6g %.6g\n", x, v);
            pts++;
        }
        cp__sbuf_puts(b, "EOD\n");
        if (pts > 0) {
            has[i] = 1;
            ncurves++;
        }
    }
    return ncurves;
}

/* Latency percentile curves on log-log "nines" axes, so the tail (p99, p99.9) is as readable
 * as the median. Setup = colour, call type = dash pattern. */
static void chart_latency(cp__sbuf *b, const cp__rpt_summary *s, int svg, const int *has,
                          int ncurves, double xmax) {
    cp__rpt_chart_terminal(b, svg, "latency", 900, 520);
    cp__sbuf_printf(b,
                    "reset\n"
                    "set title 'Latency by percentile (median run of each case)'\n"
                    "set xlabel 'percentile'\n"
                    "set ylabel 'latency, us (log scale)'\n"
                    "set logscale y\n"
                    "set grid xtics ytics mytics\n"
                    "set key top left\n"
                    "set xrange [0:%g]\n"
                    "set xtics ('0' 0, '50' %g, '90' 1, '99' 2, '99.9' 3, '99.99' 4, "
                    "'99.999' 5, '99.9999' 6)\n",
                    ceil(xmax - 0.05), nines(50));
    if (ncurves == 0) {
        cp__sbuf_puts(b, "set yrange [1:10]\n"
                         "set label 'no latency data in these results' at graph 0.5,0.5 center\n"
                         "plot 1/0 notitle\n"
                         "unset output\n");
        return;
    }
    cp__sbuf_puts(b, "plot ");
    int first = 1;
    for (size_t i = 0; i < s->ncases; i++) {
        if (!has[i])
            continue;
        const cp__rpt_case *c = &s->cases[i];
        cp__sbuf_printf(b, "%s$lat%zu using 1:2 with lines lw 2 lc rgb '#%06x' dt %d title ",
                        first ? "" : ", \\\n     ", i, cp__rpt_setup_color(c->setup),
                        strstr(c->call, "pipelined") ? 2 : 1);
        cp__sbuf_puts(b, "'");
        for (const char *p = c->name; *p; p++)
            cp__sbuf_printf(b, "%c", *p == '\'' ? '"' : *p);
        cp__sbuf_puts(b, "'");
        first = 0;
    }
    cp__sbuf_puts(b, "\nunset output\n");
}

/* One script: header, data blocks, then each chart for PNG and for SVG. */
char *cp__rpt_chart_script(const cp__rpt_summary *s) {
    cp__sbuf b = CP__SBUF_INIT;
    int has[CP__RPT_MAX_CASES];
    cp__sbuf_puts(&b, "# Charts of a `clusterpipe compare` run, written by clusterpipe.\n"
                      "# Redraw by hand: cd to this directory, then `gnuplot charts.gp`.\n"
                      "if (!exists('suffix')) suffix = ''\n\n");
    cp__sbuf_puts(&b, "# setup, call type, redis / twemproxy / client / total / wire CPU-seconds\n"
                      "$cpu << EOD\n");
    for (size_t i = 0; i < s->ncases; i++) {
        const cp__rpt_case *c = &s->cases[i];
        put_quoted(&b, c->setup);
        cp__sbuf_puts(&b, " ");
        put_quoted(&b, c->call);
        /* stacked bars: a missing component adds nothing to the stack (its n/a is in the key
         * and the table), the total is what was measured */
        static const cp__rpt_metric comp[] = {CP__M_CPU_REDIS, CP__M_CPU_PROXY, CP__M_CPU_CLIENT};
        double total = 0;
        for (size_t k = 0; k < 3; k++) {
            double v = c->m[comp[k]].n ? c->m[comp[k]].med : 0;
            put_num(&b, v);
            total += v;
        }
        put_num(&b, total);
        put_num(&b, c->m[CP__M_CPU_WIRE].n ? c->m[CP__M_CPU_WIRE].med : 0); /* not in total */
        cp__sbuf_puts(&b, "\n");
    }
    cp__sbuf_puts(&b, "EOD\n\n# setup, call type, ops/s med min max, p99 us med min max, colour\n"
                      "$perf << EOD\n");
    for (size_t i = 0; i < s->ncases; i++) {
        const cp__rpt_case *c = &s->cases[i];
        put_quoted(&b, c->setup);
        cp__sbuf_puts(&b, " ");
        put_quoted(&b, c->call);
        static const cp__rpt_metric pm[] = {CP__M_OPS_PER_SEC, CP__M_P99};
        for (size_t k = 0; k < 2; k++) {
            const cp__rpt_stat *st = &c->m[pm[k]];
            put_num(&b, st->n ? st->med : 0); /* the bar: 0 height when n/a */
            put_num(&b, st->n ? st->min : NAN);
            put_num(&b, st->n ? st->max : NAN);
        }
        cp__sbuf_printf(&b, " %u\n", cp__rpt_setup_color(c->setup));
    }
    cp__sbuf_puts(&b, "EOD\n\n");
    double xmax;
    int ncurves = latency_blocks(&b, s, has, &xmax);
    for (int svg = 0; svg < 2; svg++) {
        cp__sbuf_puts(&b, "\n");
        chart_cpu(&b, s, svg);
        cp__sbuf_puts(&b, "\n");
        chart_perf(&b, s, svg);
        cp__sbuf_puts(&b, "\n");
        chart_latency(&b, s, svg, has, ncurves, xmax);
    }
    return cp__sbuf_take(&b);
}

/* ---- running gnuplot ------------------------------------------------------------------------ */

static void remove_outputs(const char *dir, const char *const *names, const char *suffix) {
    char path[4096];
    for (size_t i = 0; names[i]; i++)
        for (int svg = 0; svg < 2; svg++) {
            snprintf(path, sizeof(path), "%s/%s.%s%s", dir, names[i], svg ? "svg" : "png", suffix);
            unlink(path);
        }
}

/* Child side: between fork and exec only async-signal-safe calls. */
static void child_exec(const char *dir, const char *bin, const char *script, int errfd,
                       pid_t parent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127); /* the parent died before prctl: nobody to report to */
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
        dup2(devnull, STDIN_FILENO);
        dup2(devnull, STDOUT_FILENO);
    }
    dup2(errfd, STDERR_FILENO);
    if (chdir(dir) != 0) {
        static const char msg[] = "cannot enter the output directory\n";
        (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
        _exit(126);
    }
    char *const argv[] = {(char *)"gnuplot", (char *)"-e", (char *)"suffix='.tmp'", (char *)script,
                          NULL};
    execvp(bin, argv);
    static const char msg[] = "cannot run gnuplot (is the gnuplot-nox package installed?)\n";
    (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
    _exit(127);
}

/* Runs gnuplot on DIR/charts.gp, collecting its stderr (the tail is kept for the error) until
 * it exits, the deadline passes or *cancel is set; the last two kill it by PID. Always reaps. */
static int run_gnuplot(const char *dir, const char *script, const cp__rpt_chart_opts *o, char *err,
                       size_t errlen) {
    const char *bin = o && o->gnuplot ? o->gnuplot : "gnuplot";
    int timeout = o && o->timeout_ms > 0 ? o->timeout_ms : 60000;
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return CP_EIO;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        return CP_EIO;
    }
    if (pid == 0)
        child_exec(dir, bin, script, pfd[1], parent);
    close(pfd[1]);

    char tail[2048] = "";
    size_t tlen = 0;
    int64_t deadline = cp__now_ms() + timeout;
    const char *stopped = NULL;
    for (;;) {
        if (o && o->cancel && *o->cancel) {
            stopped = "interrupted";
            break;
        }
        int64_t left = deadline - cp__now_ms();
        if (left <= 0) {
            stopped = "timed out";
            break;
        }
        struct pollfd p = {pfd[0], POLLIN, 0};
        int pr = poll(&p, 1, left < 100 ? (int)left : 100);
        if (pr < 0 && errno != EINTR)
            break;
        if (pr <= 0)
            continue;
        char buf[512];
        ssize_t n = read(pfd[0], buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* EOF: gnuplot exited (or closed stderr) */
        for (ssize_t k = 0; k < n; k++) {
            if (tlen + 1 >= sizeof(tail)) { /* keep the last half */
                memmove(tail, tail + tlen / 2, tlen - tlen / 2);
                tlen -= tlen / 2;
            }
            tail[tlen++] = buf[k];
        }
        tail[tlen] = '\0';
    }
    close(pfd[0]);
    if (stopped)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    while (tlen > 0 && (tail[tlen - 1] == '\n' || tail[tlen - 1] == ' '))
        tail[--tlen] = '\0';
    if (stopped) {
        snprintf(err, errlen, "gnuplot (pid %ld) %s and was killed%s%s", (long)pid, stopped,
                 tlen ? ": " : "", tail);
        return CP_EIO;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(err, errlen, "gnuplot failed (%s %d)%s%s",
                 WIFEXITED(status) ? "exit status" : "signal",
                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), tlen ? ": " : "",
                 tlen ? tail : "");
        return CP_EIO;
    }
    return 0;
}

int cp__rpt_charts(const char *dir, const cp__rpt_summary *s, const cp__rpt_chart_opts *o,
                   char *err, size_t errlen) {
    char *script = cp__rpt_chart_script(s);
    if (script == NULL) {
        snprintf(err, errlen, "out of memory writing the chart script");
        return CP_ENOMEM;
    }
    int rc = cp__rpt_gnuplot(dir, "charts.gp", script, cp__rpt_chart_names, o, err, errlen);
    free(script);
    return rc;
}

int cp__rpt_gnuplot(const char *dir, const char *script_name, const char *script,
                    const char *const *names, const cp__rpt_chart_opts *o, char *err,
                    size_t errlen) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, script_name);
    int rc = (cp__write_text(path, script, strlen(script), err, errlen) ? CP_EIO : 0);
    if (rc != 0)
        return rc;
    rc = run_gnuplot(dir, script_name, o, err, errlen);
    if (rc != 0) {
        remove_outputs(dir, names, ".tmp");
        return rc;
    }
    /* every file must exist and be non-empty before any is renamed into place */
    char from[4096], to[4096];
    for (size_t i = 0; names[i]; i++)
        for (int svg = 0; svg < 2; svg++) {
            struct stat st;
            snprintf(from, sizeof(from), "%s/%s.%s.tmp", dir, names[i], svg ? "svg" : "png");
            if (stat(from, &st) != 0 || st.st_size == 0) {
                snprintf(err, errlen, "gnuplot did not write %s", from);
                remove_outputs(dir, names, ".tmp");
                return CP_EIO;
            }
        }
    for (size_t i = 0; names[i]; i++)
        for (int svg = 0; svg < 2; svg++) {
            const char *ext = svg ? "svg" : "png";
            snprintf(from, sizeof(from), "%s/%s.%s.tmp", dir, names[i], ext);
            snprintf(to, sizeof(to), "%s/%s.%s", dir, names[i], ext);
            if (rename(from, to) != 0) {
                snprintf(err, errlen, "cannot rename %s: %s", from, strerror(errno));
                remove_outputs(dir, names, ".tmp");
                return CP_EIO;
            }
        }
    return 0;
}
