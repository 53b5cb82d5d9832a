/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A delay queue: the bytes one direction of a wire's connection has read and not yet delivered,
 * each run of them held until its due time, in the order read. A later run is never due before
 * an earlier one (its due time is raised to the last one's), so a link whose delay shrinks, or
 * jitters, still delivers its bytes in order, as TCP does. The end of the stream (the sender's
 * EOF) is queued behind the bytes, with a due time of its own. No I/O: the wire hands it what
 * it read and asks for what is due. One thread.
 */
#ifndef CLUSTERPIPE_WIRE_DELAYQ_H
#define CLUSTERPIPE_WIRE_DELAYQ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

typedef struct cp__dq_chunk cp__dq_chunk;

typedef struct cp__delayq {
    cp__dq_chunk *head, *tail;
    size_t bytes;      /* held, not yet delivered */
    uint64_t last_due; /* the latest due time queued */
    int eof;           /* the end of the stream is queued (behind every byte) */
    uint64_t eof_due;
} cp__delayq;

#define CP__DQ_NEVER UINT64_MAX

/* Queues a copy of data[0..n) due at `due` (raised to the last due time queued). 0, or -ENOMEM,
 * or -EINVAL after the end of the stream. */
int cp__delayq_push(cp__delayq *q, const void *data, size_t n, uint64_t due);

/* Queues the end of the stream, due at `due` (raised likewise). */
void cp__delayq_push_eof(cp__delayq *q, uint64_t due);

/* When the first thing held is due: its bytes, or the end of the stream when nothing else is
 * left; CP__DQ_NEVER when the queue is empty. */
uint64_t cp__delayq_next_due(const cp__delayq *q);

/* The bytes due at `now`, from the first, as at most max iovecs (they stay queued until
 * consumed). Returns the number of iovecs filled. */
int cp__delayq_due(const cp__delayq *q, uint64_t now, struct iovec *iov, int max);

/* Drops the first n bytes (n at most what cp__delayq_due gave). */
void cp__delayq_consume(cp__delayq *q, size_t n);

/* 1 when every byte is delivered and the end of the stream is due at `now`. */
int cp__delayq_eof_due(const cp__delayq *q, uint64_t now);

/* Frees everything held; the queue is empty and reusable after. */
void cp__delayq_clear(cp__delayq *q);

#endif
