/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fences on slots after MOVED (fence.h): a small array on the client, searched linearly (there
 * are as many fences as slots moving at once, a handful). One thread, the client's.
 */
#include "lib/fence.h"

#include <stdlib.h>
#include <string.h>

/* The slot's fence on node n, or with n < 0 its oldest. A slot can have one per node: under
 * read_from a replica and its master both answer MOVED for it. The array keeps the fences in
 * the order they were made, so a slot's later commands all wait at its oldest fence and pass
 * to the next one in their order. */
static cp__fence *find(cp__client *c, int slot, int n) {
    for (int i = 0; i < c->nfences; i++)
        if (c->fences[i].slot == slot && (n < 0 || c->fences[i].node == n))
            return &c->fences[i];
    return NULL;
}

/* Drops fence f and routes what it held (routing may fence nothing new: only MOVED does). */
static void release(cp__client *c, cp__fence *f, cp__fence_route *route, uint64_t now) {
    cp__queue held = f->held;
    size_t after = (size_t)(c->fences + c->nfences - (f + 1));
    memmove(f, f + 1, after * sizeof(*f));
    c->nfences--;
    while (held.n > 0) {
        cp__qent e = cp__queue_pop(&held);
        route(e.p, e.tag, now);
    }
    free(held.v);
}

int cp__fence_hold(cp__client *c, int slot, cp_pipeline *p, uint32_t tag) {
    cp__fence *f = c->nfences > 0 && slot >= 0 ? find(c, slot, -1) : NULL;
    if (f == NULL)
        return 0;
    return cp__queue_push(&f->held, p, tag) != 0 ? CP_ENOMEM : 1;
}

void cp__fence_moved(cp__client *c, int n, int slot) {
    if (find(c, slot, n) != NULL)
        return;
    cp__conn *conn = &c->nodes[n].conn;
    uint32_t count = 0;
    for (size_t i = 0; i < conn->fcount; i++) {
        uint32_t tag = cp__conn_tag(conn, i);
        cp__reply_arena *a = conn->fifo[(conn->fhead + i) & (conn->fcap - 1)].arena;
        if (tag < CP__TAG_INTERNAL && a != NULL &&
            cp__get(cp__pipeline_of_arena(a), tag)->slot == slot)
            count++;
    }
    for (uint32_t i = 0; i < c->nodes[n].q.n; i++) {
        cp__qent *e = cp__queue_at(&c->nodes[n].q, i);
        count += cp__get(e->p, e->tag)->slot == slot;
    }
    if (count == 0)
        return;
    if (c->nfences == c->capfences) {
        int ncap = c->capfences ? c->capfences * 2 : 8;
        cp__fence *v = realloc(c->fences, (size_t)ncap * sizeof(*v));
        if (v == NULL)
            return;
        c->fences = v;
        c->capfences = ncap;
    }
    c->fences[c->nfences++] = (cp__fence){slot, n, count, {0}};
}

int cp__fence_counts(cp__client *c, int n, int slot) {
    return c->nfences > 0 && find(c, slot, n) != NULL;
}

void cp__fence_reply(cp__client *c, int n, int slot, cp__fence_route *route, uint64_t now) {
    cp__fence *f = find(c, slot, n);
    if (f != NULL && --f->count == 0)
        release(c, f, route, now);
}

void cp__fence_node_failed(cp__client *c, int n, cp__fence_route *route, uint64_t now) {
    for (int i = 0; i < c->nfences;)
        if (c->fences[i].node == n)
            release(c, &c->fences[i], route, now);
        else
            i++;
}

void cp__fence_drop_all(cp__client *c, cp__fence_drop *drop, void *data) {
    while (c->nfences > 0) {
        cp__fence *f = &c->fences[c->nfences - 1];
        while (f->held.n > 0) {
            cp__qent e = cp__queue_pop(&f->held);
            drop(e.p, e.tag, data);
        }
        free(f->held.v);
        c->nfences--;
    }
}
