/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The slot mover of slotmover.h: one thread, moving slots until told to stop.
 */
#include "slotmover.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>

#include <cmocka.h>

#define MAX_ROUNDS 40

static void *move(void *arg) {
    slot_mover *m = arg;
    atomic_store(&m->started, 1);
    for (int round = 0; round < MAX_ROUNDS; round++) {
        if (round >= m->min_rounds && atomic_load(&m->stop))
            break;
        int rc =
            round % 2 == 0
                ? cp_topo_migrate_slots(m->f->topo, m->a, m->b, m->nslots, m->err, sizeof(m->err))
                : cp_topo_migrate_slots(m->f->topo, m->b, m->a, m->nslots, m->err, sizeof(m->err));
        if (rc != 0) {
            atomic_store(&m->rounds, -1000);
            break;
        }
        atomic_fetch_add(&m->rounds, 1);
    }
    return NULL;
}

void slot_mover_start(slot_mover *m, cp_fixture *f, size_t a, size_t b, int nslots,
                      int min_rounds) {
    m->f = f;
    m->a = a;
    m->b = b;
    m->nslots = nslots;
    m->min_rounds = min_rounds;
    atomic_store(&m->started, 0);
    atomic_store(&m->stop, 0);
    atomic_store(&m->rounds, 0);
    m->err[0] = '\0';
    assert_int_equal(pthread_create(&m->th, NULL, move, m), 0);
    m->running = 1;
    while (!atomic_load(&m->started))
        ;
}

int slot_mover_rounds(slot_mover *m) {
    return atomic_load(&m->rounds);
}

int slot_mover_stop(slot_mover *m) {
    if (m->running) {
        atomic_store(&m->stop, 1);
        pthread_join(m->th, NULL);
        m->running = 0;
    }
    int rounds = atomic_load(&m->rounds);
    return rounds < 0 ? -1 : rounds;
}
