/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The verify: every key of the sources (standalone redis-servers, database db) compared with the
 * target cluster's, by type, value and expiry (keycmp.h says what is compared and how). Each
 * source is walked with SCAN on a plain connection (srcconn.h); each batch of keys is compared in
 * round trips that pipeline every undecided key's next step, at most about 16 MB of replies per
 * round, to the source on that connection and to the target through libclusterpipe (one pipeline,
 * routed by slot, MOVED/ASK followed). A key is read on the source, then at once on the target.
 *
 * Keys only on the target are not differences (a target may hold other data): their count is the
 * target's keys (DBSIZE of every master serving slots) less the sources' keys found there.
 * Meant for sources whose writes have stopped: a key written meanwhile may differ for that
 * reason alone.
 */
#ifndef CLUSTERPIPE_MIGRATE_VERIFY_H
#define CLUSTERPIPE_MIGRATE_VERIFY_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "clusterpipe/clusterpipe.h"
#include "migrate/keycmp.h"

typedef struct cp__verify_status {
    uint64_t keys_total;                 /* the sources' keys in the database, at the start */
    uint64_t checked;                    /* keys decided (vanished ones included) */
    uint64_t per_type[CP__KC_NTYPES];    /* keys decided, by the source's type */
    uint64_t by_reason[CP__KC_NREASONS]; /* keys decided, by reason (CP__KC_SAME: equal) */
    uint64_t differences;                /* missing + type + value + ttl */
    uint64_t skipped;                    /* skip_unknown_types: keys of other types, not
                                            compared (not in by_reason) */
    uint64_t found;                      /* sources' keys that the target holds */
    uint64_t target_keys;                /* the target's keys at the end (DBSIZE summed) */
    uint64_t only_in_target;             /* target_keys - found, or 0 */
    double elapsed_s;
} cp__verify_status;

/* One difference: the key (klen bytes, not NUL-terminated), its source ("host:port"), why. */
typedef struct cp__verify_diff {
    const char *source;
    const char *key;
    size_t klen;
    cp__kc_reason reason;
    cp__kc_type type;
    const char *detail;
} cp__verify_diff;

typedef struct cp__verify_opts {
    const char *const *hosts; /* the sources */
    const int *ports;
    int nsources;
    const char *to; /* the target cluster's seeds */
    const char *from_password, *to_password;
    const char *from_user, *to_user;     /* ACL users; NULL: AUTH with the password alone */
    const cp_options *from_tls, *to_tls; /* each side's TLS (tls, tls_*), NULL: plain TCP */
    int db;                              /* the sources' database compared with the target's 0 */
    int64_t tolerance_ms;                /* expiries this close are the same */
    int skip_unknown_types; /* keys of a type not the six of Redis (a module's) are skipped and
                               counted, not compared (what migrate --skip-unknown-types skips) */
    int io_timeout_ms;      /* every connection's; 0: 5000 */
    const volatile sig_atomic_t *stop; /* set: stop (the run fails: not every key was compared) */
    /* Called about once a second, and once at the end with final set. */
    void (*progress)(const cp__verify_status *st, int final, void *arg);
    /* Called for each difference, as it is found. */
    void (*difference)(const cp__verify_diff *d, void *arg);
    void *arg;
} cp__verify_opts;

/* Runs it. 0 when every key was compared (st->differences says whether they agree), or -1 with
 * err (a source or the target unreachable or failing, stopped; st holds what was compared). */
int cp__verify_run(const cp__verify_opts *o, cp__verify_status *st, char *err, size_t errlen);

#endif
