/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A source's plain connection (srcconn.h), through respconn.h (plain TCP or TLS).
 */
#include "migrate/srcconn.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migrate/respconn.h"

struct cp__srcconn {
    cp__respconn *rc;
    int tls; /* the connection is TLS */
    int timeout_ms;
    int no_pexpiretime; /* a source before Redis 7.0: expiries from PTTL and its TIME */
    char name[300];
};

static int failed(cp__srcconn *c, redisReply *r, const char *what, char *err, size_t errlen) {
    if (r == NULL && cp__rc_why(c->rc) == CP__RC_TIMEOUT)
        snprintf(err, errlen,
                 "source %s: %s: no answer within %d ms (a source that froze, or a "
                 "network that did)",
                 c->name, what, c->timeout_ms);
    else if (r == NULL)
        snprintf(err, errlen, "source %s: %s: %s", c->name, what,
                 cp__rc_errstr(c->rc)[0] ? cp__rc_errstr(c->rc) : "no answer");
    else
        snprintf(err, errlen, "source %s: %s: %s", c->name, what,
                 r->type == REDIS_REPLY_ERROR ? r->str : "an unexpected answer");
    freeReplyObject(r);
    return -1;
}

cp__srcconn *cp__sc_connect(const char *host, int port, const char *user, const char *password,
                            const cp_options *tls, int timeout_ms, char *err, size_t errlen) {
    cp__srcconn *c = calloc(1, sizeof *c);
    if (c == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(c->name, sizeof c->name, "%s:%d", host, port);
    c->timeout_ms = timeout_ms;
    c->tls = tls != NULL && tls->tls;
    char why[256];
    c->rc = cp__rc_connect(host, port, tls, timeout_ms, why, sizeof why);
    if (c->rc == NULL) {
        snprintf(err, errlen, "source %s: %s", c->name, why);
        cp__sc_free(c);
        return NULL;
    }
    if (password != NULL) {
        redisReply *r = user != NULL ? cp__rc_command(c->rc, "AUTH %s %s", user, password)
                                     : cp__rc_command(c->rc, "AUTH %s", password);
        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            failed(c, r, "AUTH", err, errlen);
            cp__sc_free(c);
            return NULL;
        }
        freeReplyObject(r);
    }
    return c;
}

void cp__sc_free(cp__srcconn *c) {
    if (c == NULL)
        return;
    cp__rc_free(c->rc);
    free(c);
}

/* INFO section's text, or NULL with err. */
static redisReply *info(cp__srcconn *c, const char *section, char *err, size_t errlen) {
    redisReply *r = cp__rc_command(c->rc, "INFO %s", section);
    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        failed(c, r, "INFO", err, errlen);
        return NULL;
    }
    return r;
}

/* After an INFO that failed: a connection closed on INFO is what nutcracker does with it, and
 * what a TLS port does with plain TCP. -1. */
static int proxy_hint(cp__srcconn *c, char *err, size_t errlen) {
    if (cp__rc_why(c->rc) == CP__RC_EOF) {
        size_t n = strlen(err);
        snprintf(err + n, errlen - n,
                 " (is it a twemproxy? give its nutcracker YAML as --from: "
                 "its servers are the sources%s)",
                 c->tls ? "" : "; a TLS port? give --from-tls");
    }
    return -1;
}

int cp__sc_is_cluster(cp__srcconn *c, int *yes, char *err, size_t errlen) {
    redisReply *r = info(c, "cluster", err, errlen);
    if (r == NULL)
        return proxy_hint(c, err, errlen);
    *yes = strstr(r->str, "cluster_enabled:1") != NULL;
    freeReplyObject(r);
    return 0;
}

int cp__sc_keyspace(cp__srcconn *c, cp__keyspace *out, char *err, size_t errlen) {
    redisReply *r = info(c, "keyspace", err, errlen);
    if (r == NULL)
        return proxy_hint(c, err, errlen);
    out->n = 0;
    for (const char *l = r->str; l != NULL && *l;
         l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        int db;
        unsigned long long keys;
        if (sscanf(l, "db%d:keys=%llu", &db, &keys) == 2 && out->n < CP__SRCCONN_MAX_DBS) {
            out->db[out->n] = db;
            out->keys[out->n++] = keys;
        }
    }
    freeReplyObject(r);
    return 0;
}

int cp__sc_offset(cp__srcconn *c, uint64_t *offset, char *err, size_t errlen) {
    redisReply *r = info(c, "replication", err, errlen);
    if (r == NULL)
        return -1;
    const char *at = strstr(r->str, "master_repl_offset:");
    unsigned long long v;
    int ok = at != NULL && sscanf(at, "master_repl_offset:%llu", &v) == 1;
    freeReplyObject(r);
    if (!ok)
        return snprintf(err, errlen, "source %s: INFO replication has no master_repl_offset",
                        c->name),
               -1;
    *offset = v;
    return 0;
}

int cp__sc_select(cp__srcconn *c, int db, char *err, size_t errlen) {
    redisReply *r = cp__rc_command(c->rc, "SELECT %d", db);
    if (r == NULL || r->type == REDIS_REPLY_ERROR)
        return failed(c, r, "SELECT", err, errlen);
    freeReplyObject(r);
    return 0;
}

/* MULTI, DUMP key, its expiry's command(s), EXEC: the EXEC's array into *exec (caller frees), or
 * NULL with *queued_error set to the first queued command's refusal (then 0). -1 with err on a
 * failed connection or an unexpected answer. */
static int dump_unit(cp__srcconn *c, const char *key, size_t klen, redisReply **exec,
                     char *queued_error, size_t qlen, char *err, size_t errlen) {
    int n = c->no_pexpiretime ? 5 : 4; /* MULTI, DUMP, PTTL and TIME or PEXPIRETIME, EXEC */
    cp__rc_appendf(c->rc, "MULTI");
    cp__rc_appendf(c->rc, "DUMP %b", key, klen);
    if (c->no_pexpiretime) {
        cp__rc_appendf(c->rc, "PTTL %b", key, klen);
        cp__rc_appendf(c->rc, "TIME");
    } else {
        cp__rc_appendf(c->rc, "PEXPIRETIME %b", key, klen);
    }
    cp__rc_appendf(c->rc, "EXEC");
    *exec = NULL;
    queued_error[0] = '\0';
    int rc = 0;
    for (int k = 0; k < n; k++) {
        redisReply *r = NULL;
        if (cp__rc_reply(c->rc, &r) != 0)
            return failed(c, NULL, "DUMP", err, errlen);
        if (k == n - 1 && r->type == REDIS_REPLY_ARRAY && (size_t)r->elements == (size_t)n - 2) {
            *exec = r;
            continue;
        }
        if (r->type == REDIS_REPLY_ERROR && k > 0 && k < n - 1 && queued_error[0] == '\0')
            snprintf(queued_error, qlen, "%s", r->str);
        else if (k == n - 1 && queued_error[0] == '\0' && rc == 0)
            rc = failed(c, r, "DUMP", err, errlen), r = NULL;
        freeReplyObject(r);
    }
    return rc;
}

int cp__sc_dump(cp__srcconn *c, const char *key, size_t klen, char **payload, size_t *plen,
                int64_t *expire_ms, char *err, size_t errlen) {
    redisReply *x;
    char refused[256];
    if (dump_unit(c, key, klen, &x, refused, sizeof refused, err, errlen) != 0)
        return -1;
    if (x == NULL && !c->no_pexpiretime && strstr(refused, "unknown command") != NULL) {
        c->no_pexpiretime = 1; /* before Redis 7.0: PTTL and the source's TIME */
        if (dump_unit(c, key, klen, &x, refused, sizeof refused, err, errlen) != 0)
            return -1;
    }
    if (x == NULL)
        return snprintf(err, errlen, "source %s: DUMP: %s", c->name, refused), -1;
    const redisReply *d = x->element[0], *t = x->element[1];
    if ((d->type != REDIS_REPLY_STRING && d->type != REDIS_REPLY_NIL) ||
        t->type != REDIS_REPLY_INTEGER) {
        freeReplyObject(x);
        return snprintf(err, errlen, "source %s: DUMP: an unexpected answer", c->name), -1;
    }
    *payload = NULL;
    *plen = 0;
    *expire_ms = -1; /* none; or, inside the same MULTI, a key that does not exist (-2) */
    if (t->integer >= 0 && !c->no_pexpiretime) {
        *expire_ms = t->integer;
    } else if (t->integer >= 0) { /* PTTL: from the source's own clock, read in the unit */
        const redisReply *now = x->element[2];
        if (now->type != REDIS_REPLY_ARRAY || now->elements != 2 ||
            now->element[0]->type != REDIS_REPLY_STRING) {
            freeReplyObject(x);
            return snprintf(err, errlen, "source %s: TIME: an unexpected answer", c->name), -1;
        }
        long long sec = atoll(now->element[0]->str), usec = atoll(now->element[1]->str);
        *expire_ms = sec * 1000 + usec / 1000 + t->integer;
    }
    if (d->type == REDIS_REPLY_STRING) {
        *payload = malloc(d->len ? d->len : 1);
        if (*payload == NULL) {
            freeReplyObject(x);
            return snprintf(err, errlen, "out of memory"), -1;
        }
        memcpy(*payload, d->str, d->len);
        *plen = d->len;
    }
    freeReplyObject(x);
    return 0;
}

int cp__sc_append(cp__srcconn *c, int argc, const char **argv, const size_t *argvlen) {
    return cp__rc_append_argv(c->rc, argc, argv, argvlen);
}

int cp__sc_reply(cp__srcconn *c, redisReply **out, char *err, size_t errlen) {
    *out = NULL;
    if (cp__rc_reply(c->rc, out) != 0)
        return failed(c, NULL, "a read", err, errlen);
    return 0;
}

const char *cp__sc_name(const cp__srcconn *c) {
    return c->name;
}
