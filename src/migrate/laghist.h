/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A source's replication offset over time, for its lag in seconds: how long ago the source was
 * where the migration's applied offset is now. The stream carries no times, so the source's
 * offset is sampled: the migration reads it about once a second (and more often while it waits
 * for lag 0), and notes the stream's bytes as they arrive, at every turn of its loop, so that a
 * source that starts writing after a quiet time is seen when it starts, not a second later.
 * Between two samples the writes are taken as evenly spread. Samples never go back: one below
 * the newest (the bytes received trail the source's own offset) is taken as the newest's. The
 * newest sample is
 * always kept, and replaced by the next while it is closer than CP__LAGHIST_SPACING_MS to the one
 * before it, so the history reaches back CP__LAGHIST_SAMPLES samples of about that spacing or
 * more. No I/O, single-threaded.
 */
#ifndef CLUSTERPIPE_MIGRATE_LAGHIST_H
#define CLUSTERPIPE_MIGRATE_LAGHIST_H

#include <stdint.h>

#define CP__LAGHIST_SAMPLES 128
#define CP__LAGHIST_SPACING_MS 100

typedef struct cp__laghist {
    int64_t t_ms[CP__LAGHIST_SAMPLES];
    uint64_t off[CP__LAGHIST_SAMPLES];
    int n, head; /* samples held; the oldest's index */
} cp__laghist;

/* The source's offset off, read at now_ms (a monotonic clock). An empty history needs no
 * setup: {0}. */
void cp__laghist_note(cp__laghist *h, int64_t now_ms, uint64_t off);

/* The lag at now_ms, in seconds, of a migration that has applied the stream up to applied: 0
 * when applied is at or past the last sample; -1 with no sample. When even the oldest sample is
 * past applied, the time since that sample: a lower bound (*at_least set to 1). */
double cp__laghist_seconds(const cp__laghist *h, int64_t now_ms, uint64_t applied, int *at_least);

#endif
