/* SPDX-License-Identifier: BSD-3-Clause
 *
 * One connection to one node: a non-blocking TCP socket, a bounded output buffer, a FIFO of the
 * requests written or buffered and not yet answered, and a reply reader (reader.h). It
 * knows nothing about slots; the pipeline decides what goes where and what a reply means.
 *
 * Each FIFO entry carries an opaque 32-bit tag, the reply arena of the request's owner (the
 * batch it belongs to: its reply is built there) and the stream offset where its bytes start, so
 * that when the connection breaks the owner can tell requests that were never written (safe to
 * resend) from requests that were (outcome unknown).
 *
 * Nothing here blocks. Connecting is a state machine driven by readiness: CONNECTING (the
 * non-blocking connect(2) is under way; the owner arms the connect timeout; a host name is
 * RESOLVING first, its fd an eventfd that resolve.c makes readable when the addresses are
 * known, under the same timeout, which counts from there), TLS (the handshake,
 * wanting to read or to write), AUTH (the handshake: AUTH, then READONLY for a client that reads
 * from replicas, written first thing and their replies read here; requests wait until both are
 * answered, so a refused password never lets one through unauthenticated) and READY. Numeric
 * addresses are never resolved. Owned by its client; one thread.
 */
#ifndef CLUSTERPIPE_CONN_H
#define CLUSTERPIPE_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "clusterpipe/clusterpipe.h"
#include "lib/proto/reader.h"
#include "lib/net/resolve.h"
#include "util/clock.h"

/* Above this many buffered bytes, the owner should stop filling and let writes drain. */
#define CP__OBUF_SOFT_LIMIT (64 * 1024)

struct ssl_st;
struct ssl_ctx_st;

typedef struct cp__connopts {
    const char *username, *password;
    int connect_timeout_ms, io_timeout_ms;
    struct ssl_ctx_st *tls; /* TLS context (owned by the client), NULL for plain TCP */
    int readonly;           /* send READONLY after AUTH: the client reads from replicas */
    int resp3;              /* HELLO 3 first (with the AUTH in it): it speaks RESP3 */
    int tracking; /* the client-side cache's: CLIENT TRACKING ON behind HELLO 3 (RESP3), or OFF,
                     to learn in the handshake whether the server allows it (RESP2) */
    const char *tls_server_name; /* the certificate's name and SNI; NULL: the host dialled */
    int prefer_ip;               /* cp_prefer_ip: the family a host name's addresses try first */
    cp__resolver *resolver;      /* host names (the client's) */
} cp__connopts;

typedef struct cp__inflight {
    uint32_t tag;
    uint64_t start;         /* stream offset of the request's first byte */
    cp__reply_arena *arena; /* where its reply is built: its owner's; NULL: the conn's own */
} cp__inflight;

/* Tags the connection uses itself (its owner never sees them). */
#define CP__TAG_AUTH 0xFFFFFFFEu
#define CP__TAG_READONLY 0xFFFFFFFDu
#define CP__TAG_PUSH 0xFFFFFFFCu /* a frame the server sent unasked: a subscriber's, or a push */
#define CP__TAG_HELLO 0xFFFFFFFBu
#define CP__TAG_TRACKING 0xFFFFFFFAu
/* Requests of the library's own whose replies go to the connection's owner (arena NULL, built in
 * the connection's arena until the next call): the client-side cache's RESP2 tracking
 * (tracklink.h), CLIENT TRACKING ... REDIRECT on a command connection and CLIENT ID on its link. */
#define CP__TAG_REDIRECT 0xFFFFFFF9u
#define CP__TAG_CLIENT_ID 0xFFFFFFF8u

/* The tag of a request the connection makes itself before it is ready: HELLO, AUTH, CLIENT
 * TRACKING, READONLY. */
static inline int cp__conn_is_handshake(uint32_t tag) {
    return tag >= CP__TAG_TRACKING && /* every command's tag is below: one compare for them */
           (tag == CP__TAG_AUTH || tag == CP__TAG_READONLY || tag == CP__TAG_HELLO ||
            tag == CP__TAG_TRACKING);
}

typedef enum cp__conn_state {
    CP__CONN_CLOSED = 0,
    CP__CONN_RESOLVING,  /* a host name's addresses asked for: fd is an eventfd, wants to read */
    CP__CONN_CONNECTING, /* connect(2) in progress: wants to write */
    CP__CONN_TLS,        /* handshake in progress: wants what tls_want says */
    CP__CONN_AUTH,       /* the handshake's requests (AUTH, READONLY) not all answered yet */
    CP__CONN_READY
} cp__conn_state;

/* Readiness a connection wants from the loop (the public CP_EV_* values). */
#define CP__EV_READ CP_EV_READ
#define CP__EV_WRITE CP_EV_WRITE

typedef struct cp__conn {
    int fd;             /* -1 when closed */
    uint8_t state;      /* cp__conn_state */
    uint8_t tls_want;   /* CP__EV_READ or CP__EV_WRITE while state is TLS */
    uint8_t ev;         /* readiness registered with the owner's loop (the owner keeps it) */
    uint8_t push;       /* a subscriber's: frames with nothing in flight are the server's own */
    uint8_t resp3;      /* opts->resp3, where the reply path reads it: only RESP3 sends pushes */
    void *ev_data;      /* the loop adapter's slot for this connection */
    struct ssl_st *ssl; /* TLS session when the client uses TLS */
    cp__reader reader;
    char *obuf;
    size_t opos, olen, ocap;      /* unwritten bytes are obuf[opos..olen) */
    uint64_t buffered;            /* bytes ever appended to obuf on this socket */
    uint64_t written;             /* bytes ever written to the socket */
    uint64_t bytes_in, bytes_out; /* over every socket of the connection (node stats) */
    cp__inflight *fifo;
    size_t fhead, fcount, fcap; /* a ring; fcap is 0 or a power of two (index with & (fcap - 1)) */
    uint64_t last_io_ns;        /* last time bytes moved, for the I/O timeout */
    uint64_t last_read_ns;      /* last time bytes came in: the peer was alive then */
    cp__reply_arena own;        /* replies of requests with no owner arena (AUTH) */
    int err;
    char errstr[CP_ERRSTR_LEN];
    /* Connecting (cold: after the fields every request touches). */
    const cp__connopts *opts;
    char host[256]; /* for TLS name checks and messages */
    int port;
    cp__addrs *addrs;          /* the addresses to try, until connected */
    cp__query *dns;            /* while RESOLVING */
    uint64_t connect_deadline; /* CLOCK_MONOTONIC ns: the connect timeout */
} cp__conn;

void cp__conn_init(cp__conn *c);

/* Starts connecting to host:port without blocking (state CONNECTING, or READY/AUTH/TLS when
 * connect(2) completed at once; RESOLVING for a host name). `o` must outlive the attempt.
 * Returns 0, or CP_ECONNECT (no address accepts, the resolver could not start) / CP_ENOMEM with
 * c->errstr set and the conn closed. */
int cp__conn_start(cp__conn *c, const char *host, int port, const cp__connopts *o);

/* Moves a connection that is opening (cp__conn_opening) on, after the loop reported `events`
 * (CP__EV_*) on it. Returns 0 (still on its way, or READY now: see c->state), CP__CONN_NEXT
 * when the address refused and another is left, or a host name's addresses came (the owner
 * unregisters the fd, then calls cp__conn_next), or a CP_E* code with errstr set (CP_ECONNECT
 * naming the host when it has no address); then the owner fails the connection. The connect timeout
 * is the owner's timer. */
#define CP__CONN_NEXT 1
int cp__conn_progress(cp__conn *c, int events);

/* Closes the refused socket and starts connecting the next address (a new fd). 0, or a CP_E*
 * code with errstr set and the connection closed. */
int cp__conn_next(cp__conn *c);

/* The readiness the connection wants now: nothing when closed, WRITE while connecting, the
 * handshake's want during TLS, READ (always, to notice a close) plus WRITE while output waits. */
static inline int cp__conn_interest(const cp__conn *c) {
    switch (c->state) {
    case CP__CONN_CLOSED:
        return 0;
    case CP__CONN_RESOLVING:
        return CP__EV_READ;
    case CP__CONN_CONNECTING:
        return CP__EV_WRITE;
    case CP__CONN_TLS:
        return c->tls_want;
    default:
        return CP__EV_READ | (c->olen > c->opos ? CP__EV_WRITE : 0);
    }
}

/* 1 while the connect timeout applies: resolving, connecting, or in the TLS handshake. */
static inline int cp__conn_opening(const cp__conn *c) {
    return c->state == CP__CONN_RESOLVING || c->state == CP__CONN_CONNECTING ||
           c->state == CP__CONN_TLS;
}

/* The reason an opening connection's connect timeout gives ("resolving HOST timed out" or
 * "connect timed out"), set as its error (CP_ETIMEDOUT) and returned (c->errstr). */
const char *cp__conn_timed_out(cp__conn *c);

/* Closes the socket and drops buffered output, the FIFO and the reader's state. The caller
 * reads the FIFO first if it needs to know what was in flight. */
void cp__conn_close(cp__conn *c);

/* Frees all memory (closes first). */
void cp__conn_free(cp__conn *c);

/* Frees the buffers of a connection that has nothing in flight, nothing to write and nothing
 * half read (else does nothing); it stays open, and its next use allocates them again. For a
 * connection to a node the slot map no longer routes to: a failover leaves every client with
 * one to each node that was ever a master, and 90 KiB in each (issue 45). */
void cp__conn_trim(cp__conn *c);

/* The slow path of cp__conn_push: grows the FIFO or the buffer first. */
int cp__conn_push_grow(cp__conn *c, const char *req, size_t len, uint32_t tag,
                       cp__reply_arena *arena);

/* Appends request bytes and pushes `tag` on the FIFO; its reply will be built in `arena`.
 * Returns 0 or CP_ENOMEM. Inline: every command goes through here, and it usually fits. */
static inline int cp__conn_push(cp__conn *c, const char *req, size_t len, uint32_t tag,
                                cp__reply_arena *arena) {
    if (c->fcount == c->fcap || c->ocap - c->olen < len)
        return cp__conn_push_grow(c, req, len, tag, arena);
    memcpy(c->obuf + c->olen, req, len);
    c->olen += len;
    c->fifo[(c->fhead + c->fcount) & (c->fcap - 1)] = (cp__inflight){tag, c->buffered, arena};
    c->fcount++;
    c->buffered += len;
    return 0;
}

/* Appends request bytes whose replies are not matched to requests (a subscriber's commands:
 * their answers arrive as frames, conn.push). 0 or CP_ENOMEM. */
int cp__conn_send(cp__conn *c, const char *bytes, size_t len);

/* Writes buffered bytes without blocking; progress is stamped `now` (the caller's clock, read
 * just before: one clock read per batch instead of one per send). Returns 0 when the buffer is
 * empty, 1 when bytes remain (socket full), or a negative CP_E* code (connection unusable). */
int cp__conn_flush(cp__conn *c, uint64_t now);

/* Reads whatever is available into the reader without blocking. Returns 0 (possibly with no new
 * data), or CP_ECLOSED / CP_EIO. */
int cp__conn_fill(cp__conn *c);

/* Next complete reply: returns 1 and sets *reply (built in the request's arena), *tag and
 * *arena (popped from the FIFO; a request pushed with no arena has its reply built in the
 * connection's own, valid until the next call); on a subscriber's connection (push) with nothing in
 * flight, a frame of the server's own, built in the connection's arena until the next call, with
 * *tag CP__TAG_PUSH and *arena NULL; 0 when no complete reply is buffered, CP_EPROTO when the bytes
 * are not RESP or a reply arrived with nothing in flight, CP_ENOMEM, CP_EAUTH when the
 * connection's AUTH was refused, or CP_ECONNECT when READONLY was. The handshake's replies are
 * consumed here (state AUTH -> READY after the last); *tag is then one of its handshake's
 * (cp__conn_is_handshake) and *reply NULL, so the owner can move waiting requests in. */
int cp__conn_reply(cp__conn *c, redisReply **reply, uint32_t *tag, cp__reply_arena **arena);

/* 1 when the request at FIFO position i (0 = oldest) had at least one byte written. */
int cp__conn_was_written(const cp__conn *c, size_t i);
uint32_t cp__conn_tag(const cp__conn *c, size_t i);

#endif
