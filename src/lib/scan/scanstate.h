/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The state of a cluster SCAN (struct cp_scan) and the words its steps speak, shared by the
 * engine and drivers (scan.c), phase 1 (scanwalk.c), phase 2 (scanlist.c) and the helpers both
 * phases call (scanstep.c). Types only, no code and no .c of its own: scan.c says how the scan
 * works, what it guarantees, who owns what (cp_scan_new allocates every buffer here,
 * cp_scan_free frees them) and which thread may touch it (the client's, one call at a time).
 */
#ifndef CLUSTERPIPE_SCANSTATE_H
#define CLUSTERPIPE_SCANSTATE_H

#include "lib/api/events.h"
#include "lib/map/topology.h"

#define CP__SCAN_CHUNK 64 /* slots listed per MULTI in phase 2 */
#define CP__SCAN_PAIRS 16 /* half-migrated slots tried per pair certificate */

/* Where the scan is (s->phase). */
enum {
    CP__SCAN_PH_START,
    CP__SCAN_PH_MASTERS,
    CP__SCAN_PH_REREAD_START,
    CP__SCAN_PH_REREAD,
    CP__SCAN_PH_DONE
};
enum { CP__SCAN_M_START, CP__SCAN_M_SCAN, CP__SCAN_M_END }; /* one master's walk */

/* What a step asks of its driver, or how the call ends (advance, scan.c); a negative CP_E* is a
 * step that failed. */
enum {
    CP__SCAN_STEP_ON = 0, /* the step moved on by itself (never seen by a driver) */
    CP__SCAN_ASK_RUN,     /* run s->run, its result into s->io */
    CP__SCAN_ASK_PAUSE,   /* wait s->pause_ms */
    CP__SCAN_ASK_REFRESH, /* re-read the slot map, the result into s->io */
    CP__SCAN_GOT_BATCH,   /* s->out is the caller's */
    CP__SCAN_GOT_END      /* the scan is complete */
};

/* Where a step goes on once its driver did what it asked (s->sub). */
enum {
    CP__SCAN_S_BEGIN,     /* a new step */
    CP__SCAN_S_REFRESHED, /* cp__scan_start, cp__scan_reread_start: the map was re-read */
    CP__SCAN_S_SCANNED,   /* a master's round trip ran */
    CP__SCAN_S_PAUSED,    /* phase 2: the pause is over */
    CP__SCAN_S_COUNTED,   /* a listing's COUNTKEYSINSLOT round trip ran */
    CP__SCAN_S_LISTED,    /* ... its MULTI ... EXEC */
    CP__SCAN_S_TYPED      /* ... the TYPE of its keys */
};

/* Slots listed at one node in one step (phase 2). */
typedef struct cp__scan_group {
    int node, k;
    int slots[CP__SCAN_CHUNK];
    long long max[CP__SCAN_CHUNK]; /* GETKEYSINSLOT's room per slot */
    long long calls0, calls1;      /* the node's MIGRATE count before and after (pairs only) */
    size_t exec_at;                /* its EXEC in the step's pipeline */
} cp__scan_group;

struct cp_scan {
    cp__client *c;
    cp_pipeline *p;  /* the step's commands; the batch points into its replies until reset */
    cp_pipeline *tp; /* TYPE of each listed key (phase 2 with a TYPE filter) */
    char *match, *type;
    size_t matchlen;
    long count;
    int phase;
    /* The step under way. */
    int sub;          /* CP__SCAN_S_*: where it goes on */
    int io;           /* what the driver's run or refresh ended with: 0 or CP_E* (errstr set) */
    cp_pipeline *run; /* CP__SCAN_ASK_RUN: p or tp */
    long pause_ms;    /* CP__SCAN_ASK_PAUSE */
    /* Phase 1. */
    int *masters; /* node indexes, from the map at the first call */
    int nmasters, at, step;
    char cursor[32];
    long long calls0; /* the master's MIGRATE count when its walk began, -1: unknown */
    uint8_t *mine;    /* [CP_SLOTS] it served them, unmarked, when its walk began */
    /* Both phases. */
    uint8_t *done;       /* [CP_SLOTS] certified */
    cp__nodesview *view; /* scratch */
    /* Phase 2. */
    int16_t *from;          /* [CP_SLOTS] the node to list the slot at next */
    int16_t *pair_from;     /* [CP_SLOTS] a listing there said MIGRATING to pair_to ... */
    int16_t *pair_to;       /* [CP_SLOTS] ... (-1: not a candidate for the pair certificate) */
    cp__scan_group *groups; /* [2 * CP__SCAN_PAIRS] */
    int next_slot;          /* where the next chunk starts looking */
    int stalls;             /* listings in a row that certified nothing */
    uint64_t progress_ns;   /* the last certificate */
    /* Phase 2, kept across the round trips of a step. */
    int pairs;  /* the listing under way is the pairs' (else the chunk's) */
    int ng;     /* groups the pairs are listed in */
    int npairs; /* pair candidates tried: */
    int pslot[CP__SCAN_PAIRS], pa[CP__SCAN_PAIRS],
        pb[CP__SCAN_PAIRS];       /* slot, source A, target B */
    uint8_t held[CP__SCAN_PAIRS]; /* per candidate: bit 0 A's side holds, bit 1 B's */
    uint8_t ok[CP__SCAN_CHUNK];   /* the chunk's slots its listing certifies */
    int chunk_view;               /* view holds the chunk's node's view */
    /* The batch. */
    const redisReply **keys; /* being built: replies in p */
    size_t nkeys, capkeys;
    size_t typed_at, typed_kept, typing; /* TYPE filter: keys checked, kept, being checked */
    redisReply *out;                     /* built, for the caller */
    cp_scan_stats st;
    /* The async driver: the call under way (cb NULL: none). */
    cp_scan_callback *cb;
    void *cb_data;
    cp__wake wake; /* its pause, its wait for the map, or its result put off */
    int wait;      /* which (scan.c's W_*) */
    int result;    /* W_RESULT: what the callback gets, errstr its error's description */
    char errstr[CP_ERRSTR_LEN];
    int in_call; /* inside cp_scan_next_async: the callback may not run now */
};

#endif
