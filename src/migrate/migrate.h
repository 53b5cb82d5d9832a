/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A migration: every source (a standalone redis-server) read as a replica (source.h), its
 * snapshot's keys and then its stream's commands written to the target cluster (writer.h), until
 * stopped, or, with until_synced, until every source's lag is 0 and no key waits for a re-copy.
 *
 * Keys whose write ended with an outcome not known (or not done) are marked; a marked key's later
 * commands are not applied (what they computed from is not known) and the key is re-copied from
 * its source (DUMP, PEXPIRETIME; RESTORE ... REPLACE ABSTTL, or DEL when it is gone) at a moment
 * when the source's replication offset equals the offset applied, before and after the re-copy:
 * the value read is then exactly the one the stream up to that offset leaves, so the stream's
 * later commands apply on top of it. docs/architecture.md has the design.
 */
#ifndef CLUSTERPIPE_MIGRATE_MIGRATE_H
#define CLUSTERPIPE_MIGRATE_MIGRATE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "clusterpipe/clusterpipe.h"
#include "migrate/unknowns.h"

#define CP__MIGRATE_MAX_SOURCES 64

typedef struct cp__migrate_source_status {
    char name[300];
    int phase;                    /* cp__src_phase */
    uint64_t snapshot_keys_total; /* the source's keys in the database moved, at the start */
    uint64_t keys_copied;         /* RESTOREs written (ended done) */
    uint64_t keys_expired;        /* snapshot keys already expired: skipped */
    uint64_t keys_other_db;       /* snapshot keys in another database: not moved */
    uint64_t snapshot_bytes;      /* RDB bytes read */
    uint64_t commands_applied;    /* stream commands written */
    uint64_t commands_other_db;   /* stream commands for another database: not applied */
    uint64_t offset_applied;      /* the stream's offset up to which all is written */
    int64_t lag_bytes;            /* the source's offset minus offset_applied; -1: not known */
    double lag_seconds;           /* how long ago the source was at offset_applied (laghist.h);
                                     -1: not known */
    int lag_at_least;             /* lag_seconds is a lower bound: older than the history */
    uint64_t marked;              /* keys waiting for a re-copy */
    uint64_t recopied;            /* re-copies done */
    cp__unknowns unknown;         /* the snapshot's data of module types: not moved */
} cp__migrate_source_status;

typedef struct cp__migrate_status {
    int n;
    cp__migrate_source_status src[CP__MIGRATE_MAX_SOURCES];
    double elapsed_s;
    int synced;                             /* until_synced: every lag was 0 with no key marked */
    uint64_t unknown, not_executed, errors; /* the writer's counts (writer.h) */
    uint64_t moved, ask;                    /* redirects the target's client followed */
    char first_error[256];
} cp__migrate_status;

typedef struct cp__migrate_opts {
    const char *const *hosts; /* the sources */
    const int *ports;
    int nsources;
    const char *to; /* the target cluster's seeds */
    const char *from_password, *to_password;
    const char *from_user, *to_user;     /* ACL users; NULL: AUTH with the password alone */
    const cp_options *from_tls, *to_tls; /* each side's TLS (tls, tls_*), NULL: plain TCP */
    int db;           /* the database moved; -1: 0, refusing a source with keys elsewhere */
    int until_synced; /* stop at the first moment every lag is 0 and nothing is marked */
    /* Data of module types (keys, aux data) is skipped and listed in the status. 0: a source
     * that holds any is refused when its snapshot ends (its other keys written by then). */
    int skip_unknown_types;
    const volatile sig_atomic_t *stop; /* set: stop taking the stream, finish, re-copy */
    int silence_ms;                    /* a source sending nothing this long is an error */
    int io_timeout_ms;                 /* the target's and the plain connections' */
    /* Called about once a second, and once at the end with final set. */
    void (*progress)(const cp__migrate_status *st, int final, void *arg);
    void *progress_arg;
} cp__migrate_opts;

/* Runs it. 0, or -1 with err (st holds where each source stood). */
int cp__migrate_run(const cp__migrate_opts *o, cp__migrate_status *st, char *err, size_t errlen);

#endif
