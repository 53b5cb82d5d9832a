/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The dataset of a compare setup (dataset.c): loaded, checked and measured. The calling thread.
 */
#ifndef CLUSTERPIPE_COMPARE_DATASET_H
#define CLUSTERPIPE_COMPARE_DATASET_H

#include "bench/target.h"
#include "compare/context.h"

/* Loads the dataset of a point into one target, checks it (DBSIZE equal to the keys, a sample
 * read back) and records its cost (load rate, the servers' memory per key, the client's peak
 * RSS) in the document's "load" (and "fit"). *empty is the servers' used_memory before the
 * first load (-1: not read yet; read here). Returns 0, or 1 when it failed, did not fit or was
 * interrupted (warned). Blocks for the load. */
int cp__cmp_load(cp__cmp *r, const char *setup, const cp__bench_target *t, const char *target_flags,
                 const cp__cmp_point *pt, long long *empty);

#endif /* CLUSTERPIPE_COMPARE_DATASET_H */
