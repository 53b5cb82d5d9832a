/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Command templates (see template.h): the redis-cli splitting, the placeholders, the check a
 * command's reply gets, the weighted schedule of a set, and the expansion of one request.
 *
 * A cp__cmdset and its schedule are allocated by cp__cmdset_new and freed by cp__cmdset_free;
 * everything else writes into caller memory. No global state; any thread.
 */
#include "bench/template.h"

#include "clusterpipe/clusterpipe.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err != NULL && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return CP_EINVAL;
}

/* ---- splitting, as redis-cli splits a line (sdssplitargs) ----------------------------------- */

static int hexval(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int is_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f';
}

/* The arguments of s into t->lit, their offsets and lengths into off / len. Returns the count, or
 * CP_EINVAL (unbalanced quotes, too many arguments: err set). */
static int split(const char *s, cp__template *t, uint16_t *off, uint16_t *len, char *err,
                 size_t errlen) {
    const char *p = s;
    size_t o = 0;
    int argc = 0;
    for (;;) {
        while (*p != '\0' && is_space(*p))
            p++;
        if (*p == '\0')
            return argc;
        if (argc == CP__TEMPLATE_ARGS_MAX)
            return fail(err, errlen, "more than %d arguments", CP__TEMPLATE_ARGS_MAX);
        size_t start = o;
        int inq = 0, insq = 0, done = 0;
        while (!done) {
            if (inq) {
                if (p[0] == '\\' && p[1] == 'x' && hexval(p[2]) >= 0 && hexval(p[3]) >= 0) {
                    t->lit[o++] = (char)(hexval(p[2]) * 16 + hexval(p[3]));
                    p += 3;
                } else if (p[0] == '\\' && p[1] != '\0') {
                    p++;
                    char c = *p;
                    t->lit[o++] = c == 'n'   ? '\n'
                                  : c == 'r' ? '\r'
                                  : c == 't' ? '\t'
                                  : c == 'b' ? '\b'
                                  : c == 'a' ? '\a'
                                             : c;
                } else if (*p == '"') {
                    if (p[1] != '\0' && !is_space(p[1]))
                        return fail(err, errlen,
                                    "unbalanced quotes (a closing \" must be followed by a "
                                    "space or the end)");
                    done = 1;
                } else if (*p == '\0') {
                    return fail(err, errlen, "unbalanced quotes (a \" is not closed)");
                } else {
                    t->lit[o++] = *p;
                }
            } else if (insq) {
                if (p[0] == '\\' && p[1] == '\'') {
                    p++;
                    t->lit[o++] = '\'';
                } else if (*p == '\'') {
                    if (p[1] != '\0' && !is_space(p[1]))
                        return fail(err, errlen,
                                    "unbalanced quotes (a closing ' must be followed by a space "
                                    "or the end)");
                    done = 1;
                } else if (*p == '\0') {
                    return fail(err, errlen, "unbalanced quotes (a ' is not closed)");
                } else {
                    t->lit[o++] = *p;
                }
            } else if (*p == '\0' || is_space(*p)) {
                done = 1;
            } else if (*p == '"') {
                inq = 1;
            } else if (*p == '\'') {
                insq = 1;
            } else {
                t->lit[o++] = *p;
            }
            if (*p != '\0')
                p++;
        }
        off[argc] = (uint16_t)start;
        len[argc] = (uint16_t)(o - start);
        argc++;
    }
}

/* ---- placeholders -----------------------------------------------------------------------------
 */

static const struct {
    const char *name;
    cp__ph ph;
} placeholders[] = {
    {"key", CP__PH_KEY},
    {"data", CP__PH_DATA},
    {"tag", CP__PH_TAG},
    {"otherkey", CP__PH_OTHERKEY},
};

static int is_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* When a[i..] starts "__NAME__" (NAME: letters and digits, single underscores between them),
 * NAME's length; else 0. */
static size_t placeholder_at(const char *a, size_t len, size_t i) {
    if (i + 1 >= len || a[i] != '_' || a[i + 1] != '_')
        return 0;
    size_t j = i + 2, k = j;
    while (k < len) {
        if (is_alnum(a[k]))
            k++;
        else if (a[k] == '_' && k > j && k + 1 < len && is_alnum(a[k + 1]))
            k++;
        else
            break;
    }
    if (k == j || k + 1 >= len || a[k] != '_' || a[k + 1] != '_')
        return 0;
    return k - j;
}

static int add_piece(cp__template *t, cp__ph ph, size_t off, size_t len, char *err, size_t errlen) {
    if (t->npieces == CP__TEMPLATE_PIECES_MAX)
        return fail(err, errlen, "more than %d placeholders and literal pieces",
                    CP__TEMPLATE_PIECES_MAX);
    cp__tmpl_piece *pc = &t->piece[t->npieces++];
    pc->ph = (uint8_t)ph;
    pc->other = 0;
    pc->off = (uint16_t)off;
    pc->len = (uint16_t)len;
    switch (ph) {
    case CP__PH_KEY:
        t->nkey++;
        break;
    case CP__PH_DATA:
        t->ndata++;
        break;
    case CP__PH_TAG:
        t->ntag++;
        break;
    case CP__PH_OTHERKEY:
        pc->other = (uint8_t)t->nother++;
        break;
    default:
        break;
    }
    return 0;
}

/* Argument k's pieces (its bytes lit[off, off + len)). */
static int scan_arg(cp__template *t, int k, size_t off, size_t len, char *err, size_t errlen) {
    const char *a = t->lit + off;
    cp__tmpl_arg *arg = &t->arg[k];
    arg->first = (uint16_t)t->npieces;
    size_t lit = 0;
    for (size_t i = 0; i < len;) {
        size_t n = placeholder_at(a, len, i);
        if (n == 0) {
            i++;
            continue;
        }
        cp__ph ph = CP__PH_LIT;
        for (size_t p = 0; p < sizeof(placeholders) / sizeof(placeholders[0]); p++)
            if (strlen(placeholders[p].name) == n &&
                memcmp(a + i + 2, placeholders[p].name, n) == 0)
                ph = placeholders[p].ph;
        if (ph == CP__PH_LIT)
            return fail(err, errlen,
                        "unknown placeholder '__%.*s__' (known: __key__, __data__, __tag__, "
                        "__otherkey__)",
                        (int)n, a + i + 2);
        if (k == 0)
            return fail(err, errlen, "the command name cannot be a placeholder");
        if (i > lit && add_piece(t, CP__PH_LIT, off + lit, i - lit, err, errlen) != 0)
            return CP_EINVAL;
        if (add_piece(t, ph, 0, 0, err, errlen) != 0)
            return CP_EINVAL;
        i += n + 4;
        lit = i;
    }
    if ((len > lit || t->npieces == arg->first) &&
        add_piece(t, CP__PH_LIT, off + lit, len - lit, err, errlen) != 0)
        return CP_EINVAL;
    arg->n = (uint16_t)(t->npieces - arg->first);
    if (arg->n == 1) { /* a whole argument: pointed to, not copied, when expanded */
        const cp__tmpl_piece *pc = &t->piece[arg->first];
        arg->ph = pc->ph;
        arg->other = pc->other;
        arg->off = pc->off;
        arg->len = pc->len;
    } else {
        arg->ph = CP__PH_MIXED;
    }
    return 0;
}

/* ---- checks ---------------------------------------------------------------------------------- */

/* The pieces of argument k (a whole one is its own single piece). */
static const cp__tmpl_piece *pieces_of(const cp__template *t, int k, int *n) {
    *n = t->arg[k].n;
    return &t->piece[t->arg[k].first];
}

/* Argument k names a key made from __key__ alone: __key__ or __tag__ in it, no other placeholder.
 */
static bool derived_from_key(const cp__template *t, int k) {
    int n, any = 0;
    const cp__tmpl_piece *pc = pieces_of(t, k, &n);
    for (int i = 0; i < n; i++) {
        if (pc[i].ph == CP__PH_DATA || pc[i].ph == CP__PH_OTHERKEY)
            return false;
        any |= pc[i].ph == CP__PH_KEY || pc[i].ph == CP__PH_TAG;
    }
    return any;
}

/* Argument k is in __key__'s slot whatever the key layout: __key__, __tag__, or __tag__ first. */
static bool in_key_slot(const cp__template *t, int k) {
    int n;
    const cp__tmpl_piece *pc = pieces_of(t, k, &n);
    if (!derived_from_key(t, k))
        return false;
    return (n == 1 && pc[0].ph == CP__PH_KEY) || pc[0].ph == CP__PH_TAG;
}

static bool arg_is(const cp__template *t, int k, const char *word) {
    const cp__tmpl_arg *a = &t->arg[k];
    return a->ph == CP__PH_LIT && a->len == strlen(word) &&
           strncasecmp(t->lit + a->off, word, a->len) == 0;
}

/* A literal positive decimal (an increment). */
static bool positive_literal(const cp__template *t, int k) {
    const cp__tmpl_arg *a = &t->arg[k];
    if (a->ph != CP__PH_LIT || a->len == 0 || a->len > 18)
        return false;
    unsigned long long v = 0;
    for (size_t i = 0; i < a->len; i++) {
        char c = t->lit[a->off + i];
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + (unsigned)(c - '0');
    }
    return v > 0;
}

static bool name_in(const char *name, const char *const *list) {
    for (; *list != NULL; list++)
        if (strcmp(name, *list) == 0)
            return true;
    return false;
}

static void set_check(cp__template *t) {
    static const char *const one[] = {"GET",    "GETEX", "GETDEL",    "GETSET", "HGET",
                                      "LINDEX", "LMOVE", "RPOPLPUSH", NULL};
    static const char *const pops[] = {"LPOP", "RPOP", "SPOP", "SRANDMEMBER", NULL};
    static const char *const many[] = {"LRANGE", "SMEMBERS", "HVALS", "HMGET", NULL};
    static const char *const zsets[] = {"ZRANGE",    "ZRANGEBYSCORE",    "ZRANGEBYLEX",
                                        "ZREVRANGE", "ZREVRANGEBYSCORE", "ZREVRANGEBYLEX",
                                        NULL};
    t->check = CP__CHECK_NONE;
    t->first = 0;
    t->stride = 1;
    if (t->argc < 2 || !derived_from_key(t, 1))
        return;
    const char *n = t->name;
    if (name_in(n, one) || (name_in(n, pops) && t->argc == 2)) {
        t->check = CP__CHECK_VALUE;
    } else if (name_in(n, many) || (name_in(n, pops) && t->argc == 3)) {
        t->check = CP__CHECK_VALUES;
    } else if (strcmp(n, "HGETALL") == 0) {
        t->check = CP__CHECK_VALUES; /* field, value, field, value, ... */
        t->first = 1;
        t->stride = 2;
    } else if (name_in(n, zsets)) {
        t->check = CP__CHECK_VALUES;
        for (int k = 2; k < t->argc; k++)
            if (arg_is(t, k, "WITHSCORES"))
                t->stride = 2; /* member, score, member, score, ... */
    } else if ((strcmp(n, "INCR") == 0 && t->argc == 2) ||
               (strcmp(n, "INCRBY") == 0 && t->argc == 3 && positive_literal(t, 2)) ||
               (strcmp(n, "HINCRBY") == 0 && t->argc == 4 && positive_literal(t, 3))) {
        t->check = CP__CHECK_COUNTER;
    }
    t->read = t->check == CP__CHECK_VALUE || t->check == CP__CHECK_VALUES;
}

const char *cp__tmpl_check_str(cp__tmpl_check c) {
    switch (c) {
    case CP__CHECK_VALUE:
        return "value";
    case CP__CHECK_VALUES:
        return "values";
    case CP__CHECK_COUNTER:
        return "counter";
    case CP__CHECK_NONE:
    default:
        return "none";
    }
}

int cp__template_parse(const char *text, cp__template *t, char *err, size_t errlen) {
    memset(t, 0, sizeof(*t));
    size_t tl = strlen(text);
    if (tl > CP__TEMPLATE_LEN_MAX)
        return fail(err, errlen, "longer than %d bytes", CP__TEMPLATE_LEN_MAX);
    memcpy(t->text, text, tl + 1);
    uint16_t off[CP__TEMPLATE_ARGS_MAX], len[CP__TEMPLATE_ARGS_MAX];
    int argc = split(text, t, off, len, err, errlen);
    if (argc < 0)
        return CP_EINVAL;
    if (argc == 0)
        return fail(err, errlen, "empty (a command and its arguments are needed)");
    t->argc = argc;
    if (len[0] == 0 || len[0] > CP__COMMAND_NAME_MAX ||
        memchr(t->lit + off[0], '\0', len[0]) != NULL)
        return fail(err, errlen, "'%.*s' is not a command name", (int)len[0], t->lit + off[0]);
    for (size_t i = 0; i < len[0]; i++)
        t->name[i] = (char)toupper((unsigned char)t->lit[off[0] + i]);
    for (int k = 0; k < argc; k++)
        if (scan_arg(t, k, off[k], len[k], err, errlen) != 0)
            return CP_EINVAL;
    t->by_slot = argc >= 2 && t->nother == 0 && in_key_slot(t, 1);
    set_check(t);
    return 0;
}

/* ---- expansion ------------------------------------------------------------------------------- */

size_t cp__key_tag(const char *key, size_t keylen, char *out) {
    const char *open = memchr(key, '{', keylen);
    if (open != NULL) {
        const char *close = memchr(open + 1, '}', keylen - (size_t)(open + 1 - key));
        if (close != NULL && close > open + 1) { /* a tag of its own: every suffix keeps it */
            memcpy(out, key, keylen);
            return keylen;
        }
    }
    out[0] = '{';
    memcpy(out + 1, key, keylen);
    out[keylen + 1] = '}';
    return keylen + 2;
}

size_t cp__template_scratch(const cp__template *t, size_t keymax, size_t valmax) {
    size_t n = 0;
    for (int k = 0; k < t->argc; k++) {
        if (t->arg[k].ph != CP__PH_MIXED)
            continue;
        for (int i = 0; i < t->arg[k].n; i++) {
            const cp__tmpl_piece *pc = &t->piece[t->arg[k].first + i];
            n += pc->ph == CP__PH_LIT    ? pc->len
                 : pc->ph == CP__PH_DATA ? valmax
                 : pc->ph == CP__PH_TAG  ? keymax + 2
                                         : keymax;
        }
    }
    return n;
}

/* The bytes of one placeholder or literal piece. */
static const char *piece_bytes(const cp__template *t, uint8_t ph, uint8_t other, uint16_t off,
                               uint16_t len, const cp__tmpl_subst *sub, size_t *n) {
    switch (ph) {
    case CP__PH_KEY:
        *n = sub->keylen;
        return sub->key;
    case CP__PH_DATA:
        *n = sub->datalen;
        return sub->data;
    case CP__PH_TAG:
        *n = sub->taglen;
        return sub->tag;
    case CP__PH_OTHERKEY:
        *n = sub->otherlen[other];
        return sub->other[other];
    default:
        *n = len;
        return t->lit + off;
    }
}

int cp__template_expand(const cp__template *t, const cp__tmpl_subst *sub, char *scratch,
                        const char **argv, size_t *argvlen) {
    for (int k = 0; k < t->argc; k++) {
        const cp__tmpl_arg *a = &t->arg[k];
        if (a->ph != CP__PH_MIXED) {
            argv[k] = piece_bytes(t, a->ph, a->other, a->off, a->len, sub, &argvlen[k]);
            continue;
        }
        char *start = scratch;
        for (int i = 0; i < a->n; i++) {
            const cp__tmpl_piece *pc = &t->piece[a->first + i];
            size_t n;
            const char *b = piece_bytes(t, pc->ph, pc->other, pc->off, pc->len, sub, &n);
            memcpy(scratch, b, n);
            scratch += n;
        }
        argv[k] = start;
        argvlen[k] = (size_t)(scratch - start);
    }
    return t->argc;
}

size_t cp__template_arg(const cp__template *t, int k, const cp__tmpl_subst *sub, char *out,
                        size_t cap) {
    const cp__tmpl_arg *a = &t->arg[k];
    const cp__tmpl_piece whole = {a->ph, a->other, a->off, a->len};
    const cp__tmpl_piece *pc = a->ph == CP__PH_MIXED ? &t->piece[a->first] : &whole;
    int npc = a->ph == CP__PH_MIXED ? a->n : 1;
    size_t o = 0;
    for (int i = 0; i < npc; i++) {
        size_t n;
        const char *b = piece_bytes(t, pc[i].ph, pc[i].other, pc[i].off, pc[i].len, sub, &n);
        if (n > cap - o)
            n = cap - o;
        memcpy(out + o, b, n);
        o += n;
    }
    return o;
}

/* ---- sets ------------------------------------------------------------------------------------ */

static int parse_weights(const char *s, int n, unsigned *w, char *err, size_t errlen) {
    const char *p = s;
    int k = 0;
    for (;;) {
        if (*p < '0' || *p > '9') {
            k = 0; /* empty, or a comma not followed by a weight */
            break;
        }
        unsigned long v = 0;
        while (*p >= '0' && *p <= '9' && v <= CP__COMMAND_WEIGHT_MAX)
            v = v * 10 + (unsigned long)(*p++ - '0');
        if (v < 1 || v > CP__COMMAND_WEIGHT_MAX)
            return fail(err, errlen, "'%s': every weight must be in [1, %d]", s,
                        CP__COMMAND_WEIGHT_MAX);
        if (k == n)
            return fail(err, errlen, "'%s' has more weights than the %d --command given", s, n);
        w[k++] = (unsigned)v;
        if (*p != ',')
            break;
        p++;
    }
    if (*p != '\0' || k == 0)
        return fail(err, errlen,
                    "'%s' is not a list of weights W,W,... (positive integers, one per "
                    "--command, e.g. 3,1)",
                    s);
    if (k != n)
        return fail(err, errlen, "'%s' has %d weight%s for %d --command", s, k, k == 1 ? "" : "s",
                    n);
    return 0;
}

static unsigned gcd(unsigned a, unsigned b) {
    while (b != 0) {
        unsigned r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* The schedule (template.h): at step m the template with the largest (m + 1) w_k - c_k W, the
 * one furthest behind its share, goes next (ties: the first). */
static int make_schedule(cp__cmdset *s) {
    unsigned g = 0;
    for (int k = 0; k < s->n; k++)
        g = gcd(g, s->weight[k]);
    int64_t w[CP__COMMANDS_MAX], c[CP__COMMANDS_MAX] = {0}, total = 0;
    for (int k = 0; k < s->n; k++) {
        w[k] = s->weight[k] / g;
        total += w[k];
    }
    s->period = (size_t)total;
    s->schedule = malloc(s->period);
    if (s->schedule == NULL)
        return CP_ENOMEM;
    for (int64_t m = 0; m < total; m++) {
        int best = 0;
        int64_t most = INT64_MIN;
        for (int k = 0; k < s->n; k++) {
            int64_t d = (m + 1) * w[k] - c[k] * total;
            if (d > most) {
                most = d;
                best = k;
            }
        }
        c[best]++;
        s->schedule[m] = (uint8_t)best;
    }
    return 0;
}

int cp__cmdset_new(const char *const *texts, int n, const char *ratio, cp__cmdset **out, char *err,
                   size_t errlen) {
    *out = NULL;
    if (n < 1 || n > CP__COMMANDS_MAX)
        return fail(err, errlen, "between 1 and %d --command are needed", CP__COMMANDS_MAX);
    cp__cmdset *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        fail(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    s->n = n;
    for (int k = 0; k < n; k++) {
        char why[256];
        if (cp__template_parse(texts[k], &s->t[k], why, sizeof(why)) != 0) {
            if (n > 1)
                fail(err, errlen, "'%s' (the %d. --command): %s", texts[k], k + 1, why);
            else
                fail(err, errlen, "'%s': %s", texts[k], why);
            free(s);
            return CP_EINVAL;
        }
        s->weight[k] = 1;
        s->any_other |= s->t[k].nother > 0;
        s->any_counter |= s->t[k].check == CP__CHECK_COUNTER;
    }
    if (ratio != NULL && parse_weights(ratio, n, s->weight, err, errlen) != 0) {
        free(s);
        return CP_EINVAL;
    }
    size_t o = 0;
    for (int k = 0; k < n; k++)
        o += (size_t)snprintf(s->ratio + o, sizeof(s->ratio) - o, "%s%u", k ? "," : "",
                              s->weight[k]);
    if (make_schedule(s) != 0) {
        free(s);
        fail(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    *out = s;
    return 0;
}

void cp__cmdset_free(cp__cmdset *s) {
    if (s == NULL)
        return;
    free(s->schedule);
    free(s);
}

int cp__cmdset_flags(const cp__cmdset *s, char *buf, size_t cap) {
    size_t o = 0;
    int all_one = 1;
    if (cap > 0)
        buf[0] = '\0';
    for (int k = 0; k < s->n && o + 1 < cap; k++) {
        o += (size_t)snprintf(buf + o, cap - o, " --command '");
        for (const char *p = s->t[k].text; *p != '\0' && o + 5 < cap; p++) {
            if (*p == '\'') { /* close, an escaped quote, open again */
                memcpy(buf + o, "'\\''", 4);
                o += 4;
            } else {
                buf[o++] = *p;
            }
        }
        o += (size_t)snprintf(buf + o, o < cap ? cap - o : 0, "'");
        all_one &= s->weight[k] == 1;
    }
    if (o < cap && !all_one)
        o += (size_t)snprintf(buf + o, cap - o, " --command-ratio %s", s->ratio);
    if (o >= cap && cap > 0)
        buf[cap - 1] = '\0';
    return (int)o;
}

void cp__cmdset_label(const cp__cmdset *s, char *buf, size_t cap) {
    if (s->n == 1) {
        snprintf(buf, cap, "%s", s->t[0].name);
        return;
    }
    size_t need = 0;
    for (int k = 0; k < s->n; k++)
        need += strlen(s->t[k].name) + (k > 0);
    if (need + 1 > cap) {
        snprintf(buf, cap, "%d commands", s->n);
        return;
    }
    size_t o = 0;
    for (int k = 0; k < s->n; k++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", k ? "/" : "", s->t[k].name);
}
