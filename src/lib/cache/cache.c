/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The client-side cache's rules (cache.h).
 */
#include "lib/cache/cache.h"

#include "lib/base/alloc.h"
#include "lib/proto/reply.h"

#include <string.h>
#include <strings.h>

cp__cache *cp__cache_new(const cp_cache_options *o) {
    cp__cache *k = cp__calloc(1, sizeof(*k));
    if (k == NULL)
        return NULL;
    cp__cstore_init(&k->store, o->max_entries > 0 ? o->max_entries : CP_DEFAULT_CACHE_ENTRIES,
                    o->max_bytes > 0 ? o->max_bytes : CP_DEFAULT_CACHE_BYTES);
    k->silence_ns =
        (uint64_t)(o->max_silence_ms > 0 ? o->max_silence_ms : CP_DEFAULT_CACHE_SILENCE_MS) *
        1000000ull;
    return k;
}

void cp__cache_free(cp__cache *k) {
    if (k == NULL)
        return;
    cp__cstore_free(&k->store);
    cp__free(k);
}

redisReply *cp__cache_lookup(cp__cache *k, const char *req, size_t len, int slot,
                             cp__reply_arena *a, uint32_t *gen) {
    const redisReply *r = cp__cstore_get(&k->store, req, len, cp__cstore_hash(req, len));
    redisReply *copy = r != NULL ? cp__arena_copy(a, r) : NULL;
    if (copy != NULL) {
        k->stats.hits++;
        return copy;
    }
    k->stats.misses++;
    *gen = k->gen[slot];
    return NULL;
}

/* The length in a RESP header line at p ("*3\r\n", "$5\r\n"), p past its CRLF; -1 when the
 * bytes are not one (the library formatted them: never, but a stored entry is never guessed). */
static long header(const char **p, const char *end, char type) {
    const char *s = *p;
    if (s >= end || *s != type)
        return -1;
    long n = 0;
    for (s++; s < end && *s >= '0' && *s <= '9'; s++)
        n = n * 10 + (*s - '0');
    if (end - s < 2 || s[0] != '\r' || s[1] != '\n')
        return -1;
    *p = s + 2;
    return n;
}

/* The request's first key (its second argument) and how many keys it names (MGET, EXISTS: every
 * argument after the name is a key; the others name one). 0, or -1 when it cannot be read. */
static int first_key(const char *req, size_t len, const char **key, size_t *keylen, long *nkeys) {
    const char *p = req, *end = req + len;
    long argc = header(&p, end, '*'), namelen = argc >= 2 ? header(&p, end, '$') : -1;
    if (namelen < 0 || end - p < namelen + 2)
        return -1;
    const char *name = p;
    p += namelen + 2;
    long klen = header(&p, end, '$');
    if (klen < 0 || end - p < klen)
        return -1;
    *key = p;
    *keylen = (size_t)klen;
    int each = (namelen == 4 && strncasecmp(name, "MGET", 4) == 0) ||
               (namelen == 6 && strncasecmp(name, "EXISTS", 6) == 0);
    *nkeys = each ? argc - 1 : 1;
    return 0;
}

/* 1 when reply r shows that every one of the request's nkeys keys exists: a value, a count above
 * zero (EXISTS: all of them), a list without nil. A reply about a key that does not exist is
 * never kept: a slot may move to another node without its old one ever invalidating a key it does
 * not have, and the new one does not know this client read it. A key that exists is deleted from
 * the old node when it moves, and that is an invalidation. Empty strings and lists are left out
 * too (GETRANGE, LRANGE past the end say nothing of the key). */
static int shows_keys(const redisReply *r, long nkeys) {
    switch (r->type) {
    case CP_REPLY_INTEGER:
    case CP_REPLY_BOOL:
        return nkeys > 1 ? r->integer == nkeys : r->integer > 0;
    case CP_REPLY_ARRAY:
    case CP_REPLY_MAP:
    case CP_REPLY_SET:
        for (size_t i = 0; i < r->elements; i++)
            if (r->element[i] == NULL || r->element[i]->type == CP_REPLY_NIL)
                return 0;
        return r->elements > 0;
    case CP_REPLY_NIL:
    case CP_REPLY_ERROR:
        return 0;
    default: /* a string, double, big number */
        return nkeys == 1 && r->len > 0;
    }
}

void cp__cache_took(cp__cache *k, const char *req, size_t len, int slot, uint32_t gen, int node,
                    int owner, const redisReply *r) {
    const char *key;
    size_t keylen;
    long nkeys;
    if (!owner || gen != k->gen[slot] || first_key(req, len, &key, &keylen, &nkeys) != 0 ||
        !shows_keys(r, nkeys)) {
        k->stats.not_stored++;
        return;
    }
    int rc = cp__cstore_put(&k->store, req, len, cp__cstore_hash(req, len), slot, node, key, keylen,
                            nkeys > 1, r);
    if (rc == 0)
        k->stats.stored++;
    else
        k->stats.not_stored++;
}

/* Every slot's generation moves on: a change whose slots are not known (a keyless write, a
 * flush). */
static void bump_all(cp__cache *k) {
    for (int s = 0; s < CP_SLOTS; s++)
        k->gen[s]++;
}

void cp__cache_wrote(cp__cache *k, int slot) {
    if (slot >= 0) {
        k->gen[slot]++;
        k->stats.dropped += cp__cstore_drop_slot(&k->store, slot);
    } else {
        bump_all(k);
        k->stats.dropped += cp__cstore_clear(&k->store);
    }
}

void cp__cache_push(cp__cache *k, int node, const redisReply *r) {
    const redisReply *kind = r->elements > 0 ? r->element[0] : NULL;
    if (r->elements < 2 || !cp__reply_is_text(kind) || kind->len != 10 ||
        memcmp(kind->str, "invalidate", 10) != 0)
        return;
    cp__cache_invalidated(k, node, r->element[1]);
}

void cp__cache_invalidated(cp__cache *k, int node, const redisReply *keys) {
    if (keys == NULL || keys->type != CP_REPLY_ARRAY) { /* a flush: null instead of keys */
        k->stats.invalidations++;
        bump_all(k);
        k->stats.dropped += cp__cstore_drop_node(&k->store, node);
        return;
    }
    for (size_t i = 0; i < keys->elements; i++) {
        const redisReply *key = keys->element[i];
        if (!cp__reply_is_text(key))
            continue;
        int slot = (int)cp_keyslot(key->str, key->len);
        k->stats.invalidations++;
        k->gen[slot]++;
        k->stats.dropped += cp__cstore_drop_key(&k->store, slot, key->str, key->len);
    }
}

void cp__cache_slot_moved(cp__cache *k, int slot) {
    k->gen[slot]++;
    k->stats.dropped += cp__cstore_drop_slot(&k->store, slot);
}

void cp__cache_node_closed(cp__cache *k, int node) {
    size_t n = cp__cstore_drop_node(&k->store, node);
    k->stats.dropped += n;
    k->stats.node_drops += n > 0;
}
