/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The writer: what the sources give, written to the target cluster through libclusterpipe, in
 * batches (one pipeline each, run with cp_exec, so every command is routed by slot, followed
 * through MOVED/ASK and retried through failovers, and its order kept per key).
 *
 * A batch holds RESTOREs of snapshot keys, stream commands, and transactions (MULTI ... EXEC as
 * one unit when its keys share a slot; a unit whose keys span slots, legal on a standalone
 * source, is written as its commands one by one: the same end state, not atomic on the target).
 * cp__mw_flush runs it and checks every command: an outcome other than CP_DONE (unknown: the
 * command may or may not have run; not executed: it did not, but a later command of its key may
 * have), or an error reply to a stream command (or to a member of an EXEC), marks the command's
 * keys in its source's key set; so does a command that touches a key already marked, since what it
 * wrote was computed from a value not known. Marked keys are re-copied from the source later
 * (migrate.c). A RESTORE refused by the target, OOM, and a keyless command not done stop the run:
 * nothing could re-copy those; so do 30 s of batches of which nothing ran (the target cannot be
 * reached).
 */
#ifndef CLUSTERPIPE_MIGRATE_WRITER_H
#define CLUSTERPIPE_MIGRATE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "clusterpipe/clusterpipe.h"
#include "migrate/keyset.h"

typedef struct cp__mw cp__mw;

/* One stream command, its arguments copied (a transaction's members wait for their EXEC). */
typedef struct cp__mw_cmd {
    int argc;
    char **argv;
    size_t *argvlen;
} cp__mw_cmd;

typedef struct cp__mw_stats {
    uint64_t written;      /* commands that ended CP_DONE with no error */
    uint64_t unknown;      /* ended CP_UNKNOWN */
    uint64_t not_executed; /* ended CP_NOT_EXECUTED */
    uint64_t errors;       /* stream commands the target answered with an error */
    uint64_t marked;       /* keys marked for a re-copy */
    char first_error[256]; /* the first of those, with its command's name */
} cp__mw_stats;

/* marks[i]: source i's marked keys, copied[i]: its snapshot keys written (the caller's arrays;
 * the writer adds to them). */
cp__mw *cp__mw_new(cp_client *c, cp__keyset *marks, uint64_t *copied);
void cp__mw_free(cp__mw *w);

/* The keys of a command, as the target's client routes it (cp_command_keys): the argv index of
 * each, every one of them, in an array of the writer's valid until its next call; *n their count.
 * NULL out of memory. */
const int *cp__mw_keys(cp__mw *w, int argc, const char *const *argv, const size_t *argvlen, int *n);

/* 1 when a key of the command is marked in source src's set (then all its keys are marked too,
 * and the caller skips it), 0 when none is, -1 out of memory. */
int cp__mw_taints(cp__mw *w, int src, int argc, const char *const *argv, const size_t *argvlen);

/* RESTORE key expire_ms payload REPLACE ABSTTL (expire_ms -1: no TTL, sent as 0); snapshot: a
 * key of the snapshot (counted in copied once done), else a re-copy. */
int cp__mw_restore(cp__mw *w, int src, int snapshot, const char *key, size_t klen,
                   const unsigned char *payload, size_t plen, int64_t expire_ms);

/* DEL key: a re-copy of a key the source no longer has. */
int cp__mw_del(cp__mw *w, int src, const char *key, size_t klen);

int cp__mw_command(cp__mw *w, int src, int argc, const char *const *argv, const size_t *argvlen);

/* MULTI, the n members, EXEC (see above for a unit whose keys span slots). */
int cp__mw_unit(cp__mw *w, int src, const cp__mw_cmd *members, int n);

size_t cp__mw_count(const cp__mw *w);

/* Why an append above failed: the library's refusal, else "out of memory". */
const char *cp__mw_error(const cp__mw *w);

/* Runs the batch, checks it, marks keys; the batch is then empty. 0, or -1 with err (the run must
 * stop: see above). */
int cp__mw_flush(cp__mw *w, cp__mw_stats *st, char *err, size_t errlen);

#endif
