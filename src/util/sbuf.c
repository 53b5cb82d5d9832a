/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The growable string buffer of sbuf.h. Buffers belong to their caller; no state between calls.
 */
#include "util/sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Grows the buffer geometrically so appending a long report is linear overall. */
static int sbuf_reserve(cp__sbuf *b, size_t extra) {
    if (b->oom)
        return -1;
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *nb = realloc(b->buf, cap);
    if (nb == NULL) {
        b->oom = 1;
        return -1;
    }
    b->buf = nb;
    b->cap = cap;
    return 0;
}

void cp__sbuf_printf(cp__sbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = 1;
        return;
    }
    if (sbuf_reserve(b, (size_t)n) != 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->buf + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void cp__sbuf_puts(cp__sbuf *b, const char *s) {
    size_t n = strlen(s);
    if (sbuf_reserve(b, n) != 0)
        return;
    memcpy(b->buf + b->len, s, n + 1);
    b->len += n;
}

char *cp__sbuf_take(cp__sbuf *b) {
    char *out = NULL;
    if (!b->oom) {
        if (b->buf == NULL)
            out = calloc(1, 1);
        else
            out = b->buf, b->buf = NULL;
    }
    cp__sbuf_free(b);
    return out;
}

void cp__sbuf_free(cp__sbuf *b) {
    free(b->buf);
    b->buf = NULL;
    b->len = b->cap = 0;
    b->oom = 0;
}
