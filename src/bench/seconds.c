/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The per-second ring (see seconds.h): the worker side opens each second's slot once the main
 * thread has released it; the main side merges the seconds every worker has closed.
 *
 * Nothing allocates; the rings belong to their workers. cp__sec_open runs on a worker thread,
 * cp__sec_poll and cp__sec_all_done on the main thread.
 */
#include "bench/seconds.h"

#include <time.h>

static void slot_clear(cp__sec_slot *s) {
    cp__hist_init(&s->hist);
    s->ops = s->errors = s->mismatches = 0;
    s->gets = s->misses = s->stale = s->moved = s->ask = 0;
}

cp__sec_slot *cp__sec_open(cp__sec_ring *r, uint64_t sec) {
    /* The main thread merges each second within ~50 ms; wait if it is CP__RING behind. */
    while (sec >= atomic_load_explicit(&r->consumed, memory_order_acquire) + CP__RING) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    cp__sec_slot *s = &r->slot[sec % CP__RING];
    slot_clear(s);
    return s;
}

int cp__sec_all_done(cp__sec_ring *const *rings, int n) {
    int done = 1;
    for (int t = 0; t < n; t++)
        done &= atomic_load_explicit(&rings[t]->done, memory_order_acquire);
    return done;
}

int cp__sec_poll(cp__sec_ring *const *rings, int n, uint64_t *next, cp__sec_slot *scratch,
                 cp__sec_fn fn, void *ud) {
    for (;;) {
        uint64_t s = *next;
        int ready = 1, any = 0, all_done = 1;
        for (int t = 0; t < n; t++) {
            int done = atomic_load_explicit(&rings[t]->done, memory_order_acquire);
            uint64_t closed = atomic_load_explicit(&rings[t]->closed, memory_order_acquire);
            all_done &= done;
            if (closed > s)
                any = 1;
            else if (!done)
                ready = 0;
        }
        if (!ready || !any)
            return all_done;
        slot_clear(scratch);
        for (int t = 0; t < n; t++) {
            if (atomic_load_explicit(&rings[t]->closed, memory_order_acquire) <= s)
                continue;
            const cp__sec_slot *sl = &rings[t]->slot[s % CP__RING];
            cp__hist_merge(&scratch->hist, &sl->hist);
            scratch->ops += sl->ops;
            scratch->errors += sl->errors;
            scratch->mismatches += sl->mismatches;
            scratch->gets += sl->gets;
            scratch->misses += sl->misses;
            scratch->stale += sl->stale;
            scratch->moved += sl->moved;
            scratch->ask += sl->ask;
        }
        for (int t = 0; t < n; t++)
            atomic_store_explicit(&rings[t]->consumed, s + 1, memory_order_release);
        if (fn != NULL)
            fn(ud, s, scratch);
        *next = s + 1;
    }
}
