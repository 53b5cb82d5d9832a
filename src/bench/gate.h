/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The start gate and stop flag between a run's main thread and its workers (private to
 * src/bench/): every worker arrives (connected and warmed up) and waits; the main thread waits
 * for all of them, then opens the gate with the start of the measured interval, or with abort.
 * A mutex + condition gate rather than barriers, so a thread that could not be created does not
 * leave the others waiting forever. `stop` asks the workers to stop starting batches.
 *
 * Ownership: a cp__gate is a plain struct of its owner (run.c), initialised and destroyed by
 * it, shared by pointer with the workers. Threads: the fields marked (mu) only under mu; `stop`
 * is atomic (relaxed).
 */
#ifndef CLUSTERPIPE_GATE_H
#define CLUSTERPIPE_GATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

typedef struct cp__gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int started;       /* threads created (main, before any wait) */
    int arrived;       /* workers connected and warmed up (mu) */
    int go;            /* main: start_ns set, or abort (mu) */
    int abort;         /* main: workers must quit without running (mu) */
    uint64_t start_ns; /* main: start of the measured interval (mu) */
    _Atomic int stop;  /* main asks workers to stop starting batches */
} cp__gate;

/* Main thread: an empty, closed gate. */
void cp__gate_init(cp__gate *g);
void cp__gate_destroy(cp__gate *g);

/* Worker: arrives and waits for the gate to open. Returns 1 when the run is aborted, else 0
 * with the start of the measured interval in *start_ns. Blocks. */
int cp__gate_arrive(cp__gate *g, uint64_t *start_ns);

/* Main thread: waits until every started worker has arrived. Blocks. */
void cp__gate_wait_arrived(cp__gate *g);

/* Main thread: opens the gate (abort: the workers quit) stamping start_ns with the clock now. */
void cp__gate_open(cp__gate *g, int abort);

/* Asks the workers to stop starting batches (any thread). */
static inline void cp__gate_stop(cp__gate *g) {
    atomic_store(&g->stop, 1);
}

/* Worker, on its hot path: whether the main thread asked to stop. */
static inline int cp__gate_stopping(cp__gate *g) {
    return atomic_load_explicit(&g->stop, memory_order_relaxed);
}

#endif /* CLUSTERPIPE_GATE_H */
