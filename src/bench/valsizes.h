/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Value sizes of the bench's key space (private to src/bench/; keyspace.h includes it): what
 * --value-size says, one size B, a uniform range MIN-MAX, or a weighted list SIZE:WEIGHT,...; the
 * size a hash picks from it; and the hash of a key's bytes that keyspace.c's values use, so that
 * a key's value has one length wherever it is written or read. Also the error codes the key
 * space modules share.
 *
 * Memory: cp__value_sizes is a plain fixed-size struct, copied freely. Pure functions, no global
 * state: any thread.
 */
#ifndef CLUSTERPIPE_VALSIZES_H
#define CLUSTERPIPE_VALSIZES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Error codes of the key space (keyspace.c, valsizes.c; negative, 0 = ok). */
#define CP__KS_EINVAL (-1)    /* bad argument: empty spec, S <= 0, keys = 0, part >= parts ... */
#define CP__KS_ETOOSMALL (-2) /* value_size cannot hold "<key>|<version>|" */
#define CP__KS_ETOOBIG (-3)   /* value_size above CP__VALUE_MAX_SIZE */
#define CP__KS_ENOMEM (-4)

#define CP__VALUE_MAX_SIZE (512u * 1024u * 1024u) /* redis proto-max-bulk-len default */

/* Value sizes: one size, a uniform range MIN-MAX, or a weighted list SIZE:WEIGHT,... */
#define CP__VALUE_SIZES_MAX 16

typedef struct cp__value_sizes {
    unsigned n; /* entries of size[]: 1 = one size for every value */
    bool range; /* uniform over [size[0], size[1]] (n = 2) */
    size_t size[CP__VALUE_SIZES_MAX];
    uint32_t weight[CP__VALUE_SIZES_MAX]; /* weighted list: each size's weight, > 0 */
    uint64_t total;                       /* weighted list: sum of the weights */
} cp__value_sizes;

/* One size for every value. */
void cp__value_sizes_fixed(cp__value_sizes *z, size_t size);

/* Parses a --value-size value: "B" (one size), "MIN-MAX" (uniform, MIN <= MAX) or
 * "SIZE:WEIGHT[,SIZE:WEIGHT...]" (up to CP__VALUE_SIZES_MAX entries, weights 1 .. 10^6), every
 * size a decimal in [1, CP__VALUE_MAX_SIZE]. "B-B" and a list of one entry are one size. Returns 0
 * or CP__KS_EINVAL with why (if not NULL, cap bytes) saying what is wrong; *out untouched on
 * error. */
int cp__value_sizes_parse(const char *s, cp__value_sizes *out, char *why, size_t cap);

/* Canonical spelling ("64", "100-1000", "100:7,1000:2,10000:1") into buf; snprintf's return. */
int cp__value_sizes_format(const cp__value_sizes *z, char *buf, size_t cap);

bool cp__value_sizes_varied(const cp__value_sizes *z); /* more than one size */
size_t cp__value_sizes_min(const cp__value_sizes *z);
size_t cp__value_sizes_max(const cp__value_sizes *z);
/* Expected size of a value over the keys (the weights' or the range's mean). */
double cp__value_sizes_mean(const cp__value_sizes *z);

/* The size that hash h picks: range MIN + h mapped onto [0, MAX - MIN]; list: the entry whose
 * share of the weights h falls into. Pure. */
size_t cp__value_sizes_pick(const cp__value_sizes *z, uint64_t h);

/* The 64-bit hash of a key's bytes that picks its value's size (FNV-1a, then splitmix64's
 * finalizer so that keys differing in a last digit spread over the whole range). Pure. */
uint64_t cp__key_hash(const char *key, size_t keylen);

#endif /* CLUSTERPIPE_VALSIZES_H */
