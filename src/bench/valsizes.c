/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Value sizes (valsizes.h): parsing and spelling --value-size, the size a hash picks, the hash of
 * a key's bytes. Allocates nothing; no global state.
 */
#include "bench/valsizes.h"

#include <stdio.h>
#include <string.h>

void cp__value_sizes_fixed(cp__value_sizes *z, size_t size) {
    memset(z, 0, sizeof(*z));
    z->n = 1;
    z->size[0] = size;
}

/* A size: decimal digits only, 1 .. CP__VALUE_MAX_SIZE, exactly len bytes of p. */
static int parse_size(const char *p, size_t len, uint64_t max, uint64_t *out) {
    uint64_t v = 0;
    if (len == 0 || len > 12)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    if (v < 1 || v > max)
        return -1;
    *out = v;
    return 0;
}

#define WHY(...)                                                                                   \
    do {                                                                                           \
        if (why != NULL && cap > 0)                                                                \
            snprintf(why, cap, __VA_ARGS__);                                                       \
        return CP__KS_EINVAL;                                                                      \
    } while (0)

int cp__value_sizes_parse(const char *s, cp__value_sizes *out, char *why, size_t cap) {
    static const char FORMS[] = "B, MIN-MAX or SIZE:WEIGHT[,SIZE:WEIGHT...]";
    if (s == NULL || *s == '\0')
        WHY("empty; want %s", FORMS);
    cp__value_sizes z;
    memset(&z, 0, sizeof(z));
    uint64_t a, b;
    const char *dash = strchr(s, '-'), *colon = strchr(s, ':');
    if (dash != NULL && colon == NULL) {
        if (parse_size(s, (size_t)(dash - s), CP__VALUE_MAX_SIZE, &a) != 0 ||
            parse_size(dash + 1, strlen(dash + 1), CP__VALUE_MAX_SIZE, &b) != 0)
            WHY("'%s' is not MIN-MAX with sizes in [1, %u]", s, CP__VALUE_MAX_SIZE);
        if (a > b)
            WHY("'%s': MIN is above MAX", s);
        z.n = a == b ? 1 : 2;
        z.range = a != b;
        z.size[0] = (size_t)a;
        z.size[1] = (size_t)b;
        *out = z;
        return 0;
    }
    if (colon == NULL) {
        if (parse_size(s, strlen(s), CP__VALUE_MAX_SIZE, &a) != 0)
            WHY("'%s' is not %s, with sizes in [1, %u]", s, FORMS, CP__VALUE_MAX_SIZE);
        cp__value_sizes_fixed(out, (size_t)a);
        return 0;
    }
    for (const char *p = s;;) {
        size_t len = strcspn(p, ",");
        const char *c = memchr(p, ':', len);
        if (c == NULL || parse_size(p, (size_t)(c - p), CP__VALUE_MAX_SIZE, &a) != 0)
            WHY("'%.*s' is not SIZE:WEIGHT with a size in [1, %u]", (int)len, p,
                CP__VALUE_MAX_SIZE);
        if (parse_size(c + 1, len - (size_t)(c - p) - 1, 1000000, &b) != 0)
            WHY("'%.*s': the weight must be an integer in [1, 1000000]", (int)len, p);
        for (unsigned i = 0; i < z.n; i++)
            if (z.size[i] == (size_t)a)
                WHY("size %llu is listed twice", (unsigned long long)a);
        if (z.n == CP__VALUE_SIZES_MAX)
            WHY("more than %d sizes", CP__VALUE_SIZES_MAX);
        z.size[z.n] = (size_t)a;
        z.weight[z.n++] = (uint32_t)b;
        z.total += b;
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    if (z.n == 1)
        cp__value_sizes_fixed(&z, z.size[0]);
    *out = z;
    return 0;
}
#undef WHY

int cp__value_sizes_format(const cp__value_sizes *z, char *buf, size_t cap) {
    if (z->range)
        return snprintf(buf, cap, "%zu-%zu", z->size[0], z->size[1]);
    if (z->n <= 1)
        return snprintf(buf, cap, "%zu", z->size[0]);
    int total = 0;
    for (unsigned i = 0; i < z->n; i++) {
        size_t at = (size_t)total < cap ? (size_t)total : cap;
        int w = snprintf(buf + at, cap - at, "%s%zu:%u", i ? "," : "", z->size[i], z->weight[i]);
        if (w < 0)
            return w;
        total += w;
    }
    return total;
}

bool cp__value_sizes_varied(const cp__value_sizes *z) {
    return z->n > 1;
}

size_t cp__value_sizes_min(const cp__value_sizes *z) {
    size_t m = z->size[0];
    for (unsigned i = 1; i < z->n; i++)
        m = z->size[i] < m ? z->size[i] : m;
    return m;
}

size_t cp__value_sizes_max(const cp__value_sizes *z) {
    size_t m = z->size[0];
    for (unsigned i = 1; i < z->n; i++)
        m = z->size[i] > m ? z->size[i] : m;
    return m;
}

double cp__value_sizes_mean(const cp__value_sizes *z) {
    if (z->range)
        return ((double)z->size[0] + (double)z->size[1]) / 2.0;
    if (z->n <= 1)
        return (double)z->size[0];
    double sum = 0;
    for (unsigned i = 0; i < z->n; i++)
        sum += (double)z->size[i] * (double)z->weight[i];
    return sum / (double)z->total;
}

/* h mapped onto [0, n) by multiply-shift, as rng_below. */
static uint64_t map_below(uint64_t h, uint64_t n) {
#ifdef __SIZEOF_INT128__
    return (uint64_t)(((unsigned __int128)h * n) >> 64);
#else
    return (uint64_t)((double)(h >> 11) * 0x1.0p-53 * (double)n);
#endif
}

size_t cp__value_sizes_pick(const cp__value_sizes *z, uint64_t h) {
    if (z->range)
        return z->size[0] + (size_t)map_below(h, (uint64_t)(z->size[1] - z->size[0]) + 1);
    if (z->n <= 1)
        return z->size[0];
    uint64_t r = map_below(h, z->total);
    for (unsigned i = 0; i + 1 < z->n; i++) {
        if (r < z->weight[i])
            return z->size[i];
        r -= z->weight[i];
    }
    return z->size[z->n - 1];
}

uint64_t cp__key_hash(const char *key, size_t keylen) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < keylen; i++)
        h = (h ^ (uint8_t)key[i]) * 0x100000001b3ull;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}
