/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A command's descriptor: everything the library decides about one argv, found in one call, so
 * that the append that records it reads the answers and never looks the command up again. Two
 * parts:
 * - the name's (cp__cmdname): its built-in entry (command.h), its entry in the server's table
 *   (cmdtable.h) and what they say together: read-only, pub/sub, how it may block and where its
 *   timeout is, whether it is a container, and whether the caller's slot says all there is to
 *   say. It depends on the name and the table alone, so a caller may keep it (a pipeline's memo
 *   of its last names) and hand it back for the next argv of that name;
 * - the argv's (cp__cmddesc): a container's subcommand entry, the keys' slot (or
 *   CP__SLOT_CROSS) and their positions when the command may be split, the blocking timeout, the
 *   refusal of a command that would change a shared connection, and the merge rule of a command
 *   that goes to every master. Each is worked out only when the name says it can apply.
 * Pure functions of their arguments, no allocation; any thread.
 */
#ifndef CLUSTERPIPE_CMDDESC_H
#define CLUSTERPIPE_CMDDESC_H

#include <stddef.h>
#include <stdint.h>

#include "lib/cmd/cmdtable.h"
#include "lib/cmd/command.h"

#define CP__SLOT_NONE (-1)  /* keyless: any node */
#define CP__SLOT_CROSS (-2) /* keys in several slots */

/* What a name says (cp__cmdname.flags), and for one argv (cp__cmddesc.flags). */
#define CP__DESC_READONLY 0x01u /* never changes data: either table says so */
#define CP__DESC_PUBSUB 0x02u   /* the server calls it pub/sub (PUBLISH: changes no key) */
#define CP__DESC_BLOCKS                                                                            \
    0x04u /* may block on the server (either table, or XREAD-like without the server's table)      \
             and is not WAIT: blocks when its arguments say so (CP__DESC_BLOCKING) */
#define CP__DESC_WAIT 0x08u /* WAIT, WAITAOF: waits for the writes before it on its connection */
#define CP__DESC_SUBS 0x10u /* a container in the server's table: its entry depends on argv[1] */
#define CP__DESC_PLAIN                                                                             \
    0x20u /* given the caller's slot, the name says all: no container, unit, every-master          \
             command, refusal or blocking (the pipeline's fast path) */
#define CP__DESC_CACHE                                                                             \
    0x40u /* a read the client-side cache may answer (CP__CMD_CACHE: cache.h, docs/commands.md) */
/* The argv's own (cp__cmddesc.flags only). */
#define CP__DESC_BLOCKING 0x100u /* CP__DESC_BLOCKS, and these arguments block: block_ms */

typedef struct cp__cmdname {
    const cp__cmdinfo *ci;    /* the built-in table's entry (never NULL: unknown's) */
    const cp__cmdtable *t;    /* the server's table it was looked up in, or NULL */
    const cp__cmdspec *named; /* the name's entry there, NULL when t lacks it */
    uint16_t flags;           /* CP__DESC_* of the name (named, not a subcommand) */
    uint8_t timeout;          /* cp__timeout_rule of the name */
} cp__cmdname;

typedef struct cp__cmddesc {
    cp__cmdname name;
    /* The server's entry for this argv (a container's subcommand's), or NULL. */
    const cp__cmdspec *e;
    unsigned flags;      /* CP__DESC_*: the name's, for e, and CP__DESC_BLOCKING */
    const char *refusal; /* why the command may not be sent (CP__CMD_CONN), or NULL */
    uint32_t block_ms;   /* CP__DESC_BLOCKING or CP__DESC_WAIT: its timeout (UINT32_MAX: none) */
    cp__merge fan;       /* sent to every master by itself: how the replies merge; else NONE */
    /* With CP__DESC_WANT_SLOT only: the keys' slot, CP__SLOT_NONE or CP__SLOT_CROSS; and for
     * CP__SLOT_CROSS and CP__CMD_SPLIT, the keys to split by: argv[split_first + k * split_step]
     * for k < nsplit. */
    int slot;
    int split_first, split_step, nsplit;
} cp__cmddesc;

/* Options of cp__cmddesc_fill. */
#define CP__DESC_WANT_SLOT 0x1u /* find the keys' slot (a cluster, no slot given) */

/* Describes argv (argc >= 1) in *d. t is the server's table (NULL: none); name is what an earlier
 * call put in d->name for the same name and table, or NULL to look the name up (d->name then
 * holds it, for the caller to keep). */
void cp__cmddesc_fill(cp__cmddesc *d, const cp__cmdtable *t, const cp__cmdname *name, int argc,
                      const char *const *argv, const size_t *argvlen, unsigned want);

#endif
