/* SPDX-License-Identifier: BSD-3-Clause
 *
 * One key compared between a source and the target (the verify, verify.h), as a series of steps.
 * Each step appends read commands to either side (cp__kc_append) and takes their replies
 * (cp__kc_take); the caller pipelines the steps of many keys into one round trip per side. No
 * I/O here.
 *
 * What is compared: the type (TYPE); the absolute expiry (PEXPIRETIME), equal within the
 * tolerance given; the value, semantically, never as DUMP bytes (encodings may differ):
 *   string  STRLEN, then GETRANGE in pieces of 1 MiB, the bytes equal;
 *   list    LLEN, then LRANGE in pieces of 1,000 elements, equal in order;
 *   zset    ZCARD, then ZRANGE ... WITHSCORES in pieces of 1,000 (rank order is the same for the
 *           same members and scores), members equal and scores equal as numbers;
 *   set     SCARD equal, and every member the source's SSCAN returns is a member on the target
 *           (SMISMEMBER, 1,000 at a time): equal sizes and inclusion make equal sets;
 *   hash    HLEN equal, and every field HSCAN returns has the same value on the target (HMGET);
 *   stream  XLEN and XINFO STREAM's last-generated-id, the entries (XRANGE in pieces of 1,000:
 *           ids, fields and values), and the consumer groups (XINFO GROUPS: each group's name,
 *           consumer count, pending count and last-delivered-id);
 *   other   (a module's type) DUMP bytes.
 * Pieces bound what one command costs: a 100k-element key read whole is one reply of 100k
 * elements, built while the server (a live source) serves nothing else and held whole here.
 */
#ifndef CLUSTERPIPE_MIGRATE_KEYCMP_H
#define CLUSTERPIPE_MIGRATE_KEYCMP_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

typedef enum cp__kc_reason {
    CP__KC_SAME = 0,
    CP__KC_MISSING,  /* on the source, not on the target */
    CP__KC_TYPE,     /* of another type on the target */
    CP__KC_VALUE,    /* another value (or an error reply while reading it) */
    CP__KC_TTL,      /* the same value, another expiry (past the tolerance) */
    CP__KC_VANISHED, /* gone from the source while compared (deleted, or it expired), or
                        expiring within the tolerance and already gone on the target: no
                        difference */
    CP__KC_NREASONS
} cp__kc_reason;

typedef enum cp__kc_type {
    CP__KC_STRING,
    CP__KC_LIST,
    CP__KC_SET,
    CP__KC_ZSET,
    CP__KC_HASH,
    CP__KC_STREAM,
    CP__KC_OTHER,
    CP__KC_NTYPES
} cp__kc_type;

/* "missing", "type", ...; "string", "list", ... */
const char *cp__kc_reason_name(cp__kc_reason r);
const char *cp__kc_type_name(cp__kc_type t);

/* Where a step's commands go: append(arg, argc, argv, argvlen), 0 or -1 (out of memory). */
typedef struct cp__kc_side {
    int (*append)(void *arg, int argc, const char **argv, const size_t *argvlen);
    void *arg;
} cp__kc_side;

typedef struct cp__keycmp cp__keycmp;

/* The key (copied); now_ms: the wall clock's ms (an expiry within tolerance_ms of it may be gone
 * on the target already). NULL out of memory. */
cp__keycmp *cp__kc_new(const char *key, size_t klen, int64_t tolerance_ms, int64_t now_ms);
void cp__kc_free(cp__keycmp *k);

/* Appends the next step's commands: *nsrc to src, *ndst to dst (either may be 0, not both).
 * 0, or -1 out of memory. */
int cp__kc_append(cp__keycmp *k, const cp__kc_side *src, const cp__kc_side *dst, int *nsrc,
                  int *ndst);

/* The step's replies, in the order appended. A source reply the key keeps (a scan's piece, to
 * ask the target about next step) is taken: its slot in src is set to NULL. 1 when the key is
 * decided, 0 when it takes another step. */
int cp__kc_take(cp__keycmp *k, redisReply **src, const redisReply *const *dst);

/* About how many bytes the next step's replies hold (to bound a round trip's). */
size_t cp__kc_cost(const cp__keycmp *k);

/* Once decided: the reason, and a line saying what differs ("" when the same). */
cp__kc_reason cp__kc_result(const cp__keycmp *k, const char **detail);
/* The source's type (CP__KC_OTHER until known). */
cp__kc_type cp__kc_type_of(const cp__keycmp *k);
const char *cp__kc_key(const cp__keycmp *k, size_t *klen);

#endif
