/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The delay queue (delayq.h): a singly linked list of chunks, one per read, each a malloc'd
 * block with its bytes after the header.
 */
#include "wire/delayq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct cp__dq_chunk {
    cp__dq_chunk *next;
    uint64_t due;
    size_t len, off; /* bytes, and how many of them are delivered */
    unsigned char data[];
};

static uint64_t raise_due(cp__delayq *q, uint64_t due) {
    if (due < q->last_due)
        due = q->last_due;
    q->last_due = due;
    return due;
}

int cp__delayq_push(cp__delayq *q, const void *data, size_t n, uint64_t due) {
    if (q->eof)
        return -EINVAL;
    if (n == 0)
        return 0;
    cp__dq_chunk *c = malloc(sizeof(*c) + n);
    if (c == NULL)
        return -ENOMEM;
    c->next = NULL;
    c->due = raise_due(q, due);
    c->len = n;
    c->off = 0;
    memcpy(c->data, data, n);
    if (q->tail != NULL)
        q->tail->next = c;
    else
        q->head = c;
    q->tail = c;
    q->bytes += n;
    return 0;
}

void cp__delayq_push_eof(cp__delayq *q, uint64_t due) {
    if (q->eof)
        return;
    q->eof = 1;
    q->eof_due = raise_due(q, due);
}

uint64_t cp__delayq_next_due(const cp__delayq *q) {
    if (q->head != NULL)
        return q->head->due;
    return q->eof ? q->eof_due : CP__DQ_NEVER;
}

int cp__delayq_due(const cp__delayq *q, uint64_t now, struct iovec *iov, int max) {
    int n = 0;
    for (const cp__dq_chunk *c = q->head; c != NULL && n < max && c->due <= now; c = c->next) {
        iov[n].iov_base = (void *)(c->data + c->off);
        iov[n].iov_len = c->len - c->off;
        n++;
    }
    return n;
}

void cp__delayq_consume(cp__delayq *q, size_t n) {
    while (n > 0 && q->head != NULL) {
        cp__dq_chunk *c = q->head;
        size_t left = c->len - c->off;
        if (n < left) {
            c->off += n;
            q->bytes -= n;
            return;
        }
        n -= left;
        q->bytes -= left;
        q->head = c->next;
        if (q->head == NULL)
            q->tail = NULL;
        free(c);
    }
}

int cp__delayq_eof_due(const cp__delayq *q, uint64_t now) {
    return q->head == NULL && q->eof && q->eof_due <= now;
}

void cp__delayq_clear(cp__delayq *q) {
    while (q->head != NULL) {
        cp__dq_chunk *c = q->head;
        q->head = c->next;
        free(c);
    }
    *q = (cp__delayq){0};
}
