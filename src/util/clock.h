/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The one monotonic clock every layer reads (CLOCK_MONOTONIC), and sleeping. Header-only and
 * inline: the library's connection timers and the bench's per-request latencies read it on their
 * hot paths, and the installed library stays self-contained (it links no src/util/ object). No
 * state; any thread.
 */
#ifndef CLUSTERPIPE_UTIL_CLOCK_H
#define CLUSTERPIPE_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t cp__now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC in milliseconds. */
static inline int64_t cp__now_ms(void) {
    return (int64_t)(cp__now_ns() / 1000000u);
}

/* Sleeps ms milliseconds (an interrupting signal shortens it; callers poll in loops anyway). */
static inline void cp__sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

#endif /* CLUSTERPIPE_UTIL_CLOCK_H */
