/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The fake node's tiny Redis (see fakenode_redis.h): request parser, key/value store, normal
 * command handler, and the CLUSTER SLOTS / SHARDS reply builders declared in fakenode.h. Owns
 * the store's entries (freed by fake__store_free) and nothing else: parsed arguments point into
 * the caller's buffer, replies are appended to the caller's buffer. Runs on the node's serving
 * thread (the builders on whatever thread calls them); no I/O, no locks, no globals.
 */
#include "fakenode_redis.h"
#include "fakenode.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* An unterminated header or inline line longer than this is a protocol error, as in Redis. */
#define HEADER_MAX (64 * 1024)
#define MULTIBULK_MAX (1024 * 1024)
#define BULK_MAX (512L * 1024 * 1024)

typedef struct entry {
    struct entry *next;
    char *val;
    size_t vlen;
    size_t klen;
    char key[];
} entry;

struct fake_store {
    entry **buckets;
    size_t nbuckets, nkeys;
};

/* Where the handler's reply goes; oom remembers a failed append so the handler can take the
 * whole reply back instead of sending half of one. */
typedef struct reply {
    fake_buf *out;
    bool oom;
} reply;

/* ---- small growable buffer ------------------------------------------------------------------ */

/* Grows by doubling so appending many small replies stays linear. */
int fake__buf_reserve(fake_buf *b, size_t extra) {
    if (b->len + extra <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

int fake__buf_append(fake_buf *b, const void *data, size_t len) {
    if (fake__buf_reserve(b, len) != 0)
        return -1;
    if (len > 0)
        memcpy(b->p + b->len, data, len);
    b->len += len;
    return 0;
}

static int buf_printf(fake_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int buf_printf(fake_buf *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return -1;
    return fake__buf_append(b, tmp, (size_t)n);
}

/* Shifts consumed input out of a connection's buffer. */
void fake__buf_consume(fake_buf *b, size_t n) {
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->p, b->p + n, b->len - n);
    b->len -= n;
}

bool fake__arg_is(const fake_args *a, size_t i, const char *word) {
    size_t n = strlen(word);
    return i < a->n && a->len[i] == n && strncasecmp(a->v[i], word, n) == 0;
}

/* ---- the store ---------------------------------------------------------------------------- */

static uint64_t hash_bytes(const char *p, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* Returns the link that points (or would point) at key's entry, so lookup, insert and delete
 * share one walk of the chain. */
static entry **store_slot(fake_store *st, const char *key, size_t klen) {
    entry **pp = &st->buckets[hash_bytes(key, klen) & (st->nbuckets - 1)];
    while (*pp != NULL && !((*pp)->klen == klen && memcmp((*pp)->key, key, klen) == 0))
        pp = &(*pp)->next;
    return pp;
}

static entry *store_get(fake_store *st, const char *key, size_t klen) {
    return *store_slot(st, key, klen);
}

/* Doubles the bucket array when the load passes 2, so a test that loads many keys stays fast. */
static void store_grow(fake_store *st) {
    size_t nb = st->nbuckets * 2;
    entry **nbk = calloc(nb, sizeof(*nbk));
    if (nbk == NULL)
        return; /* keep the old, slower table */
    for (size_t i = 0; i < st->nbuckets; i++) {
        entry *e = st->buckets[i];
        while (e != NULL) {
            entry *next = e->next;
            size_t h = hash_bytes(e->key, e->klen) & (nb - 1);
            e->next = nbk[h];
            nbk[h] = e;
            e = next;
        }
    }
    free(st->buckets);
    st->buckets = nbk;
    st->nbuckets = nb;
}

/* Stores a copy of val (binary-safe, NUL-terminated for INCR's parser); -1 on OOM leaves the
 * old value in place. */
static int store_set(fake_store *st, const char *key, size_t klen, const char *val, size_t vlen) {
    char *v = malloc(vlen + 1);
    if (v == NULL)
        return -1;
    memcpy(v, val, vlen);
    v[vlen] = '\0';
    entry **pp = store_slot(st, key, klen);
    if (*pp != NULL) {
        free((*pp)->val);
        (*pp)->val = v;
        (*pp)->vlen = vlen;
        return 0;
    }
    entry *e = malloc(sizeof(*e) + klen);
    if (e == NULL) {
        free(v);
        return -1;
    }
    memcpy(e->key, key, klen);
    e->klen = klen;
    e->val = v;
    e->vlen = vlen;
    e->next = NULL;
    *pp = e;
    if (++st->nkeys > 2 * st->nbuckets)
        store_grow(st);
    return 0;
}

static bool store_del(fake_store *st, const char *key, size_t klen) {
    entry **pp = store_slot(st, key, klen);
    entry *e = *pp;
    if (e == NULL)
        return false;
    *pp = e->next;
    free(e->val);
    free(e);
    st->nkeys--;
    return true;
}

fake_store *fake__store_new(void) {
    fake_store *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return NULL;
    st->nbuckets = 1024;
    st->buckets = calloc(st->nbuckets, sizeof(*st->buckets));
    if (st->buckets == NULL) {
        free(st);
        return NULL;
    }
    return st;
}

void fake__store_free(fake_store *st) {
    if (st == NULL)
        return;
    for (size_t i = 0; i < st->nbuckets; i++) {
        entry *e = st->buckets[i];
        while (e != NULL) {
            entry *next = e->next;
            free(e->val);
            free(e);
            e = next;
        }
    }
    free(st->buckets);
    free(st);
}

/* ---- request parsing ------------------------------------------------------------------------ */

/* Keeps one argument vector per node, reused for every command, so parsing allocates only
 * when a command has more arguments than any before it. */
static int args_push(fake_args *a, const char *p, size_t n) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 16;
        const char **v = realloc(a->v, cap * sizeof(*v));
        if (v == NULL)
            return -1;
        a->v = v;
        size_t *len = realloc(a->len, cap * sizeof(*len));
        if (len == NULL)
            return -1;
        a->len = len;
        a->cap = cap;
    }
    a->v[a->n] = p;
    a->len[a->n] = n;
    a->n++;
    return 0;
}

/* Reads "<digits>\r\n" at p[from..len): returns bytes up to and including the CRLF and stores
 * the number, 0 if the line is not complete yet, -1 if it is not a number. */
static long parse_num_line(const char *p, size_t from, size_t len, long *out) {
    const char *cr = memchr(p + from, '\r', len - from);
    if (cr == NULL || (size_t)(cr - p) + 1 >= len)
        return len - from > HEADER_MAX ? -1 : 0;
    if (cr[1] != '\n')
        return -1;
    size_t digits = (size_t)(cr - (p + from));
    if (digits == 0 || digits > 18)
        return -1;
    long v = 0;
    bool neg = false;
    for (size_t i = 0; i < digits; i++) {
        char ch = p[from + i];
        if (i == 0 && ch == '-') {
            neg = true;
            continue;
        }
        if (ch < '0' || ch > '9')
            return -1;
        v = v * 10 + (ch - '0');
    }
    *out = neg ? -v : v;
    return (long)digits + 2;
}

/* Both RESP arrays of bulk strings and inline commands ("PING\r\n") are accepted, because
 * clients send the first and tests typing at a raw socket the second. */
long fake__parse_command(const char *p, size_t len, fake_args *a, const char **err) {
    a->n = 0;
    if (len == 0)
        return 0;
    if (p[0] != '*') {
        const char *nl = memchr(p, '\n', len);
        if (nl == NULL) {
            if (len > HEADER_MAX) {
                *err = "too big inline request";
                return -1;
            }
            return 0;
        }
        size_t end = (size_t)(nl - p);
        size_t line = end > 0 && p[end - 1] == '\r' ? end - 1 : end;
        size_t i = 0;
        while (i < line) {
            while (i < line && (p[i] == ' ' || p[i] == '\t'))
                i++;
            size_t start = i;
            while (i < line && p[i] != ' ' && p[i] != '\t')
                i++;
            if (i > start && args_push(a, p + start, i - start) != 0) {
                *err = "out of memory";
                return -1;
            }
        }
        return (long)end + 1;
    }
    long count;
    long used = parse_num_line(p, 1, len, &count);
    if (used == 0)
        return 0;
    if (used < 0 || count > MULTIBULK_MAX) {
        *err = "invalid multibulk length";
        return -1;
    }
    size_t pos = 1 + (size_t)used;
    for (long i = 0; i < count; i++) {
        if (pos >= len)
            return 0;
        if (p[pos] != '$') {
            *err = "expected '$'";
            return -1;
        }
        long blen;
        used = parse_num_line(p, pos + 1, len, &blen);
        if (used == 0)
            return 0;
        if (used < 0 || blen < 0 || blen > BULK_MAX) {
            *err = "invalid bulk length";
            return -1;
        }
        pos += 1 + (size_t)used;
        if (len - pos < (size_t)blen + 2)
            return 0;
        if (p[pos + (size_t)blen] != '\r' || p[pos + (size_t)blen + 1] != '\n') {
            *err = "bulk not terminated by CRLF";
            return -1;
        }
        if (args_push(a, p + pos, (size_t)blen) != 0) {
            *err = "out of memory";
            return -1;
        }
        pos += (size_t)blen + 2;
    }
    return (long)pos;
}

/* ---- normal handling ------------------------------------------------------------------------ */

/* Reply writers: append to the connection's output buffer; written out after the batch. */
static void out_raw(reply *rp, const char *s, size_t n) {
    if (fake__buf_append(rp->out, s, n) != 0)
        rp->oom = true;
}

static void out_str(reply *rp, const char *s) {
    out_raw(rp, s, strlen(s));
}

static void out_int(reply *rp, long long v) {
    if (buf_printf(rp->out, ":%lld\r\n", v) != 0)
        rp->oom = true;
}

static void out_bulk(reply *rp, const char *s, size_t n) {
    if (buf_printf(rp->out, "$%zu\r\n", n) != 0)
        rp->oom = true;
    out_raw(rp, s, n);
    out_raw(rp, "\r\n", 2);
}

/* Appends bytes to an error line with CR/LF replaced, so a client-sent argument echoed back in
 * an error cannot break the reply framing. */
static void out_clean(reply *rp, const char *s, size_t n) {
    if (n > 128)
        n = 128;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i] == '\r' || s[i] == '\n' ? ' ' : s[i];
        out_raw(rp, &ch, 1);
    }
}

static void out_arity(reply *rp, const fake_args *a) {
    out_str(rp, "-ERR wrong number of arguments for '");
    for (size_t i = 0; i < a->len[0] && i < 64; i++) {
        char ch = a->v[0][i];
        ch = (ch >= 'A' && ch <= 'Z') ? (char)(ch - 'A' + 'a') : ch;
        out_clean(rp, &ch, 1);
    }
    out_str(rp, "' command\r\n");
}

/* Strict integer parse of a stored value, as Redis's INCR demands (no spaces, no '+'). */
static bool parse_ll(const char *s, size_t n, long long *out) {
    if (n == 0 || n > 20)
        return false;
    char tmp[24];
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(tmp, &end, 10);
    if (errno != 0 || *end != '\0' || tmp[0] == ' ' || tmp[0] == '+')
        return false;
    *out = v;
    return true;
}

/* AUTH [user] pass against the configured credentials, Redis 7 wording. */
static void do_auth(const fake_config *cfg, bool *authed, reply *rp, const fake_args *a) {
    if (a->n != 2 && a->n != 3) {
        out_arity(rp, a);
        return;
    }
    if (cfg->pass == NULL) {
        *authed = true;
        out_str(rp, "+OK\r\n");
        return;
    }
    const char *want_user = cfg->user != NULL ? cfg->user : "default";
    bool user_ok =
        a->n == 2 ? strcmp(want_user, "default") == 0
                  : a->len[1] == strlen(want_user) && memcmp(a->v[1], want_user, a->len[1]) == 0;
    size_t pi = a->n - 1;
    bool pass_ok = a->len[pi] == strlen(cfg->pass) && memcmp(a->v[pi], cfg->pass, a->len[pi]) == 0;
    if (user_ok && pass_ok) {
        *authed = true;
        out_str(rp, "+OK\r\n");
    } else {
        out_str(rp, "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
    }
}

/* CLUSTER SLOTS / SHARDS answer whatever raw RESP the test set; the defaults mimic a node
 * without cluster support (SLOTS) and a pre-7 Redis (SHARDS), the two fallbacks a client meets. */
static void do_cluster(const fake_config *cfg, reply *rp, const fake_args *a) {
    if (a->n < 2) {
        out_arity(rp, a);
    } else if (fake__arg_is(a, 1, "SLOTS")) {
        out_str(rp, cfg->slots != NULL ? cfg->slots
                                       : "-ERR This instance has cluster support disabled\r\n");
    } else if (fake__arg_is(a, 1, "SHARDS") && cfg->shards != NULL) {
        out_str(rp, cfg->shards);
    } else {
        out_str(rp, "-ERR unknown subcommand '");
        out_clean(rp, a->v[1], a->len[1]);
        out_str(rp, "'. Try CLUSTER HELP.\r\n");
    }
}

/* The tiny Redis behind the rules: just enough commands for a client's happy path, with the
 * same reply shapes as Redis 7 so the client under test parses what it will meet for real. */
static int dispatch(fake_store *st, const fake_config *cfg, bool *authed, reply *rp,
                    const fake_args *a) {
    if (cfg->pass != NULL && !*authed && !fake__arg_is(a, 0, "AUTH") &&
        !fake__arg_is(a, 0, "QUIT")) {
        out_str(rp, "-NOAUTH Authentication required.\r\n");
        return FAKE__OK;
    }
    if (fake__arg_is(a, 0, "PING")) {
        if (a->n == 1)
            out_str(rp, "+PONG\r\n");
        else if (a->n == 2)
            out_bulk(rp, a->v[1], a->len[1]);
        else
            out_arity(rp, a);
    } else if (fake__arg_is(a, 0, "SET")) {
        if (a->n < 3)
            out_arity(rp, a);
        else if (store_set(st, a->v[1], a->len[1], a->v[2], a->len[2]) != 0)
            out_str(rp, "-OOM fake node out of memory\r\n");
        else
            out_str(rp, "+OK\r\n");
    } else if (fake__arg_is(a, 0, "GET")) {
        if (a->n != 2) {
            out_arity(rp, a);
            return FAKE__OK;
        }
        entry *e = store_get(st, a->v[1], a->len[1]);
        if (e == NULL)
            out_str(rp, "$-1\r\n");
        else
            out_bulk(rp, e->val, e->vlen);
    } else if (fake__arg_is(a, 0, "DEL") || fake__arg_is(a, 0, "UNLINK") ||
               fake__arg_is(a, 0, "EXISTS")) {
        if (a->n < 2) {
            out_arity(rp, a);
            return FAKE__OK;
        }
        bool del = !fake__arg_is(a, 0, "EXISTS");
        long long n = 0;
        for (size_t i = 1; i < a->n; i++)
            n +=
                del ? store_del(st, a->v[i], a->len[i]) : store_get(st, a->v[i], a->len[i]) != NULL;
        out_int(rp, n);
    } else if (fake__arg_is(a, 0, "INCR")) {
        if (a->n != 2) {
            out_arity(rp, a);
            return FAKE__OK;
        }
        entry *e = store_get(st, a->v[1], a->len[1]);
        long long v = 0;
        if (e != NULL && (!parse_ll(e->val, e->vlen, &v) || v == INT64_MAX)) {
            out_str(rp, "-ERR value is not an integer or out of range\r\n");
            return FAKE__OK;
        }
        char tmp[24];
        int n = snprintf(tmp, sizeof(tmp), "%lld", v + 1);
        if (store_set(st, a->v[1], a->len[1], tmp, (size_t)n) != 0)
            out_str(rp, "-OOM fake node out of memory\r\n");
        else
            out_int(rp, v + 1);
    } else if (fake__arg_is(a, 0, "MGET")) {
        if (a->n < 2) {
            out_arity(rp, a);
            return FAKE__OK;
        }
        if (buf_printf(rp->out, "*%zu\r\n", a->n - 1) != 0)
            rp->oom = true;
        for (size_t i = 1; i < a->n; i++) {
            entry *e = store_get(st, a->v[i], a->len[i]);
            if (e == NULL)
                out_str(rp, "$-1\r\n");
            else
                out_bulk(rp, e->val, e->vlen);
        }
    } else if (fake__arg_is(a, 0, "AUTH")) {
        do_auth(cfg, authed, rp, a);
    } else if (fake__arg_is(a, 0, "ASKING") || fake__arg_is(a, 0, "READONLY") ||
               fake__arg_is(a, 0, "READWRITE")) {
        out_str(rp, "+OK\r\n");
    } else if (fake__arg_is(a, 0, "QUIT")) {
        out_str(rp, "+OK\r\n");
        return FAKE__QUIT;
    } else if (fake__arg_is(a, 0, "CLUSTER")) {
        do_cluster(cfg, rp, a);
    } else {
        out_str(rp, "-ERR unknown command '");
        out_clean(rp, a->v[0], a->len[0]);
        out_str(rp, "', with args beginning with: ");
        for (size_t i = 1; i < a->n; i++) {
            out_str(rp, "'");
            out_clean(rp, a->v[i], a->len[i]);
            out_str(rp, "' ");
        }
        out_str(rp, "\r\n");
    }
    return FAKE__OK;
}

int fake__handle(fake_store *st, const fake_config *cfg, bool *authed, const fake_args *a,
                 fake_buf *out) {
    reply rp = {.out = out};
    size_t before = out->len;
    int rc = dispatch(st, cfg, authed, &rp, a);
    if (rp.oom) {
        out->len = before;
        return FAKE__OOM;
    }
    return rc;
}

/* ---- CLUSTER SLOTS / SHARDS builders (declared in fakenode.h) ------------------------------- */

char *fake_node_id(char *buf, int port) {
    snprintf(buf, 41, "%040d", port);
    return buf;
}

/* A bounded appender for the reply builders: remembers overflow instead of failing each call. */
typedef struct sink {
    char *p;
    size_t cap, len;
    bool overflow;
} sink;

static void sink_printf(sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sink_printf(sink *s, const char *fmt, ...) {
    if (s->overflow)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(s->p + s->len, s->cap - s->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= s->cap - s->len)
        s->overflow = true;
    else
        s->len += (size_t)n;
}

static int sink_done(sink *s) {
    if (s->overflow || s->len > INT32_MAX) {
        if (s->cap > 0)
            s->p[0] = '\0';
        return -1;
    }
    return (int)s->len;
}

static void sink_bulk(sink *s, const char *str) {
    sink_printf(s, "$%zu\r\n%s\r\n", strlen(str), str);
}

/* Builds the Redis 7 CLUSTER SLOTS shape observed from redis-server 7.0: per range
 * [start, end, [ip, port, id, {}]]. */
int fake_cluster_slots(char *buf, size_t len, int n, const int *start, const int *end,
                       const int *ports) {
    sink s = {.p = buf, .cap = len, .overflow = len == 0};
    if (n < 0)
        n = 0;
    sink_printf(&s, "*%d\r\n", n);
    for (int i = 0; i < n; i++) {
        char id[41];
        sink_printf(&s, "*3\r\n:%d\r\n:%d\r\n*4\r\n", start[i], end[i]);
        sink_bulk(&s, "127.0.0.1");
        sink_printf(&s, ":%d\r\n", ports[i]);
        sink_bulk(&s, fake_node_id(id, ports[i]));
        sink_printf(&s, "*0\r\n");
    }
    return sink_done(&s);
}

/* Builds the Redis 7 CLUSTER SHARDS shape (RESP2: maps flattened to arrays), one shard per
 * distinct port, in the field order redis-server 7.0 sends. */
int fake_cluster_shards(char *buf, size_t len, int n, const int *start, const int *end,
                        const int *ports) {
    sink s = {.p = buf, .cap = len, .overflow = len == 0};
    if (n < 0)
        n = 0;
    int shards = 0;
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < i && ports[j] != ports[i])
            j++;
        shards += j == i;
    }
    sink_printf(&s, "*%d\r\n", shards);
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < i && ports[j] != ports[i])
            j++;
        if (j < i)
            continue; /* this port's shard was written at its first range */
        int ranges = 0;
        for (int k = i; k < n; k++)
            ranges += ports[k] == ports[i];
        sink_printf(&s, "*4\r\n");
        sink_bulk(&s, "slots");
        sink_printf(&s, "*%d\r\n", 2 * ranges);
        for (int k = i; k < n; k++)
            if (ports[k] == ports[i])
                sink_printf(&s, ":%d\r\n:%d\r\n", start[k], end[k]);
        char id[41];
        sink_bulk(&s, "nodes");
        sink_printf(&s, "*1\r\n*14\r\n");
        sink_bulk(&s, "id");
        sink_bulk(&s, fake_node_id(id, ports[i]));
        sink_bulk(&s, "port");
        sink_printf(&s, ":%d\r\n", ports[i]);
        sink_bulk(&s, "ip");
        sink_bulk(&s, "127.0.0.1");
        sink_bulk(&s, "endpoint");
        sink_bulk(&s, "127.0.0.1");
        sink_bulk(&s, "role");
        sink_bulk(&s, "master");
        sink_bulk(&s, "replication-offset");
        sink_printf(&s, ":0\r\n");
        sink_bulk(&s, "health");
        sink_bulk(&s, "online");
    }
    return sink_done(&s);
}
