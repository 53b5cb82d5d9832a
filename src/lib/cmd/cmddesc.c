/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A command's descriptor (cmddesc.h): the name looked up once in both tables, then what this argv
 * needs of the rest (keys, timeout, refusal, fan-out), each only when the name says it applies.
 */
#include "lib/cmd/cmddesc.h"

#include "lib/cmd/keyspec.h"
#include "lib/proto/slot.h"

#include <string.h>
#include <strings.h>

/* What the built-in entry ci and the server's entry e (NULL: none) say together. */
static unsigned traits(const cp__cmdinfo *ci, const cp__cmdspec *e, cp__timeout_rule rule) {
    unsigned f = 0;
    if ((ci->flags & CP__CMD_READONLY) || (e != NULL && cp__cmdspec_readonly(e)))
        f |= CP__DESC_READONLY;
    if (e != NULL && (e->flags & CP__CF_PUBSUB))
        f |= CP__DESC_PUBSUB;
    if (ci->flags & CP__CMD_CACHE)
        f |= CP__DESC_CACHE;
    /* WAIT and WAITAOF, which the server flags blocking, stay on their own connection: their
     * meaning is the writes sent before them there (docs/commands.md). */
    if (rule == CP__TIMEOUT_LAST_MS)
        f |= CP__DESC_WAIT;
    else if ((ci->flags & CP__CMD_BLOCKING) || (e != NULL && (e->flags & CP__CF_BLOCKING)) ||
             (e == NULL && rule == CP__TIMEOUT_BLOCK_ARG)) /* XREAD: the built-in table cannot
                                                              flag it (its keys follow STREAMS) */
        f |= CP__DESC_BLOCKS;
    return f;
}

static void find_name(cp__cmdname *n, const cp__cmdtable *t, const char *name, size_t len) {
    n->ci = cp__cmd_lookup(name, len);
    n->t = t;
    n->named = t != NULL ? cp__cmdtable_find(t, name, len) : NULL;
    n->timeout = (uint8_t)cp__cmd_timeout_rule(name, len);
    const cp__cmdspec *e = n->named;
    unsigned f = traits(n->ci, e, (cp__timeout_rule)n->timeout);
    if (e != NULL && e->has_subs)
        f |= CP__DESC_SUBS;
    /* Not plain: WAIT too, whatever the tables flag, since it holds its connection's I/O
     * deadline (CP__F_WAIT), with the caller's slot as without it. */
    if (!(f & CP__DESC_WAIT) && !(e != NULL && (e->has_subs || (e->flags & CP__CF_BLOCKING))) &&
        !(e == NULL && n->timeout == CP__TIMEOUT_BLOCK_ARG) &&
        !(n->ci->flags & (CP__CMD_MULTI | CP__CMD_WATCH | CP__CMD_ALL | CP__CMD_SUBALL |
                          CP__CMD_CONN | CP__CMD_BLOCKING)))
        f |= CP__DESC_PLAIN;
    n->flags = (uint16_t)f;
}

/* Does the subcommand name (argv[1]) equal w, in any case? */
static int sub_is(int argc, const char *const *argv, const size_t *argvlen, const char *w) {
    return argc >= 2 && argvlen[1] == strlen(w) && strncasecmp(argv[1], w, argvlen[1]) == 0;
}

/* How a command that answers for one node's data (DBSIZE, KEYS, FLUSHALL, FLUSHDB, SCRIPT
 * LOAD/FLUSH, FUNCTION LOAD/FLUSH/DELETE/RESTORE) merges when sent to every master, or
 * CP__MERGE_NONE for a command that is not sent to every master by itself. */
static cp__merge fan_rule(const cp__cmdinfo *ci, int argc, const char *const *argv,
                          const size_t *argvlen) {
    if (ci->flags & CP__CMD_ALL)
        return ci->merge;
    if (sub_is(argc, argv, argvlen, "LOAD"))
        return CP__MERGE_SAME;
    if (sub_is(argc, argv, argvlen, "FLUSH") || sub_is(argc, argv, argvlen, "DELETE") ||
        sub_is(argc, argv, argvlen, "RESTORE"))
        return CP__MERGE_OK;
    return CP__MERGE_NONE;
}

/* Folds the keys argv[first], argv[first + step], ... (count of them) into *slot: the first
 * key's slot, or CP__SLOT_CROSS once two differ. *k counts the keys seen. */
static void fold_slots(const char *const *argv, const size_t *argvlen, int first, int count,
                       int step, int *slot, int *k) {
    for (int j = 0; j < count && *slot != CP__SLOT_CROSS; j++, (*k)++) {
        int a = first + j * step;
        int s = (int)cp_keyslot(argv[a], argvlen[a]);
        if (*k == 0)
            *slot = s;
        else if (s != *slot)
            *slot = CP__SLOT_CROSS;
    }
}

/* d->slot, and the positions to split by when the keys span slots and the command may be split:
 * the server's key specs when it has an entry (keyspec.h), else the built-in table's. */
static void find_slot(cp__cmddesc *d, const cp__cmdtable *t, int argc, const char *const *argv,
                      const size_t *argvlen) {
    const cp__cmdinfo *ci = d->name.ci;
    int k = 0, s = CP__SLOT_NONE;
    if (d->e != NULL) {
        cp__keys keys;
        cp__keys_of(ci, d->e, t, argc, argv, argvlen, CP__KEYS_WITH_CHANNELS, &keys);
        for (int r = 0; r < keys.nruns; r++)
            fold_slots(argv, argvlen, keys.run[r].first, keys.run[r].count, keys.run[r].step, &s,
                       &k);
        d->slot = s;
        if (s == CP__SLOT_CROSS && (ci->flags & CP__CMD_SPLIT)) /* parts as the built-in table */
            d->nsplit = cp__cmd_keyspan(ci, argc, argv, argvlen, &d->split_first, &d->split_step);
        return;
    }
    d->nsplit = cp__cmd_keyspan(ci, argc, argv, argvlen, &d->split_first, &d->split_step);
    fold_slots(argv, argvlen, d->split_first, d->nsplit, d->split_step, &s, &k);
    d->slot = s;
}

void cp__cmddesc_fill(cp__cmddesc *d, const cp__cmdtable *t, const cp__cmdname *name, int argc,
                      const char *const *argv, const size_t *argvlen, unsigned want) {
    if (name != NULL)
        d->name = *name;
    else
        find_name(&d->name, t, argv[0], argvlen[0]);
    const cp__cmdinfo *ci = d->name.ci;
    d->e = d->name.named;
    d->flags = d->name.flags;
    if (d->flags & CP__DESC_SUBS) { /* the subcommand's entry, and what it says */
        d->e = cp__cmdtable_subcommand(t, d->e, argc, argv, argvlen);
        d->flags = (d->flags & ~(CP__DESC_READONLY | CP__DESC_PUBSUB | CP__DESC_BLOCKS)) |
                   traits(ci, d->e, (cp__timeout_rule)d->name.timeout);
    }
    d->refusal = (ci->flags & CP__CMD_CONN) ? cp__cmd_refusal(ci, argc, argv, argvlen) : NULL;
    d->block_ms = 0;
    if (d->flags & (CP__DESC_BLOCKS | CP__DESC_WAIT)) {
        uint32_t ms;
        int blocks =
            cp__cmd_block_timeout((cp__timeout_rule)d->name.timeout, argc, argv, argvlen, &ms);
        if (blocks)
            d->block_ms = ms;
        if (blocks && (d->flags & CP__DESC_BLOCKS))
            d->flags |= CP__DESC_BLOCKING;
    }
    d->fan = (ci->flags & (CP__CMD_ALL | CP__CMD_SUBALL)) ? fan_rule(ci, argc, argv, argvlen)
                                                          : CP__MERGE_NONE;
    d->slot = CP__SLOT_NONE;
    d->nsplit = 0;
    d->split_first = 0;
    d->split_step = 1;
    if (want & CP__DESC_WANT_SLOT)
        find_slot(d, t, argc, argv, argvlen);
}
