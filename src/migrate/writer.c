/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The writer (writer.h). Each appended command leaves a record in its batch: its source, its
 * kind, and its keys (copied into one buffer per batch), so that once the batch ended it is
 * walked in append order, after every batch sent before it, and a command's failure, or its
 * touching a key marked earlier in the walk, marks its keys.
 */
#include "migrate/writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/clock.h"

#define UNREACHABLE_MS 30000

enum { K_PLAIN, K_COPY, K_RESTORE, K_MEMBER, K_EXEC }; /* K_COPY: a snapshot key's RESTORE */

typedef struct record {
    int src, kind;
    size_t first_key, nkeys; /* in the batch's key list */
    char name[24];           /* the command's, for messages */
} record;

/* One pipeline's commands and what checking them needs. */
typedef struct batch {
    cp__mw *w;
    cp_pipeline *p;
    int ended;         /* its cp_exec_async callback came */
    size_t bytes;      /* its commands' arguments, summed */
    uint64_t *offsets; /* each source's, as the caller tagged it when sent */
    record *rec;
    size_t nrec, rec_cap;
    char *kbuf; /* keys, back to back */
    size_t kbuf_len, kbuf_cap;
    size_t *koff, *klen;
    size_t nkeys, keys_cap;
} batch;

struct cp__mw {
    cp_client *c;
    int nsrc;
    cp__keyset *marks;
    uint64_t *copied;
    int64_t since_ms; /* the last batch checked of which something ran (or may have) */
    int failed;       /* a check stopped the run: later ones only count */
    char err[256];    /* why the last append failed */
    batch b[CP__MW_IN_FLIGHT];
    int head, nrun; /* the oldest batch sent, and how many are sent and not yet checked */
    int *at;        /* cp__mw_keys's answer: argv indexes of one command's keys */
    size_t at_cap;
};

/* The batch being filled; NULL while every batch is sent. */
static batch *filling(cp__mw *w) {
    return w->nrun < CP__MW_IN_FLIGHT ? &w->b[(w->head + w->nrun) % CP__MW_IN_FLIGHT] : NULL;
}

static void batch_free(batch *b) {
    cp_pipeline_free(b->p);
    free(b->offsets);
    free(b->rec);
    free(b->kbuf);
    free(b->koff);
    free(b->klen);
}

cp__mw *cp__mw_new(cp_client *c, int nsrc, cp__keyset *marks, uint64_t *copied) {
    cp__mw *w = calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    w->c = c;
    w->nsrc = nsrc;
    w->marks = marks;
    w->copied = copied;
    for (int i = 0; i < CP__MW_IN_FLIGHT; i++) {
        batch *b = &w->b[i];
        b->w = w;
        b->p = cp_pipeline_new(c);
        b->offsets = calloc((size_t)nsrc, sizeof *b->offsets);
        if (b->p == NULL || b->offsets == NULL) {
            cp__mw_free(w);
            return NULL;
        }
    }
    return w;
}

void cp__mw_free(cp__mw *w) {
    if (w == NULL)
        return;
    for (int i = 0; i < CP__MW_IN_FLIGHT; i++)
        batch_free(&w->b[i]);
    free(w->at);
    free(w);
}

static int grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *n = realloc(*p, c * size);
    if (n == NULL)
        return -1;
    *p = n;
    *cap = c;
    return 0;
}

const int *cp__mw_keys(cp__mw *w, int argc, const char *const *argv, const size_t *argvlen,
                       int *n) {
    static int none;
    int k = cp_command_keys(w->c, argc, (const char **)argv, argvlen, w->at, (int)w->at_cap);
    if (k > (int)w->at_cap) { /* more keys than ever: room for them all, then again */
        if (grow((void **)&w->at, &w->at_cap, (size_t)k, sizeof *w->at) != 0)
            return NULL;
        k = cp_command_keys(w->c, argc, (const char **)argv, argvlen, w->at, (int)w->at_cap);
    }
    *n = k < 0 ? 0 : k;
    return w->at != NULL ? w->at : &none;
}

static int add_key(batch *b, const char *key, size_t len) {
    size_t cap = b->keys_cap;
    if (grow((void **)&b->koff, &cap, b->nkeys + 1, sizeof *b->koff) != 0)
        return -1;
    cap = b->keys_cap;
    if (grow((void **)&b->klen, &cap, b->nkeys + 1, sizeof *b->klen) != 0)
        return -1;
    b->keys_cap = cap;
    if (grow((void **)&b->kbuf, &b->kbuf_cap, b->kbuf_len + len, 1) != 0)
        return -1;
    memcpy(b->kbuf + b->kbuf_len, key, len);
    b->koff[b->nkeys] = b->kbuf_len;
    b->klen[b->nkeys++] = len;
    b->kbuf_len += len;
    return 0;
}

/* A record for the command just appended to b, its keys taken from argv. */
static int add_record(cp__mw *w, batch *b, int src, int kind, int argc, const char *const *argv,
                      const size_t *argvlen) {
    if (grow((void **)&b->rec, &b->rec_cap, b->nrec + 1, sizeof *b->rec) != 0)
        return -1;
    record *r = &b->rec[b->nrec++];
    *r = (record){.src = src, .kind = kind, .first_key = b->nkeys};
    size_t nl = argvlen[0] < sizeof r->name - 1 ? argvlen[0] : sizeof r->name - 1;
    memcpy(r->name, argv[0], nl);
    r->name[nl] = '\0';
    if (kind == K_MEMBER)
        return 0; /* a unit's keys are its EXEC's */
    /* A RESTORE's or a DEL's one key, its first argument: no lookup in the command table. */
    if (kind == K_COPY || kind == K_RESTORE) {
        r->nkeys = 1;
        return add_key(b, argv[1], argvlen[1]);
    }
    int n;
    const int *at = cp__mw_keys(w, argc, argv, argvlen, &n);
    if (at == NULL)
        return -1;
    for (int i = 0; i < n; i++)
        if (add_key(b, argv[at[i]], argvlen[at[i]]) != 0)
            return -1;
    r->nkeys = (size_t)n;
    return 0;
}

int cp__mw_taints(cp__mw *w, int src, int argc, const char *const *argv, const size_t *argvlen) {
    int n;
    const int *at = cp__mw_keys(w, argc, argv, argvlen, &n);
    if (at == NULL)
        return -1;
    int hit = 0;
    for (int i = 0; i < n && !hit; i++)
        hit = cp__keyset_has(&w->marks[src], argv[at[i]], argvlen[at[i]]);
    if (!hit)
        return 0;
    for (int i = 0; i < n; i++)
        if (cp__keyset_add(&w->marks[src], argv[at[i]], argvlen[at[i]]) != 0)
            return -1;
    return 1;
}

/* cp_append_argv to b, its failure said in w->err. */
static int append_argv(cp__mw *w, batch *b, int argc, const char *const *argv,
                       const size_t *argvlen) {
    int rc = cp_append_argv(b->p, argc, (const char **)argv, argvlen);
    for (int i = 0; i < argc && rc == 0; i++)
        b->bytes += argvlen[i];
    if (rc != 0)
        snprintf(w->err, sizeof w->err, "%.*s could not be added to a batch: %s",
                 (int)(argvlen[0] < 64 ? argvlen[0] : 64), argv[0], cp_strerror(rc));
    return rc != 0 ? -1 : 0;
}

/* The batch to append to; NULL (said in w->err) when every batch is sent: the caller asks
 * cp__mw_full first. */
static batch *appending(cp__mw *w) {
    w->err[0] = '\0'; /* a failure below is said for this command, or is out of memory */
    batch *b = filling(w);
    if (b == NULL)
        snprintf(w->err, sizeof w->err, "every batch is running: nothing can be added");
    return b;
}

static int append(cp__mw *w, int src, int kind, int argc, const char *const *argv,
                  const size_t *argvlen) {
    batch *b = appending(w);
    if (b == NULL || append_argv(w, b, argc, argv, argvlen) != 0)
        return -1;
    return add_record(w, b, src, kind, argc, argv, argvlen);
}

int cp__mw_restore(cp__mw *w, int src, int snapshot, const char *key, size_t klen,
                   const unsigned char *payload, size_t plen, int64_t expire_ms) {
    char ttl[24] = "0"; /* no TTL, the common case, costs no formatting */
    int tl = expire_ms < 0 ? 1 : snprintf(ttl, sizeof ttl, "%lld", (long long)expire_ms);
    const char *argv[] = {"RESTORE", key, ttl, (const char *)payload, "REPLACE", "ABSTTL"};
    const size_t argvlen[] = {7, klen, (size_t)tl, plen, 7, 6};
    return append(w, src, snapshot ? K_COPY : K_RESTORE, 6, argv, argvlen);
}

int cp__mw_del(cp__mw *w, int src, const char *key, size_t klen) {
    const char *argv[] = {"DEL", key};
    const size_t argvlen[] = {3, klen};
    return append(w, src, K_RESTORE, 2, argv, argvlen);
}

int cp__mw_command(cp__mw *w, int src, int argc, const char *const *argv, const size_t *argvlen) {
    return append(w, src, K_PLAIN, argc, argv, argvlen);
}

/* The slot of every key of the members, -1 when they span slots (-2: no keys), -3 out of
 * memory. */
static int unit_slot(cp__mw *w, const cp__mw_cmd *m, int n) {
    int slot = -2;
    for (int i = 0; i < n; i++) {
        int k;
        const int *at = cp__mw_keys(w, m[i].argc, (const char *const *)m[i].argv, m[i].argvlen, &k);
        if (at == NULL)
            return -3;
        for (int j = 0; j < k; j++) {
            int s = (int)cp_keyslot(m[i].argv[at[j]], m[i].argvlen[at[j]]);
            if (slot != -2 && s != slot)
                return -1;
            slot = s;
        }
    }
    return slot;
}

int cp__mw_unit(cp__mw *w, int src, const cp__mw_cmd *m, int n) {
    w->err[0] = '\0';
    int slot = unit_slot(w, m, n);
    if (slot == -3)
        return -1;
    if (slot == -1 || !cp_is_cluster(w->c)) {
        for (int i = 0; i < n; i++)
            if (cp__mw_command(w, src, m[i].argc, (const char *const *)m[i].argv, m[i].argvlen))
                return -1;
        return 0;
    }
    const char *multi[] = {"MULTI"}, *exec[] = {"EXEC"};
    const size_t mlen[] = {5}, elen[] = {4};
    batch *b = appending(w);
    if (b == NULL)
        return -1;
    size_t first = b->nkeys;
    if (append(w, src, K_MEMBER, 1, multi, mlen) != 0)
        return -1;
    for (int i = 0; i < n; i++) {
        if (append_argv(w, b, m[i].argc, (const char *const *)m[i].argv, m[i].argvlen) != 0 ||
            add_record(w, b, src, K_MEMBER, m[i].argc, (const char *const *)m[i].argv,
                       m[i].argvlen) != 0)
            return -1;
        int k;
        const int *at = cp__mw_keys(w, m[i].argc, (const char *const *)m[i].argv, m[i].argvlen, &k);
        if (at == NULL)
            return -1;
        for (int j = 0; j < k; j++)
            if (add_key(b, m[i].argv[at[j]], m[i].argvlen[at[j]]) != 0)
                return -1;
    }
    size_t nkeys = b->nkeys - first;
    if (append_argv(w, b, 1, exec, elen) != 0 ||
        grow((void **)&b->rec, &b->rec_cap, b->nrec + 1, sizeof *b->rec) != 0)
        return -1;
    b->rec[b->nrec++] =
        (record){.src = src, .kind = K_EXEC, .first_key = first, .nkeys = nkeys, .name = "EXEC"};
    return 0;
}

const char *cp__mw_error(const cp__mw *w) {
    return w->err[0] ? w->err : "out of memory";
}

size_t cp__mw_count(const cp__mw *w) {
    const batch *b = filling((cp__mw *)w);
    return b != NULL ? b->nrec : 0;
}

int cp__mw_full(const cp__mw *w) {
    const batch *b = filling((cp__mw *)w);
    return b == NULL || b->nrec >= CP__MW_BATCH || b->bytes >= CP__MW_BATCH_BYTES;
}

int cp__mw_running(const cp__mw *w) {
    return w->nrun;
}

static void ended(cp_pipeline *p, void *privdata) {
    (void)p;
    ((batch *)privdata)->ended = 1;
}

int cp__mw_send(cp__mw *w, const uint64_t *offsets, char *err, size_t errlen) {
    batch *b = filling(w);
    if (b == NULL || b->nrec == 0)
        return 0;
    memcpy(b->offsets, offsets, (size_t)w->nsrc * sizeof *offsets);
    b->ended = 0;
    int rc = cp_exec_async(b->p, ended, b);
    if (rc != 0)
        return snprintf(err, errlen, "a batch of %zu commands could not be sent: %s", b->nrec,
                        cp_strerror(rc)),
               -1;
    w->nrun++;
    return 0;
}

static int is_error(const redisReply *r) {
    return r != NULL && r->type == REDIS_REPLY_ERROR;
}

/* An EXEC's first member that the target answered with an error (a member that failed as it
 * ran: the others ran), or NULL. */
static const redisReply *member_error(const redisReply *exec) {
    for (size_t k = 0; exec != NULL && exec->type == REDIS_REPLY_ARRAY && k < exec->elements; k++)
        if (is_error(exec->element[k]))
            return exec->element[k];
    return NULL;
}

/* Whether command i ended done and as it should: a RESTORE with +OK, an EXEC with its array and
 * no member's error. */
static int went_well(const batch *b, size_t i, const record *r) {
    if (cp_get_outcome(b->p, i) != CP_DONE)
        return 0;
    const redisReply *rep = cp_reply(b->p, i);
    if (r->kind == K_EXEC)
        return rep != NULL && rep->type == REDIS_REPLY_ARRAY && member_error(rep) == NULL;
    return !is_error(rep);
}

/* Checks an ended batch: counts every command's outcome and, unless the run already stopped,
 * marks keys and finds what stops it. 0, or -1 with err (fatal). */
static int check(cp__mw *w, batch *b, cp__mw_stats *st, char *err, size_t errlen) {
    uint64_t unknown_before = st->unknown;
    int fatal = 0;
    size_t done = 0;
    for (size_t i = 0; i < b->nrec; i++) {
        const record *r = &b->rec[i];
        cp_outcome oc = cp_get_outcome(b->p, i);
        const redisReply *rep = cp_reply(b->p, i);
        if (r->kind == K_MEMBER)
            continue; /* its unit's EXEC speaks for it */
        int well = went_well(b, i, r);
        done += oc == CP_DONE;
        st->unknown += oc == CP_UNKNOWN;
        st->not_executed += oc == CP_NOT_EXECUTED;
        st->written += well;
        if (well && r->kind == K_COPY)
            w->copied[r->src]++;
        if (w->failed || fatal)
            continue; /* counted only: the run stops at the first fatal command */
        if (is_error(rep) && oc == CP_DONE) {
            if (strncmp(rep->str, "OOM", 3) == 0 || r->kind == K_COPY || r->kind == K_RESTORE) {
                int kl = r->nkeys ? (int)b->klen[r->first_key] : 0;
                snprintf(err, errlen, "the target refused %s %.*s: %s", r->name,
                         kl > 200 ? 200 : kl, kl ? b->kbuf + b->koff[r->first_key] : "", rep->str);
                fatal = 1;
                continue;
            }
            if (st->errors++ == 0)
                snprintf(st->first_error, sizeof st->first_error, "%s: %s", r->name, rep->str);
        }
        const redisReply *member = r->kind == K_EXEC && oc == CP_DONE ? member_error(rep) : NULL;
        if (member != NULL && st->errors++ == 0)
            snprintf(st->first_error, sizeof st->first_error, "a member of EXEC: %s", member->str);
        int tainted = !well;
        for (size_t k = 0; k < r->nkeys && !tainted; k++)
            tainted = cp__keyset_has(&w->marks[r->src], b->kbuf + b->koff[r->first_key + k],
                                     b->klen[r->first_key + k]);
        if (!tainted)
            continue;
        if (r->nkeys == 0 && !well) {
            snprintf(err, errlen,
                     "%s, a command without keys, %s on the target (%s): nothing can re-copy "
                     "what it did",
                     r->name,
                     oc == CP_UNKNOWN        ? "ended unknown"
                     : oc == CP_NOT_EXECUTED ? "was not executed"
                                             : "was refused",
                     oc == CP_DONE && rep != NULL && rep->str != NULL ? rep->str
                                                                      : cp_pipeline_errstr(b->p));
            fatal = 1;
            continue;
        }
        for (size_t k = 0; k < r->nkeys; k++) {
            cp__keyset *m = &w->marks[r->src];
            size_t before = m->count;
            if (cp__keyset_add(m, b->kbuf + b->koff[r->first_key + k], b->klen[r->first_key + k]))
                return w->failed = 1, snprintf(err, errlen, "out of memory"), -1;
            st->marked += m->count > before;
        }
    }
    if (w->failed)
        return 0;
    /* A batch of which nothing ran, nor may have, is marked and goes on (a failover longer than
     * the retry budget, CROSSSLOT refusals); batches like it for UNREACHABLE_MS on end: the
     * target cannot be reached. */
    int64_t now = cp__now_ms();
    if (done > 0 || st->unknown > unknown_before || w->since_ms == 0)
        w->since_ms = now;
    if (!fatal && now - w->since_ms > UNREACHABLE_MS) {
        snprintf(err, errlen, "the target ran none of %zu commands, nor any for %d s: %s", b->nrec,
                 UNREACHABLE_MS / 1000, cp_pipeline_errstr(b->p));
        fatal = 1;
    }
    w->failed = fatal;
    return fatal ? -1 : 0;
}

int cp__mw_check(cp__mw *w, cp__mw_stats *st, uint64_t *written, char *err, size_t errlen) {
    int rc = 0;
    while (w->nrun > 0 && w->b[w->head].ended) {
        batch *b = &w->b[w->head];
        if (check(w, b, st, err, errlen) != 0)
            rc = -1;
        for (int i = 0; i < w->nsrc && written != NULL && !w->failed; i++)
            if (b->offsets[i] > written[i])
                written[i] = b->offsets[i];
        cp_pipeline_reset(b->p);
        b->nrec = b->nkeys = b->kbuf_len = b->bytes = 0;
        w->head = (w->head + 1) % CP__MW_IN_FLIGHT;
        w->nrun--;
    }
    return rc;
}
