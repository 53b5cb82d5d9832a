/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe report DIR`, and the rendering step `compare` shares with it: load
 * DIR/results.json ("clusterpipe.compare/1"), have src/report/ write table.md, the charts and
 * report.md into DIR (each atomically; gnuplot runs as a child tracked by PID), then print the
 * table and the report's path on stdout; a "clusterpipe.scenario/1" directory gets its timeline
 * chart and report.md redrawn by src/scenario/. Warnings and errors go to stderr. The results
 * document is owned by the caller of cp_cli_render, or loaded and freed here. Single-threaded; the
 * only global is the signal flag that lets Ctrl-C stop gnuplot.
 */
#include "cli/cli.h"

#include "report/io.h"
#include "report/render.h"
#include "report/sweep.h"
#include "scenario/scenario.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define ERRLEN 4096

/* Shared by compare and report so both print the same thing: the table on stdout, then the
 * report's path; a chart failure is a warning on stderr and a -1 for the caller to weigh. */
int cp_cli_render(const char *dir, const json_t *doc, int quiet, int wrote_results,
                  const volatile sig_atomic_t *cancel) {
    cp__rpt_chart_opts copts = {NULL, 0, cancel};
    cp__rpt_render_out out;
    char err[ERRLEN] = "";
    int rc = cp__rpt_render(dir, doc, &copts, &out, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "clusterpipe: %s\n", err);
        cp__rpt_render_out_free(&out);
        return -1;
    }
    if (!out.charts_ok)
        fprintf(stderr, "clusterpipe: charts not drawn: %s\n", out.chart_err);
    printf("%s\n", out.table_md);
    printf("report: %s/report.md\n", dir);
    if (!quiet)
        fprintf(stderr, "clusterpipe: wrote %s/{%stable.md,report.md%s%s}\n", dir,
                wrote_results ? "results.json," : "",
                out.charts_ok ? ",cpu.png,throughput_p99.png,latency.png" : "",
                !out.charts_ok                     ? ""
                : cp__rpt_sweep_param(doc) != NULL ? ",sweep_*.png,*.svg"
                                                   : ",*.svg");
    fflush(stdout);
    int ok = out.charts_ok;
    cp__rpt_render_out_free(&out);
    return ok ? 0 : -1;
}

static void report_help(FILE *out) {
    fprintf(out, "usage: clusterpipe report DIR\n"
                 "\n"
                 "Re-renders DIR/table.md, the charts (DIR/*.png, DIR/*.svg, via gnuplot) and\n"
                 "DIR/report.md from DIR/results.json, as written by 'clusterpipe compare', and\n"
                 "prints the table: after an upgrade changed the report, or to draw the charts\n"
                 "on a machine that has gnuplot. For a directory written by 'clusterpipe\n"
                 "scenario', redraws its timeline chart and report.md.\n"
                 "Exit status: 0 rendered, 1 DIR/results.json unreadable or a file (or chart)\n"
                 "could not be written, 2 bad usage.\n");
}

/* A directory written by `clusterpipe scenario`: its timeline chart and report.md are redrawn
 * (src/scenario/). Returns an exit code, or -1 when path is not a scenario's results.json (then
 * the compare path reports what is wrong with it). */
static int render_scenario(const char *dir, const char *path) {
    json_t *doc = json_load_file(path, 0, NULL);
    const char *schema = json_string_value(json_object_get(doc, "schema"));
    if (schema == NULL || strcmp(schema, CP__SCENARIO_SCHEMA) != 0) {
        json_decref(doc);
        return -1;
    }
    cp__rpt_chart_opts co = {NULL, 0, &cp_cli_interrupted};
    int charts_ok = 0;
    char chart_err[1024], err[ERRLEN];
    int rc =
        cp__scn_render(dir, doc, &co, &charts_ok, chart_err, sizeof(chart_err), err, sizeof(err));
    json_decref(doc);
    if (rc != 0) {
        fprintf(stderr, "clusterpipe report: %s\n", err);
        return CP_EXIT_FAIL;
    }
    if (!charts_ok)
        fprintf(stderr, "clusterpipe report: chart not drawn: %s\n", chart_err);
    printf("report: %s/report.md\n", dir);
    return charts_ok ? CP_EXIT_OK : CP_EXIT_FAIL;
}

int cp_cli_report(int argc, char **argv) {
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            report_help(stdout);
            return CP_EXIT_OK;
        }
        if (argv[i][0] == '-')
            return cp_cli_usage_error("report", "unknown option '%s'", argv[i]);
        if (dir != NULL)
            return cp_cli_usage_error("report", "one directory only ('%s' and '%s')", dir, argv[i]);
        dir = argv[i];
    }
    if (dir == NULL)
        return cp_cli_usage_error("report", "which directory? (one written by compare)");
    /* Ctrl-C while gnuplot draws: it is killed by PID and no partial chart is left */
    cp_cli_install_signals();
    char path[4200], err[ERRLEN] = "";
    snprintf(path, sizeof(path), "%s/results.json", dir);
    int rc = render_scenario(dir, path);
    if (rc >= 0)
        return rc;
    json_t *doc = NULL;
    if (cp__rpt_load(path, &doc, err, sizeof(err)) != 0) {
        fprintf(stderr, "clusterpipe report: %s\n", err);
        return CP_EXIT_FAIL;
    }
    rc = cp_cli_render(dir, doc, 0, 0, &cp_cli_interrupted);
    json_decref(doc);
    return rc == 0 ? CP_EXIT_OK : CP_EXIT_FAIL;
}
