/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The blocking commands' pool (pool.h): an array of pool connections on the client (each its
 * own allocation: the loop keeps the address of its slot), searched linearly (a handful per node,
 * and blocking commands are few), and the wait list, in the order the commands came. One
 * thread, the client's.
 */
#include "lib/base/alloc.h"
#include "lib/client/pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char asking_cmd[] = "*1\r\n$6\r\nASKING\r\n";

static int on_node(const cp__client *c, int n) {
    int k = 0;
    for (int i = 0; i < c->npool; i++)
        k += c->pool[i]->node == n;
    return k;
}

void cp__pool_send(cp__client *c, cp__pconn *pc, uint64_t now) {
    if (pc->p == NULL || pc->sent || pc->conn.state != CP__CONN_READY)
        return;
    cp_pipeline *p = pc->p;
    cp__cmd *cmd = cp__get(p, pc->tag);
    int rc = 0;
    if (cmd->flags & CP__F_ASKING) {
        cmd->flags &= (uint16_t)~CP__F_ASKING;
        rc = cp__conn_push(&pc->conn, asking_cmd, sizeof(asking_cmd) - 1, CP__ASKING_TAG,
                           &p->replies);
    }
    if (rc == 0)
        rc = cp__conn_push(&pc->conn, p->arena.data + cmd->off, cmd->len, pc->tag, &p->replies);
    if (rc != 0) { /* out of memory: the connection cannot carry it; the timer fails it */
        pc->deadline = now;
        return;
    }
    pc->sent = 1;
    if (cmd->sent_ns == 0)
        cmd->sent_ns = now;
    pc->conn.last_io_ns = now;
    uint64_t io_ns = (uint64_t)c->copts.io_timeout_ms * 1000000ull;
    pc->deadline =
        cmd->block_ms == CP__BLOCK_FOREVER ? 0 : now + (uint64_t)cmd->block_ms * 1000000ull + io_ns;
    cp__client_sync_conn(c, &pc->conn, cp__conn_interest(&pc->conn));
}

/* pc takes command tag of p. */
static void take(cp__client *c, cp__pconn *pc, cp_pipeline *p, uint32_t tag, uint64_t now) {
    pc->p = p;
    pc->tag = tag;
    pc->sent = 0;
    pc->deadline = 0;
    cp__pool_send(c, pc, now);
}

static int wait_push(cp__client *c, cp_pipeline *p, uint32_t tag, int n) {
    if (c->npool_wait == c->cappool_wait) {
        size_t ncap = c->cappool_wait ? c->cappool_wait * 2 : 8;
        cp__pwait *v = cp__realloc(c->pool_wait, ncap * sizeof(*v));
        if (v == NULL)
            return CP_ENOMEM;
        c->pool_wait = v;
        c->cappool_wait = ncap;
    }
    c->pool_wait[c->npool_wait++] = (cp__pwait){p, tag, n};
    return 0;
}

int cp__pool_submit(cp__client *c, cp_pipeline *p, uint32_t tag, int n, uint64_t now, char *why,
                    size_t whylen) {
    snprintf(why, whylen, "out of memory");
    for (int i = 0; i < c->npool; i++)
        if (c->pool[i]->node == n && c->pool[i]->p == NULL) {
            take(c, c->pool[i], p, tag, now);
            return 0;
        }
    if (on_node(c, n) >= c->pool_per_node)
        return wait_push(c, p, tag, n);
    if (c->npool == c->cappool) {
        int ncap = c->cappool ? c->cappool * 2 : 8;
        cp__pconn **v = cp__realloc(c->pool, (size_t)ncap * sizeof(*v));
        if (v == NULL)
            return CP_ENOMEM;
        c->pool = v;
        c->cappool = ncap;
    }
    cp__pconn *pc = cp__calloc(1, sizeof(*pc));
    if (pc == NULL)
        return CP_ENOMEM;
    cp__conn_init(&pc->conn);
    pc->node = n;
    int rc = cp__conn_start(&pc->conn, c->nodes[n].host, c->nodes[n].port, &c->pool_opts);
    if (rc != 0) {
        snprintf(why, whylen, "%s", pc->conn.errstr);
        cp__conn_free(&pc->conn);
        cp__free(pc);
        return rc;
    }
    c->pool[c->npool++] = pc;
    take(c, pc, p, tag, now);
    cp__client_sync_conn(c, &pc->conn, cp__conn_interest(&pc->conn));
    return 0;
}

cp__pconn *cp__pool_of_fd(cp__client *c, int fd) {
    for (int i = 0; i < c->npool; i++)
        if (c->pool[i]->conn.fd == fd && c->pool[i]->conn.state != CP__CONN_CLOSED)
            return c->pool[i];
    return NULL;
}

int cp__pool_take_waiting(cp__client *c, int n, cp_pipeline **p, uint32_t *tag) {
    for (size_t i = 0; i < c->npool_wait; i++)
        if (c->pool_wait[i].node == n) {
            *p = c->pool_wait[i].p;
            *tag = c->pool_wait[i].tag;
            memmove(&c->pool_wait[i], &c->pool_wait[i + 1],
                    (c->npool_wait - i - 1) * sizeof(*c->pool_wait));
            c->npool_wait--;
            return 1;
        }
    return 0;
}

void cp__pool_idle(cp__client *c, cp__pconn *pc, uint64_t now) {
    pc->p = NULL;
    pc->sent = 0;
    pc->deadline = 0;
    cp_pipeline *p;
    uint32_t tag;
    if (cp__pool_take_waiting(c, pc->node, &p, &tag))
        take(c, pc, p, tag, now);
}

void cp__pool_remove(cp__client *c, cp__pconn *pc) {
    cp__client_unregister_conn(c, &pc->conn);
    cp__conn_free(&pc->conn);
    for (int i = 0; i < c->npool; i++)
        if (c->pool[i] == pc) {
            c->pool[i] = c->pool[--c->npool];
            break;
        }
    cp__free(pc);
}

void cp__pool_sync_all(cp__client *c) {
    for (int i = 0; i < c->npool; i++)
        cp__client_sync_conn(c, &c->pool[i]->conn, cp__conn_interest(&c->pool[i]->conn));
}

uint64_t cp__pool_next_wake(const cp__client *c) {
    uint64_t wake = 0;
    for (int i = 0; i < c->npool; i++) {
        const cp__pconn *pc = c->pool[i];
        uint64_t t = cp__conn_opening(&pc->conn) || pc->conn.state == CP__CONN_AUTH
                         ? pc->conn.connect_deadline
                         : pc->deadline;
        if (t != 0 && (wake == 0 || t < wake))
            wake = t;
    }
    return wake;
}
