/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Host names resolved without blocking: a client's c-ares channel (made at its first host name,
 * so a client of numeric addresses never has one), its sockets handed to the client's loop like
 * a connection's fd, and one query per connection that resolves a name. A query's end is told
 * through an eventfd the connection owns and the loop watches, so that a connection waiting
 * for its addresses is, to its owner, a connection waiting for readiness like any other
 * (conn.h, CP__CONN_RESOLVING). Deadlines are the owner's (the connect timeout): a query its
 * connection gave up on is dropped and ends on its own (c-ares's tries) or at cp__resolve_free.
 *
 * c-ares allocates with its own functions, as OpenSSL does (clusterpipe.h, cp_allocators).
 * Owned by its client; one thread, the client's. No thread is ever made: c-ares answers inside
 * cp__resolve_ready and cp__resolve_timers, or inside cp__resolve_start for names it finds in
 * the hosts file.
 */
#ifndef CLUSTERPIPE_RESOLVE_H
#define CLUSTERPIPE_RESOLVE_H

#include <stdint.h>
#include <sys/socket.h>

/* Addresses to connect to, in the order to try them. */
#define CP__ADDRS_MAX 8
typedef struct cp__addrs {
    int n, next; /* next: the first not tried yet */
    socklen_t len[CP__ADDRS_MAX];
    struct sockaddr_storage a[CP__ADDRS_MAX];
} cp__addrs;

/* One of c-ares's sockets and the loop's registration of it. */
typedef struct cp__rsock {
    int fd;
    uint8_t want;  /* CP_EV_* c-ares asked for */
    uint8_t ev;    /* registered with the loop (the owner keeps it) */
    void *ev_data; /* the loop adapter's slot */
} cp__rsock;

/* Told at once, from inside c-ares, when socket s wants other readiness (s->want) or is about
 * to be closed (closing 1, s->want 0): the owner registers it, or lets the loop go of it before
 * the close. */
typedef void cp__rsock_hook(void *owner, cp__rsock *s, int closing);

typedef struct cp__query cp__query;

typedef struct cp__resolver {
    void *channel;       /* ares_channel; NULL until the first host name */
    const char *servers; /* "ip[:port],..." (the client's copy); NULL: /etc/resolv.conf's */
    int try_ms;          /* c-ares's timeout of one try; the connect timeout bounds the whole */
    cp__rsock *socks;
    int nsocks, capsocks;
    cp__rsock_hook *hook;
    void *owner;
    uint64_t resolved; /* names answered with addresses (cp_stats.resolved) */
    int failed_init;   /* the channel could not be made: its reason stays in why */
    char why[128];
} cp__resolver;

/* Family order (cp_options.prefer_ip): CP_PREFER_IP_ANY keeps the resolver's order. */
void cp__addrs_order(cp__addrs *a, int prefer_ip);

/* Starts resolving host (a name, not a numeric address) for port. When it ends, efd (an
 * eventfd the caller owns and keeps open) becomes readable. A query, or NULL with a reason in
 * err (the channel could not be made, out of memory). */
cp__query *cp__resolve_start(cp__resolver *r, const char *host, int port, int prefer_ip, int efd,
                             char *err, size_t errlen);

/* 1 when q has ended (efd was written), else 0. */
int cp__resolve_done(const cp__query *q);

/* An ended query's addresses, which the caller then owns (cp__free), or NULL with the reason
 * in err (the name has no address, the server failed, out of memory). Frees q. */
cp__addrs *cp__resolve_finish(cp__query *q, char *err, size_t errlen);

/* Forgets a query whose connection no longer waits for it (closed, timed out): freed now if it
 * ended, else when c-ares ends it. NULL is fine. */
void cp__resolve_drop(cp__query *q);

/* c-ares's socket fd, or NULL. */
cp__rsock *cp__resolve_sock(cp__resolver *r, int fd);

/* The loop reported events (CP_EV_*) on one of its sockets: replies read, queries ended. */
void cp__resolve_ready(cp__resolver *r, int fd, int events);

/* Retries and c-ares's own timeouts that are due (the client's timer). */
void cp__resolve_timers(cp__resolver *r);

/* When c-ares next needs cp__resolve_timers (CLOCK_MONOTONIC ns), 0 for never. */
uint64_t cp__resolve_next_wake(const cp__resolver *r);

/* Ends every query (each dropped one freed; one still waited for is ended as failed and freed
 * by its connection) and closes the channel's sockets through the hook. The resolver can start
 * again afterwards. */
void cp__resolve_free(cp__resolver *r);

#endif
