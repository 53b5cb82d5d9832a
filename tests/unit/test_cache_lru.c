/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The client-side cache's store (src/lib/cache/cachestore.c): both bounds hold after every put and
 * evict the least recently used entries; a reply comes back field by field as it was put, from
 * one block, after the original is freed; drops by key, slot and node take exactly their
 * entries; and a long random run agrees step by step with a plain model of an LRU store. Entry
 * sizes are not computed here from the layout: each is read off the store (its bytes holding
 * that entry alone), and the model adds them up.
 */
#include <setjmp.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "asserts.h"
#include "lib/cache/cachestore.h"

/* ---- requests and replies ------------------------------------------------------------------ */

typedef struct req {
    char buf[96];
    size_t len;
    uint64_t hash;
} req;

/* cmd key as the RESP bytes a client sends. */
static req make_req(const char *cmd, const char *key) {
    req q;
    int n = snprintf(q.buf, sizeof(q.buf), "*2\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n", strlen(cmd), cmd,
                     strlen(key), key);
    assert_int_gt(n, 0);
    assert_int_lt(n, (int)sizeof(q.buf));
    q.len = (size_t)n;
    q.hash = cp__cstore_hash(q.buf, q.len);
    return q;
}

static redisReply *mk(int type) {
    redisReply *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    r->type = type;
    return r;
}

static redisReply *mk_str(int type, const char *s, size_t len) {
    redisReply *r = mk(type);
    r->str = malloc(len + 1);
    assert_non_null(r->str);
    memcpy(r->str, s, len);
    r->str[len] = '\0';
    r->len = len;
    return r;
}

static redisReply *mk_int(int type, long long v) {
    redisReply *r = mk(type);
    r->integer = v;
    return r;
}

/* An aggregate of n elements, given as redisReply * arguments (NULL ones stay NULL). */
static redisReply *mk_agg(int type, size_t n, ...) {
    redisReply *r = mk(type);
    r->elements = n;
    if (n > 0) {
        r->element = calloc(n, sizeof(*r->element));
        assert_non_null(r->element);
    }
    va_list ap;
    va_start(ap, n);
    for (size_t i = 0; i < n; i++)
        r->element[i] = va_arg(ap, redisReply *);
    va_end(ap);
    return r;
}

static void free_reply(redisReply *r) {
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->elements; i++)
        free_reply(r->element[i]);
    free(r->element);
    free(r->str);
    free(r);
}

/* Puts a string reply val for q (slot, node, first key) and frees the original at once. */
static int put_val(cp__cstore *s, const req *q, int slot, int node, const char *key, int multikey,
                   const char *val) {
    redisReply *r = mk_str(CP_REPLY_STRING, val, strlen(val));
    int rc = cp__cstore_put(s, q->buf, q->len, q->hash, slot, node, key, strlen(key), multikey, r);
    free_reply(r);
    return rc;
}

static const char *get_val(cp__cstore *s, const req *q) {
    const redisReply *r = cp__cstore_get(s, q->buf, q->len, q->hash);
    return r != NULL ? r->str : NULL;
}

/* What the store counts for this entry: its bytes holding it alone. */
static size_t entry_size(const req *q, const char *key, const redisReply *r) {
    cp__cstore s;
    cp__cstore_init(&s, 1, SIZE_MAX);
    assert_int_equal(cp__cstore_put(&s, q->buf, q->len, q->hash, 0, 0, key, strlen(key), 0, r), 0);
    size_t n = s.bytes;
    assert_int_gt(n, q->len + strlen(key) + sizeof(*r));
    cp__cstore_free(&s);
    return n;
}

static size_t val_size(const req *q, const char *key, const char *val) {
    redisReply *r = mk_str(CP_REPLY_STRING, val, strlen(val));
    size_t n = entry_size(q, key, r);
    free_reply(r);
    return n;
}

/* ---- the hash ------------------------------------------------------------------------------ */

/* Requests differing only in length (zero bytes added) or in their words' order hash apart; 16384
 * requests spread over 4096 buckets by the low bits about as a random function would (e^-4 of
 * the buckets empty, about 75; a hash leaving low bits unmixed leaves far more). */
static void hash_spreads(void **state) {
    (void)state;
    char zeros[64] = {0};
    uint64_t seen[65];
    for (size_t n = 0; n <= 64; n++) {
        seen[n] = cp__cstore_hash(zeros, n);
        for (size_t m = 0; m < n; m++)
            assert_int_not_equal(seen[m], seen[n]);
    }
    /* Words in another order: a hash that only adds or xors its words would not see it. */
    char ab[24] = "aaaaaaaabbbbbbbbcccccccc", ba[24] = "bbbbbbbbaaaaaaaacccccccc";
    assert_int_not_equal(cp__cstore_hash(ab, sizeof(ab)), cp__cstore_hash(ba, sizeof(ba)));
    memcpy(ba, "aaaaaaaaccccccccbbbbbbbb", sizeof(ba));
    assert_int_not_equal(cp__cstore_hash(ab, sizeof(ab)), cp__cstore_hash(ba, sizeof(ba)));
    static unsigned char used[4096];
    memset(used, 0, sizeof(used));
    for (int i = 0; i < 16384; i++) {
        char key[16];
        snprintf(key, sizeof(key), "user:%d", i);
        req q = make_req("GET", key);
        used[q.hash & 4095] = 1;
    }
    int empty = 0;
    for (int b = 0; b < 4096; b++)
        empty += !used[b];
    assert_int_lt(empty, 150);
    assert_int_gt(empty, 20);
}

/* ---- the bounds ------------------------------------------------------------------------------ */

/* max_entries + k puts: the oldest k are gone, the others found; a get makes an entry the most
 * recently used, so the next eviction takes the one after it. */
static void entry_bound_evicts_oldest(void **state) {
    (void)state;
    enum { MAX = 8, EXTRA = 3 };
    cp__cstore s;
    cp__cstore_init(&s, MAX, SIZE_MAX);
    req q[MAX + EXTRA + 1];
    char key[16];
    for (int i = 0; i < MAX + EXTRA + 1; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        q[i] = make_req("GET", key);
    }
    for (int i = 0; i < MAX + EXTRA; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        assert_int_equal(put_val(&s, &q[i], i, 0, key, 0, key), 0);
        assert_int_le(s.nentries, MAX);
    }
    assert_int_equal(s.nentries, MAX);
    assert_int_equal(s.evictions, EXTRA);
    for (int i = 0; i < EXTRA; i++)
        assert_null(get_val(&s, &q[i]));
    for (int i = EXTRA; i < MAX + EXTRA; i++) { /* oldest first: the order stays as it was */
        snprintf(key, sizeof(key), "k%d", i);
        assert_string_equal(get_val(&s, &q[i]), key);
    }
    /* q[EXTRA] is the oldest; got, it is the newest, and q[EXTRA + 1] goes next. */
    assert_non_null(get_val(&s, &q[EXTRA]));
    assert_int_equal(put_val(&s, &q[MAX + EXTRA], 0, 0, "new", 0, "new"), 0);
    assert_non_null(get_val(&s, &q[EXTRA]));
    assert_null(get_val(&s, &q[EXTRA + 1]));
    assert_string_equal(get_val(&s, &q[MAX + EXTRA]), "new");
    assert_int_equal(s.evictions, EXTRA + 1);
    cp__cstore_free(&s);
}

/* bytes never passes max_bytes, and is the sum of what the entries it holds take; an entry of
 * exactly max_bytes fits (alone), one byte more is refused with 1 and nothing changes. */
static void byte_bound(void **state) {
    (void)state;
    enum { N = 40 };
    req q[N];
    size_t size[N];
    char key[16], val[256];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        q[i] = make_req("GET", key);
        memset(val, 'a' + i % 26, sizeof(val));
        val[(i * 37) % 200 + 1] = '\0';
        size[i] = val_size(&q[i], key, val);
    }
    size_t max = size[0] + size[1] + size[2] + size[3]; /* room for about four */
    cp__cstore s;
    cp__cstore_init(&s, 1000, max);
    int oldest = 0; /* the model: entries oldest..i are held, the oldest evicted first */
    size_t held = 0;
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        memset(val, 'a' + i % 26, sizeof(val));
        val[(i * 37) % 200 + 1] = '\0';
        assert_int_equal(put_val(&s, &q[i], i, 0, key, 0, val), 0);
        held += size[i];
        while (held > max)
            held -= size[oldest++];
        assert_int_le(s.bytes, max);
        assert_int_equal(s.bytes, held);
        assert_int_equal(s.nentries, (size_t)(i - oldest + 1));
        for (int j = 0; j < oldest; j++)
            assert_null(cp__cstore_get(&s, q[j].buf, q[j].len, q[j].hash));
    }
    /* The refused entry: too big for max_bytes alone, by one byte. */
    size_t nentries = s.nentries, bytes = s.bytes;
    uint64_t evictions = s.evictions;
    req big = make_req("GET", "big");
    static char bigval[4096];
    size_t len = 0; /* the shortest value whose entry passes max */
    for (bigval[0] = '\0'; val_size(&big, "big", bigval) <= max; bigval[++len] = '\0')
        bigval[len] = 'b';
    assert_int_lt(len, sizeof(bigval));
    assert_int_equal(put_val(&s, &big, 0, 0, "big", 0, bigval), 1);
    assert_int_equal(s.nentries, nentries);
    assert_int_equal(s.bytes, bytes);
    assert_int_equal(s.evictions, evictions);
    assert_null(get_val(&s, &big));
    for (int j = oldest; j < N; j++)
        assert_non_null(get_val(&s, &q[j]));
    /* One byte less: it fits, and only it (every other entry is larger than what is left). */
    bigval[len - 1] = '\0';
    size_t fits = val_size(&big, "big", bigval);
    assert_int_le(fits, max);
    assert_int_equal(put_val(&s, &big, 0, 0, "big", 0, bigval), 0);
    assert_int_equal(s.nentries, 1);
    assert_int_equal(s.bytes, fits);
    assert_string_equal(get_val(&s, &big), bigval);
    assert_int_equal(cp__cstore_clear(&s), 1);
    assert_int_equal(s.bytes, 0);
    assert_int_equal(s.nentries, 0);
    assert_null(get_val(&s, &big));
    cp__cstore_free(&s);
}

/* The same request put again replaces its reply in place of a second entry; a replacement too
 * big for the store is refused and the old reply goes too (it is older than the refused one). */
static void replace_same_request(void **state) {
    (void)state;
    cp__cstore s;
    cp__cstore_init(&s, 10, 2000);
    req a = make_req("GET", "a"), b = make_req("GET", "b");
    assert_int_equal(put_val(&s, &a, 1, 0, "a", 0, "one"), 0);
    assert_int_equal(put_val(&s, &b, 2, 0, "b", 0, "bee"), 0);
    assert_int_equal(put_val(&s, &a, 1, 0, "a", 0, "two, longer"), 0);
    assert_int_equal(s.nentries, 2);
    assert_int_equal(s.evictions, 0);
    assert_string_equal(get_val(&s, &a), "two, longer");
    assert_int_equal(s.bytes, val_size(&a, "a", "two, longer") + val_size(&b, "b", "bee"));
    char huge[4096];
    memset(huge, 'h', sizeof(huge) - 1);
    huge[sizeof(huge) - 1] = '\0';
    assert_int_equal(put_val(&s, &a, 1, 0, "a", 0, huge), 1);
    assert_int_equal(s.nentries, 1);
    assert_null(get_val(&s, &a));
    assert_string_equal(get_val(&s, &b), "bee");
    /* Replaced, it lives on the new slot's list: dropped by that slot, not by the old one. */
    assert_int_equal(put_val(&s, &a, 7, 0, "a", 0, "three"), 0);
    assert_int_equal(cp__cstore_drop_slot(&s, 1), 0);
    assert_int_equal(cp__cstore_drop_slot(&s, 7), 1);
    assert_null(get_val(&s, &a));
    assert_string_equal(get_val(&s, &b), "bee");
    cp__cstore_free(&s);
}

/* ---- deep replies ---------------------------------------------------------------------------- */

/* Every kind the reader makes, nested: arrays in arrays, an empty array, a map, a set, NIL
 * elements (the reader's are NIL objects; a NULL element is kept NULL too), strings with NUL
 * bytes inside, an empty string, a verbatim string with its format packed in integer. */
static redisReply *deep_reply(void) {
    redisReply *map = mk_agg(CP_REPLY_MAP, 4, mk_str(CP_REPLY_STRING, "k1", 2),
                             mk_str(CP_REPLY_DOUBLE, "3.25", 4), mk_str(CP_REPLY_STATUS, "k2", 2),
                             mk_int(CP_REPLY_BOOL, 1));
    redisReply *verb = mk_str(CP_REPLY_VERB, "some text", 9);
    verb->integer = 0x747874; /* what the reader packs; copied as any integer */
    return mk_agg(
        CP_REPLY_ARRAY, 10, mk_str(CP_REPLY_STRING, "a\0b\0", 4), mk(CP_REPLY_NIL), NULL,
        mk_int(CP_REPLY_INTEGER, -42),
        mk_agg(CP_REPLY_ARRAY, 3, mk_str(CP_REPLY_STATUS, "OK", 2),
               mk_str(CP_REPLY_ERROR, "ERR bad", 7),
               mk_agg(CP_REPLY_ARRAY, 2, mk_agg(CP_REPLY_ARRAY, 0), mk_int(CP_REPLY_INTEGER, 7))),
        map,
        mk_agg(CP_REPLY_SET, 2, mk_str(CP_REPLY_BIGNUM, "-1234567890123456789012", 23),
               mk(CP_REPLY_NIL)),
        verb, mk_str(CP_REPLY_STRING, "", 0),
        mk_agg(CP_REPLY_PUSH, 1, mk_int(CP_REPLY_INTEGER, 1)));
}

typedef struct span {
    uintptr_t lo, hi;
} span;

static void cover(span *sp, const void *p, size_t n) {
    uintptr_t a = (uintptr_t)p;
    if (a < sp->lo)
        sp->lo = a;
    if (a + n > sp->hi)
        sp->hi = a + n;
}

/* got equals want field by field, each object and pointer array aligned, each string
 * NUL-terminated; sp grows to cover every byte of got. */
static void assert_same_reply(const redisReply *want, const redisReply *got, span *sp) {
    if (want == NULL) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_ptr_not_equal(got, want);
    assert_int_equal((uintptr_t)got % alignof(max_align_t), 0);
    cover(sp, got, sizeof(*got));
    assert_int_equal(got->type, want->type);
    assert_int_equal(got->integer, want->integer);
    assert_int_equal(got->len, want->len);
    assert_int_equal(got->elements, want->elements);
    if (want->str == NULL) {
        assert_null(got->str);
    } else {
        assert_non_null(got->str);
        assert_memory_equal(got->str, want->str, want->len + 1); /* the NUL too */
        cover(sp, got->str, got->len + 1);
    }
    if (want->elements == 0) {
        assert_null(got->element);
        return;
    }
    assert_int_equal((uintptr_t)got->element % alignof(max_align_t), 0);
    cover(sp, got->element, got->elements * sizeof(*got->element));
    for (size_t i = 0; i < want->elements; i++)
        assert_same_reply(want->element[i], got->element[i], sp);
}

/* The stored copy equals a twin of the original built apart, the original freed; all of it
 * lies inside one block of the entry's counted size, and it stays as it was while the table
 * grows under other puts. */
static void deep_reply_copied_flat(void **state) {
    (void)state;
    cp__cstore s;
    cp__cstore_init(&s, 1000, SIZE_MAX);
    req q = make_req("HGETALL", "deep");
    redisReply *orig = deep_reply(), *twin = deep_reply();
    assert_int_equal(cp__cstore_put(&s, q.buf, q.len, q.hash, 9, 2, "deep", 4, 0, orig), 0);
    free_reply(orig);
    const redisReply *got = cp__cstore_get(&s, q.buf, q.len, q.hash);
    span sp = {UINTPTR_MAX, 0};
    assert_same_reply(twin, got, &sp);
    assert_int_lt(sp.hi - sp.lo, s.bytes);
    size_t bytes = s.bytes;
    char key[16];
    for (int i = 0; i < 200; i++) { /* 200 entries > the first 16 buckets: it grows */
        snprintf(key, sizeof(key), "k%d", i);
        req o = make_req("GET", key);
        assert_int_equal(put_val(&s, &o, i, 0, key, 0, key), 0);
    }
    assert_int_ge(s.nbuckets, s.nentries);
    assert_ptr_equal(cp__cstore_get(&s, q.buf, q.len, q.hash), got);
    sp = (span){UINTPTR_MAX, 0};
    assert_same_reply(twin, got, &sp);
    assert_int_lt(sp.hi - sp.lo, bytes);
    free_reply(twin);
    cp__cstore_free(&s);
}

/* ---- drops ---------------------------------------------------------------------------------- */

/* Each drop takes exactly its entries and says how many; bytes stays the sum of the rest. */
static void drops_take_their_entries(void **state) {
    (void)state;
    struct {
        const char *cmd, *key;
        int slot, node, multikey;
    } e[] = {
        {"GET", "a", 5, 0, 0},    /* 0: slot 5, key a */
        {"STRLEN", "a", 5, 1, 0}, /* 1: slot 5, key a, another request */
        {"GET", "ab", 5, 1, 0},   /* 2: slot 5, a longer key starting with a */
        {"GET", "b", 5, 2, 0},    /* 3: slot 5, key b */
        {"MGET", "b", 5, 2, 1},   /* 4: slot 5, several keys, the first b */
        {"GET", "a", 6, 0, 0},    /* 5: slot 6, key a (another slot's entry, same key bytes) */
        {"GET", "c", 6, 1, 0},    /* 6 */
        {"GET", "d", 7, 1, 0},    /* 7 */
        {"GET", "", 8, 2, 0},     /* 8: an empty key */
        {"MGET", "e", 8, 0, 1},   /* 9 */
    };
    enum { N = sizeof(e) / sizeof(e[0]) };
    req q[N];
    size_t size[N];
    cp__cstore s;
    cp__cstore_init(&s, 100, SIZE_MAX);
    for (int i = 0; i < N; i++) {
        char tagged[16]; /* ten distinct requests: the store finds by the bytes alone */
        snprintf(tagged, sizeof(tagged), "%s#%d", e[i].key, i);
        q[i] = make_req(e[i].cmd, tagged);
        size[i] = val_size(&q[i], e[i].key, e[i].cmd);
        assert_int_equal(
            put_val(&s, &q[i], e[i].slot, e[i].node, e[i].key, e[i].multikey, e[i].cmd), 0);
    }
    int gone[N] = {0};
    /* found: every entry not gone is found with its own reply, and bytes is their sum */
#define CHECK_REST()                                                                               \
    do {                                                                                           \
        size_t sum = 0, n = 0;                                                                     \
        for (int i = 0; i < N; i++) {                                                              \
            if (gone[i]) {                                                                         \
                assert_null(get_val(&s, &q[i]));                                                   \
            } else {                                                                               \
                assert_string_equal(get_val(&s, &q[i]), e[i].cmd);                                 \
                sum += size[i], n++;                                                               \
            }                                                                                      \
        }                                                                                          \
        assert_int_equal(s.bytes, sum);                                                            \
        assert_int_equal(s.nentries, n);                                                           \
    } while (0)
    CHECK_REST();
    /* key a of slot 5: 0 and 1 (exact bytes, not 2's "ab"), and the slot's multi-key 4 */
    assert_int_equal(cp__cstore_drop_key(&s, 5, "a", 1), 3);
    gone[0] = gone[1] = gone[4] = 1;
    CHECK_REST();
    assert_int_equal(cp__cstore_drop_key(&s, 5, "a", 1), 0);
    assert_int_equal(cp__cstore_drop_key(&s, 5, "zz", 2), 0);
    /* the empty key of slot 8, with its multi-key 9 */
    assert_int_equal(cp__cstore_drop_key(&s, 8, "", 0), 2);
    gone[8] = gone[9] = 1;
    CHECK_REST();
    assert_int_equal(cp__cstore_drop_slot(&s, 6), 2);
    gone[5] = gone[6] = 1;
    CHECK_REST();
    assert_int_equal(cp__cstore_drop_slot(&s, 6), 0);
    assert_int_equal(cp__cstore_drop_slot(&s, 100), 0);
    assert_int_equal(cp__cstore_drop_node(&s, 1), 2); /* 2 and 7 */
    gone[2] = gone[7] = 1;
    CHECK_REST();
    assert_int_equal(cp__cstore_drop_node(&s, 1), 0);
    assert_int_equal(cp__cstore_clear(&s), 1); /* 3 */
    gone[3] = 1;
    CHECK_REST();
#undef CHECK_REST
    assert_int_equal(s.evictions, 0);
    /* Freed, the store is as init left it and takes entries again. */
    cp__cstore_free(&s);
    assert_null(s.buckets);
    assert_null(s.by_slot);
    assert_int_equal(s.max_entries, 100);
    assert_null(get_val(&s, &q[0]));
    assert_int_equal(cp__cstore_drop_key(&s, 5, "a", 1), 0);
    assert_int_equal(cp__cstore_drop_node(&s, 0), 0);
    assert_int_equal(put_val(&s, &q[0], 5, 0, "a", 0, "again"), 0);
    assert_string_equal(get_val(&s, &q[0]), "again");
    cp__cstore_free(&s);
}

/* ---- out of memory -------------------------------------------------------------------------- */

static long fail_at; /* > 0: the allocation that brings it to 0 fails */
static int fail_calloc;

static int failing(void) {
    return fail_at > 0 && --fail_at == 0;
}
static void *t_malloc(size_t n) {
    return failing() ? NULL : malloc(n);
}
static void *t_calloc(size_t n, size_t size) {
    return failing() || fail_calloc ? NULL : calloc(n, size);
}
static void *t_realloc(void *p, size_t n) {
    return failing() ? NULL : realloc(p, n);
}

/* Each allocation of a first put failing in turn: CP_ENOMEM and an empty store, or stored. A
 * table that cannot grow keeps serving every entry from the buckets it has. */
static void out_of_memory(void **state) {
    (void)state;
    cp_allocators mine = {t_malloc, t_calloc, t_realloc, free}, old;
    assert_int_equal(cp_set_allocators(&mine, &old), 0);
    req a = make_req("GET", "a");
    int stored = 0;
    for (long k = 1; !stored; k++) {
        cp__cstore s;
        cp__cstore_init(&s, 10, 100000);
        fail_at = k;
        int rc = put_val(&s, &a, 3, 0, "a", 0, "v");
        stored = fail_at > 0; /* the k-th allocation was never made: nothing failed */
        fail_at = 0;
        if (stored) {
            assert_int_equal(rc, 0);
            assert_string_equal(get_val(&s, &a), "v");
        } else {
            assert_int_equal(rc, CP_ENOMEM);
            assert_int_equal(s.nentries, 0);
            assert_int_equal(s.bytes, 0);
            assert_null(get_val(&s, &a));
        }
        cp__cstore_free(&s);
        assert_int_le(k, 10);
    }

    cp__cstore s;
    cp__cstore_init(&s, 1000, SIZE_MAX);
    assert_int_equal(put_val(&s, &a, 3, 0, "a", 0, "v"), 0);
    size_t nbuckets = s.nbuckets;
    fail_calloc = 1; /* the tables are made; only growing callocs */
    req q[100];
    char key[16];
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        q[i] = make_req("GET", key);
        assert_int_equal(put_val(&s, &q[i], i, 0, key, 0, key), 0);
    }
    assert_int_equal(s.nbuckets, nbuckets);
    assert_int_equal(s.nentries, 101);
    for (int i = 0; i < 100; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        assert_string_equal(get_val(&s, &q[i]), key);
    }
    fail_calloc = 0;
    req b = make_req("GET", "b");
    assert_int_equal(put_val(&s, &b, 0, 0, "b", 0, "b"), 0);
    assert_int_gt(s.nbuckets, nbuckets);
    for (int i = 0; i < 100; i++)
        assert_non_null(get_val(&s, &q[i]));
    cp__cstore_free(&s);
    assert_int_equal(cp_set_allocators(&old, NULL), 0);
}

/* ---- a long random run against a model --------------------------------------------------------
 */

enum { NIDS = 3000, NVAR = 4, HUGE = 1 << 20 };

/* Request id's variant v: its value's length (variant 3 of every 50th id is too big for any
 * bound the run uses), slot, node, multi-key. */
static size_t val_len(int id, int v) {
    return id % 50 == 0 && v == 3 ? HUGE - 1 : 5 + (size_t)(id * 7 + v * 13) % 60;
}
static int id_slot(int id) {
    return id % 64;
}
static int id_node(int id) {
    return (id / 64) % 4;
}
static int id_multikey(int id) {
    return id % 29 == 0;
}

typedef struct world {
    req q[NIDS];
    char key[NIDS][12];
    size_t size[NIDS][NVAR];
    char *val;    /* HUGE bytes of 'x': a value is its prefix "id.v:" then x's */
    redisReply r; /* a string reply pointing into val */
    /* the model: an LRU list of ids through newer/older, -1 ending it */
    int present[NIDS], var[NIDS], newer[NIDS], older[NIDS];
    int mru, lru;
    size_t n, bytes;
    uint64_t evictions;
} world;

/* w->val holds id's variant v value, w->r points at it; returns the prefix length (to undo). */
static size_t set_val(world *w, int id, int v) {
    char pre[16];
    int n = snprintf(pre, sizeof(pre), "%d.%d:", id, v);
    memcpy(w->val, pre, (size_t)n);
    w->r = (redisReply){.type = CP_REPLY_STRING, .str = w->val, .len = val_len(id, v)};
    return (size_t)n;
}

static void unset_val(world *w, size_t prefix) {
    memset(w->val, 'x', prefix);
}

static void model_unlink(world *w, int id) {
    if (w->newer[id] >= 0)
        w->older[w->newer[id]] = w->older[id];
    else
        w->mru = w->older[id];
    if (w->older[id] >= 0)
        w->newer[w->older[id]] = w->newer[id];
    else
        w->lru = w->newer[id];
}

static void model_push(world *w, int id) {
    w->newer[id] = -1;
    w->older[id] = w->mru;
    if (w->mru >= 0)
        w->newer[w->mru] = id;
    else
        w->lru = id;
    w->mru = id;
}

static void model_drop(world *w, int id) {
    model_unlink(w, id);
    w->present[id] = 0;
    w->n--;
    w->bytes -= w->size[id][w->var[id]];
}

static void check_counts(const world *w, const cp__cstore *s) {
    assert_int_equal(s->nentries, w->n);
    assert_int_equal(s->bytes, w->bytes);
    assert_int_equal(s->evictions, w->evictions);
    assert_int_le(s->nentries, s->max_entries);
    assert_int_le(s->bytes, s->max_bytes);
}

static void check_get(world *w, cp__cstore *s, int id) {
    const redisReply *got = cp__cstore_get(s, w->q[id].buf, w->q[id].len, w->q[id].hash);
    if (!w->present[id]) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    size_t prefix = set_val(w, id, w->var[id]);
    assert_int_equal(got->type, CP_REPLY_STRING);
    assert_int_equal(got->len, w->r.len);
    assert_memory_equal(got->str, w->r.str, w->r.len);
    assert_int_equal(got->str[got->len], '\0');
    unset_val(w, prefix);
    model_unlink(w, id);
    model_push(w, id);
}

static void run_against_model(size_t max_entries, size_t max_bytes, int ops, uint32_t seed) {
    world *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    w->val = malloc(HUGE);
    assert_non_null(w->val);
    memset(w->val, 'x', HUGE - 1);
    w->val[HUGE - 1] = '\0';
    for (int id = 0; id < NIDS; id++) {
        snprintf(w->key[id], sizeof(w->key[id]), "k%d", id);
        w->q[id] = make_req("GET", w->key[id]);
        for (int v = 0; v < NVAR; v++) {
            if (val_len(id, v) == HUGE - 1) { /* at least its string: more than either bound */
                w->size[id][v] = HUGE;
                continue;
            }
            size_t prefix = set_val(w, id, v);
            w->size[id][v] = entry_size(&w->q[id], w->key[id], &w->r);
            unset_val(w, prefix);
        }
    }
    w->mru = w->lru = -1;
    cp__cstore s;
    cp__cstore_init(&s, max_entries, max_bytes);
    uint32_t x = seed;
    int refused = 0, evicted_by_bytes = 0;
    for (int op = 0; op < ops; op++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        uint32_t pick = x % 10000, id = (x >> 14) % NIDS;
        if (pick < 5500) {
            check_get(w, &s, (int)id);
        } else if (pick < 9950) {
            int v = (int)((x >> 8) % NVAR);
            size_t prefix = set_val(w, (int)id, v);
            int rc = cp__cstore_put(&s, w->q[id].buf, w->q[id].len, w->q[id].hash, id_slot((int)id),
                                    id_node((int)id), w->key[id], strlen(w->key[id]),
                                    id_multikey((int)id), &w->r);
            unset_val(w, prefix);
            if (w->size[id][v] > max_bytes) {
                assert_int_equal(rc, 1);
                refused++;
                if (w->present[id]) /* the older reply goes with the refusal */
                    model_drop(w, (int)id);
            } else {
                assert_int_equal(rc, 0);
                if (w->present[id])
                    model_drop(w, (int)id);
                w->present[id] = 1;
                w->var[id] = v;
                model_push(w, (int)id);
                w->n++;
                w->bytes += w->size[id][v];
                while (w->n > max_entries || w->bytes > max_bytes) {
                    evicted_by_bytes += w->n <= max_entries;
                    model_drop(w, w->lru);
                    w->evictions++;
                }
            }
        } else if (pick < 9990) {
            size_t n = 0;
            for (int i = 0; i < NIDS; i++) {
                if (w->present[i] && id_slot(i) == id_slot((int)id) &&
                    (i == (int)id || id_multikey(i))) {
                    model_drop(w, i);
                    n++;
                }
            }
            assert_int_equal(
                cp__cstore_drop_key(&s, id_slot((int)id), w->key[id], strlen(w->key[id])), n);
        } else if (pick < 9998) {
            size_t n = 0;
            for (int i = 0; i < NIDS; i++) {
                if (w->present[i] && id_slot(i) == id_slot((int)id)) {
                    model_drop(w, i);
                    n++;
                }
            }
            assert_int_equal(cp__cstore_drop_slot(&s, id_slot((int)id)), n);
        } else {
            size_t n = 0;
            for (int i = 0; i < NIDS; i++) {
                if (w->present[i] && id_node(i) == id_node((int)id)) {
                    model_drop(w, i);
                    n++;
                }
            }
            assert_int_equal(cp__cstore_drop_node(&s, id_node((int)id)), n);
        }
        check_counts(w, &s);
    }
    /* Every id as the model has it; the run did meet refusals and the bound it was built for. */
    for (int id = 0; id < NIDS; id++)
        check_get(w, &s, id);
    assert_int_gt(refused, 0);
    assert_int_gt(w->evictions, 0);
    if (max_entries >= NIDS)
        assert_int_equal(evicted_by_bytes, (int)w->evictions);
    else
        assert_int_lt(evicted_by_bytes, (int)w->evictions);
    assert_int_equal(cp__cstore_clear(&s), w->n);
    assert_int_equal(s.bytes, 0);
    cp__cstore_free(&s);
    free(w->val);
    free(w);
}

/* 100,000 random gets, puts and drops, in two runs: one bound by entries (500 of 3000 requests,
 * bytes to spare), one by bytes (60 kB: a few hundred entries). */
static void random_run_agrees_with_model(void **state) {
    (void)state;
    run_against_model(500, 500 * 400, 50000, 2463534242u);
    run_against_model(NIDS, 60000, 50000, 88675123u);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hash_spreads),
        cmocka_unit_test(entry_bound_evicts_oldest),
        cmocka_unit_test(byte_bound),
        cmocka_unit_test(replace_same_request),
        cmocka_unit_test(deep_reply_copied_flat),
        cmocka_unit_test(drops_take_their_entries),
        cmocka_unit_test(out_of_memory),
        cmocka_unit_test(random_run_agrees_with_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
