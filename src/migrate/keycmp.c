/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A key's comparison (keycmp.h): the steps META (TYPE, PEXPIRETIME on both sides), SIZE (the
 * type's length; a stream's XINFO too; another type's DUMP), then PIECES until the value is read.
 */
#include "migrate/keycmp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PIECE 1000               /* elements per command */
#define PIECE_BYTES (1u << 20)   /* string bytes per command */
#define ELEMENT_COST 64          /* bytes an element's reply is taken to hold, for the cost */
#define MAX_ARGS (2 + 2 * PIECE) /* HMGET key and a piece's fields; SMISMEMBER's members */

enum step { META, SIZE, PIECES, DONE };

struct cp__keycmp {
    char *key;
    size_t klen;
    int64_t tolerance_ms, now_ms;
    enum step step;
    cp__kc_type type;
    int ttl_differs;
    char ttl_detail[160];
    long long size, pos; /* elements (string: bytes) on the source, and read so far */
    char cursor[32];     /* SSCAN / HSCAN */
    int scan_done;
    char last_id[64];    /* XRANGE: the last entry read */
    redisReply *pending; /* the source's last SSCAN / HSCAN piece, to check on the target */
    size_t pending_at;   /* its elements checked so far */
    size_t asked;        /* its elements asked of the target in the step under way */
    int scan_asked;      /* the step under way reads the source's next piece */
    const char *argv[MAX_ARGS];
    size_t argvlen[MAX_ARGS];
    cp__kc_reason reason;
    char detail[320];
};

static const char *const reason_names[CP__KC_NREASONS] = {"same",  "missing", "type",
                                                          "value", "ttl",     "vanished"};
static const char *const type_names[CP__KC_NTYPES] = {"string", "list",   "set",  "zset",
                                                      "hash",   "stream", "other"};

const char *cp__kc_reason_name(cp__kc_reason r) {
    return r >= 0 && r < CP__KC_NREASONS ? reason_names[r] : "?";
}

const char *cp__kc_type_name(cp__kc_type t) {
    return t >= 0 && t < CP__KC_NTYPES ? type_names[t] : "?";
}

cp__keycmp *cp__kc_new(const char *key, size_t klen, int64_t tolerance_ms, int64_t now_ms) {
    cp__keycmp *k = calloc(1, sizeof *k);
    if (k == NULL || (k->key = malloc(klen ? klen : 1)) == NULL) {
        free(k);
        return NULL;
    }
    memcpy(k->key, key, klen);
    k->klen = klen;
    k->tolerance_ms = tolerance_ms;
    k->now_ms = now_ms;
    k->type = CP__KC_OTHER;
    strcpy(k->cursor, "0");
    return k;
}

void cp__kc_free(cp__keycmp *k) {
    if (k == NULL)
        return;
    freeReplyObject(k->pending);
    free(k->key);
    free(k);
}

/* Up to 40 bytes of s, printable, the rest as \xNN, "..." when cut. */
static const char *show(const char *s, size_t len, char *buf, size_t size) {
    size_t n = 0;
    for (size_t i = 0; i < len && n + 8 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (i == 40) {
            n += (size_t)snprintf(buf + n, size - n, "...");
            break;
        }
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
            buf[n++] = (char)c;
        else
            n += (size_t)snprintf(buf + n, size - n, "\\x%02x", c);
    }
    buf[n] = '\0';
    return buf;
}

static int decide(cp__keycmp *k, cp__kc_reason r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int decide(cp__keycmp *k, cp__kc_reason r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->detail, sizeof k->detail, fmt, ap);
    va_end(ap);
    k->reason = r;
    k->step = DONE;
    return 1;
}

/* The value is the same: the expiry decides. */
static int value_same(cp__keycmp *k) {
    if (k->ttl_differs)
        return decide(k, CP__KC_TTL, "%s", k->ttl_detail);
    return decide(k, CP__KC_SAME, "%s", "");
}

static int value_differs(cp__keycmp *k, const char *what) {
    return decide(k, CP__KC_VALUE, "%s (%s)%s", what, type_names[k->type],
                  k->ttl_differs ? "; the expiry differs too" : "");
}

/* An error reply (or one of a shape not expected) read for the value: a difference, named. */
static int bad_reply(cp__keycmp *k, const char *side, const redisReply *r) {
    char what[200];
    if (r != NULL && r->type == REDIS_REPLY_ERROR)
        snprintf(what, sizeof what, "the %s answered %.150s", side, r->str);
    else
        snprintf(what, sizeof what, "the %s answered an unexpected reply", side);
    return value_differs(k, what);
}

static int is_error(const redisReply *r) {
    return r == NULL || r->type == REDIS_REPLY_ERROR;
}

static int same_bytes(const redisReply *a, const redisReply *b) {
    return a->len == b->len && (a->len == 0 || memcmp(a->str, b->str, a->len) == 0);
}

/* Two replies equal all through (type, bytes, integers, elements). */
static int same_reply(const redisReply *a, const redisReply *b) {
    if (a->type != b->type)
        return 0;
    switch (a->type) {
    case REDIS_REPLY_INTEGER:
        return a->integer == b->integer;
    case REDIS_REPLY_ARRAY:
        if (a->elements != b->elements)
            return 0;
        for (size_t i = 0; i < a->elements; i++)
            if (!same_reply(a->element[i], b->element[i]))
                return 0;
        return 1;
    case REDIS_REPLY_NIL:
        return 1;
    default:
        return same_bytes(a, b);
    }
}

/* The value of field `name` in a flat name/value array (XINFO's), or NULL. */
static const redisReply *field(const redisReply *r, const char *name) {
    if (r->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (size_t i = 0; i + 1 < r->elements; i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING || r->element[i]->type == REDIS_REPLY_STATUS)
            if (strcmp(r->element[i]->str, name) == 0)
                return r->element[i + 1];
    return NULL;
}

static cp__kc_type type_of(const char *name) {
    for (int t = 0; t < CP__KC_OTHER; t++)
        if (strcmp(name, type_names[t]) == 0)
            return (cp__kc_type)t;
    return CP__KC_OTHER;
}

static int put(const cp__kc_side *s, cp__keycmp *k, int argc) {
    return s->append(s->arg, argc, k->argv, k->argvlen);
}

/* Sets argv[0] = cmd, argv[1] = the key, then the rest (NUL-terminated strings). */
static int cmd(cp__keycmp *k, const char *name, const char *a2, const char *a3, const char *a4,
               const char *a5) {
    const char *rest[] = {a2, a3, a4, a5};
    int n = 0;
    k->argv[n] = name;
    k->argvlen[n++] = strlen(name);
    k->argv[n] = k->key;
    k->argvlen[n++] = k->klen;
    for (int i = 0; i < 4 && rest[i] != NULL; i++) {
        k->argv[n] = rest[i];
        k->argvlen[n++] = strlen(rest[i]);
    }
    return n;
}

/* Appends the same command to both sides. */
static int both(cp__keycmp *k, const cp__kc_side *src, const cp__kc_side *dst, int argc) {
    return put(src, k, argc) != 0 || put(dst, k, argc) != 0 ? -1 : 0;
}

static int append_size(cp__keycmp *k, const cp__kc_side *src, const cp__kc_side *dst, int *ns,
                       int *nd) {
    static const char *const len_cmd[CP__KC_NTYPES] = {"STRLEN", "LLEN", "SCARD", "ZCARD",
                                                       "HLEN",   "XLEN", "DUMP"};
    *ns = *nd = 1;
    return both(k, src, dst, cmd(k, len_cmd[k->type], NULL, NULL, NULL, NULL));
}

static int append_stream_info(cp__keycmp *k, const cp__kc_side *src, const cp__kc_side *dst) {
    for (int g = 0; g < 2; g++) {
        k->argv[0] = "XINFO";
        k->argvlen[0] = 5;
        k->argv[1] = g ? "GROUPS" : "STREAM";
        k->argvlen[1] = strlen(k->argv[1]);
        k->argv[2] = k->key;
        k->argvlen[2] = k->klen;
        if (both(k, src, dst, 3) != 0)
            return -1;
    }
    return 0;
}

static int append_piece(cp__keycmp *k, const cp__kc_side *src, const cp__kc_side *dst, int *ns,
                        int *nd) {
    char from[80], to[32], count[16];
    snprintf(count, sizeof count, "%d", PIECE);
    switch (k->type) {
    case CP__KC_STRING:
        snprintf(from, sizeof from, "%lld", k->pos);
        snprintf(to, sizeof to, "%lld", k->pos + PIECE_BYTES - 1);
        *ns = *nd = 1;
        return both(k, src, dst, cmd(k, "GETRANGE", from, to, NULL, NULL));
    case CP__KC_LIST:
    case CP__KC_ZSET:
        snprintf(from, sizeof from, "%lld", k->pos);
        snprintf(to, sizeof to, "%lld", k->pos + PIECE - 1);
        *ns = *nd = 1;
        return both(k, src, dst,
                    k->type == CP__KC_LIST ? cmd(k, "LRANGE", from, to, NULL, NULL)
                                           : cmd(k, "ZRANGE", from, to, "WITHSCORES", NULL));
    case CP__KC_STREAM:
        if (k->pos == 0)
            snprintf(from, sizeof from, "-");
        else
            snprintf(from, sizeof from, "(%s", k->last_id);
        *ns = *nd = 1;
        return both(k, src, dst, cmd(k, "XRANGE", from, "+", "COUNT", count));
    case CP__KC_SET:
    case CP__KC_HASH: {
        int hash = k->type == CP__KC_HASH;
        *ns = *nd = 0;
        k->asked = 0;
        if (k->pending != NULL) { /* the last piece's members (fields), asked of the target, */
            const redisReply *m = k->pending->element[1]; /* PIECE at a time: SSCAN's COUNT is
                                                             a hint, a big intset comes whole */
            size_t per = hash ? 2 : 1, left = m->elements - k->pending_at;
            k->asked = left < PIECE * per ? left : PIECE * per;
            int n = cmd(k, hash ? "HMGET" : "SMISMEMBER", NULL, NULL, NULL, NULL);
            for (size_t i = k->pending_at; i < k->pending_at + k->asked; i += per) {
                k->argv[n] = m->element[i]->str;
                k->argvlen[n++] = m->element[i]->len;
            }
            if (put(dst, k, n) != 0)
                return -1;
            *nd = 1;
        }
        /* The next piece once this one is all asked (it replaces it). */
        k->scan_asked =
            !k->scan_done &&
            (k->pending == NULL || k->pending_at + k->asked >= k->pending->element[1]->elements);
        if (k->scan_asked) {
            if (put(src, k, cmd(k, hash ? "HSCAN" : "SSCAN", k->cursor, "COUNT", count, NULL)) != 0)
                return -1;
            *ns = 1;
        }
        return 0;
    }
    default:
        return -1;
    }
}

int cp__kc_append(cp__keycmp *k, const cp__kc_side *src, const cp__kc_side *dst, int *nsrc,
                  int *ndst) {
    *nsrc = *ndst = 0;
    switch (k->step) {
    case META:
        if (both(k, src, dst, cmd(k, "TYPE", NULL, NULL, NULL, NULL)) != 0 ||
            both(k, src, dst, cmd(k, "PEXPIRETIME", NULL, NULL, NULL, NULL)) != 0)
            return -1;
        *nsrc = *ndst = 2;
        return 0;
    case SIZE:
        if (k->type == CP__KC_STREAM) {
            if (both(k, src, dst, cmd(k, "XLEN", NULL, NULL, NULL, NULL)) != 0 ||
                append_stream_info(k, src, dst) != 0)
                return -1;
            *nsrc = *ndst = 3;
            return 0;
        }
        return append_size(k, src, dst, nsrc, ndst);
    case PIECES:
        return append_piece(k, src, dst, nsrc, ndst);
    default:
        return -1;
    }
}

/* A's expiry against b's: the reason why they differ into k->ttl_detail, or nothing. */
static void compare_expiry(cp__keycmp *k, long long src, long long dst) {
    if (src < 0 && dst < 0)
        return;
    if (src >= 0 && dst >= 0 && llabs(src - dst) <= k->tolerance_ms)
        return;
    k->ttl_differs = 1;
    char a[24] = "none", b[24] = "none"; /* "%lld ms" at most: 20 digits, " ms", NUL */
    if (src >= 0)
        snprintf(a, sizeof a, "%lld ms", src - k->now_ms);
    if (dst >= 0)
        snprintf(b, sizeof b, "%lld ms", dst - k->now_ms);
    snprintf(k->ttl_detail, sizeof k->ttl_detail,
             "expires in %s at the source, %s on the target (tolerance %lld ms)", a, b,
             (long long)k->tolerance_ms);
}

static int take_meta(cp__keycmp *k, redisReply *const *src, const redisReply *const *dst) {
    for (int i = 0; i < 2; i++) {
        if (is_error(src[i]))
            return bad_reply(k, "source", src[i]);
        if (is_error(dst[i]))
            return bad_reply(k, "target", dst[i]);
    }
    if (src[0]->type != REDIS_REPLY_STATUS || dst[0]->type != REDIS_REPLY_STATUS ||
        src[1]->type != REDIS_REPLY_INTEGER || dst[1]->type != REDIS_REPLY_INTEGER)
        return bad_reply(k, "source or the target", NULL);
    long long exp = src[1]->integer;
    if (strcmp(src[0]->str, "none") == 0)
        return decide(k, CP__KC_VANISHED, "gone from the source");
    k->type = type_of(src[0]->str);
    if (strcmp(dst[0]->str, "none") == 0) {
        if (exp >= 0 && exp - k->now_ms <= k->tolerance_ms)
            return decide(k, CP__KC_VANISHED, "expiring at the source, already gone on the target");
        return decide(k, CP__KC_MISSING, "not on the target");
    }
    if (strcmp(src[0]->str, dst[0]->str) != 0)
        return decide(k, CP__KC_TYPE, "%.20s at the source, %.20s on the target", src[0]->str,
                      dst[0]->str);
    compare_expiry(k, exp, dst[1]->integer);
    k->step = SIZE;
    return 0;
}

/* The consumer groups (XINFO GROUPS): the same names, consumer counts, pending counts and
 * last-delivered-ids, in order (a stream's groups are kept sorted by name). */
static int same_groups(const redisReply *a, const redisReply *b, char *why, size_t len) {
    if (a->type != REDIS_REPLY_ARRAY || b->type != REDIS_REPLY_ARRAY)
        return snprintf(why, len, "XINFO GROUPS unreadable"), 0;
    if (a->elements != b->elements)
        return snprintf(why, len, "%zu consumer groups at the source, %zu on the target",
                        a->elements, b->elements),
               0;
    static const char *const compared[] = {"name", "consumers", "pending", "last-delivered-id"};
    for (size_t g = 0; g < a->elements; g++)
        for (size_t f = 0; f < sizeof compared / sizeof compared[0]; f++) {
            const redisReply *x = field(a->element[g], compared[f]);
            const redisReply *y = field(b->element[g], compared[f]);
            if (x == NULL || y == NULL || !same_reply(x, y))
                return snprintf(why, len, "consumer group %zu: its %s differs", g, compared[f]), 0;
        }
    return 1;
}

static int take_size(cp__keycmp *k, redisReply *const *src, const redisReply *const *dst) {
    int n = k->type == CP__KC_STREAM ? 3 : 1;
    for (int i = 0; i < n; i++) {
        if (is_error(src[i]))
            return bad_reply(k, "source", src[i]);
        if (is_error(dst[i]))
            return bad_reply(k, "target", dst[i]);
    }
    if (k->type == CP__KC_OTHER) /* DUMP */
        return same_reply(src[0], dst[0]) ? value_same(k)
                                          : value_differs(k, "the DUMP payloads differ");
    if (src[0]->type != REDIS_REPLY_INTEGER || dst[0]->type != REDIS_REPLY_INTEGER)
        return bad_reply(k, "source or the target", NULL);
    char what[200];
    if (src[0]->integer != dst[0]->integer) {
        snprintf(what, sizeof what, "%lld %s at the source, %lld on the target", src[0]->integer,
                 k->type == CP__KC_STRING ? "bytes" : "elements", dst[0]->integer);
        return value_differs(k, what);
    }
    if (k->type == CP__KC_STREAM) {
        const redisReply *a = field(src[1], "last-generated-id");
        const redisReply *b = field(dst[1], "last-generated-id");
        if (a == NULL || b == NULL || !same_reply(a, b))
            return value_differs(k, "the last-generated-id differs");
        if (!same_groups(src[2], dst[2], what, sizeof what))
            return value_differs(k, what);
    }
    k->size = src[0]->integer;
    k->step = PIECES;
    if (k->size == 0)
        return value_same(k);
    return 0;
}

/* Two replies of n elements each (LRANGE, XRANGE): equal, or the first that is not named. */
static int take_ordered(cp__keycmp *k, const redisReply *a, const redisReply *b) {
    if (a->type != REDIS_REPLY_ARRAY || b->type != REDIS_REPLY_ARRAY)
        return bad_reply(k, "source or the target", NULL);
    int zset = k->type == CP__KC_ZSET, step = zset ? 2 : 1;
    char what[200];
    for (size_t i = 0; i < a->elements && i < b->elements; i += (size_t)step) {
        int same = same_reply(a->element[i], b->element[i]);
        if (same && zset && (i + 1 >= a->elements || i + 1 >= b->elements))
            same = 0;
        else if (same && zset) {
            const redisReply *x = a->element[i + 1], *y = b->element[i + 1];
            same = x->type == y->type && x->type == REDIS_REPLY_STRING &&
                   strtod(x->str, NULL) == strtod(y->str, NULL);
        }
        if (!same) {
            snprintf(what, sizeof what, "%s %lld differs",
                     k->type == CP__KC_STREAM ? "entry" : "element",
                     k->pos + (long long)(i / (size_t)step));
            return value_differs(k, what);
        }
    }
    if (a->elements != b->elements)
        return value_differs(k, "the target holds other elements");
    size_t got = a->elements / (size_t)step;
    if (got == 0) /* the source shrank since its length was read */
        return value_same(k);
    k->pos += (long long)got;
    if (k->type == CP__KC_STREAM) {
        const redisReply *last = a->element[a->elements - 1];
        if (last->type != REDIS_REPLY_ARRAY || last->elements < 1 ||
            last->element[0]->type != REDIS_REPLY_STRING)
            return bad_reply(k, "source", NULL);
        snprintf(k->last_id, sizeof k->last_id, "%s", last->element[0]->str);
        if (got < PIECE)
            return value_same(k);
        return 0;
    }
    return k->pos >= k->size ? value_same(k) : 0;
}

static int take_string(cp__keycmp *k, const redisReply *a, const redisReply *b) {
    if (a->type != REDIS_REPLY_STRING || b->type != REDIS_REPLY_STRING)
        return bad_reply(k, "source or the target", NULL);
    if (!same_bytes(a, b)) {
        char what[200];
        size_t i = 0;
        while (i < a->len && i < b->len && a->str[i] == b->str[i])
            i++;
        snprintf(what, sizeof what, "byte %lld differs", k->pos + (long long)i);
        return value_differs(k, what);
    }
    k->pos += (long long)a->len;
    return a->len == 0 || k->pos >= k->size ? value_same(k) : 0;
}

/* The target's answer for the elements of the pending piece asked: every member there
 * (SMISMEMBER's 1s), or every field with the source's value (HMGET). */
static int check_pending(cp__keycmp *k, const redisReply *d) {
    const redisReply *m = k->pending->element[1];
    int hash = k->type == CP__KC_HASH;
    size_t n = hash ? k->asked / 2 : k->asked;
    if (d->type != REDIS_REPLY_ARRAY || d->elements != n)
        return bad_reply(k, "target", d);
    char what[200], shown[200];
    for (size_t i = 0; i < n; i++) {
        const redisReply *name = m->element[k->pending_at + (hash ? 2 * i : i)];
        const redisReply *got = d->element[i];
        if (hash ? got->type != REDIS_REPLY_STRING ||
                       !same_bytes(got, m->element[k->pending_at + 2 * i + 1])
                 : got->type != REDIS_REPLY_INTEGER || got->integer != 1) {
            snprintf(what, sizeof what, "%s \"%s\" %s", hash ? "field" : "member",
                     show(name->str, name->len, shown, sizeof shown),
                     hash && got->type == REDIS_REPLY_STRING ? "has another value"
                                                             : "is not on the target");
            return value_differs(k, what);
        }
    }
    k->pending_at += k->asked;
    if (k->pending_at >= m->elements) {
        freeReplyObject(k->pending);
        k->pending = NULL;
        k->pending_at = 0;
    }
    return 0;
}

static int take_scan(cp__keycmp *k, redisReply **src, const redisReply *const *dst) {
    if (k->pending != NULL) {
        if (is_error(dst[0]))
            return bad_reply(k, "target", dst[0]);
        if (check_pending(k, dst[0]) != 0)
            return 1;
    }
    if (k->scan_asked) {
        redisReply *r = src[0];
        if (is_error(r))
            return bad_reply(k, "source", r);
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_ARRAY)
            return bad_reply(k, "source", NULL);
        const redisReply *m = r->element[1];
        int hash = k->type == CP__KC_HASH;
        if (hash && m->elements % 2 != 0)
            return bad_reply(k, "source", NULL);
        for (size_t i = 0; i < m->elements; i++) /* they become the target's arguments */
            if (m->element[i]->type != REDIS_REPLY_STRING)
                return bad_reply(k, "source", NULL);
        snprintf(k->cursor, sizeof k->cursor, "%s", r->element[0]->str);
        k->scan_done = strcmp(k->cursor, "0") == 0;
        if (m->elements > 0) {
            k->pending = r; /* kept: taken from the caller's array (see cp__kc_take) */
            k->pending_at = 0;
            src[0] = NULL;
        }
    }
    return k->scan_done && k->pending == NULL ? value_same(k) : 0;
}

int cp__kc_take(cp__keycmp *k, redisReply **src, const redisReply *const *dst) {
    switch (k->step) {
    case META:
        return take_meta(k, src, dst);
    case SIZE:
        return take_size(k, src, dst);
    case PIECES:
        break;
    default:
        return 1;
    }
    if (k->type == CP__KC_SET || k->type == CP__KC_HASH)
        return take_scan(k, src, dst);
    if (is_error(src[0]))
        return bad_reply(k, "source", src[0]);
    if (is_error(dst[0]))
        return bad_reply(k, "target", dst[0]);
    if (k->type == CP__KC_STRING)
        return take_string(k, src[0], dst[0]);
    return take_ordered(k, src[0], dst[0]);
}

size_t cp__kc_cost(const cp__keycmp *k) {
    if (k->step != PIECES)
        return 4 * ELEMENT_COST;
    long long left = k->size - k->pos;
    if (k->type == CP__KC_STRING)
        return (size_t)(left < PIECE_BYTES ? left : PIECE_BYTES);
    if (left > PIECE || left < 0)
        left = PIECE;
    return (size_t)left * ELEMENT_COST * (k->type == CP__KC_HASH ? 2 : 1);
}

cp__kc_reason cp__kc_result(const cp__keycmp *k, const char **detail) {
    if (detail != NULL)
        *detail = k->detail;
    return k->reason;
}

cp__kc_type cp__kc_type_of(const cp__keycmp *k) {
    return k->type;
}

const char *cp__kc_key(const cp__keycmp *k, size_t *klen) {
    *klen = k->klen;
    return k->key;
}
