/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The client: options, the node set (one connection per node, opened on first use), the slot
 * table, counters, the loop it runs on, and the state of the in-band slot-map refresh. Node
 * indexes are stable for the client's lifetime: the node array only grows, so a slot table entry
 * stays valid across refreshes. The batches running on it (pipelines, async commands) live in
 * exec.c; this layer knows them only as queue entries. One thread at a time.
 *
 * Registration with the loop is kept here: each connection's interest (conn.ev) is diffed
 * against what it wants (cp__client_sync_node) and every close goes through
 * cp__client_close_node, so the loop hears of an fd before it is closed.
 */
#ifndef CLUSTERPIPE_CLIENT_H
#define CLUSTERPIPE_CLIENT_H

#include "clusterpipe/clusterpipe.h"
#include "lib/net/conn.h"
#include "lib/proto/replyarena.h"
#include "lib/map/slottab.h"
#include "lib/map/topology.h"

#include <limits.h>

#define CP__NIL UINT32_MAX

/* How long a node that refused a command (CLUSTERDOWN, TRYAGAIN, LOADING) gets a slot's commands
 * one at a time (cp__node.cautious). */
#define CP__CAUTIOUS_NS 1000000000ull

struct cp_pipeline;
struct cp__cmdtable;

/* A command's callback and its data: called once, when its outcome is final (exec.c). */
typedef struct cp__cb {
    cp_callback *fn;
    void *data;
} cp__cb;

/* A command waiting for its node's connection: its batch and its tag there. */
typedef struct cp__qent {
    struct cp_pipeline *p;
    uint32_t tag;
} cp__qent;

/* A FIFO ring of waiting commands; cap is 0 or a power of two. */
typedef struct cp__queue {
    cp__qent *v;
    uint32_t head, n, cap;
} cp__queue;

/* Appends an entry (0 or CP_ENOMEM). */
int cp__queue_push(cp__queue *q, struct cp_pipeline *p, uint32_t tag);

/* Frees an empty queue's ring (its next push allocates one again); a queue with entries stays. */
void cp__queue_trim(cp__queue *q);

static inline cp__qent cp__queue_pop(cp__queue *q) {
    cp__qent e = q->v[q->head];
    q->head = (q->head + 1) & (q->cap - 1);
    q->n--;
    return e;
}

static inline cp__qent *cp__queue_at(cp__queue *q, uint32_t i) {
    return &q->v[(q->head + i) & (q->cap - 1)];
}

/* What lifecycle.c told the program of a node and counts for it (cp_node_get_stats): cold
 * fields, touched when its connection opens or fails, on a redirect and when a map is applied. */
typedef struct cp__node_life {
    uint8_t up;     /* CP_EVENT_NODE_CONNECTED told, DISCONNECTED not yet */
    uint8_t broken; /* its connection failed since it was last ready: the next ready reconnects */
    uint8_t in_map; /* the last applied slot map names it */
    int map_master; /* ... as a replica of this node; -1: as a master (or not at all) */
    uint64_t connects, reconnects, moved, ask;
    int last_err;
    char last_errstr[CP_ERRSTR_LEN];
} cp__node_life;

/* The client-side cache's tracking link to one node under RESP2 (tracklink.h): a connection of
 * its own, subscribed to the invalidations its node's command connection is redirected to.
 * Allocated one by one: the loop keeps the address of its slot. */
typedef struct cp__tlink {
    cp__conn conn; /* conn.push: its messages come unasked */
    int node;
    int asked;         /* CLIENT ID and SUBSCRIBE written */
    long long id;      /* its CLIENT ID, 0 until answered */
    int subscribed;    /* __redis__:invalidate confirmed */
    uint64_t waits_at; /* what it asked (CLIENT ID and SUBSCRIBE, or a PING) then: not all
                          answered yet (0: nothing waits) */
} cp__tlink;

/* Where a node's command connection stands with its tracking under RESP2 (cp__node.track). */
enum { CP__TRACK_OFF = 0, CP__TRACK_SENT, CP__TRACK_ON };

typedef struct cp__node {
    char host[CP__HOSTLEN];
    int port;
    cp__conn conn;
    int is_master; /* per the last slot map */
    int watched;   /* a WATCH was answered on its connection, no EXEC/DISCARD since */
    int master;    /* a replica per the last slot map: its master's index; else -1 */
    int healthy;   /* the last slot map does not call it failed */
    /* Maps in a row that called it a healthy master with no slot after it had served some: a
     * former master as a node that has not heard from it since a failover sees it. While > 0,
     * the next map is asked of it first, and fan-outs and SCANs pass it by (refresh.c). */
    int role_unsure;
    int reader; /* a master, reads on replicas: the replica serving them (readfrom.h), or -1 */
    uint64_t read_down_until; /* a replica whose connection failed: no reads before then */
    /* It answered CLUSTERDOWN, TRYAGAIN or LOADING lately (until then: cautious): its state may
     * change between two commands of one slot, so a slot's commands go to it one at a time,
     * each once the one before is answered (send.c). */
    uint64_t cautious_until;
    int cautious;
    /* WAIT / WAITAOF written on its connection and not answered yet, and the latest of their
     * timeouts (UINT64_MAX: one waits for ever): the I/O timeout counts from then (exec.c). */
    int waits;
    uint64_t wait_until;
    cp__queue q; /* commands waiting to be written, in order */
    cp__node_life life;
    /* The client-side cache under RESP2 (tracklink.h): the node's tracking link (NULL: none),
     * whether its command connection is redirected to it (CP__TRACK_*: the REDIRECT written and
     * not answered, or confirmed) and the link id it named (0: a link gone since, its answer
     * counts for nothing), and the backoff after a link failed. */
    cp__tlink *tlink;
    int track;
    long long track_id;
    uint64_t tlink_retry_at;
    unsigned tlink_backoff_ms;
} cp__node;

/* A command a fence holds (fence.h): its batch and tag, its place in the client's send order,
 * the node it goes to when let through (a redirect's; -1: routed by the map then), and whether
 * it may go once the commands before it have (a parked one waits for its batch's round). */
typedef struct cp__held {
    struct cp_pipeline *p;
    uint32_t tag;
    uint32_t seq;
    int32_t target;
    uint32_t ready;
} cp__held;

/* A node that had commands of a fenced slot when it stopped serving it, and how many of them
 * it has not answered yet. */
typedef struct cp__old_owner {
    int node;
    uint32_t count;
} cp__old_owner;

/* One slot's fence: its old owners, and the commands it holds, sorted by their place in the
 * send order, in held[head .. head + n). It exists while it has either. */
typedef struct cp__fence {
    int slot;
    int nold, capold;
    cp__old_owner *old;
    cp__held *held;
    uint32_t head, n, cap;
} cp__fence;

/* A connection of the blocking-command pool (pool.h): a node's, beside its command connection,
 * carrying one blocking command at a time, so that a BLPOP waiting on the server holds back no
 * other command. Allocated one by one: the loop's slot for it (conn.ev_data) keeps its address. */
typedef struct cp__pconn {
    cp__conn conn;
    int node;
    struct cp_pipeline *p; /* the blocking command on it, NULL when idle */
    uint32_t tag;
    int sent;          /* its bytes are in the connection (it waits for READY otherwise) */
    uint64_t deadline; /* CLOCK_MONOTONIC ns: its own timeout plus the I/O timeout; 0: none */
} cp__pconn;

/* A blocking command waiting for a pool connection of its node (every one of them busy). */
typedef struct cp__pwait {
    struct cp_pipeline *p;
    uint32_t tag;
    int node;
} cp__pwait;

/* A subscription (sub.h): what the program asked for, and where it stands. Allocated one by
 * one (a link's pending list points at it). */
typedef enum cp__sub_state {
    CP__SUB_WAITING = 0, /* to be sent: no link yet, its link not ready, or lost (re-sent) */
    CP__SUB_SENT,        /* SUBSCRIBE written, not confirmed */
    CP__SUB_ON,          /* confirmed */
    CP__SUB_ENDING,      /* cp_unsubscribe: UNSUBSCRIBE to write, or written */
} cp__sub_state;

typedef struct cp__sub {
    int kind; /* cp_sub_kind */
    char *name;
    size_t len;
    cp_sub_callback *cb;
    void *data;
    int state;  /* cp__sub_state */
    int ever;   /* confirmed at least once: the next confirmation is a re-subscription */
    int unsent; /* ENDING: its UNSUBSCRIBE is not written yet */
    struct cp__slink *link; /* the link carrying it, NULL */
    int moved_to;           /* a shard channel answered MOVED: the node named, else -1 */
} cp__sub;

/* A SUBSCRIBE or UNSUBSCRIBE a link wrote, not confirmed yet: answers come in this order. */
typedef struct cp__subop {
    cp__sub *sub;
    int unsub;
} cp__subop;

/* A subscriber's connection (sub.h): the classic subscriptions' one (on any master), or a node's
 * shard channels'. Allocated one by one: the loop keeps the address of its slot. */
typedef struct cp__slink {
    cp__conn conn; /* conn.push: frames come unasked */
    int node;
    int shard;
    cp__subop *ops; /* written, not answered, in order: ops[head .. head + nops) */
    size_t head, nops, capops;
    uint64_t ping_at; /* a PING it was sent then is not answered yet (0: none out) */
} cp__slink;

/* The slot map is re-read in-band: a CLUSTER SHARDS (or SLOTS) request to a master with an idle
 * ready connection first, then busier and other nodes, then the seeds; the next candidate as
 * soon as one fails, and also (a hedge, at most 3 out) when one has not answered in 200 ms. */
typedef struct cp__refresh {
    int running;       /* a round is under way */
    unsigned round;    /* rounds so far: an answer names its round, late ones are dropped */
    int out;           /* requests of this round not answered yet (hedges included) */
    uint64_t hedge_at; /* no answer by then: ask the next candidate too (0: none) */
    int *cand;         /* node indexes to try, in order */
    int ncand, capcand, next;
    uint64_t not_before; /* spacing: the next refresh starts no earlier (0: any time) */
    int err;             /* why the last complete attempt failed (0: it gave a map) */
    char errstr[CP_ERRSTR_LEN];
    unsigned generation; /* completed refreshes, for callers waiting on one */
    int recheck;         /* the map applied has a node whose role is unsure: read it again */
} cp__refresh;

/* Library code woken by the client's one timer (events.h): a cluster SCAN's pause between
 * listings, its wait for a slot map, a result put off to the loop's next call. The entry is its
 * owner's; the client links it while it is armed. */
typedef struct cp__wake {
    uint64_t at;          /* due from then on (CLOCK_MONOTONIC ns; 1: at once), 0: no time */
    int after_refresh;    /* also due once the refresh under way when it was armed has ended */
    unsigned refresh_gen; /* ... c->refresh.generation then */
    unsigned pass;        /* the run of wakes current when it was armed: not run in that one */
    int armed;
    void (*fn)(void *data, int err); /* err: 0 when due, CP_ECANCELED from cp_free */
    void *data;
    struct cp__wake *prev, *next;
} cp__wake;

/* The timeouts' "none" (CP_TIMEOUT_NONE): the longest the int fields hold, 24.8 days. */
#define CP__TIMEOUT_NONE_MS INT_MAX

typedef struct cp__client {
    cp_client pub; /* first: cp_client * and cp__client * convert both ways */
    int cluster;
    cp__connopts copts;
    cp__resolver resolver; /* host names (resolve.h): copts.resolver */
    char *username, *password, *tls_server_name, *dns_servers;
    int max_redirects, retry_budget_ms;
    unsigned flags;
    int read_from;            /* cp_read_from; CP_READ_MASTER in single-endpoint mode */
    uint64_t read_recheck_at; /* a reader was lost: re-read the map after this (0: no need) */
    size_t max_pending;       /* limit for async sends and cp_exec_async */
    size_t pending;           /* commands whose caller has not heard of their outcome yet */
    char (*seed_host)[CP__HOSTLEN];
    int *seed_port;
    int nseeds;
    cp__node *nodes;
    int nnodes, capnodes;
    cp__slottab slottab;         /* slot -> index into nodes[] (from the last map and MOVEDs) */
    int need_refresh;            /* MOVED, CLUSTERDOWN or a broken connection was seen */
    int no_shards;               /* the server lacks CLUSTER SHARDS: use CLUSTER SLOTS */
    struct cp__cmdtable *cmdtab; /* the server's COMMAND (cmdtable.h); NULL: built-in table */
    int cmdtab_state;            /* 0 not asked, 1 asked, 2 read, 3 refused (built-in only) */
    uint64_t last_refresh_ns;
    uint64_t rng; /* backoff jitter */
    cp_stats stats;
    cp_script_stats script_stats; /* script.h: NOSCRIPT answers followed by the EVAL */
    cp__refresh refresh;
    cp__fence *fences; /* fence.h: slots whose later commands wait behind earlier ones */
    int nfences, capfences;
    int16_t *fence_of; /* [CP_SLOTS]: the slot's index in fences (below CP_SLOTS: 16 bits hold
                          it), -1 (NULL: none made yet); 32 KiB per client while a slot waits */
    uint32_t seq;      /* commands first sent so far: each one's place in the send order */
    cp__pconn **pool;  /* pool.h: the blocking commands' connections */
    int npool, cappool;
    int pool_per_node;      /* at most this many pool connections per node */
    cp__connopts pool_opts; /* copts without READONLY: blocking commands run on masters */
    cp__pwait *pool_wait;   /* blocking commands waiting for a pool connection, in order */
    size_t npool_wait, cappool_wait;
    cp__sub **subs; /* sub.h: the subscriptions and their connections */
    int nsubs, capsubs;
    cp__slink **links;
    int nlinks, caplinks;
    uint64_t sub_due;        /* a subscription waits to be (re)sent from then on (0: none) */
    unsigned sub_backoff_ms; /* the wait after a subscriber's connection failed */
    uint64_t sub_settle_at;  /* a subscriber's connection failed: nothing is sent before then */
    unsigned sub_gen;        /* refresh.generation at the last failed attempt: a new map is
                                worth trying at once */
    struct cp__cache *cache; /* cache.h: the client-side cache; NULL: none */
    cp_push_fn *push_cb;     /* push.h: the program's, for push frames; NULL: none */
    void *push_data;
    cp_event_fn *event_cb; /* lifecycle.h: the program's, for lifecycle events; NULL: none */
    void *event_data;
    uint64_t map_version; /* slot maps applied that changed something (CP_EVENT_MAP_CHANGED) */
    int ready_told;       /* CP_EVENT_READY was told (it is told once) */
    /* The loop. */
    const cp_event_ops *ops;
    void *loop;
    uint64_t timer_at; /* when the armed timer fires (0: disarmed) */
    /* Batches (exec.c): running ones are linked; the async layer's current and spare ones. */
    struct cp_pipeline *running;
    struct cp_pipeline *open;  /* async commands sent since the last loop turn */
    struct cp_pipeline *spare; /* finished async batches for reuse */
    int depth;   /* nesting of the loop's calls into the library (callbacks run inside) */
    int closing; /* cp_free is ending everything: no new commands */
    int sending; /* inside an async send or a batch start: no callback, no completion */
    struct cp_pipeline *stepping; /* the batch whose retry round runs: not completed */
    int free_pending;             /* cp_free was called from a callback */
    unsigned stamp;               /* cp__exec_timers' visit mark */
    uint64_t batch_wake;          /* no batch has timer work before this (0: none has any) */
    cp__queue deferred; /* callbacks put off until the loop's next call (command, batch) */
    cp__wake *wakes;    /* armed wakes, newest first (events.c) */
    unsigned wake_pass; /* runs of the due wakes so far */
    /* The blocking layer's own loop (blocking.c), freed through the pointer it left here. */
    void *own_loop;
    void (*own_loop_free)(void *loop);
    struct cp_pipeline *single; /* reused by cp_command */
    /* The last applied slot map's owners (when map_version > 0), for the next map's changes
     * (lifecycle.c): the slot table itself is patched by MOVED in between. */
    int16_t applied[CP_SLOTS];
} cp__client;

static inline cp__client *cp__client_of(cp_client *c) {
    return (cp__client *)c;
}

/* 1 for a blocking client (cp_connect) still on its own loop: the blocking calls are its. */
static inline int cp__client_blocking(const cp__client *c) {
    return c->own_loop != NULL && c->loop == c->own_loop;
}

/* 1 when node n's command connection tracks the keys read on it for the client-side cache:
 * under RESP3 once it is ready (CLIENT TRACKING ON is in its handshake), under RESP2 once its
 * REDIRECT to the node's tracking link was confirmed (tracklink.h). */
static inline int cp__client_tracked(const cp__client *c, int n) {
    return c->copts.resp3 ? c->nodes[n].conn.state == CP__CONN_READY
                          : c->nodes[n].track == CP__TRACK_ON;
}

/* When node n's invalidations were last heard from: the connection they come on (RESP2: its
 * tracking link's; call only while cp__client_tracked). */
static inline uint64_t cp__client_heard_ns(const cp__client *c, int n) {
    return c->copts.resp3 ? c->nodes[n].conn.last_read_ns : c->nodes[n].tlink->conn.last_read_ns;
}

/* Records an error on the client. Returns code. */
int cp__client_err(cp__client *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Parses options into a new client, no I/O (cp_client_new). */
cp__client *cp__client_create(const cp_options *opt);

/* Frees what the client layer owns (connections closed, loop told first). */
void cp__client_destroy(cp__client *c);

/* Index of node host:port, added (unconnected) when new; negative CP_E* on OOM. */
int cp__client_node(cp__client *c, const char *host, int port);

/* Node n, when the last map made it no master and no reads go to replicas, gives back its
 * connection's buffers and its queue's ring if they are idle (the next command allocates them
 * again): a client keeps buffers for the masters only, whatever nodes failovers made masters. */
void cp__client_trim_demoted(cp__client *c, int n);

/* Starts connecting node n when its connection is closed. Never blocks. Returns 0 or CP_E*
 * (conn.err/errstr set). */
int cp__client_connect_node(cp__client *c, int n);

/* Node n's tracking link (tracklink.h) goes: the loop lets go of its fd, it is freed, and the
 * node's command connection is no longer tracked (a REDIRECT under way counts for nothing). */
void cp__client_free_tlink(cp__client *c, int n);

/* Tells the loop node n's fd goes (cleanup), then closes the connection (FIFO, buffers). */
void cp__client_unregister_node(cp__client *c, int n);
/* A caller that closes a connection that may be ready tells lifecycle.h first
 * (cp__lifecycle_closing), so that its CP_EVENT_NODE_DISCONNECTED gives the reason. */
void cp__client_close_node(cp__client *c, int n);

/* Brings the loop's registration of node n in line with what it wants now. */
void cp__client_sync_node(cp__client *c, int n);

/* The same for any connection of the client (a pool's): registration as it wants it now
 * (cp__conn_interest), and letting the loop go of it (cleanup) before it is closed. */
void cp__client_sync_conn(cp__client *c, cp__conn *conn, int want);
void cp__client_unregister_conn(cp__client *c, cp__conn *conn);

/* The same for the resolver's sockets (resolve.h): every one registered as it wants, or let go
 * of (cp_attach elsewhere). */
void cp__client_sync_dns(cp__client *c);
void cp__client_unregister_dns(cp__client *c);

/* A connecting connection of the client moved on by readiness `events` (cp__conn_progress):
 * when an address failed, the loop lets go of the old fd before the next address is tried.
 * 0 (connected, or its handshake or TLS under way) or a CP_E* code (errstr says why). */
int cp__client_conn_progress(cp__client *c, cp__conn *conn, int events);

/* A node for a command without a usable slot owner: a master with an open connection, else any
 * master, else node 0. -1 when there is no node at all. */
int cp__client_any_node(cp__client *c);

/* Uniform random in [0, n) for backoff jitter (xorshift, per client). */
uint32_t cp__client_rand(cp__client *c, uint32_t n);

#endif
