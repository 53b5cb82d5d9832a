/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Output of a bench run (private to src/bench/, used by src/cli/ and src/scenario/): the
 * "clusterpipe.bench/1" JSON object, the CSV file and the .hgrm latency distribution, all from a
 * cp__bench_result.
 *
 * Ownership: the inputs are only read; cp__bench_json returns a new jansson reference the
 * caller json_decref()s. Any thread (no shared state); the writers block on their file.
 */
#ifndef CLUSTERPIPE_REPORT_H
#define CLUSTERPIPE_REPORT_H

#include <stddef.h>

#include <jansson.h>

#include "bench/config.h"

#define CP__BENCH_SCHEMA "clusterpipe.bench/1"

/* The "clusterpipe.bench/1" object (docs/architecture.md): schema, topology, workload, ops,
 * seconds, ops_per_sec, latency_us, cpu_seconds, cpu_us_per_op, redirects, retries, failed_ops,
 * unknown_ops, verify, misses, timeline, latency_curve, versions, machine, command_line; a
 * --command run also its commands (one object per template). Returns a new reference (caller
 * json_decref()s) or NULL when out of memory. */
json_t *cp__bench_json(const cp__bench_target *t, const cp__bench_config *cfg,
                       const cp__bench_result *r);

/* Sets o's "commands" (the --command templates as given) and "command_ratio" (their weights,
 * "3,1") from set: the workload of a bench object, the settings of compare and scenario. */
void cp__bench_json_templates(json_t *o, const cp__cmdset *set);

/* Writes one header line and one row of the main numbers (and, after an empty line, the
 * timeline) as CSV to path atomically. Returns 0 or CP_EIO with err set. */
int cp__bench_write_csv(const char *path, const cp__bench_target *t, const cp__bench_config *cfg,
                        const cp__bench_result *r, char *err, size_t errlen);

/* Writes the run's latency distribution (every request, microseconds) to path atomically in
 * HdrHistogram's ".hgrm" percentile text (cp__hist_hgrm), the file HdrHistogram's plotter and
 * memtier's --hdr-file-prefix output share. Returns 0, CP_ENOMEM or CP_EIO with err set. */
int cp__bench_write_hgrm(const char *path, const cp__bench_result *r, char *err, size_t errlen);

/* The same for any histogram (one command's). */
int cp__bench_write_hgrm_of(const char *path, const cp__hist *h, char *err, size_t errlen);

/* The .hgrm file of command k (0-based) of a --command run, beside the run's `path`: path
 * without a final ".hgrm", then "-<k+1>-<NAME>.hgrm" (NAME the command's, bytes other than
 * letters, digits and '_' as '-'): "lat.hgrm" -> "lat-1-HSET.hgrm". Into buf (cut to cap). */
void cp__bench_hgrm_command_path(const char *path, size_t k, const char *name, char *buf,
                                 size_t cap);

/* Writes each command's latency distribution of a --command run (nothing for a GET/SET run) to
 * its cp__bench_hgrm_command_path. Returns 0, or the first error (CP_ENOMEM, CP_EIO, err set). */
int cp__bench_write_command_hgrms(const char *path, const cp__bench_config *cfg,
                                  const cp__bench_result *r, char *err, size_t errlen);

#endif /* CLUSTERPIPE_REPORT_H */
