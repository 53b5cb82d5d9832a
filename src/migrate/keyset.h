/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A set of keys (binary strings): the keys of one source marked for a re-copy. Open addressing,
 * grown at half full; keys are copied. Single-threaded.
 */
#ifndef CLUSTERPIPE_MIGRATE_KEYSET_H
#define CLUSTERPIPE_MIGRATE_KEYSET_H

#include <stddef.h>

typedef struct cp__keyset {
    char **key;
    size_t *len;
    size_t cap, count;
} cp__keyset;

/* 0, or -1 out of memory. An empty set needs no setup: {0}. */
int cp__keyset_add(cp__keyset *s, const char *key, size_t len);
int cp__keyset_has(const cp__keyset *s, const char *key, size_t len);
void cp__keyset_del(cp__keyset *s, const char *key, size_t len);
void cp__keyset_clear(cp__keyset *s); /* frees everything; the set is then empty */

/* Walks the keys: *at starts at 0; 1 with the next key in *key and *len, 0 at the end. */
int cp__keyset_walk(const cp__keyset *s, size_t *at, const char **key, size_t *len);

#endif
