/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Report I/O: the string buffer, atomic file writes and results.json loading declared in
 * report/io.h. Buffers belong to their caller; nothing here keeps state between calls, so any
 * thread may call it. Never prints.
 */
#include "report/io.h"

#include "clusterpipe/clusterpipe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    if (n < 0 || sbuf_reserve(b, (size_t)n) != 0)
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

/* Temporary name in the same directory, so rename() is atomic (same file system) and a
 * concurrent writer of the same path (another PID) never shares our temporary file. */
int cp__rpt_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen) {
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp)) {
        snprintf(err, errlen, "%s: path too long", path);
        return CP_EIO;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        return CP_EIO;
    }
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            snprintf(err, errlen, "cannot write %s: %s", tmp, w < 0 ? strerror(errno) : "short");
            close(fd);
            unlink(tmp);
            return CP_EIO;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        unlink(tmp);
        return CP_EIO;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        return CP_EIO;
    }
    return 0;
}

int cp__rpt_write_json(const char *path, const json_t *obj, char *err, size_t errlen) {
    char *text = json_dumps(obj, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (text == NULL) {
        snprintf(err, errlen, "out of memory serialising %s", path);
        return CP_ENOMEM;
    }
    size_t n = strlen(text);
    char *withnl = realloc(text, n + 2);
    if (withnl == NULL) {
        free(text);
        snprintf(err, errlen, "out of memory serialising %s", path);
        return CP_ENOMEM;
    }
    withnl[n] = '\n';
    withnl[n + 1] = '\0';
    int rc = cp__rpt_write_file(path, withnl, n + 1, err, errlen);
    free(withnl);
    return rc;
}

/* Loading checks only what the renderers rely on (schema, runs[], names); every number inside a
 * run is optional and rendered "n/a" when absent, so results from older or external runs still
 * render. */
int cp__rpt_load(const char *path, json_t **out, char *err, size_t errlen) {
    json_error_t je;
    *out = NULL;
    json_t *root = json_load_file(path, 0, &je);
    if (root == NULL) {
        if (je.line <= 0)
            snprintf(err, errlen, "cannot read %s: %s", path, je.text);
        else
            snprintf(err, errlen, "%s:%d:%d: not valid JSON: %s", path, je.line, je.column,
                     je.text);
        return CP_EIO;
    }
    const char *schema = json_string_value(json_object_get(root, "schema"));
    json_t *runs = json_object_get(root, "runs");
    if (!json_is_object(root) || schema == NULL || strcmp(schema, CP__COMPARE_SCHEMA) != 0) {
        snprintf(err, errlen, "%s: not a %s file (schema is %s)", path, CP__COMPARE_SCHEMA,
                 schema ? schema : "missing");
        json_decref(root);
        return CP_EINVAL;
    }
    if (!json_is_array(runs)) {
        snprintf(err, errlen, "%s: \"runs\" is missing or not an array", path);
        json_decref(root);
        return CP_EINVAL;
    }
    size_t i;
    json_t *run;
    json_array_foreach(runs, i, run) {
        if (!json_is_object(run) || !json_is_string(json_object_get(run, "name"))) {
            snprintf(err, errlen, "%s: runs[%zu] is not an object with a \"name\"", path, i);
            json_decref(root);
            return CP_EINVAL;
        }
    }
    *out = root;
    return 0;
}
