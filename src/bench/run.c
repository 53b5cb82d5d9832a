/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A run's thread lifecycle (see run.h): start the workers, wait for all of them at the gate,
 * open it, poll their per-second rings and live counters every 20 ms until every worker has
 * ended, join them.
 *
 * Ownership: the gate, the ring view and the merge scratch live for one cp__run_execute; the
 * worker array it returns belongs to the caller (cp__workers_free). Calling thread only.
 */
#include "bench/run.h"

#include "bench/gate.h"
#include "util/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int workers_start(const cp__run_spec *spec, cp__gate *gate, cp__worker **out) {
    int n = spec->threads;
    *out = NULL;
    cp__worker *w = calloc((size_t)n, sizeof(*w));
    if (w == NULL)
        return CP_ENOMEM;
    cp__gate_init(gate);
    int first = 0;
    for (int t = 0; t < n; t++) {
        int nclients = cp__clients_of_thread(spec->clients, n, t);
        cp__worker_init(&w[t], spec, gate, t, first, nclients);
        first += nclients;
    }
    *out = w;
    /* Pinned at creation (not by the thread itself once running), so no request is ever served
     * from a CPU outside the set. */
    pthread_attr_t attr, *pattr = NULL;
    if (spec->cpus != NULL) {
        if (pthread_attr_init(&attr) != 0)
            return CP_ENOMEM;
        pattr = &attr;
        if (pthread_attr_setaffinity_np(&attr, sizeof(*spec->cpus), spec->cpus) != 0) {
            pthread_attr_destroy(&attr);
            return CP_EINVAL;
        }
    }
    int rc = 0;
    for (int t = 0; t < n && rc == 0; t++) {
        if (pthread_create(&w[t].tid, pattr, cp__worker_main, &w[t]) != 0) {
            rc = spec->cpus != NULL ? CP_EINVAL : CP_ENOMEM; /* EINVAL: a CPU we may not use */
            break; /* the caller still calls ready/go(abort)/join/free */
        }
        w[t].started = true;
        gate->started++;
    }
    if (pattr != NULL)
        pthread_attr_destroy(pattr);
    return rc;
}

static int workers_ready(cp__worker *w, int n, cp__gate *gate, char *err, size_t errlen) {
    cp__gate_wait_arrived(gate);
    for (int t = 0; t < n; t++)
        if (w[t].setup_err != 0) {
            snprintf(err, errlen, "%s", w[t].setup_errstr);
            return w[t].setup_err;
        }
    return 0;
}

static void workers_join(cp__worker *w, int n) {
    for (int t = 0; t < n; t++)
        if (w[t].started) {
            pthread_join(w[t].tid, NULL);
            w[t].started = false;
        }
}

/* Calls the tick hook with the live totals when it is due. */
static void tick(const cp__run_hooks *h, cp__worker *w, int n, uint64_t start_ns,
                 uint64_t *last_tick) {
    uint64_t now = cp__now_ns();
    if (h->tick == NULL || now - *last_tick < h->tick_ns)
        return;
    uint64_t ops = 0, errs = 0, mism = 0;
    for (int t = 0; t < n; t++) {
        ops += atomic_load_explicit(&w[t].acct.live_ops, memory_order_relaxed);
        errs += atomic_load_explicit(&w[t].acct.live_errors, memory_order_relaxed);
        mism += atomic_load_explicit(&w[t].acct.live_mismatches, memory_order_relaxed);
    }
    h->tick(h->ud, now - start_ns, ops, errs, mism);
    *last_tick = now;
}

int cp__run_execute(const cp__run_spec *spec, const cp__run_hooks *h, cp__worker **out,
                    uint64_t *start_ns, char *err, size_t errlen) {
    int n = spec->threads, rc;
    cp__gate *gate = calloc(1, sizeof(*gate));
    cp__sec_slot *scratch = malloc(sizeof(*scratch));
    cp__sec_ring **rings = calloc((size_t)n, sizeof(*rings));
    *out = NULL;
    *start_ns = 0;
    if (gate == NULL || scratch == NULL || rings == NULL) {
        free(gate);
        free(scratch);
        free(rings);
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    rc = workers_start(spec, gate, out);
    if (rc != 0)
        snprintf(err, errlen, "cannot start %d worker threads%s", n,
                 rc == CP_EINVAL ? " on the CPUs asked for (not all usable here)" : "");
    if (*out == NULL) {
        free(gate);
        free(scratch);
        free(rings);
        return rc;
    }
    for (int t = 0; t < n; t++)
        rings[t] = &(*out)[t].ring;
    int rc2 = workers_ready(*out, n, gate, err, errlen);
    if (rc == 0)
        rc = rc2;
    if (rc == 0 && h->before_go != NULL)
        h->before_go(h->ud);
    cp__gate_open(gate, rc != 0);
    *start_ns = gate->start_ns;
    if (rc == 0) {
        uint64_t next = 0, last_tick = gate->start_ns;
        for (;;) {
            struct timespec ts = {0, 20000000};
            nanosleep(&ts, NULL);
            if (h->cancel != NULL && *h->cancel)
                cp__gate_stop(gate);
            /* Always merged, even without a callback: workers reuse slots only once consumed. */
            cp__sec_poll(rings, n, &next, scratch, h->on_second, h->ud);
            tick(h, *out, n, gate->start_ns, &last_tick);
            if (cp__sec_all_done(rings, n))
                break;
        }
        workers_join(*out, n);
        cp__sec_poll(rings, n, &next, scratch, h->on_second, h->ud);
    } else {
        workers_join(*out, n);
    }
    cp__gate_destroy(gate);
    free(gate);
    free(scratch);
    free(rings);
    return rc;
}

void cp__workers_free(cp__worker *w, int n) {
    if (w == NULL)
        return;
    for (int t = 0; t < n; t++)
        cp__worker_free(&w[t]);
    free(w);
}
