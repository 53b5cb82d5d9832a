/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The slot mover of slotmover.h: one thread, moving slots until told to stop; and a slot left
 * half-migrated.
 */
#include "slotmover.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"

#include <stdio.h>
#include <string.h>

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

int slot_node_of(cp_client *c, cp_fixture *f, size_t proc) {
    for (int i = 0; i < cp_node_count(c); i++) {
        cp_node_info n;
        assert_int_equal(cp_node_get(c, i, &n), 0);
        if (n.port == cp_topo_proc(f->topo, proc)->port)
            return i;
    }
    fail_msg("no node for process %zu", proc);
    return 0;
}

static void expect_ok(redisReply *r, const char *what) {
    if (r == NULL || r->type != REDIS_REPLY_STATUS || strcmp(r->str, "OK") != 0)
        fail_msg("%s: %s", what, r != NULL && r->str != NULL ? r->str : "no reply");
    freeReplyObject(r);
}

void slot_half_migrate(cp_fixture *f, cp_client *c, int slot, int nkeys) {
    size_t p0 = cp_fixture_master(f, 0), p1 = cp_fixture_master(f, 1);
    int n0 = slot_node_of(c, f, p0), n1 = slot_node_of(c, f, p1);
    char key[64][32];
    assert_int_gt(nkeys, 0);
    assert_int_le(nkeys, 64);
    for (int i = 0, k = 0; k < nkeys; i++) {
        snprintf(key[k], sizeof(key[k]), "{t%d}x", i);
        if (cp_keyslot(key[k], strlen(key[k])) == (unsigned)slot)
            expect_ok(cp_command_node(c, n0, "SET %s v", key[k++]), "SET");
    }
    expect_ok(cp_command_node(c, n1, "CLUSTER SETSLOT %d IMPORTING %s", slot,
                              cp_topo_proc(f->topo, p0)->id),
              "SETSLOT IMPORTING");
    expect_ok(cp_command_node(c, n0, "CLUSTER SETSLOT %d MIGRATING %s", slot,
                              cp_topo_proc(f->topo, p1)->id),
              "SETSLOT MIGRATING");
    for (int k = 0; k < nkeys; k += 2)
        expect_ok(cp_command_node(c, n0, "MIGRATE 127.0.0.1 %d %s 0 5000",
                                  cp_topo_proc(f->topo, p1)->port, key[k]),
                  "MIGRATE");
}
