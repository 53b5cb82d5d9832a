/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Reply reader: a connection reads straight into its buffer and replies are built in a
 * reply arena (replyarena.h) as redisReply trees, the type callers already know from hiredis.
 * Replaces hiredis's redisReader on the hot path, which copied every read into its own buffer,
 * moved the unread rest to the front after each kilobyte consumed, and went through a callback
 * per object: together about a tenth of the bench's CPU at depth 50.
 *
 * A reply split across reads is resumed where it stopped: finished elements of an array stay
 * built (the stack below), and a bulk string is taken only once all its bytes are in, so a big
 * reply is never parsed twice. Every object of one reply goes to the arena given while it was
 * being read (the caller keeps one per batch). Types: RESP2's + - : $ * and RESP3's _ # , ( ! =
 * % ~ > | (reply types in clusterpipe.h; an attribute "|" is read and dropped, the reply it
 * describes comes out). Streamed strings and aggregates ("$?", "*?"), which Redis never sends,
 * are a protocol error, as is anything else.
 *
 * Owned by its connection; one thread.
 */
#ifndef CLUSTERPIPE_READER_H
#define CLUSTERPIPE_READER_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "clusterpipe/clusterpipe.h"
#include "lib/proto/replyarena.h"

#define CP__READER_DEPTH 32 /* nested aggregates; Redis's own replies use fewer than 8 */

/* An array being filled. Its slots grow as elements arrive, so a header announcing a billion
 * elements costs nothing until they come. */
typedef struct cp__reader_level {
    redisReply *r;
    size_t next; /* elements filled so far */
    size_t cap;  /* slots allocated in r->element */
} cp__reader_level;

typedef struct cp__reader {
    char *buf;
    size_t pos, len, cap;                     /* unread bytes are buf[pos..len) */
    cp__reader_level stack[CP__READER_DEPTH]; /* outermost first */
    int depth;
    char errstr[96];
} cp__reader; /* zero-initialised is empty */

/* Forgets buffered bytes and any half-read reply (keeps the buffer). */
void cp__reader_reset(cp__reader *r);
void cp__reader_free(cp__reader *r);

/* Free space to read into: sets *space and returns how many bytes fit there (at least 16 KiB),
 * or 0 when out of memory. Then cp__reader_commit(n) with the bytes actually read. */
size_t cp__reader_space(cp__reader *r, char **space);
void cp__reader_commit(cp__reader *r, size_t n);

/* Copies bytes in (for TLS, whose reads go through OpenSSL, and for tests). 0 or CP_ENOMEM. */
int cp__reader_feed(cp__reader *r, const char *p, size_t n);

/* 1 when the reply being read (or the next one, when none is under way) is a RESP3 push: a frame
 * the server sent unasked, not the answer to the oldest request. */
static inline int cp__reader_at_push(const cp__reader *r) {
    if (r->depth > 0)
        return r->stack[0].r->type == CP_REPLY_PUSH;
    return r->pos < r->len && r->buf[r->pos] == '>';
}

/* Next complete reply, built in arena a: returns 1 and sets *out, 0 when more bytes are needed,
 * CP_EPROTO (errstr says why; the stream cannot be resynchronised) or CP_ENOMEM. */
int cp__reader_next(cp__reader *r, cp__reply_arena *a, redisReply **out);

#endif
