/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The start gate of a run (see gate.h): workers arrive and wait under the mutex, the main thread
 * waits for them and opens the gate once.
 *
 * Nothing allocates; the gate belongs to run.c. cp__gate_arrive runs on the workers, the rest
 * on the main thread.
 */
#include "bench/gate.h"

#include "util/clock.h"

void cp__gate_init(cp__gate *g) {
    atomic_store(&g->stop, 0);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->started = g->arrived = g->go = g->abort = 0;
}

void cp__gate_destroy(cp__gate *g) {
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
}

int cp__gate_arrive(cp__gate *g, uint64_t *start_ns) {
    pthread_mutex_lock(&g->mu);
    g->arrived++;
    pthread_cond_broadcast(&g->cv);
    while (!g->go)
        pthread_cond_wait(&g->cv, &g->mu);
    int abort = g->abort;
    *start_ns = g->start_ns;
    pthread_mutex_unlock(&g->mu);
    return abort;
}

void cp__gate_wait_arrived(cp__gate *g) {
    pthread_mutex_lock(&g->mu);
    while (g->arrived < g->started)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

void cp__gate_open(cp__gate *g, int abort) {
    pthread_mutex_lock(&g->mu);
    g->abort = abort;
    g->start_ns = cp__now_ns();
    g->go = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}
