/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The per-second counters of a run, on both sides (private to src/bench/): each worker fills
 * one cp__sec_slot per second of the measured interval in its own cp__sec_ring; the main thread
 * merges the seconds every worker has closed, in order, into one sum per second.
 *
 * Threads and sharing: a ring's slots are written by its worker only, the seconds [0, closed)
 * are final (worker, release), [0, consumed) have been merged by the main thread (release) and
 * their slots may be reused; `done` says the worker will close no more. Those three atomics are
 * the whole interface between the two sides. Ownership: rings are plain structs embedded in
 * their owner (cp__worker); nothing here allocates.
 */
#ifndef CLUSTERPIPE_SECONDS_H
#define CLUSTERPIPE_SECONDS_H

#include <stdatomic.h>
#include <stdint.h>

#include "bench/hist.h"

#define CP__RING 4

/* One second of one worker (or, merged, of the run): latencies of the requests completed in it
 * (recorded once; the main thread merges the seconds into the run's total), and counts. */
typedef struct cp__sec_slot {
    cp__hist hist;
    uint64_t ops, errors, mismatches;
    uint64_t gets, misses, stale, moved, ask;
} cp__sec_slot;

typedef struct cp__sec_ring {
    _Atomic uint64_t closed, consumed;
    _Atomic int done;
    cp__sec_slot slot[CP__RING];
} cp__sec_ring;

/* Called for each merged second (main thread). */
typedef void (*cp__sec_fn)(void *ud, uint64_t sec, const cp__sec_slot *sum);

/* Worker side. Returns second sec's slot, cleared; waits (sleeping 1 ms at a time) while the
 * main thread is CP__RING seconds behind, so that the slot is free. */
cp__sec_slot *cp__sec_open(cp__sec_ring *r, uint64_t sec);

/* Worker side: seconds [0, closed) are final. */
static inline void cp__sec_close(cp__sec_ring *r, uint64_t closed) {
    atomic_store_explicit(&r->closed, closed, memory_order_release);
}

/* Worker side, its last act: it will close no more seconds. */
static inline void cp__sec_end(cp__sec_ring *r) {
    atomic_store_explicit(&r->done, 1, memory_order_release);
}

/* Main side: 1 when every one of the n rings has ended. */
int cp__sec_all_done(cp__sec_ring *const *rings, int n);

/* Main side: merges, in order from *next, every second that each of the n rings has closed (a
 * ring that ended without reaching it does not hold it back) into *scratch, calls fn (may be
 * NULL) with it, and marks it consumed. Returns 1 when every ring had ended. */
int cp__sec_poll(cp__sec_ring *const *rings, int n, uint64_t *next, cp__sec_slot *scratch,
                 cp__sec_fn fn, void *ud);

#endif /* CLUSTERPIPE_SECONDS_H */
