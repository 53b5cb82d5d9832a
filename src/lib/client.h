/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The client: options, the node set (one connection per node, created on first use), the slot
 * table, counters, and topology refresh. The pipeline (pipeline.c) routes through it. Node
 * indexes are stable for the client's lifetime: the node array only grows, so a slot table entry
 * stays valid across refreshes. One thread at a time; one pipeline executes at a time.
 */
#ifndef CLUSTERPIPE_CLIENT_H
#define CLUSTERPIPE_CLIENT_H

#include "clusterpipe/clusterpipe.h"
#include "lib/conn.h"
#include "lib/replyarena.h"
#include "lib/routes.h"
#include "lib/topology.h"

#define CP__NIL UINT32_MAX

typedef struct cp__node {
    char host[CP__HOSTLEN];
    int port;
    cp__conn conn;
    int is_master;         /* per the last slot map */
    uint64_t failed_ns;    /* when its connection last broke (0: never) */
    uint32_t qhead, qtail; /* commands waiting to be written, linked through cp__cmd.next */
} cp__node;

typedef struct cp__client {
    cp_client pub; /* first: cp_client * and cp__client * convert both ways */
    int cluster;
    cp__connopts copts;
    char *username, *password;
    int max_redirects, retry_budget_ms;
    unsigned flags;
    char (*seed_host)[CP__HOSTLEN];
    int *seed_port;
    int nseeds;
    cp__node *nodes;
    int nnodes, capnodes;
    cp__routes routes; /* slot -> index into nodes[] */
    int need_refresh;  /* MOVED, CLUSTERDOWN or a broken connection was seen: refresh
                          before the next batch */
    int no_shards;     /* the server lacks CLUSTER SHARDS: use CLUSTER SLOTS */
    uint64_t last_refresh_ns;
    uint64_t rng; /* backoff jitter */
    cp_stats stats;
    unsigned fd_gen;            /* bumped by every node connection open/close */
    cp__reply_arena *replies;   /* the executing pipeline's reply arena (every reader's target) */
    struct cp_pipeline *single; /* reused by cp_command */
} cp__client;

static inline cp__client *cp__client_of(cp_client *c) {
    return (cp__client *)c;
}

/* Records an error on the client. Returns code. */
int cp__client_err(cp__client *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Index of node host:port, added (unconnected) when new; negative CP_E* on OOM. */
int cp__client_node(cp__client *c, const char *host, int port);

/* Opens node n's connection if it is closed. Returns 0 or CP_E* (conn.err/errstr set). */
int cp__client_connect_node(cp__client *c, int n);

/* A node for a command without a usable slot owner: a master with an open connection, else any
 * master, else node 0. */
int cp__client_any_node(cp__client *c);

/* Reads the slot map from a known node, then from the seeds; blocks. Returns 0 or CP_E*. */
int cp__client_refresh(cp__client *c);

/* Uniform random in [0, n) for backoff jitter (xorshift, per client). */
uint32_t cp__client_rand(cp__client *c, uint32_t n);

#endif
