/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A thread that moves slots with their keys back and forth between two masters of a fixture's
 * cluster (cp_topo_migrate_slots, as a resharding tool does), for tests of what a client sees
 * while slots migrate: round 0 moves nslots from `a` to `b`, round 1 as many back, and so on,
 * for at least min_rounds rounds and until told to stop (40 at most).
 *
 * Ownership: the caller's struct, started with slot_mover_start and joined by slot_mover_stop
 * (call it once, also after a failed assertion). The thread uses only the fixture's topology
 * (its own connections), never the test's clients. Also: a slot left half-migrated.
 */
#ifndef CLUSTERPIPE_SLOTMOVER_H
#define CLUSTERPIPE_SLOTMOVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "fixture.h"

typedef struct slot_mover {
    cp_fixture *f;
    size_t a, b; /* process indexes of the two masters */
    int nslots, min_rounds;
    atomic_int started, stop;
    atomic_int rounds; /* finished so far; negative once one failed (err says why) */
    int running;       /* its thread was started and not joined yet */
    pthread_t th;
    char err[512];
} slot_mover;

/* Starts the thread and returns once it runs. Asserts (cmocka) that it could start. */
void slot_mover_start(slot_mover *m, cp_fixture *f, size_t a, size_t b, int nslots, int min_rounds);

/* Rounds finished so far (negative: one failed). */
int slot_mover_rounds(slot_mover *m);

/* Stops it after its current round (and min_rounds) and joins it: the rounds finished, or -1
 * when one failed (m->err). A mover that is not running gives its last count. */
int slot_mover_stop(slot_mover *m);

/* Client c's index of the fixture's process proc (fails the test when c has no such node). */
int slot_node_of(cp_client *c, cp_fixture *f, size_t proc);

/* Leaves `slot` (served by master 0) half-migrated to master 1, as an interrupted resharding
 * does: nkeys (<= 64) keys {tN}x of the slot set on master 0, the slot IMPORTING on master 1
 * and MIGRATING on master 0, and every other key MIGRATEd to master 1. c: a blocking client of
 * the cluster, used for every command. Asserts (cmocka) that each step succeeds. */
void slot_half_migrate(cp_fixture *f, cp_client *c, int slot, int nkeys);

#endif
