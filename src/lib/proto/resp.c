/* SPDX-License-Identifier: BSD-3-Clause
 *
 * RESP glue over hiredis: command formatting into byte buffers, argument parsing of formatted
 * commands, cluster error classification, reply construction. Pure functions on caller-owned
 * memory; any thread.
 */
#include "lib/base/alloc.h"
#include "lib/proto/resp.h"

#include "clusterpipe/clusterpipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cp__buf_grow(cp__buf *b, size_t extra) {
    /* From 64, doubling: a pipeline's command bytes are kept for reuse, and many hold one
     * command (an open-loop program's waiting requests, one pipeline each: issue 45). */
    size_t cap = b->cap ? b->cap : 64;
    while (cap - b->len < extra)
        cap *= 2;
    char *d = cp__realloc(b->data, cap);
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
    cp__free(b->data);
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

/* Room for "$<20 digits>\r\n": an argument's bytes are written this far past its start, then
 * moved back once its length, so its header's, is known. */
#define HEADER_MAX 23

/* Appends n bytes to the argument being built. */
static int put_bytes(cp__buf *b, const char *s, size_t n) {
    if (cp__buf_reserve(b, n) != 0)
        return CP_ENOMEM;
    copy_arg(b->data + b->len, s, n);
    b->len += n;
    return 0;
}

/* One printf conversion other than %s, %b and %%: spec points at its '%'. Formats the value
 * (read from ap with the type the conversion names, as hiredis does) onto the argument being
 * built and returns the spec's length (at least 2), 0 for a conversion hiredis would refuse, or
 * CP_ENOMEM. */
static long put_conversion(cp__buf *b, const char *spec, va_list *ap) {
    const char *q = spec + 1;
    while (*q == '#' || *q == '0' || *q == '-' || *q == '+' || *q == ' ')
        q++;
    while (*q >= '0' && *q <= '9')
        q++;
    if (*q == '.')
        for (q++; *q >= '0' && *q <= '9';)
            q++;
    int longs = 0, shorts = 0;
    if (q[0] == 'l')
        longs = q[1] == 'l' ? 2 : 1;
    else if (q[0] == 'h')
        shorts = q[1] == 'h' ? 2 : 1;
    q += longs + shorts;
    int integer = *q == 'd' || *q == 'i' || *q == 'o' || *q == 'u' || *q == 'x' || *q == 'X';
    int real = longs + shorts == 0 && *q != '\0' && strchr("eEfFgGaA", *q) != NULL;
    size_t speclen = (size_t)(q + 1 - spec);
    char one[40];
    if ((!integer && !real) || speclen >= sizeof(one))
        return 0;
    long long i = 0;
    double d = 0;
    if (real)
        d = va_arg(*ap, double);
    else if (longs == 2)
        i = va_arg(*ap, long long);
    else if (longs == 1)
        i = va_arg(*ap, long);
    else /* char and short arrive promoted to int */
        i = va_arg(*ap, int);
    /* Plain %d, %u, %ld, %llu ... (keys and counters): written here, without snprintf. */
    if (shorts == 0 && spec + 1 + longs == q && (*q == 'd' || *q == 'i' || *q == 'u')) {
        unsigned long long v = (unsigned long long)i;
        if (*q == 'u' && longs == 0)
            v = (unsigned)i;
        else if (*q == 'u' && longs == 1)
            v = (unsigned long)i;
        int negative = *q != 'u' && i < 0;
        if (negative)
            v = 0 - v;
        char digits[24];
        size_t k = sizeof(digits);
        do {
            digits[--k] = (char)('0' + v % 10);
            v /= 10;
        } while (v > 0);
        if (negative)
            digits[--k] = '-';
        return put_bytes(b, digits + k, sizeof(digits) - k) != 0 ? CP_ENOMEM : (long)speclen;
    }
    memcpy(one, spec, speclen);
    one[speclen] = '\0';
    for (size_t room = 32;;) {
        if (cp__buf_reserve(b, room) != 0)
            return CP_ENOMEM;
        char *at = b->data + b->len;
        int n = real         ? snprintf(at, room, one, d)
                : longs == 2 ? snprintf(at, room, one, i)
                : longs == 1 ? snprintf(at, room, one, (long)i)
                             : snprintf(at, room, one, (int)i);
        if (n < 0)
            return 0;
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return (long)speclen;
        }
        room = (size_t)n + 1;
    }
}

/* Ends the argument that started at `at` (HEADER_MAX bytes of room before its bytes): its
 * header goes in front and the bytes move up to it. */
static size_t close_argument(cp__buf *b, size_t at) {
    size_t n = b->len - at - HEADER_MAX;
    char head[HEADER_MAX];
    size_t h = put_header(head, '$', n);
    memmove(b->data + at + h, b->data + at + HEADER_MAX, n);
    memcpy(b->data + at, head, h);
    b->len = at + h + n;
    memcpy(b->data + b->len, "\r\n", 2); /* the argument's reserve left room for it */
    b->len += 2;
    return n;
}

/* Bytes of "$<n>\r\n". */
static size_t header_len(size_t n) {
    size_t len = 4;
    for (; n >= 10; n /= 10)
        len++;
    return len;
}

/* Appends one argument whose bytes are known: header, bytes, CRLF. */
static int put_argument(cp__buf *b, const char *s, size_t n) {
    if (cp__buf_reserve(b, n + HEADER_MAX + 2) != 0)
        return CP_ENOMEM;
    char *p = b->data + b->len;
    p += put_header(p, '$', n);
    copy_arg(p, s, n);
    p += n;
    *p++ = '\r';
    *p++ = '\n';
    b->len = (size_t)(p - b->data);
    return 0;
}

/* Builds the argument at *cp piece by piece (literal bytes and conversions mixed, "k:%d:%s"),
 * up to the next space or the end; *cp moves past it. Its length goes to *len. */
static int put_mixed_argument(cp__buf *b, const char **cp, va_list *ap, size_t *len) {
    if (cp__buf_reserve(b, HEADER_MAX + 2) != 0)
        return CP_ENOMEM;
    size_t at = b->len;
    b->len += HEADER_MAX;
    const char *c = *cp;
    int rc = 0;
    while (*c != '\0' && *c != ' ' && rc == 0) {
        if (*c != '%' || c[1] == '\0') { /* literal bytes up to the next space or conversion */
            size_t n = strcspn(c + 1, " %") + 1;
            rc = put_bytes(b, c, n);
            c += n;
        } else if (c[1] == 's') {
            const char *s = va_arg(*ap, const char *);
            rc = put_bytes(b, s, strlen(s));
            c += 2;
        } else if (c[1] == 'b') {
            const char *s = va_arg(*ap, const char *);
            size_t n = va_arg(*ap, size_t);
            rc = put_bytes(b, s, n);
            c += 2;
        } else if (c[1] == '%') {
            rc = put_bytes(b, "%", 1);
            c += 2;
        } else {
            long n = put_conversion(b, c, ap);
            if (n > 0)
                c += n;
            else
                rc = n < 0 ? (int)n : CP_EINVAL;
        }
        if (rc == 0) /* the CRLF's room, which the bytes may have used */
            rc = cp__buf_reserve(b, 2);
    }
    *cp = c;
    if (rc == 0)
        *len = close_argument(b, at);
    return rc;
}

int cp__format_va(cp__buf *b, const char *fmt, va_list ap, const char **argv, size_t *argvlen,
                  int max) {
    va_list cur;
    va_copy(cur, ap);
    size_t start = b->len;
    int argc = 0, rc = 0;
    /* Room for the "*<argc>\r\n" that goes in front once the count is known. */
    if (cp__buf_reserve(b, HEADER_MAX) != 0) {
        va_end(cur);
        return CP_ENOMEM;
    }
    b->len += HEADER_MAX;
    for (const char *c = fmt; *c != '\0' && rc == 0;) {
        if (*c == ' ') { /* spaces end an argument; more of them start none */
            c++;
            continue;
        }
        /* An argument that is one %s, one %b or only literal bytes is written in one go;
         * anything else piece by piece. */
        const char *s = c;
        size_t n = 0;
        while (c[n] != '\0' && c[n] != ' ' && c[n] != '%')
            n++;
        int whole = c[n] != '%';
        if (c[0] == '%' && (c[1] == 's' || c[1] == 'b') && (c[2] == ' ' || c[2] == '\0')) {
            s = va_arg(cur, const char *);
            n = c[1] == 's' ? strlen(s) : va_arg(cur, size_t);
            c += 2;
            whole = 1;
        } else if (whole) {
            c += n;
        }
        rc = whole ? put_argument(b, s, n) : put_mixed_argument(b, &c, &cur, &n);
        if (rc == 0 && argc < max)
            argvlen[argc] = n;
        argc++;
    }
    va_end(cur);
    if (rc != 0) {
        b->len = start;
        return rc;
    }
    char head[HEADER_MAX];
    size_t h = put_header(head, '*', (size_t)argc);
    size_t body = b->len - start - HEADER_MAX;
    memmove(b->data + start + h, b->data + start + HEADER_MAX, body);
    memcpy(b->data + start, head, h);
    b->len = start + h + body;
    if (argc <= max) { /* where each argument's bytes ended up */
        const char *q = b->data + start + h;
        for (int i = 0; i < argc; i++) {
            q += header_len(argvlen[i]);
            argv[i] = q;
            q += argvlen[i] + 2;
        }
    }
    return argc;
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

int cp__is_noscript(const redisReply *r) {
    return r != NULL && r->type == REDIS_REPLY_ERROR &&
           starts_with_word(r->str, (size_t)r->len, "NOSCRIPT");
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
    if (starts_with_word(s, len, "LOADING") || starts_with_word(s, len, "MASTERDOWN"))
        return CP__ERR_LOADING; /* MASTERDOWN: a replica cut off from its master, told not to
                                   serve stale data; it answers again once it has one */
    /* "UNBLOCKED force unblock from blocking operation, instance state changed (master ->
     * replica?)": nothing was popped; not CLIENT UNBLOCK ... ERROR's, which is the caller's. */
    if (starts_with_word(s, len, "UNBLOCKED") && memmem(s, len, "state changed", 13) != NULL)
        return CP__ERR_UNBLOCKED;
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
