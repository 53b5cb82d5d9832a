/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Key space of the bench engine: PRNG, key names, key index generators and verifiable values
 * (see keyspace.h for the formats). Owns only the value template of a cp__valuefmt (malloc'd in
 * cp__valuefmt_init, freed in cp__valuefmt_free); everything else writes into caller memory.
 * No global state: generators belong to one thread, formats are read-only once initialised.
 */
#include "bench/keyspace.h"

#include "clusterpipe/clusterpipe.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- PRNG ----------------------------------------------------------------------------------- */

/* splitmix64: turns any seed (even 0, or seeds differing by one bit) into well-mixed words, the
 * recommended way to fill xoshiro's state. */
static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

void cp__rng_seed(cp__rng *r, uint64_t seed, uint64_t stream) {
    /* Mix the stream in through a second splitmix round so seed+1/stream and seed/stream+1 do
     * not collide. */
    uint64_t x = seed;
    uint64_t mixed = splitmix64(&x) ^ (stream * 0xd1342543de82ef95ull + 0x2545f4914f6cdd1dull);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&mixed);
}

/* xoshiro256**: fast (a few ns), 256-bit state, passes BigCrush; no global state. Inline for
 * the generators below, which the bench engine calls once per request. */
static inline uint64_t rng_next(cp__rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Multiply-shift (Lemire) instead of modulo: no division on the hot path. */
static inline uint64_t rng_below(cp__rng *r, uint64_t n) {
#ifdef __SIZEOF_INT128__
    return (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64);
#else
    return (uint64_t)((double)(rng_next(r) >> 11) * 0x1.0p-53 * (double)n);
#endif
}

uint64_t cp__rng_next(cp__rng *r) {
    return rng_next(r);
}

uint64_t cp__rng_below(cp__rng *r, uint64_t n) {
    return rng_below(r, n);
}

double cp__rng_double(cp__rng *r) {
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---- decimal formatting --------------------------------------------------------------------- */

/* "00" .. "99": two digits per division halves the divisions of the loop below. */
static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324"
                                     "25262728293031323334353637383940414243444546474849"
                                     "50515253545556575859606162636465666768697071727374"
                                     "75767778798081828384858687888990919293949596979899";

/* 10^0 .. 10^19: every power of ten below 2^64, for digits_u64. */
static const uint64_t pow10_u64[20] = {1ull,
                                       10ull,
                                       100ull,
                                       1000ull,
                                       10000ull,
                                       100000ull,
                                       1000000ull,
                                       10000000ull,
                                       100000000ull,
                                       1000000000ull,
                                       10000000000ull,
                                       100000000000ull,
                                       1000000000000ull,
                                       10000000000000ull,
                                       100000000000000ull,
                                       1000000000000000ull,
                                       10000000000000000ull,
                                       100000000000000000ull,
                                       1000000000000000000ull,
                                       10000000000000000000ull};

/* Decimal digits of n (1 for 0) without a division per digit: the bit length times 1233/4096
 * (just below log10(2)) is the count or one less, and one table compare tells which. n | 1 has
 * the same digits as n and a defined clz. */
static unsigned digits_u64(uint64_t n) {
    uint64_t m = n | 1u;
    unsigned bits = 64u - (unsigned)__builtin_clzll(m);
    unsigned t = (bits * 1233u) >> 12;
    return t + (m >= pow10_u64[t]);
}

/* n <= 24 '0's at out, in overlapping 8- or 4-byte stores: a key number's padding (width 12 and
 * 5 digits: 7) byte by byte, or through memset, cost as much as its digits. */
static inline void zeros(char *out, size_t n) {
    static const char z[8] = "00000000";
    if (n >= 8) {
        memcpy(out, z, 8);
        if (n > 16)
            memcpy(out + 8, z, 8);
        memcpy(out + n - 8, z, 8);
    } else if (n >= 4) {
        memcpy(out, z, 4);
        memcpy(out + n - 4, z, 4);
    } else {
        for (size_t i = 0; i < n; i++)
            out[i] = '0';
    }
}

/* Writes n in decimal, at least `width` digits (zero-padded), to out; returns the length.
 * The length is known up front, so the digits go straight to their place, backwards, two per
 * division: no snprintf and no copy from a scratch buffer, which would dominate key and value
 * generation at millions of keys per second. Below 2^32 (every key index in practice) the
 * divisions are 32-bit ones, cheaper than 64-bit. */
static size_t fmt_u64(uint64_t n, unsigned width, char *out) {
    unsigned d = digits_u64(n);
    size_t len = d < width ? width : d;
    char *p = out + len;
    while (n > UINT32_MAX) {
        p -= 2;
        memcpy(p, digit_pairs + (n % 100) * 2, 2);
        n /= 100;
    }
    uint32_t m = (uint32_t)n;
    while (m >= 100) {
        p -= 2;
        memcpy(p, digit_pairs + (m % 100) * 2, 2);
        m /= 100;
    }
    if (m >= 10) {
        p -= 2;
        memcpy(p, digit_pairs + m * 2, 2);
    } else {
        *--p = (char)('0' + m);
    }
    zeros(out, (size_t)(p - out));
    return len;
}

/* ---- key names ------------------------------------------------------------------------------ */

int cp__key_layout_parse(const char *s, cp__key_layout *out) {
    if (s != NULL && strcmp(s, "spread") == 0)
        *out = CP__KEYS_SPREAD;
    else if (s != NULL && strcmp(s, "per-master") == 0)
        *out = CP__KEYS_PER_MASTER;
    else
        return CP__KS_EINVAL;
    return 0;
}

const char *cp__key_layout_str(cp__key_layout l) {
    return l == CP__KEYS_PER_MASTER ? "per-master" : "spread";
}

int cp__keyfmt_init(cp__keyfmt *f, const char *prefix, unsigned width) {
    if (prefix == NULL)
        prefix = "key:";
    size_t len = strlen(prefix);
    if (len > CP__KEY_PREFIX_MAX || width > 20 || memchr(prefix, '|', len) != NULL)
        return CP__KS_EINVAL;
    memcpy(f->prefix, prefix, len + 1);
    f->prefix_len = len;
    f->width = width;
    f->ntags = 0;
    return 0;
}

/* The tag of a slot, as redis-benchmark's crc16_slot_table has it: strings of 1, 2, then 3
 * characters of ALNUM, in that order (first character slowest), the first that hashes to the
 * slot. Every slot has one of at most 3 characters. One walk (at most 62^3 hashes of <= 3 bytes,
 * a few ms) finds the tags of all n slots, however many. 64 KiB of stack. */
static void slot_tags(const uint16_t *slots, unsigned n, char (*tags)[3]) {
    static const char ALNUM[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    const unsigned A = sizeof(ALNUM) - 1;
    uint8_t want[CP_SLOTS] = {0}; /* 1: wanted, tag not found yet; 2: found */
    char found[CP_SLOTS][3];
    unsigned left = 0;
    for (unsigned i = 0; i < n; i++)
        if (want[slots[i]] == 0) {
            want[slots[i]] = 1;
            left++;
        }
    for (unsigned len = 1; len <= 3 && left > 0; len++) {
        unsigned total = len == 1 ? A : len == 2 ? A * A : A * A * A;
        for (unsigned k = 0; k < total && left > 0; k++) {
            char t[3] = {'}', '}', '}'};
            unsigned v = k;
            for (int j = (int)len - 1; j >= 0; j--, v /= A)
                t[j] = ALNUM[v % A];
            unsigned slot = cp_keyslot(t, len);
            if (want[slot] == 1) {
                memcpy(found[slot], t, 3);
                want[slot] = 2;
                left--;
            }
        }
    }
    for (unsigned i = 0; i < n; i++)
        memcpy(tags[i], found[slots[i]], 3);
}

int cp__keyfmt_set_tags(cp__keyfmt *f, const uint16_t *slots, unsigned n) {
    if (n == 0 || n > CP__KEY_TAGS_MAX)
        return CP__KS_EINVAL;
    for (unsigned i = 0; i < n; i++)
        if (slots[i] >= CP_SLOTS)
            return CP__KS_EINVAL;
    if (memchr(f->prefix, '{', f->prefix_len) != NULL)
        return CP__KS_EINVAL;
    slot_tags(slots, n, f->tags);
    memcpy(f->tag_slots, slots, n * sizeof(*slots));
    f->ntags = n;
    f->width = CP__KEY_TAG_WIDTH;
    return 0;
}

size_t cp__key_format(const cp__keyfmt *f, uint64_t n, char *buf) {
    memcpy(buf, f->prefix, f->prefix_len);
    return cp__key_format_digits(f, n, buf);
}

/* n / ntags: one division, 32-bit when it can be (several times faster than 64-bit). */
static uint64_t tag_quotient(const cp__keyfmt *f, uint64_t n) {
    return n <= UINT32_MAX ? (uint32_t)n / f->ntags : n / f->ntags;
}

unsigned cp__key_slot(const cp__keyfmt *f, uint64_t n, const char *key, size_t len) {
    if (f->ntags != 0)
        return f->tag_slots[n - tag_quotient(f, n) * f->ntags];
    return cp_keyslot(key, len);
}

size_t cp__key_format_digits(const cp__keyfmt *f, uint64_t n, char *buf) {
    char *p = buf + f->prefix_len;
    if (f->ntags != 0) {
        uint64_t q = tag_quotient(f, n);
        const char *t = f->tags[n - q * f->ntags];
        p[0] = '{';
        memcpy(p + 1, t, 3);
        p[4] = '}';
        p[5] = ':';
        p += 6;
        n = q;
    }
    return (size_t)(p - buf) + fmt_u64(n, f->width, p);
}

size_t cp__key_max_len(const cp__keyfmt *f, uint64_t keys) {
    uint64_t last = keys > 0 ? keys - 1 : 0;
    unsigned d = digits_u64(f->ntags != 0 ? last / f->ntags : last);
    if (d < f->width)
        d = f->width;
    return f->prefix_len + (f->ntags != 0 ? 6 : 0) + d;
}

size_t cp__key_max_len_of(const char *prefix, cp__key_layout layout, uint64_t keys) {
    cp__keyfmt f;
    if (cp__keyfmt_init(&f, prefix, 0) != 0)
        return 0;
    if (layout == CP__KEYS_PER_MASTER) { /* the length only: any one tag is 3 bytes */
        f.ntags = 1;
        f.width = CP__KEY_TAG_WIDTH;
    }
    return cp__key_max_len(&f, keys);
}

/* ---- distributions -------------------------------------------------------------------------- */

/* A plain decimal ("12", "0.5", ".5"): strtod would also take " 1", "0x1p0", "1e3", "inf",
 * "nan". Returns 0 with *out set, or -1. */
static int plain_decimal(const char *num, size_t len, double *out) {
    char tmp[64];
    if (len == 0 || len >= sizeof(tmp) || strspn(num, "0123456789.") < len)
        return -1;
    memcpy(tmp, num, len);
    tmp[len] = '\0';
    char *end;
    errno = 0;
    double v = strtod(tmp, &end);
    if (errno != 0 || *end != '\0' || end == tmp || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int cp__dist_parse(const char *s, cp__dist *out) {
    if (s == NULL)
        return CP__KS_EINVAL;
    cp__dist d = {CP__DIST_UNIFORM, 0, 0, 0};
    if (strcmp(s, "uniform") == 0) {
        *out = d;
        return 0;
    }
    if (strcmp(s, "sequential") == 0) {
        d.kind = CP__DIST_SEQUENTIAL;
        *out = d;
        return 0;
    }
    if (strcmp(s, "gaussian") == 0) {
        d.kind = CP__DIST_GAUSSIAN;
        *out = d;
        return 0;
    }
    if (strncmp(s, "gaussian:", 9) == 0) {
        const char *c = s + 9, *comma = strchr(c, ',');
        if (comma == NULL || plain_decimal(c, (size_t)(comma - c), &d.centre) != 0 ||
            plain_decimal(comma + 1, strlen(comma + 1), &d.spread) != 0 || !(d.spread > 0.0) ||
            d.centre > 1e18 || d.spread > 1e18)
            return CP__KS_EINVAL;
        d.kind = CP__DIST_GAUSSIAN;
        *out = d;
        return 0;
    }
    if (strncmp(s, "zipf:", 5) != 0)
        return CP__KS_EINVAL;
    double v;
    if (plain_decimal(s + 5, strlen(s + 5), &v) != 0 || !(v > 0.0) || v > 100.0)
        return CP__KS_EINVAL;
    d.kind = CP__DIST_ZIPF;
    d.zipf_s = v;
    *out = d;
    return 0;
}

int cp__dist_check(const cp__dist *d, uint64_t keys) {
    if (d->kind == CP__DIST_GAUSSIAN && d->spread > 0.0 &&
        !(d->centre >= 0.0 && d->centre < (double)keys))
        return CP__KS_EINVAL;
    return 0;
}

int cp__dist_format(const cp__dist *d, char *buf, size_t cap) {
    switch (d->kind) {
    case CP__DIST_SEQUENTIAL:
        return snprintf(buf, cap, "sequential");
    case CP__DIST_ZIPF:
        return snprintf(buf, cap, "zipf:%g", d->zipf_s);
    case CP__DIST_GAUSSIAN:
        if (d->spread > 0.0)
            return snprintf(buf, cap, "gaussian:%.15g,%.15g", d->centre, d->spread);
        return snprintf(buf, cap, "gaussian");
    case CP__DIST_UNIFORM:
    default:
        return snprintf(buf, cap, "uniform");
    }
}

/* Zipf by rejection-inversion (W. Hormann, G. Derflinger, "Rejection-inversion to generate
 * variates from monotone discrete distributions", 1996): sample a continuous hat whose integral
 * H has a closed-form inverse, round, and accept with a cheap test that almost always passes
 * without evaluating H. O(1) time and memory for any number of keys and any exponent s > 0,
 * unlike the CDF-table or harmonic-number approaches that are O(keys).
 *
 * With h(x) = x^-s, H(x) = (x^(1-s) - 1) / (1-s) (log x for s = 1). Both H and its inverse are
 * written through expm1(t)/t and log1p(t)/t so they stay exact as s approaches 1. */
static double expm1_over_x(double t) {
    return fabs(t) > 1e-8 ? expm1(t) / t : 1.0 + t * 0.5 * (1.0 + t / 3.0);
}

static double log1p_over_x(double t) {
    return fabs(t) > 1e-8 ? log1p(t) / t : 1.0 - t * (0.5 - t / 3.0);
}

static double zipf_h(double s, double x) {
    return exp(-s * log(x));
}

static double zipf_H(double s, double x) {
    double lx = log(x);
    return expm1_over_x((1.0 - s) * lx) * lx;
}

static double zipf_H_inv(double s, double y) {
    double t = y * (1.0 - s);
    if (t < -1.0) /* rounding at the far end of the hat: stay in log1p's domain */
        t = -1.0;
    return exp(log1p_over_x(t) * y);
}

static void zipf_setup(cp__keygen *g, double s) {
    g->s = s;
    g->h_x1 = zipf_H(s, 1.5) - 1.0;
    g->h_n = zipf_H(s, (double)g->keys + 0.5);
    g->accept = 2.0 - zipf_H_inv(s, zipf_H(s, 2.5) - zipf_h(s, 2.0));
}

/* One zipf rank in [1, keys], returned as index rank - 1 (index 0 is the most popular). */
static uint64_t zipf_next(cp__keygen *g) {
    for (;;) {
        double u = g->h_n + cp__rng_double(&g->rng) * (g->h_x1 - g->h_n);
        double x = zipf_H_inv(g->s, u);
        double kd = floor(x + 0.5);
        if (kd < 1.0)
            kd = 1.0;
        else if (kd > (double)g->keys)
            kd = (double)g->keys;
        if (kd - x <= g->accept || u >= zipf_H(g->s, kd + 0.5) - zipf_h(g->s, kd))
            return (uint64_t)kd - 1;
    }
}

/* floor(keys * part / parts) without overflowing for any keys (parts < 2^32). */
static uint64_t split_point(uint64_t keys, uint64_t part, uint64_t parts) {
    return (keys / parts) * part + (keys % parts) * part / parts;
}

int cp__keygen_init(cp__keygen *g, const cp__dist *d, uint64_t keys, uint64_t seed, uint64_t part,
                    uint64_t parts) {
    if (d == NULL || keys == 0 || parts == 0 || part >= parts || parts > UINT32_MAX)
        return CP__KS_EINVAL;
    if (d->kind == CP__DIST_ZIPF && !(d->zipf_s > 0.0 && d->zipf_s <= 100.0))
        return CP__KS_EINVAL;
    if (d->kind != CP__DIST_UNIFORM && d->kind != CP__DIST_SEQUENTIAL && d->kind != CP__DIST_ZIPF &&
        d->kind != CP__DIST_GAUSSIAN)
        return CP__KS_EINVAL;
    if (d->kind == CP__DIST_GAUSSIAN && (d->spread < 0.0 || cp__dist_check(d, keys) != 0))
        return CP__KS_EINVAL;
    memset(g, 0, sizeof(*g));
    g->kind = d->kind;
    g->keys = keys;
    cp__rng_seed(&g->rng, seed, part);
    g->first = split_point(keys, part, parts);
    g->end = split_point(keys, part + 1, parts);
    g->next = g->first;
    g->share = g->end - g->first;
    if (g->first == g->end) {
        /* More parts than keys: this part owns no key for a load (share 0), but a sequential
         * bench still needs indices, so it walks all keys from its own offset. */
        g->first = 0;
        g->end = keys;
        g->next = part % keys;
    }
    if (d->kind == CP__DIST_ZIPF)
        zipf_setup(g, d->zipf_s);
    if (d->kind == CP__DIST_GAUSSIAN) {
        g->mu = d->spread > 0.0 ? d->centre : (double)keys / 2.0;
        g->sigma = d->spread > 0.0 ? d->spread : (double)keys / 6.0;
    }
    return 0;
}

/* One standard normal: Marsaglia's polar method, two normals per accepted pair (the second kept
 * for the next call), no trigonometry. */
static double std_normal(cp__keygen *g) {
    if (g->has_spare) {
        g->has_spare = false;
        return g->spare;
    }
    for (;;) {
        double u = 2.0 * cp__rng_double(&g->rng) - 1.0, v = 2.0 * cp__rng_double(&g->rng) - 1.0;
        double q = u * u + v * v;
        if (q > 0.0 && q < 1.0) {
            double f = sqrt(-2.0 * log(q) / q);
            g->spare = v * f;
            g->has_spare = true;
            return u * f;
        }
    }
}

/* round(mu + sigma * N(0,1)) inside [0, keys): a truncated normal (see keyspace.h). */
static uint64_t gaussian_next(cp__keygen *g) {
    for (int i = 0; i < 64; i++) {
        double k = floor(g->mu + g->sigma * std_normal(g) + 0.5);
        if (k >= 0.0 && k < (double)g->keys)
            return (uint64_t)k;
    }
    return rng_below(&g->rng, g->keys);
}

uint64_t cp__keygen_next(cp__keygen *g) {
    switch (g->kind) {
    case CP__DIST_SEQUENTIAL: {
        uint64_t k = g->next++;
        if (g->next >= g->end)
            g->next = g->first;
        return k;
    }
    case CP__DIST_ZIPF:
        return zipf_next(g);
    case CP__DIST_GAUSSIAN:
        return gaussian_next(g);
    case CP__DIST_UNIFORM:
    default:
        return rng_below(&g->rng, g->keys);
    }
}

uint64_t cp__keygen_share(const cp__keygen *g) {
    return g->kind == CP__DIST_SEQUENTIAL ? g->share : g->keys;
}

/* ---- values --------------------------------------------------------------------------------- */

/* Filler alphabet: 64 printable bytes, no '|'. The byte at value offset i is pattern[i % 64],
 * independent of key and header length, so one template serves every value. */
static const char filler[64] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";

/* Extra template bytes past value_size: one page, see cp__value_fill. */
#define TMPL_SLACK 4096

size_t cp__value_min_size(size_t keylen) {
    return keylen + 2 + CP__VERSION_MAX_DIGITS;
}

size_t cp__value_len_varied(const cp__valuefmt *v, const char *key, size_t keylen) {
    return cp__value_sizes_pick(&v->sizes, cp__key_hash(key, keylen));
}

int cp__valuefmt_init(cp__valuefmt *v, size_t value_size, size_t max_keylen, bool verifiable) {
    cp__value_sizes z;
    cp__value_sizes_fixed(&z, value_size);
    return cp__valuefmt_init_sizes(v, &z, max_keylen, verifiable);
}

int cp__valuefmt_init_sizes(cp__valuefmt *v, const cp__value_sizes *sizes, size_t max_keylen,
                            bool verifiable) {
    memset(v, 0, sizeof(*v));
    size_t lo = cp__value_sizes_min(sizes), value_size = cp__value_sizes_max(sizes);
    if (sizes->n < 1 || sizes->n > CP__VALUE_SIZES_MAX || lo == 0)
        return CP__KS_EINVAL;
    if (value_size > CP__VALUE_MAX_SIZE)
        return CP__KS_ETOOBIG;
    if (verifiable && lo < cp__value_min_size(max_keylen))
        return CP__KS_ETOOSMALL;
    /* TMPL_SLACK more bytes of the same pattern let cp__value_fill pick its source address. */
    char *t = malloc(value_size + TMPL_SLACK);
    if (t == NULL)
        return CP__KS_ENOMEM;
    for (size_t i = 0; i < value_size + TMPL_SLACK; i++)
        t[i] = filler[i & 63];
    v->value_size = value_size;
    v->tmpl = t;
    v->sizes = *sizes;
    v->varied = cp__value_sizes_varied(sizes);
    return 0;
}

void cp__valuefmt_free(cp__valuefmt *v) {
    free(v->tmpl);
    v->tmpl = NULL;
    v->value_size = 0;
    v->varied = false;
}

/* Where to copy the filler for value offset `off` (going to dst, len bytes) from. Any template
 * address off + 64 * j holds the same bytes; we pick j so that (dst - src) mod 4096 lies in
 * [2048, 2112). Measured on this project's AMD EPYC with glibc 2.36: memcpy of >= 4 KiB (the
 * rep movsb path) is ~25x slower when (dst - src) mod 4096 is in [1, 62] (16 KiB: 8.7 us instead
 * of 0.35 us), and a caller's output buffer can sit at any such distance from the template. */
static const char *filler_src(const cp__valuefmt *v, size_t off, const char *dst, size_t len) {
    const char *src = v->tmpl + off;
    if (len < 2048)
        return src;
    uintptr_t d = ((uintptr_t)dst - (uintptr_t)src) & (TMPL_SLACK - 1);
    return src + (((d - 2048) & (TMPL_SLACK - 1)) & ~(uintptr_t)63);
}

size_t cp__value_fill(const cp__valuefmt *v, const char *key, size_t keylen, uint32_t version,
                      char *buf) {
    size_t size = cp__value_len(v, key, keylen);
    char ver[24];
    size_t vlen = fmt_u64(version, 0, ver);
    /* keylen + '|' + digits + '|' */
    if (keylen + 2 + vlen > size) {
        memcpy(buf, filler_src(v, 0, buf, size), size);
        return 0;
    }
    memcpy(buf, key, keylen);
    size_t n = keylen;
    buf[n++] = '|';
    memcpy(buf + n, ver, vlen);
    n += vlen;
    buf[n++] = '|';
    memcpy(buf + n, filler_src(v, n, buf + n, size - n), size - n);
    return n;
}

/* Parses "<digits>|" at p (at most CP__VERSION_MAX_DIGITS digits, value <= UINT32_MAX).
 * Returns the bytes consumed including the '|', or 0 if malformed. */
static size_t parse_version(const char *p, size_t avail, uint32_t *out) {
    uint64_t v = 0;
    size_t i = 0;
    while (i < avail && p[i] >= '0' && p[i] <= '9') {
        if (i == CP__VERSION_MAX_DIGITS)
            return 0;
        v = v * 10 + (uint64_t)(p[i] - '0');
        i++;
    }
    if (i == 0 || i >= avail || p[i] != '|' || v > UINT32_MAX)
        return 0;
    *out = (uint32_t)v;
    return i + 1;
}

static inline bool same8(const char *a, const char *b) {
    uint64_t x, y;
    memcpy(&x, a, 8);
    memcpy(&y, b, 8);
    return x == y;
}

/* memcmp(a, b, n) == 0 for key names and short values (tens of bytes): eight bytes at a time
 * inline, the last eight overlapping the ones before (no byte loop), cheaper than the libc call
 * at these lengths. */
static bool same_bytes(const char *a, const char *b, size_t n) {
    if (n < 8) {
        for (size_t i = 0; i < n; i++)
            if (a[i] != b[i])
                return false;
        return true;
    }
    for (size_t i = 0; i + 8 < n; i += 8)
        if (!same8(a + i, b + i))
            return false;
    return same8(a + n - 8, b + n - 8);
}

/* Checks, cheapest first, that the reply is this key's value: header names the key, version
 * parses, size is exact, and the filler matches byte for byte (against the template), so
 * a value overwritten on a node, truncated, or routed to the wrong request is always caught. A
 * reply for another key is told apart from garbage so the caller can report misrouting. */
cp__verify_result cp__value_verify(const cp__valuefmt *v, const char *reply, size_t len,
                                   const char *key, size_t keylen, uint32_t *version_out) {
    uint32_t version;
    if (len > keylen && reply[keylen] == '|' && same_bytes(reply, key, keylen)) {
        size_t n = parse_version(reply + keylen + 1, len - keylen - 1, &version);
        if (n == 0)
            return CP__VERIFY_BAD_FORMAT;
        if (version_out != NULL)
            *version_out = version;
        if (len != cp__value_len(v, key, keylen))
            return CP__VERIFY_WRONG_SIZE;
        size_t hdr = keylen + 1 + n;
        size_t rest = len - hdr;
        if (rest <= 128 ? !same_bytes(reply + hdr, v->tmpl + hdr, rest)
                        : memcmp(reply + hdr, v->tmpl + hdr, rest) != 0)
            return CP__VERIFY_BAD_FORMAT;
        return CP__VERIFY_OK;
    }
    /* Not ours: another key's well-formed header "<k>|<digits>|", k non-empty and short? */
    size_t scan = len < CP__KEY_MAX_LEN + 1 ? len : CP__KEY_MAX_LEN + 1;
    const char *bar = memchr(reply, '|', scan);
    if (bar != NULL && bar != reply) {
        size_t klen = (size_t)(bar - reply);
        if (parse_version(bar + 1, len - klen - 1, &version) != 0)
            return CP__VERIFY_WRONG_KEY;
    }
    return CP__VERIFY_BAD_FORMAT;
}

const char *cp__verify_result_str(cp__verify_result r) {
    switch (r) {
    case CP__VERIFY_OK:
        return "ok";
    case CP__VERIFY_WRONG_KEY:
        return "wrong key";
    case CP__VERIFY_BAD_FORMAT:
        return "bad format";
    case CP__VERIFY_WRONG_SIZE:
        return "wrong size";
    }
    return "unknown";
}
