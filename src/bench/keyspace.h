/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Key space of the bench engine (private to src/bench/): key names, per-thread key index
 * generators (uniform, sequential, zipf) on a seeded PRNG, and verifiable values.
 *
 * Keys are "<prefix><n>" (default prefix "key:"), n in [0, keys), optionally zero-padded to a
 * fixed width: their slots spread over the whole cluster, as an application's keys do. The
 * per-master layout names keys as redis-benchmark --cluster does, so that both tools can read the
 * very same keys: "<prefix>{TAG}:<n / M>" with 12 digits, TAG the hash tag of master n % M (of M),
 * which puts each master's keys into one slot. Values are "<key>|<version>|" followed by a fixed
 * filler pattern whose byte at offset i depends only on i, so a GET reply can be checked to belong
 * to the key asked for, and a corrupted or truncated value cannot pass. A value's length is
 * value_size, or with several sizes (cp__value_sizes: MIN-MAX, or SIZE:WEIGHT,...) a function of
 * the key's bytes alone (a hash of them picks the size), so every writer (load, bench, any run
 * with the same sizes) gives a key the same length and a reader knows the exact length to expect.
 *
 * Memory: cp__keyfmt, cp__rng and cp__keygen are plain caller-allocated structs, fixed size
 * whatever the number of keys (no per-key tables: 50 million keys cost nothing here).
 * cp__valuefmt owns one heap buffer of value_size + 4 KiB (the filler template), allocated by
 * cp__valuefmt_init and freed by cp__valuefmt_free. Generating, formatting and verifying never
 * allocate: they write into caller buffers.
 *
 * Threads: no global state. A cp__keygen / cp__rng belongs to one thread. cp__keyfmt and an
 * initialised cp__valuefmt are read-only after init and may be shared by all threads.
 */
#ifndef CLUSTERPIPE_KEYSPACE_H
#define CLUSTERPIPE_KEYSPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/valsizes.h"

#define CP__KEY_PREFIX_MAX 64                         /* bytes of prefix, without NUL */
#define CP__KEY_MAX_LEN (CP__KEY_PREFIX_MAX + 6 + 20) /* prefix, "{TAG}:", digits */
#define CP__VERSION_MAX_DIGITS 10                     /* versions are uint32_t, in decimal */

/* ---- PRNG: xoshiro256**, seeded through splitmix64 ------------------------------------------ */

typedef struct cp__rng {
    uint64_t s[4];
} cp__rng;

/* Seeds from (seed, stream): different streams (e.g. thread numbers) give independent
 * sequences for one seed. Never fails; any seed is fine, including 0. */
void cp__rng_seed(cp__rng *r, uint64_t seed, uint64_t stream);
uint64_t cp__rng_next(cp__rng *r);
/* Uniform in [0, n); n = 0 returns 0. Multiply-shift, bias at most n / 2^64. */
uint64_t cp__rng_below(cp__rng *r, uint64_t n);
/* Uniform double in [0, 1), 53 random bits. */
double cp__rng_double(cp__rng *r);

/* ---- key names ------------------------------------------------------------------------------ */

#define CP__KEY_TAGS_MAX 512 /* masters of the per-master layout (the bench's CP__NODES_MAX) */
#define CP__KEY_TAG_WIDTH 12 /* digits after the tag, as redis-benchmark's __rand_int__ */

typedef enum cp__key_layout {
    CP__KEYS_SPREAD = 0, /* "<prefix><n>": slots all over the cluster (the default) */
    CP__KEYS_PER_MASTER, /* "<prefix>{TAG}:<n / M>": one slot per master, redis-benchmark's */
} cp__key_layout;

/* Parses a --key-layout value ("spread" or "per-master"). Returns 0 or CP__KS_EINVAL. */
int cp__key_layout_parse(const char *s, cp__key_layout *out);
/* "spread" or "per-master". */
const char *cp__key_layout_str(cp__key_layout l);

typedef struct cp__keyfmt {
    char prefix[CP__KEY_PREFIX_MAX + 1];
    size_t prefix_len;
    unsigned width; /* minimum digits, zero-padded; 0 = no padding */
    /* per-master layout (ntags > 0): key n carries tags[n % ntags] and the number n / ntags.
     * A tag is 3 bytes: redis-benchmark pads shorter ones with '}', which ends the tag. */
    unsigned ntags;
    char tags[CP__KEY_TAGS_MAX][3];
    uint16_t tag_slots[CP__KEY_TAGS_MAX]; /* the slot tags[i] hashes to */
} cp__keyfmt;

/* prefix NULL means "key:". width: 0 (none) .. 20. The prefix may be any bytes except NUL and
 * '|' (the value separator). Spread layout (no tags). Returns 0 or CP__KS_EINVAL (prefix too
 * long, '|', width > 20). */
int cp__keyfmt_init(cp__keyfmt *f, const char *prefix, unsigned width);

/* Switches an initialised f to the per-master layout for n masters, master i owning slots[i]
 * (any slot it serves; redis-benchmark takes its first): tag i is the one redis-benchmark uses
 * for that slot, the shortest alphanumeric string that hashes to it (first in the order 0-9,
 * a-z, A-Z), and the digits get CP__KEY_TAG_WIDTH. Returns 0 or CP__KS_EINVAL (n = 0, n >
 * CP__KEY_TAGS_MAX, a slot >= 16384, or a '{' in the prefix: the prefix's tag would be the
 * key's, or it would swallow ours). */
int cp__keyfmt_set_tags(cp__keyfmt *f, const uint16_t *slots, unsigned n);

/* The slot of key n, written into key[0..len) by cp__key_format: a per-master key's is its
 * tag's, known without hashing (hashing was 8% of the bench's instructions per GET); a spread
 * key's is hashed. */
unsigned cp__key_slot(const cp__keyfmt *f, uint64_t n, const char *key, size_t len);

/* Writes key n into buf (no NUL; buf must hold CP__KEY_MAX_LEN bytes). Returns its length. */
size_t cp__key_format(const cp__keyfmt *f, uint64_t n, char *buf);

/* The same for a buf that already starts with f's prefix (an earlier cp__key_format into it, or
 * a copy of f->prefix): writes only the digits after the prefix, as redis-benchmark patches its
 * keys in place. The bench engine keeps one key buffer per command of a batch, so the prefix is
 * written once per buffer instead of once per command. Writes the tag too (per-master layout).
 * Returns the key's length. */
size_t cp__key_format_digits(const cp__keyfmt *f, uint64_t n, char *buf);

/* Longest key among n in [0, keys): for sizing buffers and checking value_size up front. */
size_t cp__key_max_len(const cp__keyfmt *f, uint64_t keys);

/* The same before the masters are known, from the flags: keys named with prefix (NULL: "key:")
 * in layout (per-master: as if one master had them all, the longest they can be). 0 when the
 * prefix is not usable (see cp__keyfmt_init). */
size_t cp__key_max_len_of(const char *prefix, cp__key_layout layout, uint64_t keys);

/* ---- key index generators ------------------------------------------------------------------- */

typedef enum cp__dist_kind {
    CP__DIST_UNIFORM = 0,
    CP__DIST_SEQUENTIAL,
    CP__DIST_ZIPF,
    CP__DIST_GAUSSIAN, /* normal around a centre, truncated to [0, keys) (memtier's G:G) */
} cp__dist_kind;

typedef struct cp__dist {
    cp__dist_kind kind;
    double zipf_s; /* exponent, > 0, only for CP__DIST_ZIPF */
    /* CP__DIST_GAUSSIAN: centre (a key index) and spread (standard deviation, in keys); spread 0
     * means the defaults, centre keys / 2 and spread keys / 6 (memtier's G:G defaults) */
    double centre, spread;
} cp__dist;

/* Parses a --key-dist value: "uniform", "sequential", "zipf:S" with S a decimal > 0 (and
 * finite, at most 100), "gaussian" or "gaussian:C,S" (C >= 0 the centre, S > 0 the spread, plain
 * decimals). Returns 0 or CP__KS_EINVAL; *out untouched on error. Whether C lies inside the key
 * space is for cp__dist_check. */
int cp__dist_parse(const char *s, cp__dist *out);

/* 0 when d can draw from [0, keys) (a Gaussian's centre below keys), else CP__KS_EINVAL. */
int cp__dist_check(const cp__dist *d, uint64_t keys);

/* Writes the canonical spelling of d ("uniform", "sequential", "zipf:0.99", "gaussian",
 * "gaussian:500,100") into buf (NUL terminated, truncated to cap). Returns what snprintf returns.
 * For reports. */
int cp__dist_format(const cp__dist *d, char *buf, size_t cap);

typedef struct cp__keygen {
    cp__dist_kind kind;
    uint64_t keys;
    cp__rng rng;
    /* sequential: range walked [first, end), next index, keys owned by this part */
    uint64_t first, end, next, share;
    /* zipf (rejection-inversion): precomputed constants */
    double s, h_x1, h_n, accept;
    /* gaussian: centre, spread, and the second normal of the last polar draw */
    double mu, sigma, spare;
    bool has_spare;
} cp__keygen;

/* Prepares a generator over [0, keys) for one part of `parts` (a part is a thread, or a
 * thread's client: any split the engine wants). seed and part give the random stream, so each
 * part draws independently and a run is reproducible from its seed.
 * Sequential: part p walks its own contiguous range [keys*p/parts, keys*(p+1)/parts) in order
 * and wraps around; the parts together cover every key exactly once per lap, without overlap
 * (cp__keygen_share() tells how many keys a lap has). Uniform and zipf ignore the split except
 * for the stream. Zipf: index 0 is the most popular key; O(1) time and memory per sample.
 * Gaussian: round(centre + spread * N(0,1)), drawn again while outside [0, keys) (a truncated
 * normal); after 64 draws outside (a spread far wider than the key space, where the truncated
 * normal is all but flat) a uniform index. Returns 0 or CP__KS_EINVAL (keys = 0, parts = 0 or
 * >= 2^32, part >= parts, bad zipf exponent, cp__dist_check fails). */
int cp__keygen_init(cp__keygen *g, const cp__dist *d, uint64_t keys, uint64_t seed, uint64_t part,
                    uint64_t parts);

/* Next key index in [0, keys). */
uint64_t cp__keygen_next(cp__keygen *g);

/* Keys in one sequential lap of this part (may be 0 when parts > keys); for the other
 * distributions, keys. */
uint64_t cp__keygen_share(const cp__keygen *g);

/* ---- values --------------------------------------------------------------------------------- */

typedef enum cp__verify_result {
    CP__VERIFY_OK = 0,
    CP__VERIFY_WRONG_KEY,  /* a well-formed value, but it names another key */
    CP__VERIFY_BAD_FORMAT, /* not a value of ours, or header/filler corrupted */
    CP__VERIFY_WRONG_SIZE, /* our header for this key, but not cp__value_len bytes */
} cp__verify_result;

typedef struct cp__valuefmt {
    size_t value_size; /* the one size, or with several sizes the largest (buffer bound) */
    char *tmpl;        /* value_size + 4096 bytes of filler pattern (owned) */
    bool varied;       /* several sizes: a key's is cp__value_sizes_pick(sizes, its hash) */
    cp__value_sizes sizes;
} cp__valuefmt;

/* Smallest value_size that holds "<key>|<version>|" for a key of keylen bytes and any
 * version: keylen + 2 + CP__VERSION_MAX_DIGITS. */
size_t cp__value_min_size(size_t keylen);

/* Prepares values of value_size bytes. With `verifiable`, value_size must be at least
 * cp__value_min_size(max_keylen) (else CP__KS_ETOOSMALL): every value then carries its header.
 * Without it any size >= 1 works and a value too small for its header is pure filler (such
 * values cannot be verified; the CLI only allows that with --no-verify).
 * Returns 0, CP__KS_EINVAL (value_size 0), CP__KS_ETOOSMALL, CP__KS_ETOOBIG or CP__KS_ENOMEM.
 * On success the caller must call cp__valuefmt_free(). */
int cp__valuefmt_init(cp__valuefmt *v, size_t value_size, size_t max_keylen, bool verifiable);
/* The same for any cp__value_sizes: with `verifiable` the smallest size must hold the header.
 * Same returns; cp__valuefmt_init(v, b, ...) is this with one size b. */
int cp__valuefmt_init_sizes(cp__valuefmt *v, const cp__value_sizes *sizes, size_t max_keylen,
                            bool verifiable);
/* Frees the template; safe on a zeroed or already freed struct. */
void cp__valuefmt_free(cp__valuefmt *v);

/* Several sizes: the length of key's value (cp__value_len's slow side). */
size_t cp__value_len_varied(const cp__valuefmt *v, const char *key, size_t keylen);

/* The length of key's value: value_size, or the size its hash picks. Inline: one predictable
 * branch on the GET and SET path when every value has one size. */
static inline size_t cp__value_len(const cp__valuefmt *v, const char *key, size_t keylen) {
    return v->varied ? cp__value_len_varied(v, key, keylen) : v->value_size;
}

/* Writes exactly cp__value_len(v, key, keylen) bytes into buf (which must hold v->value_size):
 * the header "<key>|<version>|" then filler.
 * Returns the header length, or 0 if the header did not fit (pure filler; see init). */
size_t cp__value_fill(const cp__valuefmt *v, const char *key, size_t keylen, uint32_t version,
                      char *buf);

/* Checks a GET reply against the key it was asked for. On CP__VERIFY_OK and
 * CP__VERIFY_WRONG_SIZE, *version_out (if not NULL) gets the version read from the header.
 * Reads only reply[0, len); never writes. */
cp__verify_result cp__value_verify(const cp__valuefmt *v, const char *reply, size_t len,
                                   const char *key, size_t keylen, uint32_t *version_out);

/* "ok", "wrong key", "bad format", "wrong size". */
const char *cp__verify_result_str(cp__verify_result r);

#endif /* CLUSTERPIPE_KEYSPACE_H */
