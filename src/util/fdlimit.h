/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The process's file-descriptor limit (RLIMIT_NOFILE), raised on demand: a run that opens
 * thousands of connections raises its own soft limit up to the hard one instead of failing with
 * EMFILE halfway, and says before it starts when even the hard limit is too low. Children started
 * afterwards inherit the raised limit. Process-wide; call from the main thread before starting
 * threads that open descriptors.
 */
#ifndef CLUSTERPIPE_UTIL_FDLIMIT_H
#define CLUSTERPIPE_UTIL_FDLIMIT_H

#include <stdint.h>

typedef struct cp__fdlimit {
    uint64_t needed;      /* what was asked for */
    uint64_t soft_before; /* the soft limit found */
    uint64_t soft;        /* the soft limit now */
    uint64_t hard;        /* the hard limit (UINT64_MAX: unlimited) */
} cp__fdlimit;

/* Makes the soft limit at least `needed` (never lowers it). Returns 0 with *out filled, -EMFILE
 * when needed is above the hard limit (nothing changed; *out says both), or -errno when the
 * limits cannot be read or set. */
int cp__fdlimit_ensure(uint64_t needed, cp__fdlimit *out);

#endif /* CLUSTERPIPE_UTIL_FDLIMIT_H */
