/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The client-side cache's store (cachestore.h): entries found through a chained hash table by
 * the request's bytes, kept on a recency list (evicted from its least recent end) and on their
 * slot's list (dropped by key or slot without a walk of the whole store).
 *
 * An entry's block, one cp__malloc:
 *
 *     struct cp__centry | request bytes | first key bytes | pad | reply objects and element
 *     arrays, each rounded to ALIGN, in pre-order | the strings, each with a NUL
 *
 * Objects and arrays come before the strings so that only they need padding; the block is
 * aligned as malloc aligns, so every object in it is too.
 */
#include <assert.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/cache/cachestore.h"

#define ALIGN alignof(max_align_t)
#define FIRST_BUCKETS 16

struct cp__centry {
    cp__centry *hnext;         /* the next entry of its hash chain */
    cp__centry *newer, *older; /* the recency list: s->mru has no newer, s->lru no older */
    cp__centry *snext, *sprev; /* its slot's list */
    redisReply *reply;         /* inside this block */
    uint64_t hash;
    size_t size; /* the whole block: what s->bytes counts */
    size_t reqlen, keylen;
    int32_t slot, node;
    int multikey;
    /* then the request's bytes, then the key's */
};

/* ---- the hash ------------------------------------------------------------------------------ */

/* xxHash64's primes: odd, with well spread bits. */
#define P1 UINT64_C(0x9E3779B185EBCA87)
#define P2 UINT64_C(0xC2B2AE3D27D4EB4F)
#define P3 UINT64_C(0x165667B19E3779F9)

static inline uint64_t rotl64(uint64_t x, int r) {
    return (x << r) | (x >> (64 - r));
}

/* One input word into the state: xxHash64's round, on one lane. */
static inline uint64_t round64(uint64_t h, uint64_t v) {
    return rotl64(h + v * P2, 31) * P1;
}

/* Eight bytes at a time, then a final avalanche so that the low bits (the bucket index) depend
 * on every input bit. Requests differ mostly in their key, often near the end, and can be long
 * (a big MGET): a byte-at-a-time hash such as FNV-1a does a multiply per byte, this one one per
 * eight. The length goes in first: a zero-padded tail does not collide with real zero bytes. */
uint64_t cp__cstore_hash(const char *req, size_t len) {
    uint64_t h = P3 + (uint64_t)len * P1;
    size_t i = 0;
    for (; len - i >= 8; i += 8) {
        uint64_t v;
        memcpy(&v, req + i, 8);
        h = round64(h, v);
    }
    if (i < len) {
        uint64_t v = 0;
        memcpy(&v, req + i, len - i);
        h = round64(h, v);
    }
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}

/* ---- the flat reply -------------------------------------------------------------------------- */

/* *sum + b into *sum; 0 when it would overflow. */
static int add_size(size_t *sum, size_t b) {
    if (*sum > SIZE_MAX - b)
        return 0;
    *sum += b;
    return 1;
}

/* n rounded up to ALIGN into *n; 0 on overflow. */
static int round_up(size_t *n) {
    if (*n > SIZE_MAX - (ALIGN - 1))
        return 0;
    *n = (*n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    return 1;
}

/* What r takes flat: its objects and arrays (rounded) added to *objs, its strings (with NULs) to
 * *strs. 0 when a sum overflows (only a reply that shares sub-objects could get there). Replies
 * come from the reader, whose nesting is bounded, so the recursion is too. */
static int measure(const redisReply *r, size_t *objs, size_t *strs) {
    size_t obj = sizeof(redisReply);
    if (!round_up(&obj) || !add_size(objs, obj))
        return 0;
    if (r->str != NULL && (!add_size(strs, r->len) || !add_size(strs, 1)))
        return 0;
    if (r->elements == 0 || r->element == NULL)
        return 1;
    if (r->elements > SIZE_MAX / sizeof(redisReply *))
        return 0;
    size_t arr = r->elements * sizeof(redisReply *);
    if (!round_up(&arr) || !add_size(objs, arr))
        return 0;
    for (size_t i = 0; i < r->elements; i++)
        if (r->element[i] != NULL && !measure(r->element[i], objs, strs))
            return 0;
    return 1;
}

/* r copied to *objs (objects and arrays) and *strs (strings), both cursors moved past it. Every
 * field is copied as it is (a verbatim string's format is in integer); a NULL element stays
 * NULL, as cp__reply_dup keeps it. */
static redisReply *flatten(const redisReply *r, char **objs, char **strs) {
    redisReply *d = (redisReply *)(void *)*objs;
    size_t obj = sizeof(redisReply);
    round_up(&obj);
    *objs += obj;
    d->type = r->type;
    d->integer = r->integer;
    d->len = 0;
    d->str = NULL;
    d->elements = 0;
    d->element = NULL;
    if (r->str != NULL) {
        d->str = *strs;
        d->len = r->len;
        if (r->len > 0)
            memcpy(d->str, r->str, r->len);
        d->str[r->len] = '\0';
        *strs += r->len + 1;
    }
    if (r->elements == 0 || r->element == NULL)
        return d;
    d->elements = r->elements;
    d->element = (redisReply **)(void *)*objs;
    size_t arr = r->elements * sizeof(redisReply *);
    round_up(&arr);
    *objs += arr;
    for (size_t i = 0; i < r->elements; i++)
        d->element[i] = r->element[i] != NULL ? flatten(r->element[i], objs, strs) : NULL;
    return d;
}

/* ---- the store ------------------------------------------------------------------------------- */

static char *entry_req(cp__centry *e) {
    return (char *)(e + 1);
}

static char *entry_key(cp__centry *e) {
    return entry_req(e) + e->reqlen;
}

void cp__cstore_init(cp__cstore *s, size_t max_entries, size_t max_bytes) {
    assert(max_entries > 0 && max_bytes > 0);
    memset(s, 0, sizeof(*s));
    s->max_entries = max_entries;
    s->max_bytes = max_bytes;
}

/* The link (a bucket or an hnext) that points at the entry of exactly these bytes, or at the
 * chain's NULL end when there is none. The buckets exist. */
static cp__centry **find_link(cp__cstore *s, const char *req, size_t len, uint64_t hash) {
    cp__centry **link = &s->buckets[hash & (s->nbuckets - 1)];
    for (; *link != NULL; link = &(*link)->hnext) {
        cp__centry *e = *link;
        if (e->hash == hash && e->reqlen == len && memcmp(entry_req(e), req, len) == 0)
            return link;
    }
    return link;
}

static void recency_unlink(cp__cstore *s, cp__centry *e) {
    if (e->newer != NULL)
        e->newer->older = e->older;
    else
        s->mru = e->older;
    if (e->older != NULL)
        e->older->newer = e->newer;
    else
        s->lru = e->newer;
}

static void recency_push(cp__cstore *s, cp__centry *e) {
    e->newer = NULL;
    e->older = s->mru;
    if (s->mru != NULL)
        s->mru->newer = e;
    else
        s->lru = e;
    s->mru = e;
}

/* Takes e out of the table and the lists, frees it. */
static void drop(cp__cstore *s, cp__centry *e) {
    cp__centry **link = &s->buckets[e->hash & (s->nbuckets - 1)];
    while (*link != e)
        link = &(*link)->hnext;
    *link = e->hnext;
    recency_unlink(s, e);
    if (e->sprev != NULL)
        e->sprev->snext = e->snext;
    else
        s->by_slot[e->slot] = e->snext;
    if (e->snext != NULL)
        e->snext->sprev = e->sprev;
    s->nentries--;
    s->bytes -= e->size;
    cp__free(e);
}

/* Doubles the table. Out of memory it keeps the one it has: chains grow longer, nothing fails. */
static void grow(cp__cstore *s) {
    if (s->nbuckets > SIZE_MAX / 2 / sizeof(cp__centry *))
        return;
    size_t n = s->nbuckets * 2;
    cp__centry **b = cp__calloc(n, sizeof(*b));
    if (b == NULL)
        return;
    for (size_t i = 0; i < s->nbuckets; i++) {
        for (cp__centry *e = s->buckets[i], *next; e != NULL; e = next) {
            next = e->hnext;
            cp__centry **head = &b[e->hash & (n - 1)];
            e->hnext = *head;
            *head = e;
        }
    }
    cp__free(s->buckets);
    s->buckets = b;
    s->nbuckets = n;
}

/* The tables, made at the first put. */
static int ensure_tables(cp__cstore *s) {
    if (s->buckets == NULL) {
        if ((s->buckets = cp__calloc(FIRST_BUCKETS, sizeof(*s->buckets))) == NULL)
            return CP_ENOMEM;
        s->nbuckets = FIRST_BUCKETS;
    }
    if (s->by_slot == NULL && (s->by_slot = cp__calloc(CP_SLOTS, sizeof(*s->by_slot))) == NULL)
        return CP_ENOMEM;
    return 0;
}

const redisReply *cp__cstore_get(cp__cstore *s, const char *req, size_t len, uint64_t hash) {
    if (s->nentries == 0)
        return NULL;
    cp__centry *e = *find_link(s, req, len, hash);
    if (e == NULL)
        return NULL;
    if (e != s->mru) {
        recency_unlink(s, e);
        recency_push(s, e);
    }
    return e->reply;
}

/* A put that stores nothing (rc 1 or CP_ENOMEM) still drops the request's older entry: its reply
 * is older than the one refused. */
static int refuse(cp__cstore *s, const char *req, size_t len, uint64_t hash, int rc) {
    cp__centry *old = s->nentries > 0 ? *find_link(s, req, len, hash) : NULL;
    if (old != NULL)
        drop(s, old);
    return rc;
}

int cp__cstore_put(cp__cstore *s, const char *req, size_t len, uint64_t hash, int slot, int node,
                   const char *key, size_t keylen, int multikey, const redisReply *r) {
    assert(slot >= 0 && slot < CP_SLOTS && r != NULL);
    size_t head = sizeof(cp__centry), objs = 0, strs = 0;
    if (!add_size(&head, len) || !add_size(&head, keylen) || !round_up(&head) ||
        !measure(r, &objs, &strs))
        return refuse(s, req, len, hash, 1);
    size_t size = head;
    if (!add_size(&size, objs) || !add_size(&size, strs) || size > s->max_bytes)
        return refuse(s, req, len, hash, 1);
    if (ensure_tables(s) != 0)
        return refuse(s, req, len, hash, CP_ENOMEM);
    cp__centry *e = cp__malloc(size);
    if (e == NULL)
        return refuse(s, req, len, hash, CP_ENOMEM);
    e->hash = hash;
    e->size = size;
    e->reqlen = len;
    e->keylen = keylen;
    e->slot = slot;
    e->node = node;
    e->multikey = multikey != 0;
    if (len > 0)
        memcpy(entry_req(e), req, len);
    if (keylen > 0)
        memcpy(entry_key(e), key, keylen);
    char *o = (char *)e + head, *str = o + objs;
    e->reply = flatten(r, &o, &str);
    assert(o == (char *)e + head + objs && str == (char *)e + size);

    cp__centry *old = *find_link(s, req, len, hash);
    if (old != NULL)
        drop(s, old); /* replaced, not evicted */
    cp__centry **bucket = &s->buckets[hash & (s->nbuckets - 1)];
    e->hnext = *bucket;
    *bucket = e;
    recency_push(s, e);
    e->sprev = NULL;
    e->snext = s->by_slot[slot];
    if (e->snext != NULL)
        e->snext->sprev = e;
    s->by_slot[slot] = e;
    s->nentries++;
    s->bytes += size;

    /* e alone fits both bounds (size <= max_bytes, max_entries > 0), so it is never the LRU
     * one evicted here. */
    while (s->nentries > s->max_entries || s->bytes > s->max_bytes) {
        drop(s, s->lru);
        s->evictions++;
    }
    if (s->nentries > s->nbuckets)
        grow(s);
    return 0;
}

size_t cp__cstore_drop_key(cp__cstore *s, int slot, const char *key, size_t keylen) {
    if (s->by_slot == NULL || slot < 0 || slot >= CP_SLOTS)
        return 0;
    size_t n = 0;
    for (cp__centry *e = s->by_slot[slot], *next; e != NULL; e = next) {
        next = e->snext;
        if (e->multikey ||
            (e->keylen == keylen && (keylen == 0 || memcmp(entry_key(e), key, keylen) == 0))) {
            drop(s, e);
            n++;
        }
    }
    return n;
}

size_t cp__cstore_drop_slot(cp__cstore *s, int slot) {
    if (s->by_slot == NULL || slot < 0 || slot >= CP_SLOTS)
        return 0;
    size_t n = 0;
    while (s->by_slot[slot] != NULL) {
        drop(s, s->by_slot[slot]);
        n++;
    }
    return n;
}

/* The recency list is the one list of every entry; a node's entries have no list of their own
 * (a node is dropped when it goes away, rarely). */
size_t cp__cstore_drop_node(cp__cstore *s, int node) {
    size_t n = 0;
    for (cp__centry *e = s->mru, *next; e != NULL; e = next) {
        next = e->older;
        if (e->node == node) {
            drop(s, e);
            n++;
        }
    }
    return n;
}

/* Every entry freed; each one's bucket and slot head cleared as it goes, so that the tables are
 * left empty without a sweep of all CP_SLOTS heads. */
size_t cp__cstore_clear(cp__cstore *s) {
    size_t n = s->nentries;
    for (cp__centry *e = s->mru, *next; e != NULL; e = next) {
        next = e->older;
        s->buckets[e->hash & (s->nbuckets - 1)] = NULL;
        s->by_slot[e->slot] = NULL;
        cp__free(e);
    }
    s->mru = s->lru = NULL;
    s->nentries = 0;
    s->bytes = 0;
    return n;
}

void cp__cstore_free(cp__cstore *s) {
    cp__cstore_clear(s);
    cp__free(s->buckets);
    cp__free(s->by_slot);
    cp__cstore_init(s, s->max_entries, s->max_bytes);
}
