/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Reply arena: where a pipeline's replies live until cp_pipeline_reset. hiredis's default reader
 * made one or two malloc'd objects per reply and a batch keeps hundreds of them alive, so
 * glibc's small caches missed and malloc + free cost more than parsing. The reader (reader.h)
 * builds replies with a pointer bump in chunks that are kept for the next batch; reset frees
 * nothing one by one.
 *
 * Replies in an arena are never freed one by one: cp__reply_dup makes the copy a caller owns
 * (cp_take_reply, cp_command), freed with cp_reply_free. One thread.
 */
#ifndef CLUSTERPIPE_REPLYARENA_H
#define CLUSTERPIPE_REPLYARENA_H

#include <stddef.h>

#include <hiredis/hiredis.h>

typedef struct cp__chunk cp__chunk;

typedef struct cp__reply_arena {
    cp__chunk *used;    /* chunks holding this batch's replies, the one being filled first */
    cp__chunk *spare;   /* emptied standard chunks, smallest first, reused before malloc */
    size_t spare_bytes; /* their capacity, at most 256 KiB */
    size_t next_cap;    /* the next new standard chunk's capacity (0: the first, 1 KiB) */
    char *cur;          /* free part of the chunk being filled: cur[0..left) */
    size_t left;
} cp__reply_arena; /* zero-initialised is empty */

#define CP__ARENA_ALIGN 16 /* every allocation's alignment (alignof(max_align_t) on x86-64) */

/* The slow path of cp__arena_alloc: a new chunk. n is already rounded up. */
void *cp__arena_alloc_chunk(cp__reply_arena *a, size_t n);

/* n bytes, aligned for any reply field; NULL on OOM. Inline: a reader allocates once or twice
 * per reply, and the call cost more than the bump. */
static inline void *cp__arena_alloc(cp__reply_arena *a, size_t n) {
    n = (n + CP__ARENA_ALIGN - 1) & ~(size_t)(CP__ARENA_ALIGN - 1);
    if (a->left >= n) {
        void *p = a->cur;
        a->cur += n;
        a->left -= n;
        return p;
    }
    return cp__arena_alloc_chunk(a, n);
}

/* Forgets every reply; keeps a few chunks for the next batch. */
void cp__arena_reset(cp__reply_arena *a);

void cp__arena_free(cp__reply_arena *a);

/* Reply objects in the arena (reader.c builds replies with them; the library makes its own
 * client-side errors and merged split-command replies). NULL on OOM. cp__arena_reply is zeroed
 * but for its type; cp__arena_string copies s and adds a NUL; in cp__arena_error a CR or LF in
 * msg becomes a space (RESP errors are one line). */
redisReply *cp__arena_reply(cp__reply_arena *a, int type);
redisReply *cp__arena_string(cp__reply_arena *a, int type, const char *s, size_t len);
redisReply *cp__arena_error(cp__reply_arena *a, const char *msg);
redisReply *cp__arena_status(cp__reply_arena *a, const char *s);
redisReply *cp__arena_integer(cp__reply_arena *a, long long v);
redisReply *cp__arena_array(cp__reply_arena *a, size_t elements);

/* A deep copy of r in the arena (a client-side cache hit's answer: the stored entry may be dropped
 * while the caller still reads it). NULL on OOM. */
redisReply *cp__arena_copy(cp__reply_arena *a, const redisReply *r);

/* A deep copy with the library's allocator (alloc.h), for cp_reply_free. NULL on OOM
 * (or when r is NULL). */
redisReply *cp__reply_dup(const redisReply *r);

#endif
