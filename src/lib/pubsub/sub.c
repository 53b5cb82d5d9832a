/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Subscriptions and their links (sub.h). Both are arrays of separately allocated entries on the
 * client, searched linearly: a program has a handful of subscriptions per node, and they change
 * seldom. A callback may subscribe, unsubscribe or free the client (put off by the loop's call),
 * so every walk that calls back looks its entries up again afterwards. One thread, the client's.
 */
#include "lib/base/alloc.h"
#include "lib/pubsub/sub.h"

#include "lib/client/lifecycle.h"
#include "lib/proto/resp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PING_IDLE_NS 1000000000ull /* a link quiet this long gets a PING */
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000
/* After a subscriber's connection failed, nothing is (re)subscribed for this long, a new slot
 * map or not: the messages its node delivered just before it failed may still be on their way to
 * the other nodes (the cluster bus brings a PUBLISH to each node on its own; a promoted replica
 * applies its replication stream), and subscribing there before they arrive would deliver them
 * twice (seen on CI: a node 32 ms behind another, 16 messages twice). At-most-once: what is
 * published meanwhile is lost, as while the subscription is away. */
#define SETTLE_NS 250000000ull

static const char *const subscribe_cmd[] = {"SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE"};
static const char *const unsubscribe_cmd[] = {"UNSUBSCRIBE", "PUNSUBSCRIBE", "SUNSUBSCRIBE"};
static const char ping_cmd[] = "*1\r\n$4\r\nPING\r\n";

/* ---- the lists ------------------------------------------------------------------------------- */

/* A subscription of this kind and name that is not ending (ending: 0: there is at most one), or
 * one that is (ending: 1); NULL when there is none such. A name subscribed to again while its
 * cp_unsubscribe is under way waits for that one to end (send_waiting). */
static cp__sub *find(const cp__client *c, int kind, const char *name, size_t len, int ending) {
    for (int i = 0; i < c->nsubs; i++) {
        cp__sub *s = c->subs[i];
        if (s->kind == kind && s->len == len && memcmp(s->name, name, len) == 0 &&
            (s->state == CP__SUB_ENDING) == ending)
            return s;
    }
    return NULL;
}

static int kind_shard(int kind) {
    return kind == CP_SUB_SHARD;
}

/* Calls s's callback with one event. */
static void notify(cp__client *c, cp__sub *s, cp_sub_event ev, const redisReply *channel,
                   const redisReply *payload, int err, const char *errstr, int node) {
    cp_sub_msg m = {.event = ev,
                    .kind = (cp_sub_kind)s->kind,
                    .name = s->name,
                    .name_len = s->len,
                    .channel = channel != NULL ? channel->str : NULL,
                    .channel_len = channel != NULL ? channel->len : 0,
                    .payload = payload != NULL ? payload->str : NULL,
                    .payload_len = payload != NULL ? payload->len : 0,
                    .err = err,
                    .errstr = errstr != NULL ? errstr : "",
                    .node = node};
    s->cb(&c->pub, &m, s->data);
}

/* The subscription is over: its last event, then it goes. Its link's pending list no longer
 * names it (an answer consumed it, or the link is gone). */
static void end(cp__client *c, cp__sub *s, int err, const char *errstr) {
    int node = s->link != NULL ? s->link->node : -1;
    for (int i = 0; i < c->nsubs; i++)
        if (c->subs[i] == s) {
            c->subs[i] = c->subs[--c->nsubs];
            break;
        }
    c->sub_due = c->sub_due ? c->sub_due : 1; /* its link may now have nothing to carry */
    notify(c, s, CP_SUB_ENDED, NULL, NULL, err, errstr, node);
    cp__free(s->name);
    cp__free(s);
}

int cp__sub_add(cp__client *c, int kind, const char *name, size_t len, cp_sub_callback *cb,
                void *data) {
    if (kind < CP_SUB_CHANNEL || kind > CP_SUB_SHARD)
        return cp__client_err(c, CP_EINVAL, "cp_subscribe: unknown kind %d", kind);
    if (find(c, kind, name, len, 0) != NULL)
        return cp__client_err(c, CP_EINVAL, "cp_subscribe: already subscribed to \"%.*s\"",
                              (int)(len > 64 ? 64 : len), name);
    if (c->nsubs == c->capsubs) {
        int ncap = c->capsubs ? c->capsubs * 2 : 8;
        cp__sub **v = cp__realloc(c->subs, (size_t)ncap * sizeof(*v));
        if (v == NULL)
            return cp__client_err(c, CP_ENOMEM, "out of memory");
        c->subs = v;
        c->capsubs = ncap;
    }
    cp__sub *s = cp__calloc(1, sizeof(*s));
    char *copy = cp__malloc(len + 1);
    if (s == NULL || copy == NULL) {
        cp__free(s);
        cp__free(copy);
        return cp__client_err(c, CP_ENOMEM, "out of memory");
    }
    memcpy(copy, name, len);
    copy[len] = '\0';
    *s = (cp__sub){kind, copy, len, cb, data, CP__SUB_WAITING, 0, 0, NULL, -1};
    c->subs[c->nsubs++] = s;
    c->sub_due = 1;
    return 0;
}

int cp__sub_remove(cp__client *c, int kind, const char *name, size_t len) {
    cp__sub *s = find(c, kind, name, len, 0);
    if (s == NULL)
        return cp__client_err(c, CP_EINVAL, "cp_unsubscribe: %s \"%.*s\"",
                              find(c, kind, name, len, 1) == NULL ? "not subscribed to"
                                                                  : "already ending",
                              (int)(len > 64 ? 64 : len), name);
    int sent = s->state == CP__SUB_SENT; /* its SUBSCRIBE's answer comes first */
    s->state = CP__SUB_ENDING;
    s->unsent = 1;
    if (sent)
        s->unsent = 2; /* written after the confirmation */
    c->sub_due = 1;
    return 0;
}

/* ---- links ----------------------------------------------------------------------------------- */

static void link_free(cp__client *c, cp__slink *l) {
    cp__client_unregister_conn(c, &l->conn);
    cp__conn_free(&l->conn);
    for (int i = 0; i < c->nlinks; i++)
        if (c->links[i] == l) {
            c->links[i] = c->links[--c->nlinks];
            break;
        }
    cp__free(l->ops);
    cp__free(l);
}

/* The link to node n for shard channels (shard) or classic subscriptions, opened when there is
 * none. NULL when it cannot be started (the reason on the client). */
static cp__slink *link_to(cp__client *c, int n, int shard) {
    for (int i = 0; i < c->nlinks; i++)
        if (c->links[i]->node == n && c->links[i]->shard == shard)
            return c->links[i];
    if (c->nlinks == c->caplinks) {
        int ncap = c->caplinks ? c->caplinks * 2 : 4;
        cp__slink **v = cp__realloc(c->links, (size_t)ncap * sizeof(*v));
        if (v == NULL)
            return NULL;
        c->links = v;
        c->caplinks = ncap;
    }
    cp__slink *l = cp__calloc(1, sizeof(*l));
    if (l == NULL)
        return NULL;
    cp__conn_init(&l->conn);
    l->node = n;
    l->shard = shard;
    if (cp__conn_start(&l->conn, c->nodes[n].host, c->nodes[n].port, &c->pool_opts) != 0) {
        cp__client_err(c, l->conn.err, "subscriber's connection: %s", l->conn.errstr);
        cp__conn_free(&l->conn);
        cp__free(l);
        return NULL;
    }
    l->conn.push = 1;
    c->links[c->nlinks++] = l;
    cp__client_sync_conn(c, &l->conn, cp__conn_interest(&l->conn));
    return l;
}

/* Room for one more command awaiting its answer on l. 0 or CP_ENOMEM. */
static int op_room(cp__slink *l) {
    if (l->head + l->nops < l->capops)
        return 0;
    if (l->head > 0) {
        memmove(l->ops, l->ops + l->head, l->nops * sizeof(*l->ops));
        l->head = 0;
        return 0;
    }
    size_t ncap = l->capops ? l->capops * 2 : 8;
    cp__subop *v = cp__realloc(l->ops, ncap * sizeof(*v));
    if (v == NULL)
        return CP_ENOMEM;
    l->ops = v;
    l->capops = ncap;
    return 0;
}

/* Writes SUBSCRIBE (or the UNSUBSCRIBE of it) for s on l and remembers it. 0 or CP_ENOMEM. */
static int write_op(cp__slink *l, cp__sub *s, int unsub) {
    int rc = op_room(l);
    if (rc != 0)
        return rc;
    const char *argv[2] = {unsub ? unsubscribe_cmd[s->kind] : subscribe_cmd[s->kind], s->name};
    size_t argvlen[2] = {strlen(argv[0]), s->len};
    cp__buf b = {0};
    rc = cp__format_argv(&b, 2, argv, argvlen);
    if (rc == 0)
        rc = cp__conn_send(&l->conn, b.data, b.len);
    cp__buf_free(&b);
    if (rc != 0)
        return rc;
    l->ops[l->head + l->nops++] = (cp__subop){s, unsub};
    return 0;
}

/* Writes the keepalive PING and remembers it as an op of no subscription: its answer, "pong" or
 * an error (a server LOADING, an ACL that forbids PING), is then never taken for the answer of a
 * SUBSCRIBE written before or after it. 0 or CP_ENOMEM. */
static int write_ping(cp__slink *l) {
    int rc = op_room(l);
    if (rc == 0)
        rc = cp__conn_send(&l->conn, ping_cmd, sizeof(ping_cmd) - 1);
    if (rc == 0)
        l->ops[l->head + l->nops++] = (cp__subop){NULL, 0};
    return rc;
}

/* Where s goes now: its shard channel's master (or the node a MOVED named), the classic
 * link's node, a master with a ready connection, any master; -1 while the map names none. */
static int target(const cp__client *c, const cp__sub *s) {
    if (!c->cluster)
        return 0;
    if (kind_shard(s->kind)) {
        if (s->moved_to >= 0)
            return s->moved_to;
        return cp__slottab_lookup(&c->slottab, (int)cp_keyslot(s->name, s->len));
    }
    for (int i = 0; i < c->nlinks; i++)
        if (!c->links[i]->shard)
            return c->links[i]->node;
    int any = -1;
    for (int n = 0; n < c->nnodes; n++)
        if (c->nodes[n].is_master && c->nodes[n].healthy) {
            if (c->nodes[n].conn.state == CP__CONN_READY)
                return n;
            if (any < 0)
                any = n;
        }
    return any;
}

/* Something failed (a link, a start): try again after a backoff, 50 ms doubling to 2 s. */
static void back_off(cp__client *c, uint64_t now) {
    unsigned ms = c->sub_backoff_ms ? c->sub_backoff_ms * 2 : BACKOFF_MIN_MS;
    c->sub_backoff_ms = ms > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : ms;
    uint64_t at = now + (uint64_t)c->sub_backoff_ms * 1000000ull;
    if (c->sub_due == 0 || c->sub_due > at)
        c->sub_due = at;
    c->sub_gen = c->refresh.generation; /* a map that comes before then is tried at once */
}

/* Something waits for its backoff, and a slot map came since it failed: no reason to wait. */
static int new_map(const cp__client *c) {
    return c->sub_due > 1 && c->refresh.generation != c->sub_gen;
}

/* Link l failed: its subscriptions are lost (sent again later), the ones ending are over. */
static void link_failed(cp__client *c, cp__slink *l, uint64_t now) {
    l->nops = 0;
    for (int i = 0; i < c->nsubs; i++) {
        cp__sub *s = c->subs[i];
        if (s->link != l)
            continue;
        s->link = NULL;
        s->moved_to = -1;
        if (s->state != CP__SUB_ENDING)
            s->state = CP__SUB_WAITING;
    }
    link_free(c, l);
    c->need_refresh = c->cluster; /* a failover may be under way */
    back_off(c, now);
    c->sub_settle_at = now + SETTLE_NS;
    /* The ones that were ending: no longer subscribed anywhere. */
    for (int i = 0; i < c->nsubs; i++)
        if (c->subs[i]->state == CP__SUB_ENDING && c->subs[i]->link == NULL) {
            end(c, c->subs[i], 0, "");
            i = -1; /* the list changed: from the start */
        }
}

/* Sends what waits: subscriptions without a link or not written yet, UNSUBSCRIBEs; closes
 * links that carry nothing. Calls back only to end subscriptions that never got a link. */
static void send_waiting(cp__client *c, uint64_t now) {
    if (now < c->sub_settle_at) { /* a connection failed just now: SETTLE_NS */
        c->sub_due = c->sub_settle_at;
        cp__sub_sync_all(c);
        return;
    }
    c->sub_due = 0;
    for (int i = 0; i < c->nsubs; i++) {
        cp__sub *s = c->subs[i];
        if (s->state == CP__SUB_WAITING) {
            /* Subscribed again while the name's UNSUBSCRIBE is under way: after it is answered
             * (a SUBSCRIBE written first would be undone by it). Its end makes this due. */
            if (find(c, s->kind, s->name, s->len, 1) != NULL)
                continue;
            if (s->link == NULL) {
                int n = target(c, s);
                if (n < 0) { /* no map yet, or none names the slot: wait for one */
                    c->need_refresh = c->cluster;
                    back_off(c, now);
                    continue;
                }
                if ((s->link = link_to(c, n, kind_shard(s->kind))) == NULL) {
                    back_off(c, now);
                    continue;
                }
            }
            if (s->link->conn.state != CP__CONN_READY)
                continue; /* sent once its handshake is answered */
            if (write_op(s->link, s, 0) != 0) {
                back_off(c, now);
                continue;
            }
            s->state = CP__SUB_SENT;
        } else if (s->state == CP__SUB_ENDING && s->unsent == 1) {
            if (s->link == NULL) {
                end(c, s, 0, "");
                i = -1;
                continue;
            }
            if (s->link->conn.state != CP__CONN_READY || write_op(s->link, s, 1) != 0)
                continue;
            s->unsent = 0;
        }
    }
    for (int i = 0; i < c->nlinks; i++) { /* a link with nothing to carry goes */
        cp__slink *l = c->links[i];
        int used = l->nops > 0;
        for (int k = 0; k < c->nsubs && !used; k++)
            used = c->subs[k]->link == l;
        if (!used) {
            link_free(c, l);
            i--;
        }
    }
    cp__sub_sync_all(c);
}

/* ---- frames ---------------------------------------------------------------------------------- */

static int is(const redisReply *r, const char *word) {
    size_t n = strlen(word);
    return r->type == REDIS_REPLY_STRING && r->len == n && strncasecmp(r->str, word, n) == 0;
}

static int same_name(const cp__sub *s, const redisReply *r) {
    return r->type == REDIS_REPLY_STRING && r->len == s->len &&
           memcmp(r->str, s->name, s->len) == 0;
}

/* The subscription of this kind and name that link l carries, or NULL. (A name subscribed to
 * again is sent only once the one ending has gone: a link carries one per name.) */
static cp__sub *on_link(cp__client *c, cp__slink *l, int kind, const redisReply *name) {
    for (int i = 0; i < c->nsubs; i++) {
        cp__sub *s = c->subs[i];
        if (s->link == l && s->kind == kind && same_name(s, name))
            return s;
    }
    return NULL;
}

/* The oldest command l wrote and has no answer for, taken off the list (NULL when none). */
static cp__subop *pop_op(cp__slink *l) {
    if (l->nops == 0)
        return NULL;
    l->nops--;
    return &l->ops[l->head++];
}

/* A confirmation of (un)subscribing, as the kind it names: 0 channel, 1 pattern, 2 shard. */
static int confirm_kind(const redisReply *w, const char *const *words) {
    for (int k = 0; k < 3; k++)
        if (is(w, words[k]))
            return k;
    return -1;
}

static void frame(cp__client *c, cp__slink *l, const redisReply *r, uint64_t now) {
    static const char *const subscribed[] = {"subscribe", "psubscribe", "ssubscribe"};
    static const char *const unsubscribed[] = {"unsubscribe", "punsubscribe", "sunsubscribe"};
    l->ping_at = 0;                     /* the link is alive */
    if (r->type == REDIS_REPLY_ERROR) { /* the answer to the oldest command written */
        cp__subop *op = pop_op(l);
        if (op == NULL || op->sub == NULL)
            return; /* the PING's answer: an error, but an answer (the link is alive) */
        cp__sub *s = op->sub;
        int slot, port;
        char host[CP__HOSTLEN];
        if (!op->unsub && cp__classify(r, &slot, host, sizeof(host), &port) == CP__ERR_MOVED) {
            if (host[0] == '\0') /* ":port": the node asked (copied: adding one moves them) */
                snprintf(host, sizeof(host), "%s", c->nodes[l->node].host);
            int m = cp__client_node(c, host, port);
            s->moved_to = m >= 0 ? m : -1;
            s->link = NULL;
            s->state = s->state == CP__SUB_ENDING ? CP__SUB_ENDING : CP__SUB_WAITING;
            if (s->state == CP__SUB_ENDING)
                s->unsent = 1;
            c->need_refresh = 1;
            c->sub_due = 1;
            return;
        }
        end(c, s, CP_ESERVER, r->str);
        return;
    }
    if (r->type == CP_REPLY_STATUS) { /* RESP3's answer to PING: +PONG */
        if (l->nops > 0 && l->ops[l->head].sub == NULL)
            pop_op(l);
        return;
    }
    if ((r->type != CP_REPLY_ARRAY && r->type != CP_REPLY_PUSH) || r->elements < 1 ||
        r->element[0]->type != CP_REPLY_STRING)
        return; /* RESP3 sends the same frames as pushes */
    const redisReply *w = r->element[0];
    int k;
    if ((is(w, "message") || is(w, "smessage")) && r->elements == 3) {
        cp__sub *s = on_link(c, l, is(w, "message") ? CP_SUB_CHANNEL : CP_SUB_SHARD, r->element[1]);
        if (s != NULL)
            notify(c, s, CP_SUB_MESSAGE, r->element[1], r->element[2], 0, NULL, l->node);
    } else if (is(w, "pmessage") && r->elements == 4) {
        cp__sub *s = on_link(c, l, CP_SUB_PATTERN, r->element[1]);
        if (s != NULL)
            notify(c, s, CP_SUB_MESSAGE, r->element[2], r->element[3], 0, NULL, l->node);
    } else if ((k = confirm_kind(w, subscribed)) >= 0) {
        cp__subop *op = l->nops > 0 ? &l->ops[l->head] : NULL;
        if (op == NULL || op->sub == NULL || op->unsub || op->sub->kind != k || r->elements < 2 ||
            !same_name(op->sub, r->element[1]))
            return; /* not ours: nothing written asked for it */
        cp__sub *s = pop_op(l)->sub;
        c->sub_backoff_ms = 0;
        int again = s->ever;
        s->ever = 1;
        if (s->state == CP__SUB_ENDING) { /* unsubscribed meanwhile: now it may go out */
            s->unsent = 1;
            c->sub_due = 1;
        } else {
            s->state = CP__SUB_ON;
        }
        if (again) /* first: its callback may unsubscribe, and s go */
            cp__lifecycle_resubscribed(c, l->node, s->kind, s->name, s->len);
        notify(c, s, again ? CP_SUB_RESUBSCRIBED : CP_SUB_SUBSCRIBED, NULL, NULL, 0, NULL, l->node);
    } else if ((k = confirm_kind(w, unsubscribed)) >= 0) {
        cp__subop *op = l->nops > 0 ? &l->ops[l->head] : NULL;
        if (r->elements < 2)
            return;
        if (op != NULL && op->sub != NULL && op->unsub && op->sub->kind == k &&
            same_name(op->sub, r->element[1])) {
            end(c, pop_op(l)->sub, 0, "");
            return;
        }
        /* Unasked: the server dropped it (a shard channel whose slot moved). Sent again where
         * the map says, once it is re-read. */
        cp__sub *s = on_link(c, l, k, r->element[1]);
        if (s == NULL || s->state != CP__SUB_ON)
            return;
        s->state = CP__SUB_WAITING;
        s->link = NULL;
        s->moved_to = -1;
        c->need_refresh = c->cluster;
        back_off(c, now);
    } else if (is(w, "pong") && l->nops > 0 && l->ops[l->head].sub == NULL) {
        pop_op(l); /* RESP2's answer to PING on a subscribed connection: ["pong", ""] */
    }
}

/* ---- the loop's calls ------------------------------------------------------------------------ */

cp__slink *cp__sub_of_fd(cp__client *c, int fd) {
    for (int i = 0; i < c->nlinks; i++)
        if (c->links[i]->conn.fd == fd && c->links[i]->conn.state != CP__CONN_CLOSED)
            return c->links[i];
    return NULL;
}

/* l is still one of the client's links (only its pointer is compared). */
static int alive(const cp__client *c, const cp__slink *l) {
    for (int i = 0; i < c->nlinks; i++)
        if (c->links[i] == l)
            return 1;
    return 0;
}

/* Writes what l has buffered. 0, or 1 when that failed it (l is gone). */
static int flush(cp__client *c, cp__slink *l, uint64_t now) {
    if (cp__conn_flush(&l->conn, now) < 0) {
        link_failed(c, l, now);
        return 1;
    }
    cp__client_sync_conn(c, &l->conn, cp__conn_interest(&l->conn));
    return 0;
}

void cp__sub_ready(cp__client *c, cp__slink *l, int events) {
    uint64_t now = cp__now_ns();
    cp__conn *conn = &l->conn;
    if (cp__conn_opening(conn)) {
        int rc = cp__client_conn_progress(c, conn, events);
        if (rc != 0) {
            link_failed(c, l, now);
            return;
        }
        if (conn->state == CP__CONN_READY) /* no handshake: its subscriptions go now */
            send_waiting(c, now);
        else
            flush(c, l, now); /* the handshake */
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
            if (got < 0) {
                link_failed(c, l, now);
                return;
            }
            if (tag == CP__TAG_PUSH) {
                frame(c, l, r, now); /* callbacks: l stays (only its failure frees it) */
            } else if (conn->state == CP__CONN_READY) { /* the handshake answered */
                send_waiting(c, now);
                if (!alive(c, l))
                    return; /* nothing to carry: closed */
            }
        }
        if (rc < 0) {
            link_failed(c, l, now);
            return;
        }
    }
    flush(c, l, now);
}

void cp__sub_timers(cp__client *c, uint64_t now) {
    uint64_t io_ns = (uint64_t)c->copts.io_timeout_ms * 1000000ull;
    for (int i = 0; i < c->nlinks; i++) {
        cp__slink *l = c->links[i];
        cp__conn *conn = &l->conn;
        int opening = conn->state != CP__CONN_READY;
        if ((opening && now >= conn->connect_deadline) ||
            (!opening && l->ping_at != 0 && now - l->ping_at >= io_ns)) {
            link_failed(c, l, now); /* unreachable, or stopped: no answer to its PING */
            i = -1;
            continue;
        }
        if (!opening && l->ping_at == 0 && now - conn->last_io_ns >= PING_IDLE_NS) {
            if (write_ping(l) == 0) {
                l->ping_at = now;
                if (flush(c, l, now))
                    i = -1;
            }
        }
    }
    if (c->sub_due != 0 && (now >= c->sub_due || new_map(c)))
        send_waiting(c, now);
}

uint64_t cp__sub_next_wake(const cp__client *c) {
    uint64_t wake = new_map(c) ? 1 : c->sub_due;
    if (wake != 0 && wake < c->sub_settle_at)
        wake = c->sub_settle_at;
#define EARLIER(t) wake = (wake == 0 || (t) < wake ? (t) : wake)
    uint64_t io_ns = (uint64_t)c->copts.io_timeout_ms * 1000000ull;
    for (int i = 0; i < c->nlinks; i++) {
        const cp__slink *l = c->links[i];
        if (l->conn.state != CP__CONN_READY)
            EARLIER(l->conn.connect_deadline);
        else if (l->ping_at != 0)
            EARLIER(l->ping_at + io_ns);
        else
            EARLIER(l->conn.last_io_ns + PING_IDLE_NS);
    }
    /* a subscription waits for the map: the refresh is the timer's to start */
    if (c->sub_due != 0 && c->cluster && c->need_refresh && !c->refresh.running)
        EARLIER(c->refresh.not_before ? c->refresh.not_before : 1);
#undef EARLIER
    return wake;
}

void cp__sub_sync_all(cp__client *c) {
    for (int i = 0; i < c->nlinks; i++)
        cp__client_sync_conn(c, &c->links[i]->conn, cp__conn_interest(&c->links[i]->conn));
}

void cp__sub_unregister_all(cp__client *c) {
    for (int i = 0; i < c->nlinks; i++)
        cp__client_unregister_conn(c, &c->links[i]->conn);
}

void cp__sub_end_all(cp__client *c, int code, const char *why) {
    while (c->nlinks > 0)
        link_free(c, c->links[c->nlinks - 1]);
    while (c->nsubs > 0) {
        cp__sub *s = c->subs[c->nsubs - 1];
        s->link = NULL;
        end(c, s, code, why);
    }
    c->sub_due = 0;
}
