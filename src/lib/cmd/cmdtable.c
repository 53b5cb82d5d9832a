/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The server's command table (cmdtable.h): parsing a COMMAND reply, and lookups by name. The
 * parse trusts nothing about the reply's shape: every element's type is checked before use,
 * integers are bounded before any arithmetic sees them, and an entry that does not have the
 * documented shape is left out whole (with its subcommands), so its name falls back to the
 * built-in table. One thread at a time.
 */
#include "lib/base/alloc.h"
#include "lib/cmd/cmdtable.h"

#include "lib/proto/reply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Bound on every integer of an entry: argv positions and counts, far beyond any real command,
 * small enough that sums of a few of them never overflow an int. */
#define INT_BOUND 65536

#define MALFORMED 1 /* an entry without the documented shape (never a CP_E* code) */

typedef struct flagname {
    const char *name;
    uint32_t bit;
} flagname;

static const flagname cmd_flags[] = {
    {"write", CP__CF_WRITE},
    {"readonly", CP__CF_READONLY},
    {"denyoom", CP__CF_DENYOOM},
    {"admin", CP__CF_ADMIN},
    {"pubsub", CP__CF_PUBSUB},
    {"noscript", CP__CF_NOSCRIPT},
    {"blocking", CP__CF_BLOCKING},
    {"loading", CP__CF_LOADING},
    {"stale", CP__CF_STALE},
    {"skip_monitor", CP__CF_SKIP_MONITOR},
    {"skip_slowlog", CP__CF_SKIP_SLOWLOG},
    {"asking", CP__CF_ASKING},
    {"fast", CP__CF_FAST},
    {"no_auth", CP__CF_NO_AUTH},
    {"may_replicate", CP__CF_MAY_REPLICATE},
    {"no_mandatory_keys", CP__CF_NO_MANDATORY_KEYS},
    {"no_async_loading", CP__CF_NO_ASYNC_LOADING},
    {"no_multi", CP__CF_NO_MULTI},
    {"movablekeys", CP__CF_MOVABLEKEYS},
    {"allow_busy", CP__CF_ALLOW_BUSY},
    {"random", CP__CF_RANDOM},
    {"sort_for_script", CP__CF_SORT_FOR_SCRIPT},
    {"module", CP__CF_MODULE},
};

static const flagname key_flags[] = {
    {"RO", CP__KF_RO},
    {"RW", CP__KF_RW},
    {"OW", CP__KF_OW},
    {"RM", CP__KF_RM},
    {"access", CP__KF_ACCESS},
    {"update", CP__KF_UPDATE},
    {"insert", CP__KF_INSERT},
    {"delete", CP__KF_DELETE},
    {"not_key", CP__KF_NOT_KEY},
    {"incomplete", CP__KF_INCOMPLETE},
    {"variable_flags", CP__KF_VARIABLE_FLAGS},
};

static inline unsigned char fold(unsigned char c) {
    return (unsigned)(c - 'A') < 26u ? (unsigned char)(c | 0x20) : c;
}

/* FNV-1a over case-folded bytes, resumable (a subcommand's hash continues its container's). */
static inline uint32_t hash_more(uint32_t h, const char *s, size_t len) {
    for (size_t i = 0; i < len; i++)
        h = (h ^ fold((unsigned char)s[i])) * 16777619u;
    return h;
}
#define HASH_INIT 2166136261u

/* ---- parsing ------------------------------------------------------------------------------- */

typedef struct builder {
    cp__cmdtable *t;
    size_t capcmds, capspecs, cappool;
    char *err;
    size_t errlen;
    const char *why; /* the first reason an entry was left out */
} builder;

static int is_str(const redisReply *r) {
    return cp__reply_is_text(r) && r->str != NULL;
}

static int is_arr(const redisReply *r) {
    return cp__reply_is_list(r) && (r->elements == 0 || r->element != NULL);
}

static int get_int(const redisReply *r, int lo, int hi, int32_t *out) {
    if (r == NULL || r->type != REDIS_REPLY_INTEGER || r->integer < lo || r->integer > hi)
        return -1;
    *out = (int32_t)r->integer;
    return 0;
}

static int str_is(const redisReply *r, const char *s) {
    size_t n = strlen(s);
    return is_str(r) && r->len == n && memcmp(r->str, s, n) == 0;
}

/* The value of `key` in a RESP2 map (a flat array of key, value, ...), or NULL. */
static const redisReply *field(const redisReply *m, const char *key) {
    if (!is_arr(m))
        return NULL;
    for (size_t i = 0; i + 1 < m->elements; i += 2)
        if (str_is(m->element[i], key))
            return m->element[i + 1];
    return NULL;
}

static int grow(void **v, size_t *cap, size_t need, size_t size) {
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 64;
    while (ncap < need)
        ncap *= 2;
    void *nv = cp__realloc(*v, ncap * size);
    if (nv == NULL)
        return CP_ENOMEM;
    *v = nv;
    *cap = ncap;
    return 0;
}

/* Appends bytes to the pool (lower-cased when asked); their offset in *off. */
static int pool_add(builder *b, const char *s, size_t len, int lower, uint32_t *off) {
    cp__cmdtable *t = b->t;
    if (t->poollen + len + 1 > UINT32_MAX)
        return CP_ENOMEM;
    if (grow((void **)&t->pool, &b->cappool, t->poollen + len + 1, 1) != 0)
        return CP_ENOMEM;
    *off = (uint32_t)t->poollen;
    for (size_t i = 0; i < len; i++)
        t->pool[t->poollen + i] = lower ? (char)fold((unsigned char)s[i]) : s[i];
    t->pool[t->poollen + len] = '\0';
    t->poollen += len + 1;
    return 0;
}

/* A flags array into bits of the given table; -1 when it is not an array of strings. */
static int parse_flags(const redisReply *arr, const flagname *table, size_t n, uint32_t *out) {
    if (!is_arr(arr))
        return -1;
    for (size_t i = 0; i < arr->elements; i++) {
        const redisReply *f = arr->element[i];
        if (!is_str(f))
            return -1;
        for (size_t j = 0; j < n; j++)
            if (f->len == strlen(table[j].name) && strncasecmp(f->str, table[j].name, f->len) == 0)
                *out |= table[j].bit;
    }
    return 0;
}

#define NFLAGS(table) (sizeof(table) / sizeof(table[0]))

/* One key spec. Returns 0, MALFORMED, or CP_ENOMEM. */
static int parse_spec(builder *b, const redisReply *s, cp__keyspec *k) {
    memset(k, 0, sizeof(*k));
    uint32_t kf = 0;
    if (!is_arr(s) || parse_flags(field(s, "flags"), key_flags, NFLAGS(key_flags), &kf) != 0)
        return MALFORMED;
    k->flags = (uint16_t)kf;
    const redisReply *bs = field(s, "begin_search"), *fk = field(s, "find_keys");
    const redisReply *bt = field(bs, "type"), *ft = field(fk, "type");
    const redisReply *bspec = field(bs, "spec"), *fspec = field(fk, "spec");
    if (!is_str(bt) || !is_str(ft) || !is_arr(bspec) || !is_arr(fspec))
        return MALFORMED;
    if (str_is(bt, "index")) {
        k->bs = CP__BS_INDEX;
        if (get_int(field(bspec, "index"), 1, INT_BOUND, &k->pos) != 0)
            return MALFORMED;
    } else if (str_is(bt, "keyword")) {
        k->bs = CP__BS_KEYWORD;
        const redisReply *kw = field(bspec, "keyword");
        if (!is_str(kw) || kw->len == 0 || kw->len > CP__CMDTABLE_NAMEMAX ||
            get_int(field(bspec, "startfrom"), -INT_BOUND, INT_BOUND, &k->pos) != 0)
            return MALFORMED;
        int rc = pool_add(b, kw->str, kw->len, 0, &k->kw);
        if (rc != 0)
            return rc;
        k->kwlen = (uint32_t)kw->len;
    } else {
        k->bs = CP__BS_UNKNOWN; /* "unknown", or a type newer than this parser */
    }
    if (str_is(ft, "range")) {
        k->fk = CP__FK_RANGE;
        if (get_int(field(fspec, "lastkey"), -INT_BOUND, INT_BOUND, &k->a) != 0 ||
            get_int(field(fspec, "keystep"), 1, INT_BOUND, &k->b) != 0 ||
            get_int(field(fspec, "limit"), 0, INT_BOUND, &k->c) != 0)
            return MALFORMED;
    } else if (str_is(ft, "keynum")) {
        k->fk = CP__FK_KEYNUM;
        if (get_int(field(fspec, "keynumidx"), 0, INT_BOUND, &k->a) != 0 ||
            get_int(field(fspec, "firstkey"), 0, INT_BOUND, &k->b) != 0 ||
            get_int(field(fspec, "keystep"), 1, INT_BOUND, &k->c) != 0)
            return MALFORMED;
    } else {
        k->fk = CP__FK_UNKNOWN;
    }
    return 0;
}

static int valid_name(const char *s, size_t len) {
    if (len == 0 || len > CP__CMDTABLE_NAMEMAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (s[i] == '|' || (unsigned char)s[i] <= ' ')
            return 0;
    return 1;
}

/* One entry (a top-level command, or a subcommand of the container whose index is `parent`).
 * Returns 0, MALFORMED (the caller undoes what it added), or CP_ENOMEM. */
static int parse_entry(builder *b, const redisReply *e, int64_t parent);

static int parse_subs(builder *b, const redisReply *subs, uint32_t parent) {
    if (!is_arr(subs))
        return MALFORMED;
    for (size_t i = 0; i < subs->elements; i++) {
        cp__cmdtable *t = b->t;
        uint32_t ncmds = t->ncmds, nspecs = t->nspecs;
        size_t poollen = t->poollen;
        int rc = parse_entry(b, subs->element[i], parent);
        if (rc == CP_ENOMEM)
            return rc;
        if (rc != 0) { /* this subcommand alone is left out */
            t->ncmds = ncmds, t->nspecs = nspecs, t->poollen = poollen;
            t->skipped++;
        }
    }
    if (subs->elements > 0)
        b->t->cmds[parent].has_subs = 1;
    return 0;
}

static int parse_entry(builder *b, const redisReply *e, int64_t parent) {
    cp__cmdtable *t = b->t;
    b->why = "not an array of at least 6 fields";
    if (!is_arr(e) || e->elements < 6 || !is_str(e->element[0]))
        return MALFORMED;
    const redisReply *name = e->element[0];
    cp__cmdspec c;
    memset(&c, 0, sizeof(c));
    b->why = "bad name";
    if (parent < 0) {
        if (!valid_name(name->str, name->len))
            return MALFORMED;
        c.baselen = (uint16_t)name->len;
    } else {
        /* "container|sub", the container being the parent's name (any case). */
        const cp__cmdspec *p = &t->cmds[parent];
        size_t bl = p->namelen;
        if (name->len <= bl + 1 || name->str[bl] != '|' ||
            !valid_name(name->str + bl + 1, name->len - bl - 1) ||
            name->len > 2 * CP__CMDTABLE_NAMEMAX + 1)
            return MALFORMED;
        for (size_t i = 0; i < bl; i++)
            if (fold((unsigned char)name->str[i]) != (unsigned char)t->pool[p->name + i])
                return MALFORMED;
        c.baselen = (uint16_t)bl;
    }
    c.namelen = (uint16_t)name->len;
    b->why = "bad arity, flags or key positions";
    if (get_int(e->element[1], -INT_BOUND, INT_BOUND, &c.arity) != 0 ||
        parse_flags(e->element[2], cmd_flags, NFLAGS(cmd_flags), &c.flags) != 0 ||
        get_int(e->element[3], -INT_BOUND, INT_BOUND, &c.first) != 0 ||
        get_int(e->element[4], -INT_BOUND, INT_BOUND, &c.last) != 0 ||
        get_int(e->element[5], -INT_BOUND, INT_BOUND, &c.step) != 0)
        return MALFORMED;
    if (c.first < 0 || (c.first > 0 && c.step < 1))
        return MALFORMED;
    int rc = pool_add(b, name->str, name->len, 1, &c.name);
    if (rc != 0)
        return rc;
    if (e->elements >= 9) {
        const redisReply *specs = e->element[8];
        b->why = "bad key specs";
        if (!is_arr(specs) || specs->elements > CP__CMDTABLE_SPECMAX)
            return MALFORMED;
        if (grow((void **)&t->specs, &b->capspecs, (size_t)t->nspecs + specs->elements,
                 sizeof(*t->specs)) != 0)
            return CP_ENOMEM;
        c.has_specs = 1;
        c.spec0 = t->nspecs;
        c.nspecs = (uint16_t)specs->elements;
        for (size_t i = 0; i < specs->elements; i++) {
            cp__keyspec k;
            rc = parse_spec(b, specs->element[i], &k);
            if (rc != 0)
                return rc;
            t->specs[t->nspecs++] = k; /* capacity reserved above (pool_add moved only the pool) */
        }
    }
    if (parent < 0) {
        static const struct {
            const char *name;
            uint8_t proc;
        } procs[] = {
            {"sort", CP__PROC_SORT}, {"sort_ro", CP__PROC_SORT_RO}, {"migrate", CP__PROC_MIGRATE}};
        for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++)
            if (c.namelen == strlen(procs[i].name) &&
                memcmp(t->pool + c.name, procs[i].name, c.namelen) == 0)
                c.proc = procs[i].proc;
    }
    if (t->ncmds >= (1u << 20))
        return MALFORMED;
    if (grow((void **)&t->cmds, &b->capcmds, (size_t)t->ncmds + 1, sizeof(*t->cmds)) != 0)
        return CP_ENOMEM;
    uint32_t self = t->ncmds;
    t->cmds[t->ncmds++] = c;
    if (parent < 0 && e->elements >= 10 && e->element[9] != NULL &&
        e->element[9]->type != REDIS_REPLY_NIL) {
        b->why = "bad subcommands";
        rc = parse_subs(b, e->element[9], self);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* The entry whose full name is (a, alen) or, when b != NULL, (a '|' b); h its hash. */
static const cp__cmdspec *probe(const cp__cmdtable *t, uint32_t h, const char *a, size_t alen,
                                const char *b, size_t blen) {
    size_t len = b != NULL ? alen + 1 + blen : alen;
    for (uint32_t i = h & t->mask;; i = (i + 1) & t->mask) {
        uint32_t s = t->slots[i];
        if (s == 0)
            return NULL;
        const cp__cmdspec *e = &t->cmds[s - 1];
        if (e->namelen != len)
            continue;
        const char *n = t->pool + e->name;
        size_t k = 0;
        while (k < alen && fold((unsigned char)a[k]) == (unsigned char)n[k])
            k++;
        if (k < alen)
            continue;
        if (b == NULL)
            return e;
        if (n[alen] != '|')
            continue;
        n += alen + 1;
        k = 0;
        while (k < blen && fold((unsigned char)b[k]) == (unsigned char)n[k])
            k++;
        if (k == blen)
            return e;
    }
}

static int build_index(cp__cmdtable *t) {
    uint32_t cap = 16;
    while (cap < 2 * t->ncmds)
        cap *= 2;
    t->slots = cp__calloc(cap, sizeof(*t->slots));
    if (t->slots == NULL)
        return CP_ENOMEM;
    t->mask = cap - 1;
    for (uint32_t i = 0; i < t->ncmds; i++) {
        const cp__cmdspec *e = &t->cmds[i];
        const char *n = t->pool + e->name;
        uint32_t h = hash_more(HASH_INIT, n, e->namelen);
        if (probe(t, h, n, e->namelen, NULL, 0) != NULL) {
            t->skipped++; /* a duplicate name: the first one stays */
            continue;
        }
        uint32_t j = h & t->mask;
        while (t->slots[j] != 0)
            j = (j + 1) & t->mask;
        t->slots[j] = i + 1;
    }
    return 0;
}

int cp__cmdtable_parse(const redisReply *r, cp__cmdtable **out, char *err, size_t errlen) {
    *out = NULL;
    if (r != NULL && r->type == REDIS_REPLY_ERROR) {
        snprintf(err, errlen, "COMMAND refused: %.100s", r->str ? r->str : "");
        return CP_ESERVER;
    }
    if (!is_arr(r)) {
        snprintf(err, errlen, "COMMAND reply is not an array");
        return CP_EPROTO;
    }
    cp__cmdtable *t = cp__calloc(1, sizeof(*t));
    if (t == NULL)
        return CP_ENOMEM;
    builder b = {.t = t, .err = err, .errlen = errlen, .why = NULL};
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (e == NULL || e->type == REDIS_REPLY_NIL)
            continue;
        uint32_t ncmds = t->ncmds, nspecs = t->nspecs;
        size_t poollen = t->poollen;
        int rc = parse_entry(&b, e, -1);
        if (rc == CP_ENOMEM) {
            cp__cmdtable_free(t);
            return rc;
        }
        if (rc != 0) {
            t->ncmds = ncmds, t->nspecs = nspecs, t->poollen = poollen;
            t->skipped++;
        }
    }
    if (t->ncmds == 0) {
        snprintf(err, errlen, "COMMAND reply has no usable entry%s%s", b.why ? ": " : "",
                 b.why ? b.why : "");
        cp__cmdtable_free(t);
        return CP_EPROTO;
    }
    if (build_index(t) != 0) {
        cp__cmdtable_free(t);
        return CP_ENOMEM;
    }
    t->refs = 1;
    *out = t;
    return 0;
}

void cp__cmdtable_free(cp__cmdtable *t) {
    if (t == NULL || __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    cp__free(t->cmds);
    cp__free(t->specs);
    cp__free(t->pool);
    cp__free(t->slots);
    cp__free(t);
}

/* ---- lookups ------------------------------------------------------------------------------- */

const cp__cmdspec *cp__cmdtable_lookup(const cp__cmdtable *t, int argc, const char *const *argv,
                                       const size_t *argvlen) {
    if (t == NULL || argc < 1 || argvlen[0] == 0 || argvlen[0] > CP__CMDTABLE_NAMEMAX)
        return NULL;
    const cp__cmdspec *e =
        probe(t, hash_more(HASH_INIT, argv[0], argvlen[0]), argv[0], argvlen[0], NULL, 0);
    if (e != NULL && e->baselen != e->namelen)
        return NULL; /* "object|encoding" names an entry, never a command sent */
    return e != NULL ? cp__cmdtable_subcommand(t, e, argc, argv, argvlen) : NULL;
}

const cp__cmdspec *cp__cmdtable_subcommand(const cp__cmdtable *t, const cp__cmdspec *e, int argc,
                                           const char *const *argv, const size_t *argvlen) {
    if (!e->has_subs || argc < 2 || argvlen[1] == 0 || argvlen[1] > CP__CMDTABLE_NAMEMAX)
        return e;
    const char *name = t->pool + e->name; /* argv[0] folded, as its hash folds it */
    uint32_t h = hash_more(HASH_INIT, name, e->namelen);
    h = hash_more(h, "|", 1);
    h = hash_more(h, argv[1], argvlen[1]);
    const cp__cmdspec *sub = probe(t, h, name, e->namelen, argv[1], argvlen[1]);
    return sub != NULL ? sub : e;
}

const cp__cmdspec *cp__cmdtable_find(const cp__cmdtable *t, const char *name, size_t len) {
    if (t == NULL || len == 0 || len > 2 * CP__CMDTABLE_NAMEMAX + 1)
        return NULL;
    return probe(t, hash_more(HASH_INIT, name, len), name, len, NULL, 0);
}
