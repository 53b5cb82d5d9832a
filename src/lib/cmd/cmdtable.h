/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The server's command table: a COMMAND reply (RESP2 arrays, Redis 7 shape; the first six
 * fields of older servers) parsed into one immutable table per client, looked up by name without
 * allocating. Each entry has the command's flags (readonly, write, ...), its arity, its Redis 7
 * key specs (begin_search index / keyword, find_keys range / keynum) and the legacy
 * first/last/step, which is all older servers give. Subcommands ("object|encoding",
 * "config|get", ...) are entries of their own, found from argv[0] and argv[1].
 *
 * What the entries mean for an argv (key positions, read-only) is keyspec.h's. The built-in
 * table (command.h) stays the answer for endpoints that refuse COMMAND and for names this table
 * lacks.
 *
 * Ownership: cp__cmdtable_parse allocates the table (four blocks) and never keeps the reply;
 * cp__cmdtable_free frees it. The owner (the client) frees it with itself. A parsed table is
 * never modified, so lookups are pure; one thread at a time, as its client.
 */
#ifndef CLUSTERPIPE_CMDTABLE_H
#define CLUSTERPIPE_CMDTABLE_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "clusterpipe/clusterpipe.h"

/* Command flags (COMMAND's third field); names the server sends that are not listed here are
 * ignored. */
#define CP__CF_WRITE 0x00001u
#define CP__CF_READONLY 0x00002u
#define CP__CF_DENYOOM 0x00004u
#define CP__CF_ADMIN 0x00008u
#define CP__CF_PUBSUB 0x00010u
#define CP__CF_NOSCRIPT 0x00020u
#define CP__CF_BLOCKING 0x00040u
#define CP__CF_LOADING 0x00080u
#define CP__CF_STALE 0x00100u
#define CP__CF_SKIP_MONITOR 0x00200u
#define CP__CF_SKIP_SLOWLOG 0x00400u
#define CP__CF_ASKING 0x00800u
#define CP__CF_FAST 0x01000u
#define CP__CF_NO_AUTH 0x02000u
#define CP__CF_MAY_REPLICATE 0x04000u
#define CP__CF_NO_MANDATORY_KEYS 0x08000u
#define CP__CF_NO_ASYNC_LOADING 0x10000u
#define CP__CF_NO_MULTI 0x20000u
#define CP__CF_MOVABLEKEYS 0x40000u
#define CP__CF_ALLOW_BUSY 0x80000u
#define CP__CF_RANDOM 0x100000u          /* Redis < 7 */
#define CP__CF_SORT_FOR_SCRIPT 0x200000u /* Redis < 7 */
#define CP__CF_MODULE 0x400000u

/* Key spec flags (the spec's "flags" field). */
#define CP__KF_RO 0x001u
#define CP__KF_RW 0x002u
#define CP__KF_OW 0x004u
#define CP__KF_RM 0x008u
#define CP__KF_ACCESS 0x010u
#define CP__KF_UPDATE 0x020u
#define CP__KF_INSERT 0x040u
#define CP__KF_DELETE 0x080u
#define CP__KF_NOT_KEY 0x100u        /* a shard channel, not a key: routed like one */
#define CP__KF_INCOMPLETE 0x200u     /* may miss keys: the command's own rule decides */
#define CP__KF_VARIABLE_FLAGS 0x400u /* flags depend on the arguments (SET ... GET) */

enum { CP__BS_UNKNOWN = 0, CP__BS_INDEX, CP__BS_KEYWORD };
enum { CP__FK_UNKNOWN = 0, CP__FK_RANGE, CP__FK_KEYNUM };

/* Commands whose keys the specs cannot give (an "unknown" or INCOMPLETE spec): the server then
 * runs a procedure of its own, which keyspec.c reproduces for these. */
enum { CP__PROC_NONE = 0, CP__PROC_SORT, CP__PROC_SORT_RO, CP__PROC_MIGRATE };

typedef struct cp__keyspec {
    uint8_t bs;     /* CP__BS_* */
    uint8_t fk;     /* CP__FK_* */
    uint16_t flags; /* CP__KF_* */
    int32_t pos;    /* index: the argv position; keyword: startfrom (< 0 counts from the end) */
    uint32_t kw;    /* keyword: offset of its bytes (upper case as sent) in the table's pool */
    uint32_t kwlen;
    /* range: lastkey, keystep, limit; keynum: keynumidx, firstkey, keystep */
    int32_t a, b, c;
} cp__keyspec;

typedef struct cp__cmdspec {
    uint32_t name;             /* offset of the lower-case full name ("get", "object|encoding") */
    uint16_t namelen;          /* of the full name */
    uint16_t baselen;          /* of the container part (== namelen for a top-level command) */
    uint32_t flags;            /* CP__CF_* */
    int32_t arity;             /* > 0 exact argc, < 0 at least -arity */
    int32_t first, last, step; /* legacy positions (last < 0 counts from the end) */
    uint32_t spec0;            /* its first key spec in the table's specs[] */
    uint16_t nspecs;
    uint8_t has_specs; /* the reply had key specs (Redis 7): else the legacy triple is used */
    uint8_t has_subs;  /* a container (OBJECT, CONFIG, ...): argv[1] names the entry to use */
    uint8_t proc;      /* CP__PROC_* */
} cp__cmdspec;

typedef struct cp__cmdtable {
    cp__cmdspec *cmds; /* top-level commands and subcommands, in the reply's order */
    uint32_t ncmds;
    cp__keyspec *specs;
    uint32_t nspecs;
    char *pool; /* names and keywords */
    size_t poollen;
    uint32_t *slots;  /* open addressing by hash of the case-folded name: cmds index + 1, 0 empty */
    uint32_t mask;    /* slots - 1 (a power of two minus one) */
    uint32_t skipped; /* entries of the reply left out as malformed (their names use command.h) */
    int refs;         /* clients sharing it (cp_options.commands_from); atomic */
} cp__cmdtable;

/* Limits a reply must respect; longer names or more specs make an entry malformed (skipped). */
#define CP__CMDTABLE_NAMEMAX 64
#define CP__CMDTABLE_SPECMAX 8

/* Parses a COMMAND (or COMMAND INFO) reply into a new table at *out. Malformed entries are
 * skipped and counted; nil entries (COMMAND INFO of an unknown name) are ignored. Returns 0;
 * CP_ESERVER when r is an error reply (the endpoint refuses COMMAND), CP_EPROTO when it is not
 * an array or holds no usable entry, with the reason in err; or CP_ENOMEM. Never keeps r. */
int cp__cmdtable_parse(const redisReply *r, cp__cmdtable **out, char *err, size_t errlen);

/* Drops a reference to a table, freeing it with the last (NULL is fine). Any thread. */
void cp__cmdtable_free(cp__cmdtable *t);

/* Takes one more reference (a client sharing another's table). Any thread. */
static inline cp__cmdtable *cp__cmdtable_ref(cp__cmdtable *t) {
    if (t != NULL)
        __atomic_fetch_add(&t->refs, 1, __ATOMIC_RELAXED);
    return t;
}

/* The entry for an argv: argv[0] looked up in any case; a container with argc >= 2 gives its
 * subcommand argv[1]'s entry when the table has one, else the container's own. NULL when the
 * table lacks argv[0] (or t is NULL). No allocation. */
const cp__cmdspec *cp__cmdtable_lookup(const cp__cmdtable *t, int argc, const char *const *argv,
                                       const size_t *argvlen);

/* The entry a container's argv names: e (argv[0]'s entry, from this table) for a command that is
 * not a container or an argv without a subcommand, else argv[1]'s entry, or e when the table
 * lacks it. cp__cmdtable_lookup's second half, for callers that found argv[0]'s entry already. */
const cp__cmdspec *cp__cmdtable_subcommand(const cp__cmdtable *t, const cp__cmdspec *e, int argc,
                                           const char *const *argv, const size_t *argvlen);

/* The entry with this full name ("get", "OBJECT|encoding": any case), or NULL. */
const cp__cmdspec *cp__cmdtable_find(const cp__cmdtable *t, const char *name, size_t len);

/* The entry's name (not NUL-terminated: e->namelen bytes). */
static inline const char *cp__cmdtable_name(const cp__cmdtable *t, const cp__cmdspec *e) {
    return t->pool + e->name;
}

#endif
