/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The allocator functions (alloc.h) and the public calls that set them and free what the library
 * hands out.
 */
#include "lib/base/alloc.h"

#include <stdlib.h>
#include <string.h>

cp_allocators cp__allocators = {malloc, calloc, realloc, free};

int cp_set_allocators(const cp_allocators *a, cp_allocators *old) {
    if (a != NULL && (a->malloc_fn == NULL || a->calloc_fn == NULL || a->realloc_fn == NULL ||
                      a->free_fn == NULL))
        return CP_EINVAL; /* a mix of two allocators would free one's memory with the other */
    if (old != NULL)
        *old = cp__allocators;
    cp__allocators = a != NULL ? *a : (cp_allocators){malloc, calloc, realloc, free};
    return 0;
}

char *cp__strdup(const char *s) {
    if (s == NULL)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = cp__malloc(n);
    if (d != NULL)
        memcpy(d, s, n);
    return d;
}

void cp_reply_free(redisReply *r) {
    if (r == NULL)
        return;
    for (size_t i = 0; r->element != NULL && i < r->elements; i++)
        cp_reply_free(r->element[i]);
    cp__free(r->element);
    cp__free(r->str);
    cp__free(r);
}
