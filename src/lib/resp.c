/* SPDX-License-Identifier: BSD-3-Clause
 *
 * RESP glue over hiredis: command formatting into byte buffers, argument parsing of formatted
 * commands, cluster error classification, reply construction. Pure functions on caller-owned
 * memory; any thread.
 */
#include "lib/resp.h"

#include "clusterpipe/clusterpipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cp__buf_grow(cp__buf *b, size_t extra) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < extra)
        cap *= 2;
    char *d = realloc(b->data, cap);
    if (d == NULL)
        return CP_ENOMEM;
    b->data = d;
    b->cap = cap;
    return 0;
}

int cp__buf_append(cp__buf *b, const void *p, size_t n) {
    if (n == 0) /* memcpy to a still-NULL buffer is undefined even for 0 bytes */
        return 0;
    if (cp__buf_reserve(b, n) != 0)
        return CP_ENOMEM;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

void cp__buf_free(cp__buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* "<prefix><n>\r\n" for n >= 100 at p; returns the byte count. */
static size_t put_header_long(char *p, char prefix, size_t n) {
    char tmp[24];
    size_t k = 0;
    do {
        tmp[k++] = (char)('0' + n % 10);
        n /= 10;
    } while (n > 0);
    size_t len = 1;
    p[0] = prefix;
    while (k > 0)
        p[len++] = tmp[--k];
    p[len++] = '\r';
    p[len++] = '\n';
    return len;
}

/* Writes "<prefix><n>\r\n" at p and returns the byte count. Argument counts and most lengths
 * have one or two digits: those are written inline, without a digit loop. */
static inline size_t put_header(char *p, char prefix, size_t n) {
    p[0] = prefix;
    if (n < 10) {
        p[1] = (char)('0' + n);
        p[2] = '\r';
        p[3] = '\n';
        return 4;
    }
    if (n < 100) {
        p[1] = (char)('0' + n / 10);
        p[2] = (char)('0' + n % 10);
        p[3] = '\r';
        p[4] = '\n';
        return 5;
    }
    return put_header_long(p, prefix, n);
}

/* memcpy for the short arguments most commands carry (names, keys): up to 32 bytes as two
 * overlapping fixed-size copies, which compile to a few moves instead of a libc call. */
static inline void copy_arg(char *d, const char *s, size_t n) {
    if (n >= 16 && n <= 32) {
        memcpy(d, s, 16);
        memcpy(d + n - 16, s + n - 16, 16);
    } else if (n >= 8 && n < 16) {
        memcpy(d, s, 8);
        memcpy(d + n - 8, s + n - 8, 8);
    } else if (n >= 4 && n < 8) {
        memcpy(d, s, 4);
        memcpy(d + n - 4, s + n - 4, 4);
    } else if (n < 4) {
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    } else {
        memcpy(d, s, n);
    }
}

int cp__format_argv(cp__buf *b, int argc, const char *const *argv, const size_t *argvlen) {
    size_t need = 24;
    for (int i = 0; i < argc; i++)
        need += argvlen[i] + 26;
    if (cp__buf_reserve(b, need) != 0)
        return CP_ENOMEM;
    char *p = b->data + b->len;
    p += put_header(p, '*', (size_t)argc);
    for (int i = 0; i < argc; i++) {
        p += put_header(p, '$', argvlen[i]);
        copy_arg(p, argv[i], argvlen[i]);
        p += argvlen[i];
        *p++ = '\r';
        *p++ = '\n';
    }
    b->len = (size_t)(p - b->data);
    return 0;
}

int cp__format_va(cp__buf *b, const char *fmt, va_list ap) {
    char *cmd = NULL;
    int n = redisvFormatCommand(&cmd, fmt, ap);
    if (n == -1)
        return CP_EINVAL;
    if (n < 0 || cmd == NULL)
        return CP_ENOMEM;
    int rc = cp__buf_append(b, cmd, (size_t)n);
    redisFreeCommand(cmd);
    return rc;
}

/* Parses "<prefix><digits>\r\n" at *pp (bounded by end) into *out; advances *pp. */
static int get_header(const char **pp, const char *end, char prefix, size_t *out) {
    const char *p = *pp;
    if (p >= end || *p != prefix)
        return -1;
    p++;
    size_t v = 0;
    const char *start = p;
    while (p < end && *p >= '0' && *p <= '9') {
        if (v > (SIZE_MAX - 9) / 10)
            return -1;
        v = v * 10 + (size_t)(*p - '0');
        p++;
    }
    if (p == start || end - p < 2 || p[0] != '\r' || p[1] != '\n')
        return -1;
    *pp = p + 2;
    *out = v;
    return 0;
}

int cp__parse_command(const char *cmd, size_t len, const char **argv, size_t *argvlen, int max) {
    const char *p = cmd, *end = cmd + len;
    size_t argc;
    if (get_header(&p, end, '*', &argc) != 0 || argc == 0 || argc > (size_t)1 << 30)
        return -1;
    for (size_t i = 0; i < argc; i++) {
        size_t n;
        if (get_header(&p, end, '$', &n) != 0 || (size_t)(end - p) < n + 2 || p[n] != '\r' ||
            p[n + 1] != '\n')
            return -1;
        if ((int)i < max) {
            argv[i] = p;
            argvlen[i] = n;
        }
        p += n + 2;
    }
    return p == end ? (int)argc : -1;
}

/* Does error string s (length len) start with word w followed by a space or the end? */
static int starts_with_word(const char *s, size_t len, const char *w) {
    size_t n = strlen(w);
    return len >= n && memcmp(s, w, n) == 0 && (len == n || s[n] == ' ');
}

cp__errkind cp__classify(const redisReply *r, int *slot, char *host, size_t hostlen, int *port) {
    if (r == NULL || r->type != REDIS_REPLY_ERROR)
        return CP__ERR_NONE;
    const char *s = r->str;
    size_t len = (size_t)r->len;
    if (starts_with_word(s, len, "TRYAGAIN"))
        return CP__ERR_TRYAGAIN;
    if (starts_with_word(s, len, "CLUSTERDOWN"))
        return CP__ERR_CLUSTERDOWN;
    if (starts_with_word(s, len, "LOADING"))
        return CP__ERR_LOADING;
    cp__errkind kind;
    if (starts_with_word(s, len, "MOVED"))
        kind = CP__ERR_MOVED;
    else if (starts_with_word(s, len, "ASK"))
        kind = CP__ERR_ASK;
    else
        return CP__ERR_OTHER;
    /* "MOVED <slot> <host>:<port>" */
    const char *p = memchr(s, ' ', len);
    const char *end = s + len;
    if (p == NULL)
        return CP__ERR_OTHER;
    p++;
    long v = 0;
    const char *digits = p;
    while (p < end && *p >= '0' && *p <= '9' && v < CP_SLOTS)
        v = v * 10 + (*p++ - '0');
    if (p == digits || p >= end || *p != ' ' || v >= CP_SLOTS)
        return CP__ERR_OTHER;
    p++;
    if (cp__parse_addr(p, (size_t)(end - p), host, hostlen, port) != 0)
        return CP__ERR_OTHER;
    *slot = (int)v;
    return kind;
}

int cp__parse_addr(const char *s, size_t len, char *host, size_t hostlen, int *port) {
    const char *colon = NULL;
    for (size_t i = len; i > 0; i--)
        if (s[i - 1] == ':') {
            colon = s + i - 1;
            break;
        }
    if (colon == NULL)
        return -1;
    const char *h = s;
    size_t hlen = (size_t)(colon - s);
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    if (hlen >= hostlen)
        return -1;
    long p = 0;
    const char *q = colon + 1, *end = s + len;
    if (q == end)
        return -1;
    for (; q < end; q++) {
        if (*q < '0' || *q > '9' || (p = p * 10 + (*q - '0')) > 65535)
            return -1;
    }
    if (p == 0)
        return -1;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (int)p;
    return 0;
}
