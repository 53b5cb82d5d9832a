/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Pub/sub on a real cluster (docs/async.md, "Pub/sub"): subscriptions on connections of their
 * own, through cp_subscribe on the built-in loop.
 *
 *  - classic, pattern and sharded subscribers receive every message published while nothing
 *    fails, in order, and each once;
 *  - the client that subscribes keeps answering commands right: after a PUBLISH to a channel it
 *    is subscribed to, its GET answers the key's value (a SUBSCRIBE sent as a command is
 *    refused, never sent);
 *  - a shard channel whose slot migrates: the server drops the subscription, the library
 *    subscribes again at the new owner (CP_SUB_RESUBSCRIBED);
 *  - a kill -9 of the master carrying both a classic and a shard subscription: both come back,
 *    the classic one on another master, the shard one on the promoted replica.
 * The last two measure how long the subscription was away and count the messages lost (at most
 * once: some are, while it is away) and received twice (never). A publisher thread sends a
 * numbered message every 2 ms throughout, through a client of its own.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <pthread.h>

#include "asserts.h"
#include "clusterpipe/clusterpipe.h"
#include "evlog.h"
#include "fixture.h"
#include "slotmover.h"
#include "testutil.h"
#include "util/clock.h"

#define MAXSEQ 200000
#define BIG 300000 /* bytes of a big message */
#define NBIG 5

/* ---- one subscription's record ------------------------------------------------------------- */

typedef struct record {
    _Atomic long messages, subscribed, resubscribed, ended;
    _Atomic long dups, out_of_order, wrong;
    _Atomic long big;                  /* messages of BIG bytes, every byte right */
    _Atomic long last;                 /* the last sequence number received */
    _Atomic uint64_t lost_at, back_at; /* when it was lost (for the test's clock) and back */
    _Atomic int node;
    _Atomic int port;    /* of that node */
    unsigned char *seen; /* [MAXSEQ]: 1 + the node it came from (255 for nodes past 253) */
    /* The first message received twice: its number, the nodes of both deliveries, and when
     * (printed by a failing case, so that one failure says where the copy came from). */
    long dup_seq;
    int dup_nodes[2];
    uint64_t dup_at;
    char prefix[32];
} record;

static void record_init(record *r, const char *prefix) {
    memset(r, 0, sizeof(*r));
    r->seen = calloc(MAXSEQ, 1);
    assert_non_null(r->seen);
    snprintf(r->prefix, sizeof(r->prefix), "%s", prefix);
    atomic_store(&r->last, -1);
}

static void on_sub(cp_client *c, const cp_sub_msg *m, void *data) {
    record *r = data;
    atomic_store(&r->node, m->node);
    cp_node_info info;
    if (cp_node_get(c, m->node, &info) == 0)
        atomic_store(&r->port, info.port);
    switch (m->event) {
    case CP_SUB_SUBSCRIBED:
        atomic_fetch_add(&r->subscribed, 1);
        break;
    case CP_SUB_RESUBSCRIBED:
        atomic_fetch_add(&r->resubscribed, 1);
        atomic_store(&r->back_at, cp__now_ns());
        break;
    case CP_SUB_ENDED:
        atomic_fetch_add(&r->ended, 1);
        break;
    case CP_SUB_MESSAGE: {
        /* Counted before messages, which the test waits for: once messages are all in, their
         * big ones are too. */
        if (m->payload_len == BIG) { /* "<prefix>:<seq>:" and x to the end, read in pieces */
            size_t i = 0;
            while (i < BIG && m->payload[i] != 'x')
                i++;
            while (i < BIG && m->payload[i] == 'x')
                i++;
            atomic_fetch_add(&r->big, i == BIG);
        }
        atomic_fetch_add(&r->messages, 1);
        size_t plen = strlen(r->prefix);
        char buf[64];
        size_t n = m->payload_len < sizeof(buf) - 1 ? m->payload_len : sizeof(buf) - 1;
        memcpy(buf, m->payload, n);
        buf[n] = '\0';
        if (n <= plen || memcmp(buf, r->prefix, plen) != 0 || buf[plen] != ':') {
            atomic_fetch_add(&r->wrong, 1);
            break;
        }
        long seq = atol(buf + plen + 1);
        if (seq < 0 || seq >= MAXSEQ) {
            atomic_fetch_add(&r->wrong, 1);
            break;
        }
        if (r->seen[seq] && atomic_fetch_add(&r->dups, 1) == 0) {
            r->dup_seq = seq;
            r->dup_nodes[0] = r->seen[seq] - 1;
            r->dup_nodes[1] = m->node;
            r->dup_at = cp__now_ns();
        }
        r->seen[seq] = (unsigned char)(m->node < 254 ? m->node + 1 : 255);
        if (seq <= atomic_load(&r->last))
            atomic_fetch_add(&r->out_of_order, 1);
        atomic_store(&r->last, seq);
        break;
    }
    }
}

/* No message came twice; else the first copy: which, from which nodes, how long after t0. */
static void assert_no_dups(const record *r, uint64_t t0) {
    long dups = atomic_load(&r->dups);
    if (dups != 0)
        fail_msg("%s: %ld message(s) received twice; the first, %s:%ld, from node %d then node "
                 "%d, %.1f ms after the case's event",
                 r->prefix, dups, r->prefix, r->dup_seq, r->dup_nodes[0], r->dup_nodes[1],
                 ((double)r->dup_at - (double)t0) / 1e6);
}

/* Messages 0..n-1 that never came. */
static long lost_of(const record *r, long n) {
    long lost = 0;
    for (long i = 0; i < n && i < MAXSEQ; i++)
        lost += !r->seen[i];
    return lost;
}

/* ---- the subscriber: a client on cp_loop in a thread of its own ---------------------------- */

typedef struct subscriber {
    cp_fixture *f;
    cp_client *c;
    cp_loop *l;
    pthread_t th;
    _Atomic int stop;
    int running;
} subscriber;

static void *sub_loop(void *arg) {
    subscriber *s = arg;
    while (!atomic_load(&s->stop))
        cp_loop_run_once(s->l, 5);
    return NULL;
}

static void sub_start(subscriber *s, cp_fixture *f) {
    memset(s, 0, sizeof(*s));
    s->f = f;
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = f->endpoints;
    o.io_timeout_ms = 2000; /* a stopped or dead link is noticed this soon after its PING */
    cp_test_protocol(&o);
    s->c = cp_client_new(&o);
    assert_non_null(s->c);
    assert_int_equal(s->c->err, 0);
    s->l = cp_loop_new();
    assert_non_null(s->l);
    assert_int_equal(cp_loop_attach(s->l, s->c), 0);
}

static void sub_run(subscriber *s) {
    atomic_store(&s->stop, 0);
    assert_int_equal(pthread_create(&s->th, NULL, sub_loop, s), 0);
    s->running = 1;
}

/* The loop's thread stops (the client is the caller's again until sub_run). */
static void sub_pause(subscriber *s) {
    atomic_store(&s->stop, 1);
    pthread_join(s->th, NULL);
    s->running = 0;
}

static void sub_stop(subscriber *s) {
    if (s->running) {
        atomic_store(&s->stop, 1);
        pthread_join(s->th, NULL);
        s->running = 0;
    }
    cp_free(s->c);
    cp_loop_free(s->l);
}

/* Waits (the subscriber's thread turning the loop) until *counter reaches want. */
static int wait_for(_Atomic long *counter, long want, int max_ms) {
    for (int i = 0; i < max_ms / 5 && atomic_load(counter) < want; i++)
        cp__sleep_ms(5);
    return atomic_load(counter) >= want;
}

/* ---- the publisher: a blocking client in a thread of its own -------------------------------- */

typedef struct publisher {
    cp_fixture *f;
    pthread_t th;
    _Atomic int stop;
    _Atomic long sent; /* messages published (PUBLISH answered) */
    const char *cmd;   /* "PUBLISH" or "SPUBLISH" */
    const char *channel, *prefix;
    int running;
} publisher;

static void *pub_loop(void *arg) {
    publisher *p = arg;
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = p->f->endpoints;
    o.retry_budget_ms = 20000;
    cp_test_protocol(&o);
    cp_client *c = cp_connect(&o);
    if (c->err != 0) {
        cp_free(c);
        return NULL;
    }
    for (long seq = 0; !atomic_load(&p->stop) && seq < MAXSEQ; seq++) {
        char msg[64];
        snprintf(msg, sizeof(msg), "%s:%ld", p->prefix, seq);
        redisReply *r = cp_command(c, "%s %s %s", p->cmd, p->channel, msg);
        if (r != NULL)
            freeReplyObject(r);
        atomic_store(&p->sent, seq + 1);
        cp__sleep_ms(2);
    }
    cp_free(c);
    return NULL;
}

static void pub_start(publisher *p, cp_fixture *f, const char *cmd, const char *channel,
                      const char *prefix) {
    memset(p, 0, sizeof(*p));
    *p = (publisher){.f = f, .cmd = cmd, .channel = channel, .prefix = prefix};
    assert_int_equal(pthread_create(&p->th, NULL, pub_loop, p), 0);
    p->running = 1;
}

static long pub_stop(publisher *p) {
    atomic_store(&p->stop, 1);
    if (p->running)
        pthread_join(p->th, NULL);
    p->running = 0;
    return atomic_load(&p->sent);
}

/* A shard channel name whose slot is `slot`. */
static void channel_of_slot(char *out, size_t len, unsigned slot) {
    for (int i = 0;; i++) {
        snprintf(out, len, "{c%d}:orders", i);
        char tag[16];
        snprintf(tag, sizeof(tag), "c%d", i);
        if (cp_keyslot(tag, strlen(tag)) == slot)
            return;
    }
}

/* ---- the cases --------------------------------------------------------------------------------
 */

/* Publishes a message of BIG bytes, "<prefix>:<seq>:" and x to the end: its frame arrives in
 * many reads, the subscriber's reader resuming a half-read array each time. */
static void publish_big(cp_client *pub, const char *cmd, const char *channel, const char *prefix,
                        long seq, long want) {
    char *payload = malloc(BIG + 1);
    assert_non_null(payload);
    int head = snprintf(payload, BIG, "%s:%ld:", prefix, seq);
    memset(payload + head, 'x', BIG - (size_t)head);
    payload[BIG] = '\0';
    redisReply *r = cp_command(pub, "%s %s %b", cmd, channel, payload, (size_t)BIG);
    assert_non_null(r);
    assert_int_ge(r->integer, want);
    cp_reply_free(r);
    free(payload);
}

static void every_message_while_nothing_fails(void **state) {
    cp_fixture *f = *state;
    subscriber s;
    sub_start(&s, f);
    record rc, rp, rs;
    record_init(&rc, "c");
    record_init(&rp, "c"); /* the pattern sees the channel's messages */
    record_init(&rs, "s");
    assert_int_equal(cp_subscribe(s.c, CP_SUB_CHANNEL, "news", 4, on_sub, &rc), 0);
    assert_int_equal(cp_subscribe(s.c, CP_SUB_PATTERN, "ne*", 3, on_sub, &rp), 0);
    assert_int_equal(cp_subscribe(s.c, CP_SUB_SHARD, "{s}orders", 9, on_sub, &rs), 0);
    assert_int_equal(cp_subscribe(s.c, CP_SUB_CHANNEL, "news", 4, on_sub, &rc), CP_EINVAL);
    sub_run(&s);
    assert_true(wait_for(&rc.subscribed, 1, 10000));
    assert_true(wait_for(&rp.subscribed, 1, 10000));
    assert_true(wait_for(&rs.subscribed, 1, 10000));
    cp_client *pub = cp_fixture_client(f, NULL);
    const long n = 500;
    for (long i = 0; i < n; i++) {
        redisReply *r = cp_command(pub, "PUBLISH news c:%ld", i);
        assert_non_null(r);
        assert_int_ge(r->integer, 1); /* someone got it: our channel and pattern, on some node */
        freeReplyObject(r);
        r = cp_command(pub, "SPUBLISH {s}orders s:%ld", i);
        assert_non_null(r);
        assert_int_equal(r->integer, 1);
        freeReplyObject(r);
    }
    for (long i = n; i < n + NBIG; i++) {
        publish_big(pub, "PUBLISH", "news", "c", i, 1);
        publish_big(pub, "SPUBLISH", "{s}orders", "s", i, 1);
    }
    assert_true(wait_for(&rc.messages, n + NBIG, 10000));
    assert_true(wait_for(&rp.messages, n + NBIG, 10000));
    assert_true(wait_for(&rs.messages, n + NBIG, 10000));
    record *all[3] = {&rc, &rp, &rs};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(atomic_load(&all[k]->messages), n + NBIG);
        assert_int_equal(atomic_load(&all[k]->big), NBIG);
        assert_int_equal(lost_of(all[k], n + NBIG), 0);
        assert_no_dups(all[k], 0);
        assert_int_equal(atomic_load(&all[k]->out_of_order), 0);
        assert_int_equal(atomic_load(&all[k]->wrong), 0);
        assert_int_equal(atomic_load(&all[k]->resubscribed), 0);
    }
    cp_free(pub);
    sub_stop(&s);
    for (int k = 0; k < 3; k++) {
        assert_int_equal(atomic_load(&all[k]->ended), 1); /* by cp_free: CP_ECANCELED */
        free(all[k]->seen);
    }
}

/* Subscribing again to a name whose cp_unsubscribe is under way (the program changes its mind, or
 * swaps the callback): not refused; the new subscription is sent once the old one has ended, so
 * that the old UNSUBSCRIBE never undoes it. The old one ends once, the new one is confirmed once
 * and gets every message published after that; also when the old one was never sent. */
static void subscribe_again_while_ending(void **state) {
    cp_fixture *f = *state;
    subscriber s;
    sub_start(&s, f);
    record old, again, never, after;
    record_init(&old, "c");
    record_init(&again, "c");
    record_init(&never, "c");
    record_init(&after, "c");
    assert_int_equal(cp_subscribe(s.c, CP_SUB_CHANNEL, "swap", 4, on_sub, &old), 0);
    sub_run(&s);
    assert_true(wait_for(&old.subscribed, 1, 10000));
    sub_pause(&s);
    assert_int_equal(cp_unsubscribe(s.c, CP_SUB_CHANNEL, "swap", 4), 0);
    assert_int_equal(cp_unsubscribe(s.c, CP_SUB_CHANNEL, "swap", 4), CP_EINVAL);
    assert_contains(s.c->errstr, "already ending");
    assert_int_equal(cp_subscribe(s.c, CP_SUB_CHANNEL, "swap", 4, on_sub, &again), 0);
    assert_int_equal(cp_subscribe(s.c, CP_SUB_CHANNEL, "swap", 4, on_sub, &again), CP_EINVAL);
    /* a shard channel subscribed, unsubscribed and subscribed again before anything was sent */
    assert_int_equal(cp_subscribe(s.c, CP_SUB_SHARD, "{t}swap", 7, on_sub, &never), 0);
    assert_int_equal(cp_unsubscribe(s.c, CP_SUB_SHARD, "{t}swap", 7), 0);
    assert_int_equal(cp_subscribe(s.c, CP_SUB_SHARD, "{t}swap", 7, on_sub, &after), 0);
    sub_run(&s);
    assert_true(wait_for(&old.ended, 1, 10000));
    assert_true(wait_for(&again.subscribed, 1, 10000));
    assert_true(wait_for(&never.ended, 1, 10000));
    assert_true(wait_for(&after.subscribed, 1, 10000));
    cp_client *pub = cp_fixture_client(f, NULL);
    const long n = 100;
    for (long i = 0; i < n; i++) {
        redisReply *r = cp_command(pub, "PUBLISH swap c:%ld", i);
        assert_non_null(r);
        assert_int_ge(r->integer, 1); /* subscribed on the server: the old UNSUBSCRIBE came first */
        freeReplyObject(r);
        r = cp_command(pub, "SPUBLISH {t}swap c:%ld", i);
        assert_non_null(r);
        assert_int_equal(r->integer, 1);
        freeReplyObject(r);
    }
    assert_true(wait_for(&again.messages, n, 10000));
    assert_true(wait_for(&after.messages, n, 10000));
    cp_free(pub);
    sub_stop(&s);
    assert_int_equal(atomic_load(&old.subscribed), 1);
    assert_int_equal(atomic_load(&old.messages), 0);
    assert_int_equal(atomic_load(&old.ended), 1);
    assert_int_equal(atomic_load(&never.subscribed), 0);
    assert_int_equal(atomic_load(&never.messages), 0);
    assert_int_equal(atomic_load(&never.ended), 1);
    record *live[2] = {&again, &after};
    for (int k = 0; k < 2; k++) {
        assert_int_equal(atomic_load(&live[k]->subscribed), 1);
        assert_int_equal(atomic_load(&live[k]->resubscribed), 0);
        assert_int_equal(atomic_load(&live[k]->messages), n);
        assert_int_equal(lost_of(live[k], n), 0);
        assert_no_dups(live[k], 0);
        assert_int_equal(atomic_load(&live[k]->ended), 1); /* by cp_free */
    }
    record *all[4] = {&old, &again, &never, &after};
    for (int k = 0; k < 4; k++)
        free(all[k]->seen);
}

typedef struct got {
    int calls;
    cp_outcome outcome;
    char value[32];
} got;

static void on_got(cp_client *c, const cp_response *r, void *data) {
    (void)c;
    got *g = data;
    g->calls++;
    g->outcome = r->outcome;
    if (r->reply != NULL && r->reply->type == REDIS_REPLY_STRING)
        snprintf(g->value, sizeof(g->value), "%s", r->reply->str);
    else if (r->reply != NULL && r->reply->type == REDIS_REPLY_INTEGER)
        snprintf(g->value, sizeof(g->value), "%lld", r->reply->integer);
}

static int all_got(got *g, int n) {
    for (int i = 0; i < n; i++)
        if (g[i].calls == 0)
            return 0;
    return 1;
}

static void commands_answer_right_beside_subscriptions(void **state) {
    cp_fixture *f = *state;
    redisReply *r = cp_fixture_command(f, "SET pk pv");
    assert_non_null(r);
    freeReplyObject(r);
    /* the case: SUBSCRIBE as a command, then a PUBLISH, then a GET */
    cp_client *b = cp_fixture_client(f, NULL);
    assert_null(cp_command(b, "SUBSCRIBE chan"));
    assert_int_equal(b->err, CP_EINVAL);
    r = cp_fixture_command(f, "PUBLISH chan m0");
    assert_non_null(r);
    freeReplyObject(r);
    r = cp_command(b, "GET pk");
    assert_non_null(r);
    assert_string_equal(r->str, "pv");
    freeReplyObject(r);
    cp_free(b);
    /* an event-loop client subscribed to chan: its own PUBLISH and GET answer as commands */
    subscriber s;
    sub_start(&s, f);
    record rc;
    record_init(&rc, "m");
    assert_int_equal(cp_subscribe(s.c, CP_SUB_CHANNEL, "chan", 4, on_sub, &rc), 0);
    for (int i = 0; i < 2000 && atomic_load(&rc.subscribed) == 0; i++)
        cp_loop_run_once(s.l, 5);
    assert_int_equal(atomic_load(&rc.subscribed), 1);
    got g[3];
    memset(g, 0, sizeof(g));
    assert_int_equal(cp_async_command(s.c, on_got, &g[0], "PUBLISH chan m:0"), 0);
    assert_int_equal(cp_async_command(s.c, on_got, &g[1], "GET pk"), 0);
    assert_int_equal(cp_async_command(s.c, on_got, &g[2], "SUBSCRIBE chan"), CP_EINVAL);
    g[2].calls = 1;
    for (int i = 0; i < 2000 && (!all_got(g, 2) || atomic_load(&rc.messages) == 0); i++)
        cp_loop_run_once(s.l, 5);
    assert_int_equal(g[0].outcome, CP_DONE);
    assert_string_equal(g[0].value, "1"); /* our subscription was its one receiver */
    assert_int_equal(g[1].outcome, CP_DONE);
    assert_string_equal(g[1].value, "pv");
    assert_int_equal(atomic_load(&rc.messages), 1);
    /* cp_unsubscribe: ended once the server confirms */
    assert_int_equal(cp_unsubscribe(s.c, CP_SUB_CHANNEL, "chan", 4), 0);
    assert_int_equal(cp_unsubscribe(s.c, CP_SUB_CHANNEL, "chan", 4), CP_EINVAL);
    for (int i = 0; i < 2000 && atomic_load(&rc.ended) == 0; i++)
        cp_loop_run_once(s.l, 5);
    assert_int_equal(atomic_load(&rc.ended), 1);
    r = cp_fixture_command(f, "PUBLISH chan m:1");
    assert_non_null(r);
    assert_int_equal(r->integer, 0); /* nobody listens any more */
    freeReplyObject(r);
    sub_stop(&s);
    assert_int_equal(atomic_load(&rc.ended), 1);
    free(rc.seen);
}

static void shard_channel_through_migration(void **state) {
    cp_fixture *f = *state;
    char channel[32];
    channel_of_slot(channel, sizeof(channel), 5460); /* master 0's highest: the one moved */
    subscriber s;
    sub_start(&s, f);
    static evlog log; /* the lifecycle events, read once the loop's thread is joined */
    memset(&log, 0, sizeof(log));
    evlog_attach(s.c, &log);
    record rs;
    record_init(&rs, "s");
    assert_int_equal(cp_subscribe(s.c, CP_SUB_SHARD, channel, strlen(channel), on_sub, &rs), 0);
    sub_run(&s);
    assert_true(wait_for(&rs.subscribed, 1, 10000));
    publisher p;
    pub_start(&p, f, "SPUBLISH", channel, "s");
    assert_true(wait_for(&rs.messages, 100, 10000));
    size_t m0 = cp_fixture_master(f, 0), m1 = cp_fixture_master(f, 1);
    char err[512];
    uint64_t t0 = cp__now_ns();
    if (cp_topo_migrate_slots(f->topo, m0, m1, 1, err, sizeof(err)) != 0)
        fail_msg("migrate: %s", err);
    uint64_t moved = cp__now_ns();
    assert_true(wait_for(&rs.resubscribed, 1, 20000));
    long at_back = atomic_load(&rs.messages);
    assert_true(wait_for(&rs.messages, at_back + 100, 10000)); /* it receives again */
    long sent = pub_stop(&p);
    cp__sleep_ms(100);
    sub_pause(&s);
    /* CP_EVENT_RESUBSCRIBED once, for this shard channel, at the node that took the slot, after
     * the client was ready. */
    int ready = evlog_find(&log, 0, CP_EVENT_READY, -1);
    int again = evlog_find(&log, 0, CP_EVENT_RESUBSCRIBED, -1);
    char all[4096];
    evlog_format(&log, all, sizeof(all));
    if (ready < 0 || again < ready || evlog_count(&log, CP_EVENT_RESUBSCRIBED, -1) != 1)
        fail_msg("want READY, then one RESUBSCRIBED:\n%s", all);
    assert_string_equal(log.e[again].ev.text, channel);
    assert_int_equal(log.e[again].ev.sub_kind, CP_SUB_SHARD);
    assert_int_equal(log.e[again].ev.node, slot_node_of(s.c, f, m1));
    sub_stop(&s);
    uint64_t back = atomic_load(&rs.back_at);
    long lost = lost_of(&rs, sent);
    print_message(
        "shard channel: migrated in %.0f ms, subscribed again %.0f ms after the migration "
        "returned; %ld published, %ld received, %ld lost, %ld twice\n",
        (double)(moved - t0) / 1e6, ((double)back - (double)moved) / 1e6, sent,
        atomic_load(&rs.messages), lost, atomic_load(&rs.dups));
    assert_int_equal(atomic_load(&rs.resubscribed), 1);
    assert_no_dups(&rs, moved);
    assert_int_equal(atomic_load(&rs.out_of_order), 0);
    assert_int_equal(atomic_load(&rs.wrong), 0);
    assert_int_lt(lost, sent / 2);
    free(rs.seen);
}

static void subscriptions_through_kill(void **state) {
    cp_fixture *f = *state;
    subscriber s;
    sub_start(&s, f);
    record rc, rs;
    record_init(&rc, "c");
    record_init(&rs, "s");
    assert_int_equal(cp_subscribe(s.c, CP_SUB_CHANNEL, "alerts", 6, on_sub, &rc), 0);
    sub_run(&s);
    assert_true(wait_for(&rc.subscribed, 1, 10000));
    /* the classic link's master: the shard channel goes there too, and it is killed */
    size_t victim = SIZE_MAX;
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++)
        if (cp_topo_proc(f->topo, i)->port == atomic_load(&rc.port))
            victim = i;
    assert_int_not_equal(victim, SIZE_MAX);
    int k = -1;
    for (int m = 0; m < 3; m++)
        if (cp_fixture_master(f, m) == victim)
            k = m;
    assert_int_ge(k, 0);
    char channel[32];
    channel_of_slot(channel, sizeof(channel), (unsigned)(k * 5461 + 100));
    sub_pause(&s); /* the client is this thread's while it subscribes */
    assert_int_equal(cp_subscribe(s.c, CP_SUB_SHARD, channel, strlen(channel), on_sub, &rs), 0);
    sub_run(&s);
    assert_true(wait_for(&rs.subscribed, 1, 10000));
    assert_int_equal(atomic_load(&rs.port), atomic_load(&rc.port));
    publisher pc, ps;
    pub_start(&pc, f, "PUBLISH", "alerts", "c");
    pub_start(&ps, f, "SPUBLISH", channel, "s");
    assert_true(wait_for(&rc.messages, 100, 10000));
    assert_true(wait_for(&rs.messages, 100, 10000));
    char err[512];
    uint64_t killed = cp__now_ns(); /* before: the kill returns once the process is gone */
    assert_int_equal(cp_topo_kill(f->topo, victim, SIGKILL, err, sizeof(err)), 0);
    assert_true(wait_for(&rc.resubscribed, 1, 30000));
    assert_true(wait_for(&rs.resubscribed, 1, 30000));
    long c_back = atomic_load(&rc.messages), s_back = atomic_load(&rs.messages);
    assert_true(wait_for(&rc.messages, c_back + 100, 10000));
    assert_true(wait_for(&rs.messages, s_back + 100, 10000));
    long csent = pub_stop(&pc), ssent = pub_stop(&ps);
    cp__sleep_ms(100);
    sub_stop(&s);
    long clost = lost_of(&rc, csent), slost = lost_of(&rs, ssent);
    print_message("kill -9 of the master carrying both: the channel's subscription back after "
                  "%.0f ms (%ld published, %ld lost, %ld twice), the shard channel's after %.0f "
                  "ms (%ld published, %ld lost, %ld twice)\n",
                  (double)(atomic_load(&rc.back_at) - killed) / 1e6, csent, clost,
                  atomic_load(&rc.dups), (double)(atomic_load(&rs.back_at) - killed) / 1e6, ssent,
                  slost, atomic_load(&rs.dups));
    record *all[2] = {&rc, &rs};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(atomic_load(&all[i]->resubscribed), 1);
        assert_no_dups(all[i], killed);
        assert_int_equal(atomic_load(&all[i]->out_of_order), 0);
        assert_int_equal(atomic_load(&all[i]->wrong), 0);
        free(all[i]->seen);
    }
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const char *only = getenv("CP_TEST_ONLY");
    if (only != NULL)
        cmocka_set_test_filter(only);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(every_message_while_nothing_fails,
                                        cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(commands_answer_right_beside_subscriptions,
                                        cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(subscribe_again_while_ending,
                                        cp_fixture_setup_shared_cluster3,
                                        cp_fixture_teardown_shared),
        cmocka_unit_test_setup_teardown(shard_channel_through_migration, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(subscriptions_through_kill, cp_fixture_setup_cluster3x1,
                                        cp_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, cp_fixture_group_teardown);
}
