/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Pipeline internals shared by pipeline.c (append, outcomes, replies), exec.c (routing, sending,
 * reading, redirects and retries), multikey.c (split and merge of multi-key commands across
 * slots) and the layers above. A pipeline is also the core's unit of work, a batch: the
 * caller's pipelines, the async layer's batches of commands with a callback each, and the
 * refresh's request all run the same way, any number of them at once on one client. A pipeline
 * owns its command arena, its replies and its split parts; it borrows its client.
 */
#ifndef CLUSTERPIPE_PIPELINE_H
#define CLUSTERPIPE_PIPELINE_H

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/client/client.h"
#include "lib/cmd/cmddesc.h"
#include "lib/proto/replyarena.h"
#include "lib/proto/resp.h"

/* CP__SLOT_NONE (keyless: any node) and CP__SLOT_CROSS (keys in several slots): cmddesc.h. */
#define CP__SLOT_NODE (-3)    /* for one chosen node (cmd.node): never redirected nor retried */
#define CP__SLOT_REFUSED (-4) /* refused before sending: a transaction without its EXEC */

/* cp_pipeline.next_node: by its keys (the table's rules), to every master, or a node index. */
#define CP__TO_KEYS (-1)
#define CP__TO_ALL (-2)

/* A node index a caller passed, for cp__pipeline_append_to: a negative one names no node and is
 * refused as one (CP__TO_KEYS and CP__TO_ALL are the library's own). */
static inline int cp__node_arg(int node) {
    return node >= 0 ? node : INT_MAX;
}

#define CP__F_READONLY 0x01u   /* command never changes data */
#define CP__F_IDEMPOTENT 0x02u /* caller says re-sending is harmless */
#define CP__F_ASKING 0x04u     /* send ASKING first (one-shot, set by an ASK redirect) */
#define CP__F_SPLIT 0x08u      /* a user command carried by parts; never sent itself */
#define CP__F_WRITTEN 0x10u    /* waiting for retry after being written: unknown if abandoned */
#define CP__F_TX 0x20u         /* in a MULTI ... EXEC/DISCARD unit (txn.h); part0: the unit */
#define CP__F_TXEND 0x40u      /* the unit's EXEC or DISCARD */
#define CP__F_WATCH                                                                                \
    0x80u                     /* WATCH: its node's next unit is handed back, never re-sent; a      \
                                 part of UNWATCH: its answer ends that */
#define CP__F_PARKED 0x100u   /* put aside for a retry round, and parked in its slot's fence */
#define CP__F_BLOCKING 0x200u /* a blocking command: runs on a pool connection (pool.h) */
#define CP__F_WAIT 0x400u     /* WAIT, WAITAOF: its connection's I/O deadline waits for it */
#define CP__F_SCRIPT                                                                               \
    0x800u /* an EVALSHA whose NOSCRIPT is answered by its EVAL (script.h), not yet sent as that:  \
              the slot's later commands wait for its answer */
#define CP__F_CACHE 0x1000u /* a read the client-side cache may answer and keep (cache.h) */
#define CP__F_HIT 0x2000u   /* ... and it did: answered at its first send, never written */
#define CP__F_DROPS                                                                                \
    0x4000u /* may write, on a client with a cache: drops its slot's entries (every entry without  \
               a slot) each time it is queued to go (send.c) */

#define CP__BLOCK_FOREVER UINT32_MAX /* a blocking command's timeout 0: it waits for its answer */

/* Tags on the wire: user command i is i; part j is CP__PART_TAG | j. Tags from
 * CP__TAG_INTERNAL up are not commands (ASKING here, AUTH in conn.h). */
#define CP__PART_TAG 0x80000000u
#define CP__ASKING_TAG 0xFFFFFFFFu
#define CP__TAG_INTERNAL 0xFFFFFFF0u

typedef struct cp__cmd {
    uint64_t off; /* bytes in the arena */
    uint32_t len;
    int32_t slot; /* 0..16383, CP__SLOT_NONE, CP__SLOT_CROSS or CP__SLOT_NODE */
    union {
        int32_t node;       /* CP__SLOT_NODE: the node it is for */
        uint32_t cache_gen; /* CP__F_CACHE (slot >= 0): its slot's generation when sent */
    };
    int32_t parent;  /* part: index of its user command; else -1 */
    uint32_t part0;  /* split user command: first part index */
    uint32_t nparts; /* split user command: number of parts */
    union {
        uint32_t pending;  /* split user command: parts without an outcome yet */
        uint32_t block_ms; /* blocking command or WAIT (never split): its timeout, or
                              CP__BLOCK_FOREVER */
    };
    uint16_t flags;
    uint8_t outcome; /* cp_outcome */
    uint8_t redirects;
    uint8_t merge;     /* cp__merge of a split command */
    int8_t err;        /* why it did not end CP_DONE (CP_E*), for its callback */
    uint32_t seq;      /* its place in the client's send order (fence.h), from its first send */
    redisReply *reply; /* in the pipeline's reply arena */
    uint64_t sent_ns, done_ns; /* first send, and the read that carried the answer */
} cp__cmd;

/* The last command names described, exactly as spelled, with their names' part of the
 * descriptor (cmddesc.h): a pipeline usually repeats a few commands, and looking a name up in
 * the tables costs more than the rest of an append together. */
#define CP__MEMO 2
typedef struct cp__cmdmemo {
    char name[16];
    size_t len;     /* 0: empty */
    cp__cmdname n;  /* n.t: the server's table it was looked up in */
    uint16_t flags; /* a command's CP__F_* by name (read-only, the cache's), for record_at_slot */
} cp__cmdmemo;

typedef struct cp__cmdvec {
    cp__cmd *v;
    size_t n, cap;
} cp__cmdvec;

/* A transaction in a batch: MULTI (first) to EXEC or DISCARD (last). In a cluster these form a
 * unit that must reach one node, in one piece, or not at all. pipeline.c forms it at append
 * time: its members are marked (CP__F_TX, part0 = the unit) and all get the slot of their keys,
 * so they are routed together; keys in several slots refuse the whole unit before anything is
 * sent (CP__SLOT_CROSS), and so does a unit still open when its batch starts or is sealed
 * (CP__SLOT_REFUSED). Sending, holding the members' outcomes until the last one's reply, and
 * re-sending once after a redirect are exec.c's. WATCH is routed by its keys like any command;
 * it only marks its node (CP__F_WATCH): a unit after it there is handed back, never re-sent. */
typedef struct cp__txn {
    uint32_t first, last;
    int32_t target; /* a MOVED or ASK came for it: the node to re-send it to, else -1 */
    uint8_t ask;    /* that redirect was ASK */
    uint8_t resent; /* re-sent once already */
} cp__txn;

/* A script's EVAL form, formatted at its append beside its EVALSHA (which is what the command's
 * off/len hold), for the one re-send a NOSCRIPT asks for (script.h). */
typedef struct cp__script_eval {
    uint32_t tag; /* the command: a user command's index (scripts are never split) */
    uint32_t len;
    uint64_t off; /* bytes in the arena */
} cp__script_eval;

typedef enum cp__batch_kind {
    CP__BATCH_USER = 0, /* the caller's pipeline: cp_exec, cp_exec_async */
    CP__BATCH_ASYNC,    /* async commands of one loop turn; recycled once finished and sealed */
    CP__BATCH_REFRESH   /* the refresh's request */
} cp__batch_kind;

struct cp_pipeline {
    cp__reply_arena replies; /* first: a connection names a request's owner by its arena */
    cp__client *c;
    int kind; /* cp__batch_kind */
    int err;
    char *errstr;     /* err's message, allocated to its size when err is set (NULL: none yet);
                         an exec without errors keeps the last one and never reads it */
    cp__buf arena;    /* every command's RESP bytes */
    cp__cmdvec cmds;  /* what the caller appended */
    cp__cmdvec parts; /* sub-commands of split commands */
    uint32_t *retry;  /* tags waiting for the next retry round */
    size_t nretry, capretry;
    const char **argv; /* scratch for argument parsing */
    size_t *argvlen;
    size_t capargv;
    cp__cmdmemo memo[CP__MEMO]; /* most recent first */
    size_t remaining;           /* commands and parts without an outcome */
    uint64_t deadline;          /* end of this exec's retry budget */
    uint64_t retry_at;          /* next retry round, 0 when none */
    unsigned round;             /* retry rounds so far */
    int node_failed; /* a connection broke or CLUSTERDOWN came: refresh before the next round */
    int wait_map;    /* retries wait for the refresh under way */
    int executed;
    /* Running on the client (exec.c). */
    int running;
    unsigned stamp;                          /* cp__exec_timers' visit mark */
    struct cp_pipeline *prev_run, *next_run; /* the client's running batches */
    cp_exec_callback *done;                  /* cp_exec_async's, called after the last outcome */
    void *done_data;
    int orphan;      /* freed while running: freed by the core when it finishes */
    int sealed;      /* async batch: takes no more commands; recycled once finished */
    size_t npending; /* caller's pipeline: its commands counted in the client's pending */
    cp__cb *cbs;     /* async batch: a callback per command (NULL: a caller's pipeline) */
    size_t capcbs;
    cp__txn *txns; /* its transactions, in order */
    size_t ntxns, captxns;
    int txn_open;   /* the last one has its MULTI but not yet its EXEC/DISCARD */
    int watch_slot; /* the WATCHes since the last unit ended: their slot, CP__SLOT_CROSS, or
                       CP__SLOT_NONE (none); the next unit's keys include theirs */
    int next_node;  /* where the next append goes: CP__TO_KEYS, CP__TO_ALL or a node index */
    int multi_open; /* not a cluster: a MULTI was appended without its EXEC/DISCARD yet (the unit
                       is the server's alone; a script in it goes as EVAL, script.h) */
    cp__script_eval *evals; /* its scripts' EVAL forms, in append order */
    size_t nevals, capevals;
    struct cp_pipeline *next_spare;
};

/* The batch whose reply arena this is (replies is its first member). */
static inline cp_pipeline *cp__pipeline_of_arena(cp__reply_arena *a) {
    return (cp_pipeline *)(void *)a;
}

/* Records the first error of an exec on the pipeline (later ones are usually its
 * consequences). Here, not in pipeline.c, like the two growers below: multikey.c records
 * errors and commands too, and pipeline.c calls multikey.c, so neither may call the other back
 * (scripts/check-layers.py, rule 7). */
static inline void cp__pipeline_set_err(cp_pipeline *p, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void cp__pipeline_set_err(cp_pipeline *p, int code, const char *fmt, ...) {
    if (p->err != 0)
        return;
    p->err = code;
    char msg[CP_ERRSTR_LEN];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1;
    /* Its own size: every request waiting on a master that died has its pipeline's error set,
     * and a one-command pipeline should not hold 256 bytes for a message of 50 (issue 45). */
    cp__free(p->errstr);
    p->errstr = cp__malloc(len + 1);
    if (p->errstr != NULL) /* else cp__pipeline_errstr falls back to the code's description */
        memcpy(p->errstr, msg, len + 1);
}

/* The description of the pipeline's first error ("" when none). */
static inline const char *cp__pipeline_errstr(const cp_pipeline *p) {
    if (p->err == 0)
        return "";
    return p->errstr != NULL ? p->errstr : cp_strerror(p->err);
}

/* The command a wire tag names. */
static inline cp__cmd *cp__get(cp_pipeline *p, uint32_t tag) {
    return (tag & CP__PART_TAG) ? &p->parts.v[tag & ~CP__PART_TAG] : &p->cmds.v[tag];
}

/* 1 when the client-side cache answered the command (a split one: every part). */
static inline int cp__cmd_cached(const cp_pipeline *p, const cp__cmd *cmd) {
    if (!(cmd->flags & CP__F_SPLIT))
        return (cmd->flags & CP__F_HIT) != 0;
    for (uint32_t j = 0; j < cmd->nparts; j++)
        if (!(p->parts.v[cmd->part0 + j].flags & CP__F_HIT))
            return 0;
    return 1;
}

/* cp_append with a va_list, and cp_append_argv with an optional slot (< 0: from the keys),
 * for a batch that is already running (async) as well as a new one. */
int cp__pipeline_appendv(cp_pipeline *p, const char *fmt, va_list ap);

/* cp__pipeline_appendv to `to`: CP__TO_ALL (every master) or a node index, for a new pipeline or
 * a running async batch. CP_EINVAL for a node the client does not have. */
int cp__pipeline_append_to(cp_pipeline *p, int to, const char *fmt, va_list ap);
int cp__pipeline_append_argv(cp_pipeline *p, int argc, const char **argv, const size_t *argvlen,
                             int slot);

/* Makes sure p->argv/argvlen hold at least n entries. 0 or CP_ENOMEM. */
static inline int cp__pipeline_argv_reserve(cp_pipeline *p, size_t n) {
    if (n <= p->capargv)
        return 0;
    const char **a = cp__realloc(p->argv, n * sizeof(*a));
    if (a != NULL)
        p->argv = a;
    size_t *l = cp__realloc(p->argvlen, n * sizeof(*l));
    if (l != NULL)
        p->argvlen = l;
    if (a == NULL || l == NULL)
        return CP_ENOMEM;
    p->capargv = n;
    return 0;
}

/* Adds a command record; returns its address (valid until the next add) or NULL on OOM. Inline:
 * every append runs it, and the shared library is built without link-time optimization. */
static inline cp__cmd *cp__cmdvec_add(cp__cmdvec *v) {
    if (v->n == v->cap) {
        /* From 1, doubling: a pipeline keeps its records for reuse, so only its first exec
         * grows them, and many hold one command (an open-loop program's waiting requests, one
         * pipeline each: issue 45). */
        size_t ncap = v->cap ? v->cap * 2 : 1;
        cp__cmd *n = cp__realloc(v->v, ncap * sizeof(*n));
        if (n == NULL)
            return NULL;
        v->v = n;
        v->cap = ncap;
    }
    cp__cmd *c = &v->v[v->n++];
    *c = (cp__cmd){.node = -1, .parent = -1}; /* inline stores, not a memset call per append */
    return c;
}

/* Frees a pipeline that is not running. */
void cp__pipeline_destroy(cp_pipeline *p);

/* Command i was just recorded with the table's flags cmdflags (CP__CMD_*): opens, joins or
 * closes a unit. Returns 0 or CP_ENOMEM (then i is not in a unit). Cluster mode only. */
int cp__txn_record(cp_pipeline *p, size_t i, unsigned cmdflags);

/* The unit a member belongs to. */
static inline cp__txn *cp__txn_of(cp_pipeline *p, const cp__cmd *cmd) {
    return &p->txns[cmd->part0];
}

/* A unit still open (MULTI without EXEC) is refused: its members get CP__SLOT_REFUSED and the
 * unit is closed at the last command. Returns the unit's index, or -1 when none was open. */
long cp__txn_refuse_open(cp_pipeline *p);

/* multikey.c: sends user command `i` to every master of the map as parts (CP__SLOT_NODE), merged
 * by its cmd.merge. Returns 0, CP_ETOPOLOGY (no master known yet) or CP_ENOMEM. */
int cp__fan_out(cp_pipeline *p, size_t i);

/* multikey.c: splits user command `i` (keys in several slots, splittable) into one part per
 * slot, appended to p->parts: its keys are argv[first + k * step] for k < nkeys (its
 * descriptor's, cmddesc.h). Returns 0 or CP_ENOMEM. */
int cp__split(cp_pipeline *p, size_t i, int first, int step, int nkeys);

/* multikey.c: builds the reply and outcome of split command `i` from its parts. */
void cp__merge_parts(cp_pipeline *p, size_t i);

#endif
