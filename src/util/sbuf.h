/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A growable, NUL-terminated string buffer: what the report renderers write Markdown and gnuplot
 * scripts into and the bench writes its CSV into. Appends never fail loudly: on OOM the buffer is
 * marked and cp__sbuf_take returns NULL, so a writer checks once at the end.
 *
 * Memory: a cp__sbuf owns its buffer until cp__sbuf_take hands it to the caller (free()) or
 * cp__sbuf_free releases it. Threads: no shared state; each buffer is used by one thread.
 */
#ifndef CLUSTERPIPE_UTIL_SBUF_H
#define CLUSTERPIPE_UTIL_SBUF_H

#include <stddef.h>

typedef struct cp__sbuf {
    char *buf;  /* NUL-terminated when len > 0 or after the first append */
    size_t len; /* bytes, excluding the NUL */
    size_t cap;
    int oom; /* an append failed: the content is truncated, cp__sbuf_take returns NULL */
} cp__sbuf;

#define CP__SBUF_INIT                                                                              \
    { NULL, 0, 0, 0 }

/* Appends formatted text. Never fails loudly: on OOM sets b->oom and drops the text. */
void cp__sbuf_printf(cp__sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cp__sbuf_puts(cp__sbuf *b, const char *s);

/* Hands the text to the caller (free() it) and empties b. Returns NULL if any append failed
 * (the partial text is freed), "" for an empty buffer. */
char *cp__sbuf_take(cp__sbuf *b);
void cp__sbuf_free(cp__sbuf *b);

#endif /* CLUSTERPIPE_UTIL_SBUF_H */
