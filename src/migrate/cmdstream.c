/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The replication stream's reader (cmdstream.h). The bytes fed are kept in one buffer; a command
 * being read is remembered as the offsets of its arguments in it, so a feed resumes where the
 * last one stopped. Consumed bytes are dropped at the next feed, never in cp__cmds_next, so the
 * command handed out stays where it is until then.
 */
#include "migrate/cmdstream.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "*<count>\r\n" and "$<len>\r\n": the longest number a master writes, with room for a sign. */
#define NUMBER_MAX_LEN 21

struct cp__cmdstream {
    unsigned char *buf;
    size_t len, cap;
    size_t start;  /* the first byte of the command being read (before it: consumed) */
    size_t scan;   /* where reading resumes */
    uint64_t base; /* the stream's offset at buf[0] */
    uint64_t handed;
    long long want; /* the command's argument count; -1: its "*" line is not read yet */
    long long got;
    long long bulk; /* the next argument's length; -1: its "$" line is not read yet */
    size_t *arg_off, *arg_len;
    const char **argv;
    size_t args_cap;
    int failed;
    char err[200];
};

static int fail(cp__cmdstream *s, uint64_t at, const char *fmt, ...) {
    int n = snprintf(s->err, sizeof s->err,
                     "replication stream at offset %llu: ", (unsigned long long)at);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err + n, sizeof s->err - (size_t)n, fmt, ap);
    va_end(ap);
    s->failed = 1;
    return CP__CMDS_ERROR;
}

cp__cmdstream *cp__cmds_new(uint64_t offset) {
    cp__cmdstream *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->base = s->handed = offset;
    s->want = s->bulk = -1;
    return s;
}

void cp__cmds_free(cp__cmdstream *s) {
    if (s == NULL)
        return;
    free(s->buf);
    free(s->arg_off);
    free(s->arg_len);
    free(s->argv);
    free(s);
}

/* Drops the consumed bytes once they are half the buffer or more (so a move carries no more
 * than was consumed since the last one, and a backlog is not moved at every read); the command
 * being read keeps its arguments' offsets, shifted. */
static void compact(cp__cmdstream *s) {
    size_t n = s->start;
    if (n == 0 || n < s->len / 2)
        return;
    memmove(s->buf, s->buf + n, s->len - n);
    s->len -= n;
    s->scan -= n;
    s->start = 0;
    s->base += n;
    for (long long i = 0; i < s->got; i++)
        s->arg_off[i] -= n;
}

int cp__cmds_feed(cp__cmdstream *s, const void *buf, size_t len) {
    if (s->failed)
        return -1;
    if (len == 0)
        return 0;
    compact(s);
    if (s->len + len > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + len)
            cap *= 2;
        unsigned char *b = realloc(s->buf, cap);
        if (b == NULL) {
            fail(s, s->base + s->len, "out of memory");
            return -1;
        }
        s->buf = b;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, buf, len);
    s->len += len;
    return 0;
}

/* A "<number>\r\n" at s->buf[at]: CP__CMDS_CMD with *v and *next (after the LF), CP__CMDS_MORE, or
 * an error naming `what`. */
static int read_number(cp__cmdstream *s, size_t at, const char *what, long long *v, size_t *next) {
    size_t end = at;
    while (end < s->len && s->buf[end] != '\r') {
        unsigned char c = s->buf[end];
        if (end - at >= NUMBER_MAX_LEN || !((c >= '0' && c <= '9') || (c == '-' && end == at)))
            return fail(s, s->base + at, "%s is not a number", what);
        end++;
    }
    if (end + 1 >= s->len)
        return CP__CMDS_MORE;
    if (s->buf[end + 1] != '\n')
        return fail(s, s->base + end, "%s does not end with CRLF", what);
    size_t i = at;
    int neg = i < end && s->buf[i] == '-';
    i += (size_t)neg;
    if (i == end)
        return fail(s, s->base + at, "%s is not a number", what);
    long long n = 0;
    for (; i < end; i++) {
        if (s->buf[i] < '0' || s->buf[i] > '9')
            return fail(s, s->base + at, "%s is not a number", what);
        n = n * 10 + (s->buf[i] - '0');
        if (n > (1LL << 50)) /* past every limit, and far from overflowing */
            return fail(s, s->base + at, "%s is too large", what);
    }
    *v = neg ? -n : n;
    *next = end + 2;
    return CP__CMDS_CMD;
}

static int grow_args(cp__cmdstream *s) {
    size_t cap = s->args_cap ? s->args_cap * 2 : 16;
    size_t *off = realloc(s->arg_off, cap * sizeof *off);
    if (off != NULL)
        s->arg_off = off;
    size_t *len = realloc(s->arg_len, cap * sizeof *len);
    if (len != NULL)
        s->arg_len = len;
    const char **argv = realloc(s->argv, cap * sizeof *argv);
    if (argv != NULL)
        s->argv = argv;
    if (off == NULL || len == NULL || argv == NULL)
        return fail(s, s->base + s->scan, "out of memory");
    s->args_cap = cap;
    return 0;
}

/* A keepalive newline at s->start, or an array's "*" line. */
static int read_header(cp__cmdstream *s, cp__cmd *out) {
    unsigned char c = s->buf[s->start];
    if (c == '\n' || c == '\r') {
        size_t n = c == '\n' ? 1 : 2;
        if (s->start + n > s->len)
            return CP__CMDS_MORE;
        if (c == '\r' && s->buf[s->start + 1] != '\n')
            return fail(s, s->base + s->start, "a CR not followed by LF");
        *out = (cp__cmd){.offset = s->base + s->start, .end = s->base + s->start + n};
        s->start += n;
        s->scan = s->start;
        s->handed = out->end;
        return CP__CMDS_CMD;
    }
    if (c != '*')
        return fail(s, s->base + s->start, "expected a command (a RESP array), found byte 0x%02x",
                    c);
    long long n;
    size_t next;
    int rc = read_number(s, s->start + 1, "an array's length", &n, &next);
    if (rc != CP__CMDS_CMD)
        return rc;
    if (n < 1 || n > CP__CMDS_MAX_ARGS)
        return fail(s, s->base + s->start, "an array of %lld elements", n);
    s->want = n;
    s->got = 0;
    s->bulk = -1;
    s->scan = next;
    return CP__CMDS_MORE; /* not an answer: the caller reads the arguments next */
}

int cp__cmds_next(cp__cmdstream *s, cp__cmd *out) {
    if (s->failed)
        return CP__CMDS_ERROR;
    if (s->want < 0) {
        if (s->start == s->len)
            return CP__CMDS_MORE;
        int rc = read_header(s, out);
        if (rc != CP__CMDS_MORE || s->want < 0)
            return rc;
    }
    while (s->got < s->want) {
        if (s->bulk < 0) {
            if (s->scan >= s->len)
                return CP__CMDS_MORE;
            if (s->buf[s->scan] != '$')
                return fail(s, s->base + s->scan,
                            "expected a bulk string (argument %lld of %lld), found byte 0x%02x",
                            s->got + 1, s->want, s->buf[s->scan]);
            long long n;
            size_t next;
            int rc = read_number(s, s->scan + 1, "a bulk string's length", &n, &next);
            if (rc != CP__CMDS_CMD)
                return rc;
            if (n < 0 || (unsigned long long)n > CP__CMDS_MAX_BULK)
                return fail(s, s->base + s->scan, "a bulk string of length %lld", n);
            s->bulk = n;
            s->scan = next;
        }
        size_t n = (size_t)s->bulk;
        if (s->len - s->scan < n + 2)
            return CP__CMDS_MORE;
        if (s->buf[s->scan + n] != '\r' || s->buf[s->scan + n + 1] != '\n')
            return fail(s, s->base + s->scan + n, "a bulk string does not end with CRLF");
        if ((size_t)s->got == s->args_cap && grow_args(s) != 0)
            return CP__CMDS_ERROR;
        s->arg_off[s->got] = s->scan;
        s->arg_len[s->got] = n;
        s->buf[s->scan + n] = '\0'; /* the CR, checked: each argument reads as a C string too */
        s->got++;
        s->scan += n + 2;
        s->bulk = -1;
    }
    for (long long i = 0; i < s->got; i++)
        s->argv[i] = (const char *)s->buf + s->arg_off[i];
    *out = (cp__cmd){.argc = (int)s->got,
                     .argv = s->argv,
                     .argvlen = s->arg_len,
                     .offset = s->base + s->start,
                     .end = s->base + s->scan};
    s->start = s->scan;
    s->want = -1;
    s->got = 0;
    s->handed = out->end;
    return CP__CMDS_CMD;
}

const char *cp__cmds_error(const cp__cmdstream *s) {
    return s->failed ? s->err : NULL;
}

uint64_t cp__cmds_offset(const cp__cmdstream *s) {
    return s->handed;
}

uint64_t cp__cmds_received(const cp__cmdstream *s) {
    return s->base + s->len;
}
