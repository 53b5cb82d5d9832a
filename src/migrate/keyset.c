/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The key set (keyset.h): linear probing over FNV-1a; a deleted slot is refilled by moving the
 * rest of its run back, so no tombstones are needed.
 */
#include "migrate/keyset.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static size_t hash(const char *key, size_t len) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * 1099511628211ULL;
    return (size_t)h;
}

/* The slot holding key, or the empty one where it would go. cap > 0. */
static size_t find(const cp__keyset *s, const char *key, size_t len) {
    size_t i = hash(key, len) & (s->cap - 1);
    while (s->key[i] != NULL && (s->len[i] != len || memcmp(s->key[i], key, len) != 0))
        i = (i + 1) & (s->cap - 1);
    return i;
}

static int grow(cp__keyset *s) {
    cp__keyset n = {.cap = s->cap ? s->cap * 2 : 64};
    n.key = calloc(n.cap, sizeof *n.key);
    n.len = calloc(n.cap, sizeof *n.len);
    if (n.key == NULL || n.len == NULL) {
        free(n.key);
        free(n.len);
        return -1;
    }
    for (size_t i = 0; i < s->cap; i++) {
        if (s->key[i] == NULL)
            continue;
        size_t j = find(&n, s->key[i], s->len[i]);
        n.key[j] = s->key[i];
        n.len[j] = s->len[i];
    }
    n.count = s->count;
    free(s->key);
    free(s->len);
    *s = n;
    return 0;
}

int cp__keyset_add(cp__keyset *s, const char *key, size_t len) {
    if ((s->count + 1) * 2 > s->cap && grow(s) != 0)
        return -1;
    size_t i = find(s, key, len);
    if (s->key[i] != NULL)
        return 0;
    char *k = malloc(len + 1);
    if (k == NULL)
        return -1;
    memcpy(k, key, len);
    k[len] = '\0';
    s->key[i] = k;
    s->len[i] = len;
    s->count++;
    return 0;
}

int cp__keyset_has(const cp__keyset *s, const char *key, size_t len) {
    return s->count > 0 && s->key[find(s, key, len)] != NULL;
}

void cp__keyset_del(cp__keyset *s, const char *key, size_t len) {
    if (s->count == 0)
        return;
    size_t i = find(s, key, len);
    if (s->key[i] == NULL)
        return;
    free(s->key[i]);
    s->key[i] = NULL;
    s->count--;
    /* Re-place the rest of the run, which may have probed past the slot just emptied. */
    for (size_t j = (i + 1) & (s->cap - 1); s->key[j] != NULL; j = (j + 1) & (s->cap - 1)) {
        char *k = s->key[j];
        size_t l = s->len[j];
        s->key[j] = NULL;
        size_t to = find(s, k, l);
        s->key[to] = k;
        s->len[to] = l;
    }
}

void cp__keyset_clear(cp__keyset *s) {
    for (size_t i = 0; i < s->cap; i++)
        free(s->key[i]);
    free(s->key);
    free(s->len);
    *s = (cp__keyset){0};
}

int cp__keyset_walk(const cp__keyset *s, size_t *at, const char **key, size_t *len) {
    for (; *at < s->cap; (*at)++) {
        if (s->key[*at] != NULL) {
            *key = s->key[*at];
            *len = s->len[*at];
            (*at)++;
            return 1;
        }
    }
    return 0;
}
