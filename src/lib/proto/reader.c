/* SPDX-License-Identifier: BSD-3-Clause
 *
 * RESP2 and RESP3 reply reader (reader.h).
 */
#include "lib/base/alloc.h"
#include "lib/proto/reader.h"
#include "lib/proto/reply.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clusterpipe/clusterpipe.h"

/* Free bytes offered to each read at least, and a buffer's first size: one page. The buffer
 * doubles when a read fills it (cp__conn_fill reads again before parsing), so a connection
 * that reads a few replies at a time holds 4 KiB and a busy one grows in a few reads to what
 * its bursts need. A first buffer bigger than its reads (64 KiB, written a page or two deep)
 * left pages the process never touched; freed when its connection went (a failover moves
 * every client's connections) and handed out again by malloc, they were touched then, and the
 * process's RSS crept up for as long as such pages were left in its heap (issue 45). */
#define MIN_SPACE (4 * 1024)
#define KEEP_CAP (1024 * 1024) /* a buffer grown past this by a big reply is dropped once empty */
#define MAX_ELEMENTS ((size_t)1 << 30) /* an array header above this is garbage, not a reply */
#define FIRST_SLOTS 256                /* element slots an array starts with */

void cp__reader_reset(cp__reader *r) {
    r->pos = r->len = 0;
    r->depth = 0;
    r->errstr[0] = '\0';
}

void cp__reader_free(cp__reader *r) {
    cp__free(r->buf);
    memset(r, 0, sizeof(*r));
}

size_t cp__reader_space(cp__reader *r, char **space) {
    if (r->pos == r->len) {
        r->pos = r->len = 0;
        if (r->cap > KEEP_CAP) {
            cp__free(r->buf);
            r->buf = NULL;
            r->cap = 0;
        }
    }
    if (r->cap - r->len < MIN_SPACE && r->pos > 0) { /* only the unread part of a reply moves */
        memmove(r->buf, r->buf + r->pos, r->len - r->pos);
        r->len -= r->pos;
        r->pos = 0;
    }
    if (r->cap - r->len < MIN_SPACE) {
        size_t ncap = r->cap ? r->cap * 2 : MIN_SPACE;
        while (ncap - r->len < MIN_SPACE)
            ncap *= 2;
        char *nb = cp__realloc(r->buf, ncap);
        if (nb == NULL)
            return 0;
        r->buf = nb;
        r->cap = ncap;
    }
    *space = r->buf + r->len;
    return r->cap - r->len;
}

void cp__reader_commit(cp__reader *r, size_t n) {
    r->len += n;
}

int cp__reader_feed(cp__reader *r, const char *p, size_t n) {
    while (n > 0) {
        char *space;
        size_t room = cp__reader_space(r, &space);
        if (room == 0)
            return CP_ENOMEM;
        size_t k = n < room ? n : room;
        memcpy(space, p, k);
        cp__reader_commit(r, k);
        p += k;
        n -= k;
    }
    return 0;
}

__attribute__((format(printf, 2, 3))) static int proto_err(cp__reader *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->errstr, sizeof(r->errstr), fmt, ap);
    va_end(ap);
    return CP_EPROTO;
}

/* The "\r\n" ending the line that starts at p: a pointer to its '\r', or NULL when the line is
 * not complete yet. A lone '\r' inside the line is part of it. */
static const char *line_end(const char *p, const char *end) {
    for (;;) {
        /* Headers ("$64", ":1") are a few bytes: a plain loop beats memchr's setup there. */
        const char *cr = NULL, *near = end - p > 16 ? p + 16 : end;
        for (const char *q = p; q < near && cr == NULL; q++)
            if (*q == '\r')
                cr = q;
        if (cr == NULL && (near == end || (cr = memchr(near, '\r', (size_t)(end - near))) == NULL))
            return NULL;
        if (cr + 1 >= end)
            return NULL;
        if (cr[1] == '\n')
            return cr;
        p = cr + 1;
    }
}

/* A decimal in [p, e): optional '-', then digits only, within long long. 0, or -1. Up to 18
 * digits cannot overflow, so the usual lengths ("$64") take a loop without checks; the bound is
 * checked (without a division per digit) only for longer ones. */
static int parse_ll(const char *p, const char *e, long long *out) {
    int neg = p < e && *p == '-';
    p += neg;
    if (p == e)
        return -1;
    unsigned long long v = 0, limit = neg ? (unsigned long long)LLONG_MAX + 1 : LLONG_MAX;
    int checked = e - p > 18;
    for (; p < e; p++) {
        unsigned d = (unsigned)(unsigned char)*p - '0';
        if (d > 9)
            return -1;
        if (checked && v > (limit - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = neg ? (v == limit ? LLONG_MIN : -(long long)v) : (long long)v;
    return 0;
}

/* Puts obj in the next slot of the innermost array, doubling its slots when full (the old ones
 * stay in the arena until reset: at most as much again). 0 or CP_ENOMEM. */
static int attach(cp__reader *r, cp__reply_arena *a, redisReply *obj) {
    cp__reader_level *top = &r->stack[r->depth - 1];
    if (top->next == top->cap) {
        size_t ncap = top->cap * 2 < top->r->elements ? top->cap * 2 : top->r->elements;
        redisReply **slots = cp__arena_alloc(a, ncap * sizeof(*slots));
        if (slots == NULL)
            return CP_ENOMEM;
        memcpy(slots, top->r->element, top->cap * sizeof(*slots));
        top->r->element = slots;
        top->cap = ncap;
    }
    top->r->element[top->next++] = obj;
    return 0;
}

/* The header of a bulk string of up to 9 digits ("$64\r\n"), the reply GET gets: its length
 * (*n) and the header's bytes, read in one pass. 0 when it is anything else (NIL, a longer
 * length, bad bytes, not all in yet): the general path decides then. */
static size_t bulk_header(const char *p, const char *end, size_t *n) {
    if (end - p >= 5 && p[3] == '\r' && p[4] == '\n') { /* two digits, as a GET of tens of bytes */
        unsigned d1 = (unsigned)(unsigned char)p[1] - '0', d2 = (unsigned)(unsigned char)p[2] - '0';
        if (d1 <= 9 && d2 <= 9) {
            *n = d1 * 10 + d2;
            return 5;
        }
    }
    const char *q = p + 1, *stop = end - p > 10 ? p + 10 : end;
    size_t v = 0;
    for (; q < stop && (unsigned)(unsigned char)*q - '0' <= 9; q++)
        v = v * 10 + (size_t)(*q - '0');
    if (q == p + 1 || end - q < 2 || q[0] != '\r' || q[1] != '\n')
        return 0;
    *n = v;
    return (size_t)(q + 2 - p);
}

/* Aggregates: filled by the objects that follow (the stack). */
#define AGGREGATES                                                                                 \
    (1u << CP_REPLY_ARRAY | 1u << CP_REPLY_MAP | 1u << CP_REPLY_SET | 1u << CP__REPLY_ATTR |       \
     1u << CP_REPLY_PUSH)

static int is_aggregate(int type) {
    return ((1u << type) & AGGREGATES) != 0;
}

/* RESP3's double: "inf", "-inf", "nan", or a decimal with an optional exponent. strtod takes
 * more (hex, "infinity", spaces), so the form is checked first. 1 when s[0..n) is one. */
static int is_double(const char *s, size_t n) {
    if ((n == 3 && (memcmp(s, "inf", 3) == 0 || memcmp(s, "nan", 3) == 0)) ||
        (n == 4 && memcmp(s, "-inf", 4) == 0))
        return 1;
    size_t i = 0, digits = 0;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        i++;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
        digits++;
    if (i < n && s[i] == '.')
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            digits++;
    if (digits == 0)
        return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        size_t exp = 0;
        if (++i < n && (s[i] == '-' || s[i] == '+'))
            i++;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            exp++;
        if (exp == 0)
            return 0;
    }
    return i == n;
}

/* RESP3's big number: an optional '-', then decimal digits. */
static int is_bignum(const char *s, size_t n) {
    size_t i = n > 0 && s[0] == '-';
    if (i == n)
        return 0;
    for (; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* A blob ($ string, ! error, = verbatim) whose header line ends at eol: *obj once all its bytes
 * are in (1), 0 before, or an error. *used grows by the data and its CRLF. */
static int parse_blob(cp__reader *r, cp__reply_arena *a, const char *p, const char *eol,
                      const char *end, redisReply **obj, size_t *used) {
    long long n = 0;
    if (parse_ll(p + 1, eol, &n) != 0 || n < -1 || n > (long long)(SIZE_MAX / 4))
        return proto_err(r, eol - p == 2 && p[1] == '?' ? "streamed strings are not supported"
                                                        : "bad bulk string length");
    if (n == -1) {
        if (*p != '$')
            return proto_err(r, "a null %s", *p == '!' ? "blob error" : "verbatim string");
        *obj = cp__arena_reply(a, CP_REPLY_NIL);
        return *obj != NULL ? 1 : CP_ENOMEM;
    }
    if ((size_t)(end - p) < *used + (size_t)n + 2)
        return 0; /* taken whole once every byte is in */
    if (eol[2 + n] != '\r' || eol[3 + n] != '\n')
        return proto_err(r, "bulk string not terminated by CRLF");
    const char *data = eol + 2;
    *used += (size_t)n + 2;
    if (*p != '=') {
        *obj = cp__arena_string(a, *p == '$' ? CP_REPLY_STRING : CP_REPLY_ERROR, data, (size_t)n);
        return *obj != NULL ? 1 : CP_ENOMEM;
    }
    if (n < 4 || data[3] != ':')
        return proto_err(r, "verbatim string without its format (three letters and a colon)");
    if ((*obj = cp__arena_string(a, CP_REPLY_VERB, data + 4, (size_t)n - 4)) == NULL)
        return CP_ENOMEM;
    (*obj)->integer = cp__verbatim_pack(data);
    return 1;
}

/* An aggregate's header: *obj with its announced element count (pairs count twice). */
static int parse_aggregate(cp__reader *r, cp__reply_arena *a, const char *p, const char *eol,
                           redisReply **obj) {
    long long n = 0;
    int type = *p == '*'   ? CP_REPLY_ARRAY
               : *p == '%' ? CP_REPLY_MAP
               : *p == '~' ? CP_REPLY_SET
               : *p == '|' ? CP__REPLY_ATTR
                           : CP_REPLY_PUSH;
    int pairs = type == CP_REPLY_MAP || type == CP__REPLY_ATTR;
    if (parse_ll(p + 1, eol, &n) != 0 || n < -1 || n > (long long)(MAX_ELEMENTS >> pairs))
        return proto_err(r, eol - p == 2 && p[1] == '?' ? "streamed aggregates are not supported"
                                                        : "bad aggregate length");
    if (n == -1) {
        if (type != CP_REPLY_ARRAY)
            return proto_err(r, "a null aggregate of type '%c'", *p);
        *obj = cp__arena_reply(a, CP_REPLY_NIL);
        return *obj != NULL ? 1 : CP_ENOMEM;
    }
    size_t elements = (size_t)n << pairs;
    if (elements > 0 && r->depth == CP__READER_DEPTH)
        return proto_err(r, "aggregates nested deeper than %d", CP__READER_DEPTH);
    *obj = cp__arena_array(a, elements < FIRST_SLOTS ? elements : FIRST_SLOTS);
    if (*obj == NULL)
        return CP_ENOMEM;
    (*obj)->type = type;
    (*obj)->elements = elements; /* announced; attach() grows the slots */
    return 1;
}

/* The object whose header starts at p (any type): 1 with *obj and *used (its bytes, header and
 * blob data; an aggregate's elements follow), 0 when more bytes are needed, or an error. */
static int parse_object(cp__reader *r, cp__reply_arena *a, const char *p, const char *end,
                        redisReply **obj, size_t *used) {
    const char *eol = line_end(p + 1, end);
    if (eol == NULL)
        return 0;
    *used = (size_t)(eol + 2 - p); /* the header line */
    const char *s = p + 1;
    size_t n = (size_t)(eol - s);
    long long v = 0;
    switch (*p) {
    case '+':
    case '-':
        *obj = cp__arena_string(a, *p == '+' ? CP_REPLY_STATUS : CP_REPLY_ERROR, s, n);
        break;
    case ':':
        if (parse_ll(s, eol, &v) != 0)
            return proto_err(r, "bad integer \"%.*s\"", (int)(n < 24 ? n : 24), s);
        *obj = cp__arena_integer(a, v);
        break;
    case '$':
    case '!':
    case '=':
        return parse_blob(r, a, p, eol, end, obj, used);
    case '*':
    case '%':
    case '~':
    case '|':
    case '>':
        return parse_aggregate(r, a, p, eol, obj);
    case '_':
        if (n != 0)
            return proto_err(r, "bad null");
        *obj = cp__arena_reply(a, CP_REPLY_NIL);
        break;
    case '#':
        if (n != 1 || (*s != 't' && *s != 'f'))
            return proto_err(r, "bad boolean");
        if ((*obj = cp__arena_reply(a, CP_REPLY_BOOL)) != NULL)
            (*obj)->integer = *s == 't';
        break;
    case ',':
        if (!is_double(s, n))
            return proto_err(r, "bad double \"%.*s\"", (int)(n < 24 ? n : 24), s);
        *obj = cp__arena_string(a, CP_REPLY_DOUBLE, s, n);
        break;
    case '(':
        if (!is_bignum(s, n))
            return proto_err(r, "bad big number");
        *obj = cp__arena_string(a, CP_REPLY_BIGNUM, s, n);
        break;
    default:
        return proto_err(r, "got byte 0x%02x where a reply type was expected", (uint8_t)*p);
    }
    return *obj != NULL ? 1 : CP_ENOMEM;
}

int cp__reader_next(cp__reader *r, cp__reply_arena *a, redisReply **out) {
    for (;;) {
        if (r->pos == r->len) /* nothing (yet): also before the first byte, when buf is NULL */
            return 0;
        const char *p = r->buf + r->pos, *end = r->buf + r->len;
        redisReply *obj = NULL;
        size_t used, n, hdr;
        if (*p == '$' && (hdr = bulk_header(p, end, &n)) != 0) { /* the common case, inline */
            if ((size_t)(end - p) < hdr + n + 2)
                return 0; /* taken whole once every byte is in */
            if (p[hdr + n] != '\r' || p[hdr + n + 1] != '\n')
                return proto_err(r, "bulk string not terminated by CRLF");
            obj = cp__arena_string(a, CP_REPLY_STRING, p + hdr, n);
            used = hdr + n + 2;
        } else {
            int rc = parse_object(r, a, p, end, &obj, &used);
            if (rc <= 0)
                return rc;
        }
        if (obj == NULL)
            return CP_ENOMEM;
        r->pos += used;
        if (obj->elements > 0 && is_aggregate(obj->type)) { /* filled by what follows */
            size_t slots = obj->elements < FIRST_SLOTS ? obj->elements : FIRST_SLOTS;
            r->stack[r->depth++] = (cp__reader_level){.r = obj, .next = 0, .cap = slots};
            continue;
        }
        /* A finished object: into its aggregate; aggregates it completes go into theirs. An
         * attribute goes nowhere: dropped, the object it describes comes next. */
        for (;;) {
            if (obj->type == CP__REPLY_ATTR)
                break;
            if (r->depth == 0) {
                *out = obj;
                return 1;
            }
            if (attach(r, a, obj) != 0)
                return CP_ENOMEM;
            redisReply *parent = r->stack[r->depth - 1].r;
            if (r->stack[r->depth - 1].next < parent->elements)
                break;
            obj = parent;
            r->depth--;
        }
    }
}
