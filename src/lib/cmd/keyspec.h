/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Where a command's keys are and whether it only reads, from the server's command table
 * (cmdtable.h) when the client has one, else from the built-in table (command.h). With the
 * server's table the keys are the ones COMMAND GETKEYS names for the same argv: its key specs
 * are evaluated as Redis 7 evaluates them, and for the few commands whose specs are "unknown"
 * or INCOMPLETE (SORT, SORT_RO, MIGRATE) the server's own rule is reproduced. Servers without
 * key specs give first/last/step, and their movable-key commands use the built-in table.
 *
 * The keys come out as runs (first argv index, count, step), one per key spec that matched, so
 * finding them never allocates, however many keys there are. Pure functions of their
 * arguments; any thread.
 */
#ifndef CLUSTERPIPE_KEYSPEC_H
#define CLUSTERPIPE_KEYSPEC_H

#include "lib/cmd/cmdtable.h"
#include "lib/cmd/command.h"

#define CP__KEYRUNS CP__CMDTABLE_SPECMAX

/* Keys argv[first], argv[first + step], ... (count of them). */
typedef struct cp__keyrun {
    int32_t first, count, step;
} cp__keyrun;

#define CP__KEYS_READONLY 0x1u /* the command never writes (COMMAND: readonly and not write) */
#define CP__KEYS_SERVER 0x2u   /* found with the server's table (else the built-in one) */
#define CP__KEYS_CHANNELS                                                                          \
    0x4u /* some runs are shard channels (asked for: CP__KEYS_WITH_CHANNELS) */
#define CP__KEYS_INVALID                                                                           \
    0x8u /* the server's rules fail on this argv (a syntax error it will                           \
            report): no keys */
#define CP__KEYS_PARTIAL                                                                           \
    0x10u /* a spec could not be followed and no rule of the command's own                         \
             is known here: the keys the other specs give */

typedef struct cp__keys {
    int n;          /* keys in all runs, in the order COMMAND GETKEYS gives them */
    int nruns;      /* runs used in run[] */
    unsigned flags; /* CP__KEYS_* */
    cp__keyrun run[CP__KEYRUNS];
} cp__keys;

/* Search options. */
#define CP__KEYS_WITH_CHANNELS 0x1u /* also shard channels (SPUBLISH, SSUBSCRIBE...): routing */

/* Finds the keys of argv (argc >= 1) in *out. t may be NULL (the built-in table then), and the
 * built-in table also answers for names t lacks. Returns out->n. Never allocates. */
int cp__keys_find(const cp__cmdtable *t, int argc, const char *const *argv, const size_t *argvlen,
                  unsigned search, cp__keys *out);

/* The same for entries already looked up, for callers that keep the entries of recent names
 * (cmddesc.h): ci the built-in table's for argv[0] (cp__cmd_lookup, never NULL), e the server's
 * for argv (cp__cmdtable_lookup; NULL: the built-in table answers). */
int cp__keys_of(const cp__cmdinfo *ci, const cp__cmdspec *e, const cp__cmdtable *t, int argc,
                const char *const *argv, const size_t *argvlen, unsigned search, cp__keys *out);

/* Whether the entry's command never writes: COMMAND's readonly flag without write. */
static inline int cp__cmdspec_readonly(const cp__cmdspec *e) {
    return (e->flags & (CP__CF_READONLY | CP__CF_WRITE)) == CP__CF_READONLY;
}

/* The argv index of key i (0 <= i < k->n). */
static inline int cp__keys_at(const cp__keys *k, int i) {
    for (int r = 0; r < k->nruns; r++) {
        if (i < k->run[r].count)
            return k->run[r].first + i * k->run[r].step;
        i -= k->run[r].count;
    }
    return -1;
}

#endif
