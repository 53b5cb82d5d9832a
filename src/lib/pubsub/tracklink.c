/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The client-side cache's tracking links under RESP2 (tracklink.h).
 */
#include "lib/base/alloc.h"
#include "lib/pubsub/tracklink.h"

#include "lib/cache/cache.h"
#include "lib/pubsub/push.h"
#include "lib/proto/resp.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000

static const char client_id_cmd[] = "*2\r\n$6\r\nCLIENT\r\n$2\r\nID\r\n";
static const char subscribe_cmd[] = "*2\r\n$9\r\nSUBSCRIBE\r\n$20\r\n__redis__:invalidate\r\n";
static const char ping_cmd[] = "*1\r\n$4\r\nPING\r\n";
#define CHANNEL "__redis__:invalidate"

static int active(const cp__client *c) {
    return c->cache != NULL && !c->copts.resp3;
}

/* Node n wants a link: its command connection is open, and it is no replica (replica reads never
 * go into the cache). */
static int wanted(const cp__client *c, int n) {
    return c->nodes[n].conn.state != CP__CONN_CLOSED && c->nodes[n].master < 0;
}

static int up(const cp__tlink *l) {
    return l->id != 0 && l->subscribed;
}

/* The command connection can take a request now: its socket is up (its handshake is written
 * first: a REDIRECT ahead of AUTH would be refused). */
static int takes_requests(const cp__conn *conn) {
    return conn->state == CP__CONN_AUTH || conn->state == CP__CONN_READY;
}

/* Node n's next link waits: 50 ms after the first failure, doubling to 2 s. */
static void back_off(cp__node *node, uint64_t now) {
    unsigned ms = node->tlink_backoff_ms ? node->tlink_backoff_ms * 2 : BACKOFF_MIN_MS;
    node->tlink_backoff_ms = ms > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : ms;
    node->tlink_retry_at = now + (uint64_t)node->tlink_backoff_ms * 1000000ull;
}

/* Link l failed: invalidations may be lost from now on, so what its node served goes, the node
 * is untracked, and a new link waits for the backoff. */
static void link_failed(cp__client *c, cp__tlink *l, uint64_t now) {
    int n = l->node;
    cp__client_free_tlink(c, n);
    cp__cache_node_closed(c->cache, n);
    back_off(&c->nodes[n], now);
}

/* Writes what l has buffered and brings its registration in line. 0, or 1 when that failed it
 * (l is gone). */
static int flush(cp__client *c, cp__tlink *l, uint64_t now) {
    if (cp__conn_flush(&l->conn, now) < 0) {
        link_failed(c, l, now);
        return 1;
    }
    cp__client_sync_conn(c, &l->conn, cp__conn_interest(&l->conn));
    return 0;
}

/* CLIENT ID and SUBSCRIBE, behind the handshake: the id's answer is matched (a FIFO entry), the
 * subscription's comes as a frame. 0 or CP_ENOMEM. */
static int ask(cp__tlink *l, uint64_t now) {
    if (cp__conn_push(&l->conn, client_id_cmd, sizeof(client_id_cmd) - 1, CP__TAG_CLIENT_ID,
                      NULL) != 0 ||
        cp__conn_send(&l->conn, subscribe_cmd, sizeof(subscribe_cmd) - 1) != 0)
        return CP_ENOMEM;
    l->asked = 1;
    l->waits_at = now;
    return 0;
}

/* Opens node n's link, its first requests written when it connected at once; a link that
 * cannot start waits for the backoff. */
static void link_open(cp__client *c, int n, uint64_t now) {
    cp__node *node = &c->nodes[n];
    cp__tlink *l = cp__calloc(1, sizeof(*l));
    if (l == NULL) {
        back_off(node, now);
        return;
    }
    cp__conn_init(&l->conn);
    l->node = n;
    if (cp__conn_start(&l->conn, node->host, node->port, &c->pool_opts) != 0) {
        cp__conn_free(&l->conn);
        cp__free(l);
        back_off(node, now);
        return;
    }
    l->conn.push = 1;
    node->tlink = l;
    if (takes_requests(&l->conn) && ask(l, now) != 0)
        link_failed(c, l, now);
    else
        flush(c, l, now);
}

/* Node n's command connection is sent the REDIRECT to its link when it can take one, is not
 * tracked or asked yet, and its link is up. */
static void arm(cp__client *c, int n) {
    cp__node *node = &c->nodes[n];
    cp__tlink *l = node->tlink;
    if (node->track != CP__TRACK_OFF || l == NULL || !up(l) || !takes_requests(&node->conn))
        return;
    char id[24];
    const char *argv[5] = {"CLIENT", "TRACKING", "ON", "REDIRECT", id};
    size_t argvlen[5] = {6, 8, 2, 8, (size_t)snprintf(id, sizeof(id), "%lld", l->id)};
    cp__buf b = {0};
    int rc = cp__format_argv(&b, 5, argv, argvlen);
    if (rc == 0)
        rc = cp__conn_push(&node->conn, b.data, b.len, CP__TAG_REDIRECT, NULL);
    cp__buf_free(&b);
    if (rc != 0)
        return; /* out of memory: the next timer tries again */
    node->track = CP__TRACK_SENT;
    node->track_id = l->id;
    cp__client_sync_node(c, n);
}

/* l answered all it asked: it is up, and its node's command connection may be redirected. */
static void became_up(cp__client *c, cp__tlink *l) {
    l->waits_at = 0;
    c->nodes[l->node].tlink_backoff_ms = 0;
    arm(c, l->node);
}

static int is(const redisReply *r, const char *word) {
    size_t n = strlen(word);
    return r->type == CP_REPLY_STRING && r->len == n && strncasecmp(r->str, word, n) == 0;
}

/* A frame on link l: an invalidation, the subscription's confirmation, a PING's answer, or an
 * error (what it asked was refused: an ACL). 0, or 1 when it failed the link. */
static int frame(cp__client *c, cp__tlink *l, const redisReply *r, uint64_t now) {
    if (r->type == CP_REPLY_ERROR) {
        link_failed(c, l, now);
        return 1;
    }
    if (r->type != CP_REPLY_ARRAY || r->elements < 2 || r->element[0]->type != CP_REPLY_STRING)
        return 0;
    const redisReply *w = r->element[0];
    if (is(w, "message") && r->elements == 3 && is(r->element[1], CHANNEL)) {
        cp__cache_invalidated(c->cache, l->node, r->element[2]);
        /* Told as the RESP3 push it stands for: a program sees its invalidations either way. */
        redisReply kind = {.type = CP_REPLY_STRING, .str = (char *)"invalidate", .len = 10};
        redisReply *el[2] = {&kind, r->element[2]};
        redisReply push = {.type = CP_REPLY_PUSH, .elements = 2, .element = el};
        cp__push_deliver(c, l->node, &push);
    } else if (is(w, "subscribe") && is(r->element[1], CHANNEL) && !l->subscribed) {
        l->subscribed = 1;
        if (up(l))
            became_up(c, l);
    } else if (is(w, "pong") && up(l)) {
        l->waits_at = 0;
    }
    return 0;
}

cp__tlink *cp__tlink_of_fd(cp__client *c, int fd) {
    if (!active(c))
        return NULL;
    for (int n = 0; n < c->nnodes; n++) {
        cp__tlink *l = c->nodes[n].tlink;
        if (l != NULL && l->conn.fd == fd && l->conn.state != CP__CONN_CLOSED)
            return l;
    }
    return NULL;
}

void cp__tlink_ready(cp__client *c, cp__tlink *l, int events) {
    uint64_t now = cp__now_ns();
    cp__conn *conn = &l->conn;
    if (cp__conn_opening(conn)) {
        if (cp__client_conn_progress(c, conn, events) != 0 ||
            (takes_requests(conn) && !l->asked && ask(l, now) != 0)) {
            link_failed(c, l, now);
            return;
        }
        flush(c, l, now);
        return;
    }
    if (events & CP__EV_READ) {
        int rc = cp__conn_fill(conn);
        for (;;) {
            redisReply *r = NULL;
            uint32_t tag;
            cp__reply_arena *arena;
            int got = cp__conn_reply(conn, &r, &tag, &arena);
            if (got == 0)
                break;
            if (got < 0 || (tag == CP__TAG_CLIENT_ID && r->type != CP_REPLY_INTEGER)) {
                link_failed(c, l, now);
                return;
            }
            if (tag == CP__TAG_CLIENT_ID) {
                l->id = r->integer;
                if (up(l))
                    became_up(c, l);
            } else if (tag == CP__TAG_PUSH && frame(c, l, r, now)) {
                return;
            }
        }
        if (rc < 0) {
            link_failed(c, l, now);
            return;
        }
    }
    flush(c, l, now);
}

int cp__tlink_answered(cp__client *c, int n, const redisReply *r, char *why, size_t whylen) {
    cp__node *node = &c->nodes[n];
    const cp__tlink *l = node->tlink;
    int ok = r->type == CP_REPLY_STATUS && node->track_id != 0 && l != NULL && up(l) &&
             l->id == node->track_id;
    node->track = ok ? CP__TRACK_ON : CP__TRACK_OFF; /* else a link up later is named anew */
    if (r->type != CP_REPLY_ERROR || strstr(r->str, "redirect to does not exist") != NULL)
        return 0; /* a link that closed before the server read the REDIRECT */
    snprintf(why, whylen,
             "CLIENT TRACKING ON REDIRECT refused by %s:%d (the client-side cache needs Redis 6 "
             "or later): %.60s",
             node->host, node->port, r->str);
    return CP_EPROTO;
}

void cp__tlink_timers(cp__client *c, uint64_t now) {
    if (!active(c))
        return;
    uint64_t io_ns = (uint64_t)c->copts.io_timeout_ms * 1000000ull;
    uint64_t ping_ns = c->cache->silence_ns / 2;
    for (int n = 0; n < c->nnodes; n++) {
        cp__tlink *l = c->nodes[n].tlink;
        if (l == NULL) {
            if (wanted(c, n) && now >= c->nodes[n].tlink_retry_at)
                link_open(c, n, now);
            continue; /* its deadlines count from now */
        }
        int opening = l->conn.state != CP__CONN_READY;
        if ((opening && now >= l->conn.connect_deadline) ||
            (!opening && l->waits_at != 0 && now - l->waits_at >= io_ns)) {
            link_failed(c, l, now); /* unreachable, or stopped: its questions unanswered */
            continue;
        }
        if (up(l) && l->waits_at == 0 && now - l->conn.last_io_ns >= ping_ns) {
            if (cp__conn_send(&l->conn, ping_cmd, sizeof(ping_cmd) - 1) != 0)
                continue;
            l->waits_at = now;
            if (flush(c, l, now))
                continue;
        }
        arm(c, n);
    }
}

uint64_t cp__tlink_next_wake(const cp__client *c) {
    if (!active(c))
        return 0;
    uint64_t wake = 0;
#define EARLIER(t) wake = (wake == 0 || (t) < wake ? (t) : wake)
    uint64_t io_ns = (uint64_t)c->copts.io_timeout_ms * 1000000ull;
    uint64_t ping_ns = c->cache->silence_ns / 2;
    for (int n = 0; n < c->nnodes; n++) {
        const cp__node *node = &c->nodes[n];
        const cp__tlink *l = node->tlink;
        if (l == NULL) {
            if (wanted(c, n))
                EARLIER(node->tlink_retry_at > 0 ? node->tlink_retry_at : 1);
        } else if (l->conn.state != CP__CONN_READY) {
            EARLIER(l->conn.connect_deadline);
        } else {
            if (l->waits_at != 0)
                EARLIER(l->waits_at + io_ns);
            else if (up(l))
                EARLIER(l->conn.last_io_ns + ping_ns);
            if (up(l) && node->track == CP__TRACK_OFF && takes_requests(&node->conn))
                EARLIER(1);
        }
    }
#undef EARLIER
    return wake;
}

void cp__tlink_sync_all(cp__client *c) {
    for (int n = 0; n < c->nnodes; n++)
        if (c->nodes[n].tlink != NULL)
            cp__client_sync_conn(c, &c->nodes[n].tlink->conn,
                                 cp__conn_interest(&c->nodes[n].tlink->conn));
}

void cp__tlink_unregister_all(cp__client *c) {
    for (int n = 0; n < c->nnodes; n++)
        if (c->nodes[n].tlink != NULL)
            cp__client_unregister_conn(c, &c->nodes[n].tlink->conn);
}
