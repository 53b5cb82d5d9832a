/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The library's allocator: every allocation of src/lib goes through these (scripts/check-layers.py
 * fails on a bare malloc, calloc, realloc, free or strdup there), so that cp_set_allocators
 * reaches all of it, the replies a caller keeps included. The functions are the one mutable
 * global of the library, set before any client exists (clusterpipe.h, cp_set_allocators).
 */
#ifndef CLUSTERPIPE_ALLOC_H
#define CLUSTERPIPE_ALLOC_H

#include <stddef.h>

#include "clusterpipe/clusterpipe.h"

extern cp_allocators cp__allocators;

static inline void *cp__malloc(size_t n) {
    return cp__allocators.malloc_fn(n);
}

static inline void *cp__calloc(size_t n, size_t size) {
    return cp__allocators.calloc_fn(n, size);
}

static inline void *cp__realloc(void *p, size_t n) {
    return cp__allocators.realloc_fn(p, n);
}

static inline void cp__free(void *p) {
    cp__allocators.free_fn(p);
}

/* A copy of the string s (NULL for NULL), or NULL when out of memory. */
char *cp__strdup(const char *s);

#endif
