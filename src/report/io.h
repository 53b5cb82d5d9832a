/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Report I/O (private to src/report/): a growable string buffer the renderers write Markdown and
 * gnuplot scripts into, atomic file writes (DIR/name.tmp.PID, fsync, rename, so a reader or a
 * crash never sees half a file), and loading a "clusterpipe.compare/1" results.json with its
 * shape checked.
 *
 * Memory: a cp__sbuf owns its buffer until cp__sbuf_take hands it to the caller (free()) or
 * cp__sbuf_free releases it; cp__rpt_load returns a new jansson reference (json_decref). Threads:
 * no shared state; each buffer is used by one thread. Never prints; errors come back as a
 * negative CP_E* code with a message in err.
 */
#ifndef CLUSTERPIPE_REPORT_IO_H
#define CLUSTERPIPE_REPORT_IO_H

#include <stddef.h>

#include <jansson.h>

#define CP__COMPARE_SCHEMA "clusterpipe.compare/1"

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

/* Writes len bytes to path atomically: path.tmp.PID in the same directory, fsync, rename. On
 * failure the temporary file is removed and path is untouched. Blocks on the file system.
 * Returns 0 or CP_EIO with err set. */
int cp__rpt_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen);

/* json_dumps (2-space indent, insertion order, trailing newline) + cp__rpt_write_file. Returns
 * 0, CP_ENOMEM or CP_EIO. */
int cp__rpt_write_json(const char *path, const json_t *obj, char *err, size_t errlen);

/* Reads path, checks it is a "clusterpipe.compare/1" object whose "runs" is an array of
 * objects, each with a string "name". On success *out is a new reference. Returns 0, CP_EIO
 * (unreadable, not JSON; err says where) or CP_EINVAL (wrong schema or shape). */
int cp__rpt_load(const char *path, json_t **out, char *err, size_t errlen);

#endif /* CLUSTERPIPE_REPORT_IO_H */
