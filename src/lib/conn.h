/* SPDX-License-Identifier: BSD-3-Clause
 *
 * One connection to one node: a non-blocking TCP socket, a bounded output buffer, a FIFO of the
 * requests written or buffered and not yet answered, and a reply reader (reader.h). It
 * knows nothing about slots; the pipeline decides what goes where and what a reply means.
 *
 * Each FIFO entry carries an opaque 32-bit tag and the stream offset where its bytes start, so
 * that when the connection breaks the owner can tell requests that were never written (safe to
 * resend) from requests that were (outcome unknown).
 *
 * Connecting (and AUTH) blocks up to the connect timeout; everything else is non-blocking.
 * Owned by its client; one thread.
 */
#ifndef CLUSTERPIPE_CONN_H
#define CLUSTERPIPE_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "clusterpipe/clusterpipe.h"
#include "lib/reader.h"
#include "util/clock.h"

/* Above this many buffered bytes, the owner should stop filling and let writes drain. */
#define CP__OBUF_SOFT_LIMIT (64 * 1024)

struct ssl_st;
struct ssl_ctx_st;

typedef struct cp__connopts {
    const char *username, *password;
    int connect_timeout_ms, io_timeout_ms;
    struct ssl_ctx_st *tls; /* TLS context (owned by the client), NULL for plain TCP */
} cp__connopts;

typedef struct cp__inflight {
    uint32_t tag;
    uint64_t start; /* stream offset of the request's first byte */
} cp__inflight;

typedef struct cp__conn {
    int fd;             /* -1 when closed */
    struct ssl_st *ssl; /* TLS session when the client uses TLS */
    cp__reader reader;
    char *obuf;
    size_t opos, olen, ocap; /* unwritten bytes are obuf[opos..olen) */
    uint64_t buffered;       /* bytes ever appended to obuf on this socket */
    uint64_t written;        /* bytes ever written to the socket */
    cp__inflight *fifo;
    size_t fhead, fcount, fcap; /* a ring; fcap is 0 or a power of two (index with & (fcap - 1)) */
    uint64_t last_io_ns;        /* last time bytes moved, for the I/O timeout */
    unsigned *fd_gen;           /* when set, incremented each time the socket opens or closes */
    /* Replies are built in the arena *replies points to (the owner repoints it per batch; see
     * replyarena.h). Not needed for cp__conn_roundtrip, which copies its reply out. */
    cp__reply_arena **replies;
    cp__reply_arena *roundtrip_arena; /* set during cp__conn_roundtrip */
    int err;
    char errstr[CP_ERRSTR_LEN];
} cp__conn;

void cp__conn_init(cp__conn *c);

/* Connects (blocking, bounded by the connect timeout), then AUTHs when a password is set.
 * Returns 0, or CP_ECONNECT / CP_ETIMEDOUT / CP_EAUTH / CP_EIO with c->errstr set. */
int cp__conn_open(cp__conn *c, const char *host, int port, const cp__connopts *o);

/* Closes the socket and drops buffered output, the FIFO and the reader's state. The caller
 * reads the FIFO first if it needs to know what was in flight. */
void cp__conn_close(cp__conn *c);

/* Frees all memory (closes first). */
void cp__conn_free(cp__conn *c);

/* The slow path of cp__conn_push: grows the FIFO or the buffer first. */
int cp__conn_push_grow(cp__conn *c, const char *req, size_t len, uint32_t tag);

/* Appends request bytes and pushes `tag` on the FIFO. Returns 0 or CP_ENOMEM. Inline: every
 * command goes through here, and it usually fits. */
static inline int cp__conn_push(cp__conn *c, const char *req, size_t len, uint32_t tag) {
    if (c->fcount == c->fcap || c->ocap - c->olen < len)
        return cp__conn_push_grow(c, req, len, tag);
    memcpy(c->obuf + c->olen, req, len);
    c->olen += len;
    c->fifo[(c->fhead + c->fcount) & (c->fcap - 1)] = (cp__inflight){tag, c->buffered};
    c->fcount++;
    c->buffered += len;
    return 0;
}

/* Writes buffered bytes without blocking. Returns 0 when the buffer is empty, 1 when bytes
 * remain (socket full), or a negative CP_E* code (connection unusable). */
int cp__conn_flush(cp__conn *c);

/* Reads whatever is available into the reader without blocking. Returns 0 (possibly with no new
 * data), or CP_ECLOSED / CP_EIO. */
int cp__conn_fill(cp__conn *c);

/* Next complete reply: returns 1 and sets *reply (in the owner's arena) and *tag (popped from the
 * FIFO), 0 when no complete reply is buffered, CP_EPROTO when the bytes are not RESP or a reply
 * arrived with nothing in flight, CP_ENOMEM. */
int cp__conn_reply(cp__conn *c, redisReply **reply, uint32_t *tag);

/* 1 when the request at FIFO position i (0 = oldest) had at least one byte written. */
int cp__conn_was_written(const cp__conn *c, size_t i);
uint32_t cp__conn_tag(const cp__conn *c, size_t i);

/* Sends one request and waits for its reply, blocking up to the I/O timeout. Only for an idle
 * connection (nothing in flight). Returns the reply (malloc'd: the caller frees it with
 * freeReplyObject, arena or not) or NULL with c->err set. */
redisReply *cp__conn_roundtrip(cp__conn *c, const char *req, size_t len, int timeout_ms);

#endif
