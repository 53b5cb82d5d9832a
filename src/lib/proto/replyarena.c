/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Reply arena (replyarena.h): chunked bump allocation, reply objects in it, and the malloc'd
 * copies callers own.
 */
#include "lib/base/alloc.h"
#include "lib/proto/replyarena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Standard chunks grow from FIRST_CHUNK, doubling with each new one, up to CHUNK_BYTES: an arena
 * holds about what its batches need. A pipeline of one command (an open-loop client has one per
 * request in flight, thousands while a master is down) takes 1 KiB, not 32, and a batch of
 * hundreds of replies reaches 32 KiB chunks after a few. */
#define FIRST_CHUNK 1024
#define CHUNK_BYTES (32 * 1024) /* the largest standard chunk */
#define KEEP_BYTES (256 * 1024) /* standard chunks kept across resets */

struct cp__chunk {
    cp__chunk *next;
    size_t cap;
    alignas(CP__ARENA_ALIGN) char data[];
};

_Static_assert(CP__ARENA_ALIGN >= alignof(max_align_t) &&
                   CP__ARENA_ALIGN % alignof(max_align_t) == 0,
               "arena allocations must be aligned for any reply field");

/* A spare chunk with room for n, taken off the spare list; NULL when none has. */
static cp__chunk *take_spare(cp__reply_arena *a, size_t n) {
    for (cp__chunk **pp = &a->spare; *pp != NULL; pp = &(*pp)->next) {
        cp__chunk *c = *pp;
        if (c->cap >= n) {
            *pp = c->next;
            a->spare_bytes -= c->cap;
            return c;
        }
    }
    return NULL;
}

void *cp__arena_alloc_chunk(cp__reply_arena *a, size_t n) {
    cp__chunk *c = n <= CHUNK_BYTES ? take_spare(a, n) : NULL;
    if (c == NULL) {
        size_t cap = n; /* big replies get a chunk of their own */
        if (n <= CHUNK_BYTES) {
            cap = a->next_cap != 0 ? a->next_cap : FIRST_CHUNK;
            while (cap < n)
                cap *= 2;
            a->next_cap = cap < CHUNK_BYTES ? cap * 2 : CHUNK_BYTES;
        }
        if (cap > SIZE_MAX - sizeof(cp__chunk) || (c = cp__malloc(sizeof(cp__chunk) + cap)) == NULL)
            return NULL;
        c->cap = cap;
    }
    c->next = a->used;
    a->used = c;
    a->cur = c->data + n;
    a->left = c->cap - n;
    return c->data;
}

/* The used list runs newest first and new standard chunks only grow, so pushing each onto the
 * spare list leaves it about smallest first: the next batch fills the small ones first. */
void cp__arena_reset(cp__reply_arena *a) {
    a->cur = NULL;
    a->left = 0;
    while (a->used != NULL) {
        cp__chunk *c = a->used;
        a->used = c->next;
        if (c->cap <= CHUNK_BYTES && a->spare_bytes + c->cap <= KEEP_BYTES) {
            c->next = a->spare;
            a->spare = c;
            a->spare_bytes += c->cap;
        } else {
            cp__free(c);
        }
    }
}

void cp__arena_free(cp__reply_arena *a) {
    cp__arena_reset(a);
    while (a->spare != NULL) {
        cp__chunk *c = a->spare;
        a->spare = c->next;
        cp__free(c);
    }
    a->spare_bytes = 0;
    a->next_cap = 0; /* used again, it starts small */
}

redisReply *cp__arena_reply(cp__reply_arena *a, int type) {
    redisReply *r = a != NULL ? cp__arena_alloc(a, sizeof(*r)) : NULL;
    if (r != NULL) {
        memset(r, 0, sizeof(*r));
        r->type = type;
    }
    return r;
}

/* The object and its bytes in one allocation (every GET reply comes here). */
redisReply *cp__arena_string(cp__reply_arena *a, int type, const char *s, size_t len) {
    if (a == NULL || len > SIZE_MAX - sizeof(redisReply) - CP__ARENA_ALIGN)
        return NULL;
    redisReply *r = cp__arena_alloc(a, sizeof(*r) + len + 1);
    if (r == NULL)
        return NULL;
    char *str = (char *)(r + 1);
    memcpy(str, s, len);
    str[len] = '\0';
    *r = (redisReply){.type = type, .str = str, .len = len};
    return r;
}

/* ---- replies made by the library ------------------------------------------------------------ */

redisReply *cp__arena_error(cp__reply_arena *a, const char *msg) {
    redisReply *r = cp__arena_string(a, REDIS_REPLY_ERROR, msg, strlen(msg));
    for (size_t i = 0; r != NULL && i < r->len; i++)
        if (r->str[i] == '\r' || r->str[i] == '\n')
            r->str[i] = ' ';
    return r;
}

redisReply *cp__arena_status(cp__reply_arena *a, const char *s) {
    return cp__arena_string(a, REDIS_REPLY_STATUS, s, strlen(s));
}

redisReply *cp__arena_integer(cp__reply_arena *a, long long v) {
    redisReply *r = cp__arena_reply(a, REDIS_REPLY_INTEGER);
    if (r != NULL)
        r->integer = v;
    return r;
}

redisReply *cp__arena_array(cp__reply_arena *a, size_t elements) {
    redisReply *r = cp__arena_reply(a, REDIS_REPLY_ARRAY);
    if (r == NULL || elements == 0)
        return r;
    if (elements > SIZE_MAX / sizeof(redisReply *) ||
        (r->element = cp__arena_alloc(a, elements * sizeof(redisReply *))) == NULL)
        return NULL;
    memset(r->element, 0, elements * sizeof(redisReply *));
    r->elements = elements;
    return r;
}

redisReply *cp__arena_copy(cp__reply_arena *a, const redisReply *r) {
    redisReply *d =
        r->str != NULL ? cp__arena_string(a, r->type, r->str, r->len) : cp__arena_reply(a, r->type);
    if (d == NULL)
        return NULL;
    d->integer = r->integer;
    if (r->elements == 0)
        return d;
    if (r->elements > SIZE_MAX / sizeof(redisReply *) ||
        (d->element = cp__arena_alloc(a, r->elements * sizeof(redisReply *))) == NULL)
        return NULL;
    d->elements = r->elements;
    for (size_t i = 0; i < r->elements; i++)
        if ((d->element[i] = r->element[i] != NULL ? cp__arena_copy(a, r->element[i]) : NULL) ==
                NULL &&
            r->element[i] != NULL)
            return NULL;
    return d;
}

redisReply *cp__reply_dup(const redisReply *r) {
    if (r == NULL)
        return NULL;
    redisReply *d = cp__calloc(1, sizeof(*d));
    if (d == NULL)
        return NULL;
    d->type = r->type;
    d->integer = r->integer;
    if (r->str != NULL) {
        if ((d->str = cp__malloc(r->len + 1)) == NULL) {
            cp__free(d);
            return NULL;
        }
        memcpy(d->str, r->str, r->len);
        d->str[r->len] = '\0';
        d->len = r->len;
    }
    if (r->elements > 0) {
        if ((d->element = cp__calloc(r->elements, sizeof(*d->element))) == NULL) {
            cp_reply_free(d);
            return NULL;
        }
        d->elements = r->elements;
        for (size_t i = 0; i < r->elements; i++) {
            if (r->element[i] != NULL && (d->element[i] = cp__reply_dup(r->element[i])) == NULL) {
                cp_reply_free(d);
                return NULL;
            }
        }
    }
    return d;
}
