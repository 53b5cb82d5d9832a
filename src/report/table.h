/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The compare table (private to src/report/): table.md as Markdown with aligned columns, so the
 * same text reads well printed on a terminal. Three tables: the published experiment's columns
 * (setup, call type, time taken, Redis / client / twemproxy / total CPU-seconds, total CPU as
 * %CPU x s) plus ops/s and p50/p99 latency; CPU microseconds per op by component; and the
 * cluster/twemproxy ratio per call type next to the published ratio. With repeats, cells are
 * "median [min-max]" and a sentence says which differences are inside the noise.
 *
 * Memory: returned strings are malloc'd, the caller frees them. Pure, any thread.
 */
#ifndef CLUSTERPIPE_REPORT_TABLE_H
#define CLUSTERPIPE_REPORT_TABLE_H

#include "report/io.h"
#include "report/summary.h"

/* The published experiment being reproduced (4 redis + 4 twemproxy vs a 4-master cluster,
 * 10 threads): time taken and total "CPU cycles", which it computed as %CPU x seconds. */
typedef struct cp__rpt_ref {
    const char *setup, *call;
    double seconds;
    double cpu_cycles; /* %CPU x s, i.e. 100 x CPU-seconds */
} cp__rpt_ref;

#define CP__RPT_NREF 4
extern const cp__rpt_ref cp__rpt_published[CP__RPT_NREF];

/* The published row for (setup, call), NULL when there is none. */
const cp__rpt_ref *cp__rpt_ref_find(const char *setup, const char *call);

/* table.md: the three tables and the noise sentence. NULL only when out of memory. */
char *cp__rpt_table_md(const cp__rpt_summary *s);

/* Appends the noise sentence (one paragraph, no trailing blank line) to b: which
 * cluster/twemproxy differences have overlapping min-max spreads, or that a single run cannot
 * tell. */
void cp__rpt_noise(const cp__rpt_summary *s, cp__sbuf *b);

#endif /* CLUSTERPIPE_REPORT_TABLE_H */
