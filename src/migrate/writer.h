/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The writer: what the sources give, written to the target cluster through libclusterpipe, in
 * batches (a pipeline each, run with cp_exec_async on the caller's event loop, so every command
 * is routed by slot, followed through MOVED/ASK and retried through failovers, and its order kept
 * per key across batches). Up to CP__MW_IN_FLIGHT batches run at once while the next one fills:
 * the target writes one while the sources are read for the next.
 *
 * A batch holds RESTOREs of snapshot keys, stream commands, and transactions (MULTI ... EXEC as
 * one unit when its keys share a slot; a unit whose keys span slots, legal on a standalone
 * source, is written as its commands one by one: the same end state, not atomic on the target).
 * cp__mw_check walks the batches that ended, in the order they were sent, and checks every
 * command: an outcome other than CP_DONE (unknown: the command may or may not have run; not
 * executed: it did not, but a later command of its key may have), or an error reply to a stream
 * command (or to a member of an EXEC), marks the command's keys in its source's key set; so does
 * a command that touches a key already marked, since what it wrote was computed from a value not
 * known. (A command appended while the batch that marks its key still runs is sent all the same:
 * the walk marks it then, and the re-copy, which waits until no batch runs, overwrites what it
 * wrote.) Marked keys are re-copied from the source later (migrate.c). A RESTORE refused by the
 * target, OOM, and a keyless command not done stop the run: nothing could re-copy those; so do
 * 30 s of batches of which nothing ran (the target cannot be reached). After such a stop the
 * batches still running are only counted as they end.
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

#define CP__MW_BATCH 2000              /* commands a batch takes before it waits to be sent */
#define CP__MW_BATCH_BYTES (16u << 20) /* or argument bytes (so big values stay bounded too) */
#define CP__MW_IN_FLIGHT 4             /* batches sent and not yet checked, at most */

/* nsrc sources; marks[i]: source i's marked keys, copied[i]: its snapshot keys written (the
 * caller's arrays; the writer adds to them). c is on the caller's event loop. */
cp__mw *cp__mw_new(cp_client *c, int nsrc, cp__keyset *marks, uint64_t *copied);
void cp__mw_free(cp__mw *w);

/* The keys of a command, as the target's client routes it (cp_command_keys): the argv index of
 * each, every one of them, in an array of the writer's valid until its next call; *n their count.
 * NULL out of memory. */
const int *cp__mw_keys(cp__mw *w, int argc, const char *const *argv, const size_t *argvlen, int *n);

/* 1 when a key of the command is marked in source src's set (then all its keys are marked too,
 * and the caller skips it), 0 when none is, -1 out of memory. */
int cp__mw_taints(cp__mw *w, int src, int argc, const char *const *argv, const size_t *argvlen);

/* The appends below go to the batch being filled: the caller asks cp__mw_full first. */

/* RESTORE key expire_ms payload REPLACE ABSTTL (expire_ms -1: no TTL, sent as 0); snapshot: a
 * key of the snapshot (counted in copied once done), else a re-copy. */
int cp__mw_restore(cp__mw *w, int src, int snapshot, const char *key, size_t klen,
                   const unsigned char *payload, size_t plen, int64_t expire_ms);

/* DEL key: a re-copy of a key the source no longer has. */
int cp__mw_del(cp__mw *w, int src, const char *key, size_t klen);

int cp__mw_command(cp__mw *w, int src, int argc, const char *const *argv, const size_t *argvlen);

/* MULTI, the n members, EXEC (see above for a unit whose keys span slots). */
int cp__mw_unit(cp__mw *w, int src, const cp__mw_cmd *members, int n);

/* Why an append above failed: the library's refusal, else "out of memory". */
const char *cp__mw_error(const cp__mw *w);

/* Commands in the batch being filled (0 while every batch runs). */
size_t cp__mw_count(const cp__mw *w);

/* 1 when nothing can be appended now: every batch runs, or the one filling holds CP__MW_BATCH
 * commands or CP__MW_BATCH_BYTES. */
int cp__mw_full(const cp__mw *w);

/* Batches sent and not yet checked. */
int cp__mw_running(const cp__mw *w);

/* Sends the batch being filled, when it holds commands, tagged with offsets (one per source, as
 * the caller counts them: what the batch's checking hands back). 0, or -1 with err. */
int cp__mw_send(cp__mw *w, const uint64_t *offsets, char *err, size_t errlen);

/* Checks the batches that ended, oldest first, up to one still running, and marks keys (see
 * above); each checked batch raises written[i] (NULL: not kept) to its offsets, until one stops
 * the run. 0, or -1 with err when the run must stop. */
int cp__mw_check(cp__mw *w, cp__mw_stats *st, uint64_t *written, char *err, size_t errlen);

#endif
