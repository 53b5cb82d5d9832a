/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Slot fences (fence.h): an array on the client, found by slot through a 16384-entry index made
 * with the first fence. A fence's commands are kept sorted by their place in the send order; a
 * new one nearly always goes at the end (sent last) or the front (parked again), so insertion
 * is a search and rarely a move. A fence goes as soon as it holds nothing and has no old owner.
 * One thread, the client's.
 */
#include "lib/base/alloc.h"
#include "lib/client/fence.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* a sent before b (seq wraps after 2^32 commands; fewer than 2^31 are ever outstanding) */
static inline int before(uint32_t a, uint32_t b) {
    return (int32_t)(a - b) < 0;
}

static cp__fence *find(const cp__client *c, int slot) {
    if (c->nfences == 0 || slot < 0)
        return NULL;
    int i = c->fence_of[slot];
    return i < 0 ? NULL : &c->fences[i];
}

_Static_assert(CP_SLOTS <= INT16_MAX + 1, "a fence's index fits fence_of's 16 bits");

/* The slot's fence, made when there is none. NULL out of memory. */
static cp__fence *get(cp__client *c, int slot) {
    cp__fence *f = find(c, slot);
    if (f != NULL)
        return f;
    if (c->fence_of == NULL) {
        c->fence_of = cp__malloc(CP_SLOTS * sizeof(*c->fence_of));
        if (c->fence_of == NULL)
            return NULL;
        memset(c->fence_of, 0xff, CP_SLOTS * sizeof(*c->fence_of)); /* -1 everywhere */
    }
    if (c->nfences == c->capfences) {
        int ncap = c->capfences ? c->capfences * 2 : 8;
        cp__fence *v = cp__realloc(c->fences, (size_t)ncap * sizeof(*v));
        if (v == NULL)
            return NULL;
        c->fences = v;
        c->capfences = ncap;
    }
    f = &c->fences[c->nfences];
    *f = (cp__fence){.slot = slot};
    c->fence_of[slot] = (int16_t)c->nfences++;
    return f;
}

/* Removes fence f (it holds nothing and has no old owner): the last one takes its place. */
static void drop(cp__client *c, cp__fence *f) {
    assert(f->n == 0 && f->nold == 0);
    cp__free(f->held);
    cp__free(f->old);
    int i = (int)(f - c->fences), last = c->nfences - 1;
    c->fence_of[f->slot] = -1;
    if (i != last) {
        c->fences[i] = c->fences[last];
        c->fence_of[c->fences[i].slot] = (int16_t)i;
    }
    c->nfences--;
    if (c->nfences == 0) { /* a migration's end: the 32 KiB index goes until the next one */
        cp__free(c->fence_of);
        cp__free(c->fences);
        c->fence_of = NULL;
        c->fences = NULL;
        c->capfences = 0;
    }
}

/* Puts a command into f at its place in the send order. 0 or CP_ENOMEM. A fence holds only
 * commands that wait: none has its outcome yet. */
static int insert(cp__fence *f, const cp__held *h) {
    assert(cp__get(h->p, h->tag)->outcome == CP_PENDING);
    if (f->head + f->n == f->cap) {
        if (f->head > 0) { /* room at the front: close the gap first */
            memmove(f->held, f->held + f->head, f->n * sizeof(*f->held));
            f->head = 0;
        } else {
            /* From 2, doubling: most fences hold a command or two of one client (issue 45: a
             * master down makes a fence for each slot a waiting request is for). */
            uint32_t ncap = f->cap ? f->cap * 2 : 2;
            cp__held *v = cp__realloc(f->held, ncap * sizeof(*v));
            if (v == NULL)
                return CP_ENOMEM;
            f->held = v;
            f->cap = ncap;
        }
    }
    cp__held *v = f->held + f->head;
    uint32_t lo = 0, hi = f->n; /* the first entry sent after h */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (before(v[mid].seq, h->seq))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 && f->head > 0) { /* before everything: into the room at the front */
        f->head--;
        f->held[f->head] = *h;
    } else {
        memmove(v + lo + 1, v + lo, (f->n - lo) * sizeof(*v));
        v[lo] = *h;
    }
    f->n++;
    return 0;
}

/* Lets go what may go from the slot's fence, front first: nothing while it has an old owner,
 * else every ready command up to the first that is not. `send` may hold, park or end what it
 * gets (and callbacks it runs may send more), so the fence is looked up again every time; a
 * fence left empty goes before its last command is sent. */
static void let_go(cp__client *c, int slot, cp__fence_send *send, uint64_t now) {
    for (;;) {
        cp__fence *f = find(c, slot);
        if (f == NULL || f->nold > 0)
            return;
        if (f->n == 0) {
            drop(c, f);
            return;
        }
        cp__held h = f->held[f->head];
        if (!h.ready)
            return;
        f->head++;
        f->n--;
        if (f->n == 0)
            drop(c, f);
        send(h.p, h.tag, h.target, now);
    }
}

int cp__fence_hold(cp__client *c, cp_pipeline *p, uint32_t tag, int target, int redirect) {
    cp__cmd *cmd = cp__get(p, tag);
    cp__fence *f = find(c, cp__fence_slot(c, cmd));
    if (f == NULL)
        return 0;
    if (!(f->n > 0 && before(f->held[f->head].seq, cmd->seq)) && (redirect || f->nold == 0))
        return 0;
    cp__held h = {p, tag, cmd->seq, target, 1};
    return insert(f, &h) != 0 ? CP_ENOMEM : 1;
}

int cp__fence_park(cp__client *c, cp_pipeline *p, uint32_t tag) {
    cp__cmd *cmd = cp__get(p, tag);
    int slot = cp__fence_slot(c, cmd);
    cp__fence *f = slot >= 0 ? get(c, slot) : NULL;
    if (f == NULL)
        return CP_ENOMEM;
    cp__held h = {p, tag, cmd->seq, -1, 0};
    if (insert(f, &h) != 0) {
        if (f->n == 0 && f->nold == 0)
            drop(c, f);
        return CP_ENOMEM;
    }
    return 0;
}

/* The fence of `slot` when its front may go now (ready, no old owner), else NULL. */
static cp__fence *may_go(const cp__client *c, int slot) {
    cp__fence *f = find(c, slot);
    return f != NULL && f->nold == 0 && f->n > 0 && f->held[f->head].ready ? f : NULL;
}

/* A min-heap of fences by the place of their front in the send order, so that what several
 * fences let go at once goes out in the order it was sent, across slots too (one node's
 * connection then carries it in that order, as a first send would). */
typedef struct front {
    uint32_t seq;
    int slot;
} front;

static void heap_push(front *h, size_t *n, front x) {
    size_t i = (*n)++;
    while (i > 0 && before(x.seq, h[(i - 1) / 2].seq)) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = x;
}

static front heap_pop(front *h, size_t *n) {
    front top = h[0], x = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= *n)
            break;
        if (k + 1 < *n && before(h[k + 1].seq, h[k].seq))
            k++;
        if (!before(h[k].seq, x.seq))
            break;
        h[i] = h[k];
        i = k;
    }
    if (*n > 0)
        h[i] = x;
    return top;
}

/* Lets go what may go from the fences of these slots (each once: repeats are fine), in send
 * order across them. Out of memory for the heap, fence by fence. */
static void let_go_slots(cp__client *c, const int *slots, size_t nslots, cp__fence_send *send,
                         uint64_t now) {
    front *h = nslots > 0 ? cp__malloc(nslots * sizeof(*h)) : NULL;
    if (h == NULL) {
        for (size_t i = 0; i < nslots; i++)
            let_go(c, slots[i], send, now);
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < nslots; i++) {
        cp__fence *f = find(c, slots[i]);
        if (f != NULL && f->n == 0 && f->nold == 0)
            drop(c, f); /* nothing held, nothing waited for */
        else if ((f = may_go(c, slots[i])) != NULL)
            heap_push(h, &n, (front){f->held[f->head].seq, slots[i]});
    }
    while (n > 0) {
        front x = heap_pop(h, &n);
        cp__fence *f = may_go(c, x.slot);
        if (f == NULL || f->held[f->head].seq != x.seq)
            continue; /* a stale entry: its slot is in the heap once more, or gone */
        cp__held e = f->held[f->head];
        f->head++;
        f->n--;
        if (f->n == 0)
            drop(c, f);
        send(e.p, e.tag, e.target, now);
        if ((f = may_go(c, x.slot)) != NULL) /* looked up again: send may change fences */
            heap_push(h, &n, (front){f->held[f->head].seq, x.slot});
    }
    cp__free(h);
}

void cp__fence_ready(cp__client *c, cp_pipeline *p, const uint32_t *tags, size_t ntags,
                     cp__fence_send *send, uint64_t now) {
    int one = 0, *slots = ntags > 1 ? cp__malloc(ntags * sizeof(*slots)) : &one;
    size_t nslots = 0;
    for (size_t t = 0; t < ntags; t++) {
        int slot = cp__fence_slot(c, cp__get(p, tags[t]));
        cp__fence *f = find(c, slot);
        assert(f != NULL); /* a parked command is in its slot's fence until it is let go */
        for (uint32_t i = 0; f != NULL && i < f->n; i++) {
            cp__held *h = &f->held[f->head + i];
            if (h->p == p && h->tag == tags[t]) {
                assert(!h->ready);
                h->ready = 1;
                if (i == 0 && slots != NULL)
                    slots[nslots++] = slot;
                else if (i == 0)
                    let_go(c, slot, send, now); /* out of memory: one fence at a time */
                break;
            }
        }
    }
    if (slots != NULL)
        let_go_slots(c, slots, nslots, send, now);
    if (slots != &one)
        cp__free(slots);
}

/* Node n has `count` commands of f's slot it no longer serves: it is an old owner (its count
 * brought up to date when it already was one). 0 or CP_ENOMEM. */
static int add_old(cp__fence *f, int n, uint32_t count) {
    for (int i = 0; i < f->nold; i++)
        if (f->old[i].node == n) {
            f->old[i].count = count;
            return 0;
        }
    if (f->nold == f->capold) {
        int ncap = f->capold ? f->capold * 2 : 2;
        cp__old_owner *v = cp__realloc(f->old, (size_t)ncap * sizeof(*v));
        if (v == NULL)
            return CP_ENOMEM;
        f->old = v;
        f->capold = ncap;
    }
    f->old[f->nold++] = (cp__old_owner){n, count};
    return 0;
}

/* The slot of the request at FIFO position i of conn, or CP__SLOT_NONE for the connection's own
 * requests (AUTH, ASKING). */
static int fifo_slot(const cp__client *c, const cp__conn *conn, size_t i) {
    const cp__inflight *e = &conn->fifo[(conn->fhead + i) & (conn->fcap - 1)];
    if (e->tag >= CP__TAG_INTERNAL || e->arena == NULL)
        return CP__SLOT_NONE;
    return cp__fence_slot(c, cp__get(cp__pipeline_of_arena(e->arena), e->tag));
}

/* Commands of `slot` node n has in flight or queued on its command connection. */
static uint32_t outstanding(const cp__client *c, int n, int slot) {
    const cp__node *node = &c->nodes[n];
    uint32_t count = 0;
    for (size_t i = 0; i < node->conn.fcount; i++)
        count += fifo_slot(c, &node->conn, i) == slot;
    for (uint32_t i = 0; i < node->q.n; i++) {
        const cp__qent *e = &node->q.v[(node->q.head + i) & (node->q.cap - 1)];
        count += cp__fence_slot(c, cp__get(e->p, e->tag)) == slot;
    }
    return count;
}

/* Gives fence f (slot) old owner n, with n's commands of the slot as its count; when n has none,
 * nothing. A fence made for it and not needed goes again. */
static void fence_node(cp__client *c, int slot, int n, uint32_t count) {
    if (count == 0)
        return;
    cp__fence *f = get(c, slot);
    if (f != NULL && add_old(f, n, count) != 0 && f->n == 0 && f->nold == 0)
        drop(c, f);
}

void cp__fence_moved(cp__client *c, int n, int slot) {
    cp__fence *f = find(c, slot);
    for (int i = 0; f != NULL && i < f->nold; i++)
        if (f->old[i].node == n)
            return; /* counted when it became one: its other commands come back in order */
    fence_node(c, slot, n, outstanding(c, n, slot));
}

int cp__fence_until_answered(cp__client *c, int n, int slot) {
    if (slot < 0)
        return 0;
    uint32_t count = outstanding(c, n, slot);
    if (count == 0)
        return 0;
    cp__fence *f = get(c, slot);
    if (f == NULL || add_old(f, n, count) != 0) {
        if (f != NULL && f->n == 0 && f->nold == 0)
            drop(c, f);
        return CP_ENOMEM;
    }
    return 0;
}

int cp__fence_behind(cp__client *c, int n, cp_pipeline *p, uint32_t tag) {
    cp__cmd *cmd = cp__get(p, tag);
    int slot = cp__fence_slot(c, cmd);
    uint32_t count = slot >= 0 ? outstanding(c, n, slot) : 0;
    if (count == 0)
        return 0;
    cp__fence *f = get(c, slot);
    cp__held h = {p, tag, cmd->seq, n, 1};
    if (f == NULL || add_old(f, n, count) != 0 || insert(f, &h) != 0) {
        if (f != NULL && f->n == 0 && f->nold == 0)
            drop(c, f);
        return CP_ENOMEM;
    }
    return 1;
}

void cp__fence_map_changed(cp__client *c, const int16_t *old_owner) {
    uint32_t *count = NULL; /* per slot, for one node at a time */
    for (int n = 0; n < c->nnodes; n++) {
        const cp__node *node = &c->nodes[n];
        if (node->conn.fcount == 0 && node->q.n == 0)
            continue;
        if (count == NULL && (count = cp__calloc(CP_SLOTS, sizeof(*count))) == NULL)
            return;
            /* Its commands of slots it served before the map and does not now. (A command it has
             * for a slot it never served, an ASK's, is not about the map.) */
#define LOST(s) ((s) >= 0 && old_owner[s] == n && c->slottab.node[s] != n)
        for (size_t i = 0; i < node->conn.fcount; i++) {
            int s = fifo_slot(c, &node->conn, i);
            if (LOST(s))
                count[s]++;
        }
        for (uint32_t i = 0; i < node->q.n; i++) {
            const cp__qent *e = &node->q.v[(node->q.head + i) & (node->q.cap - 1)];
            int s = cp__get(e->p, e->tag)->slot;
            if (LOST(s))
                count[s]++;
        }
        /* Then each such slot once: its count, then zero again for the next node. */
        for (size_t i = 0; i < node->conn.fcount; i++) {
            int s = fifo_slot(c, &node->conn, i);
            if (LOST(s) && count[s] > 0) {
                fence_node(c, s, n, count[s]);
                count[s] = 0;
            }
        }
        for (uint32_t i = 0; i < node->q.n; i++) {
            const cp__qent *e = &node->q.v[(node->q.head + i) & (node->q.cap - 1)];
            int s = cp__get(e->p, e->tag)->slot;
            if (LOST(s) && count[s] > 0) {
                fence_node(c, s, n, count[s]);
                count[s] = 0;
            }
        }
#undef LOST
    }
    cp__free(count);
}

int cp__fence_counts(const cp__client *c, int n, int slot) {
    const cp__fence *f = find(c, slot);
    for (int i = 0; f != NULL && i < f->nold; i++)
        if (f->old[i].node == n)
            return 1;
    return 0;
}

/* Node n is no old owner of f any more. */
static void remove_old(cp__fence *f, int i) {
    f->old[i] = f->old[f->nold - 1];
    f->nold--;
}

void cp__fence_reply(cp__client *c, int n, int slot, cp__fence_send *send, uint64_t now) {
    cp__fence *f = find(c, slot);
    for (int i = 0; f != NULL && i < f->nold; i++)
        if (f->old[i].node == n) {
            assert(f->old[i].count > 0);
            if (--f->old[i].count == 0) {
                remove_old(f, i);
                let_go(c, slot, send, now);
            }
            return;
        }
}

void cp__fence_node_failed(cp__client *c, int n, cp__fence_send *send, uint64_t now) {
    for (int i = 0; i < c->nfences; i++)
        for (int j = 0; j < c->fences[i].nold; j++)
            if (c->fences[i].old[j].node == n) {
                remove_old(&c->fences[i], j);
                break;
            }
    /* Then what may go goes, in send order across the slots. */
    int *slots = c->nfences > 0 ? cp__malloc((size_t)c->nfences * sizeof(*slots)) : NULL;
    size_t nslots = 0;
    for (int i = 0; i < c->nfences; i++)
        if (c->fences[i].nold == 0) {
            if (slots != NULL)
                slots[nslots++] = c->fences[i].slot;
        }
    if (slots != NULL) {
        let_go_slots(c, slots, nslots, send, now);
        cp__free(slots);
        return;
    }
    /* Out of memory: fence by fence. Letting a slot's commands go only ever removes that slot's
     * fence (the last one takes its index, and is looked at next) or adds new ones at the end. */
    for (int i = 0; i < c->nfences;) {
        const cp__fence *f = &c->fences[i];
        int slot = f->slot;
        if (f->nold == 0 && (f->n == 0 || f->held[f->head].ready)) {
            let_go(c, slot, send, now);
            if (i < c->nfences && c->fences[i].slot == slot)
                i++; /* it stays: its front waits for its round */
        } else {
            i++;
        }
    }
}

void cp__fence_drop_all(cp__client *c, cp__fence_drop *drop_fn, void *data) {
    cp__fence *v = c->fences;
    int n = c->nfences;
    c->fences = NULL; /* taken off the client first: what drop_fn runs sees no fence */
    c->nfences = c->capfences = 0;
    if (c->fence_of != NULL)
        memset(c->fence_of, 0xff, CP_SLOTS * sizeof(*c->fence_of));
    for (int i = 0; i < n; i++) {
        for (uint32_t j = 0; j < v[i].n; j++)
            drop_fn(v[i].held[v[i].head + j].p, v[i].held[v[i].head + j].tag, data);
        cp__free(v[i].held);
        cp__free(v[i].old);
    }
    cp__free(v);
}
