/* SPDX-License-Identifier: BSD-3-Clause
 *
 * What the router needs to know about a command: where its keys are, whether it only reads
 * (so it may be re-sent after its outcome became unknown), and whether it may be split across
 * slots. A static, const table; lookups are pure and thread-safe.
 */
#ifndef CLUSTERPIPE_COMMAND_H
#define CLUSTERPIPE_COMMAND_H

#include <stddef.h>
#include <stdint.h>

#define CP__CMD_READONLY 0x1u  /* never changes data: safe to re-send */
#define CP__CMD_NOKEY 0x2u     /* has no key: any node may serve it */
#define CP__CMD_NUMKEYS 0x4u   /* EVAL-style: argv[2] = number of keys, keys from argv[3] */
#define CP__CMD_SPLIT 0x8u     /* multi-key command that may be split per slot */
#define CP__CMD_MULTI 0x10u    /* MULTI: opens a transaction (txn.c) */
#define CP__CMD_EXEC 0x20u     /* EXEC, DISCARD: closes one */
#define CP__CMD_WATCH 0x40u    /* WATCH: a later EXEC on its node is never re-sent elsewhere */
#define CP__CMD_ALL 0x80u      /* answers for one node's data: sent to every master, merged */
#define CP__CMD_SUBALL 0x100u  /* SCRIPT, FUNCTION: some subcommands go to every master */
#define CP__CMD_UNWATCH 0x200u /* UNWATCH: ends the WATCHes before it (on every master) */
/* CONN: changes what its connection answers: refused, or checked by cp__cmd_refusal (CLIENT,
 * SELECT: some subcommands and arguments). BLOCKING: may block on the server (BLPOP, ...):
 * cp__cmd_block_timeout. */
#define CP__CMD_CONN 0x400u
#define CP__CMD_BLOCKING 0x800u
/* A read the client-side cache may answer (cache.h): its keys start at argv[1], and the server
 * tracks them (docs/commands.md, "Client-side cache"). */
#define CP__CMD_CACHE 0x1000u

/* How a split command's sub-replies are merged back into one reply. */
typedef enum cp__merge {
    CP__MERGE_NONE = 0,
    CP__MERGE_ARRAY,  /* MGET: array of values in key order */
    CP__MERGE_SUM,    /* DEL/EXISTS/UNLINK/TOUCH: sum of integers */
    CP__MERGE_OK,     /* MSET, FLUSHALL: +OK when every part said OK */
    CP__MERGE_CONCAT, /* KEYS: every part's array, one after another */
    CP__MERGE_SAME,   /* SCRIPT LOAD: the one answer every part gave */
    CP__MERGE_NODES   /* anything else sent to every master: an array of their replies */
} cp__merge;

typedef struct cp__cmdinfo {
    const char *name; /* upper case */
    int first;        /* argv index of the first key (0 = none) */
    int last;         /* argv index of the last key; negative counts from the end (-1 = last) */
    int step;         /* distance between keys (MSET: 2) */
    unsigned flags;   /* CP__CMD_* */
    cp__merge merge;
} cp__cmdinfo;

/* Looks up a command name (any case, not NUL-terminated). Unknown commands get a generic entry:
 * argv[1] is the key, not read-only; never NULL. */
const cp__cmdinfo *cp__cmd_lookup(const char *name, size_t len);

/* Why a command that changes its connection's state (CP__CMD_CONN) is refused: a message for
 * the caller, or NULL when these arguments change nothing the library relies on (SELECT 0,
 * CLIENT SETNAME). Every connection is shared by the commands of many callers and reopened by
 * the library at will, so no command may change what it answers to the others. */
const char *cp__cmd_refusal(const cp__cmdinfo *ci, int argc, const char *const *argv,
                            const size_t *argvlen);

/* Where a blocking command's timeout is, by its name: XREAD and XREADGROUP's BLOCK option (ms),
 * WAIT and WAITAOF's last argument (ms), BLMPOP and BZMPOP's first (seconds), anyone else's last
 * (seconds: BLPOP, BLMOVE, ...). */
typedef enum cp__timeout_rule {
    CP__TIMEOUT_LAST_S = 0,
    CP__TIMEOUT_FIRST_S,
    CP__TIMEOUT_LAST_MS,  /* WAIT, WAITAOF */
    CP__TIMEOUT_BLOCK_ARG /* XREAD, XREADGROUP */
} cp__timeout_rule;

/* The timeout rule of a command name (any case, not NUL-terminated). */
cp__timeout_rule cp__cmd_timeout_rule(const char *name, size_t len);

/* A command the server flags blocking (or the built-in table does), its name's timeout rule
 * given: whether these arguments block, and for how long. Returns 1 with *ms its timeout in
 * milliseconds (UINT32_MAX: none, it waits until answered; an unreadable timeout, which the
 * server refuses at once, counts as 0 ms), or 0 when they do not block (XREAD and XREADGROUP
 * without BLOCK). WAIT and WAITAOF too (their timeout in ms), though they stay on their own
 * connection, whose writes they count (docs/commands.md). */
int cp__cmd_block_timeout(cp__timeout_rule rule, int argc, const char *const *argv,
                          const size_t *argvlen, uint32_t *ms);

/* Key positions of one command with `argc` arguments: the keys are argv[*first + k * *step] for
 * k < the returned count. Returns 0 for keyless commands and for malformed EVAL-style numkeys.
 * Only argv[2] (the numkeys argument) is ever read. */
int cp__cmd_keyspan(const cp__cmdinfo *ci, int argc, const char *const *argv, const size_t *argvlen,
                    int *first, int *step);

#endif
