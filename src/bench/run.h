/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A run's threads from start to end (private to src/bench/): creates the worker threads,
 * waits for them at the start gate, starts the measured interval, merges their seconds and
 * calls the caller's hooks while they run, and joins them. engine.c (bench) and load.c (load)
 * describe the run in a cp__run_spec (plan.h) and read the joined workers' results.
 *
 * Ownership: cp__run_execute allocates the worker array (and, through cp__worker_init and the
 * threads, their clients); cp__workers_free releases it after the caller has read the results.
 * Threads: everything here runs on the calling thread, which it blocks for the whole run; the
 * hooks are called from it, never from a worker.
 */
#ifndef CLUSTERPIPE_RUN_H
#define CLUSTERPIPE_RUN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/plan.h"
#include "bench/seconds.h"
#include "bench/worker.h"

/* What the main thread does while a run goes (all called from the thread of cp__run_execute). */
typedef struct cp__run_hooks {
    /* After every worker has connected and warmed up, right before the measured interval starts
     * (CPU "before" samples go here). NULL: none. */
    void (*before_go)(void *ud);
    /* Each second that every worker has closed, in order: the merged latencies of the requests
     * completed in it, and its counts (summed over workers). NULL: none. */
    cp__sec_fn on_second;
    /* About every tick_ns while running: live totals so far. NULL: none. */
    void (*tick)(void *ud, uint64_t elapsed_ns, uint64_t ops, uint64_t errors, uint64_t mismatches);
    uint64_t tick_ns;
    const volatile sig_atomic_t *cancel; /* non-zero: workers stop starting batches */
    void *ud;
} cp__run_hooks;

/* Runs the workers from start to end on the calling thread's behalf: spawns spec->threads
 * threads that connect and warm up their clients, calls before_go, starts the measured interval
 * (*start_ns), calls on_second / tick while they run, joins them and merges the last seconds.
 * *out receives the joined workers (results readable; free with cp__workers_free) even on error.
 * Returns 0, or the first setup error (connect, warm-up: negative CP_E* code, message in err), in
 * which case the interval never started. Blocks for the whole run. */
int cp__run_execute(const cp__run_spec *spec, const cp__run_hooks *hooks, cp__worker **out,
                    uint64_t *start_ns, char *err, size_t errlen);

/* Frees the n joined workers of cp__run_execute and the array; safe on NULL. */
void cp__workers_free(cp__worker *w, int n);

#endif /* CLUSTERPIPE_RUN_H */
