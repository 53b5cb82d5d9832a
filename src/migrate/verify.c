/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The verify's loop (verify.h): per source, SCAN batches; per batch, rounds of every undecided
 * key's next step (keycmp.h), the source's commands on its plain connection and the target's in
 * one pipeline.
 */
#include "migrate/verify.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clusterpipe/clusterpipe.h"
#include "migrate/respconn.h"
#include "migrate/srcconn.h"
#include "util/clock.h"

#define SCAN_COUNT "1000"
#define ROUND_BYTES (16u << 20) /* replies one round may bring, about (keycmp's cost) */

/* The source's side of a round: commands queued on its connection, their replies read after. */
typedef struct src_side {
    cp__srcconn *c;
    size_t n;
} src_side;

typedef struct dst_side {
    cp_pipeline *p;
} dst_side;

typedef struct vrun {
    const cp__verify_opts *o;
    cp__verify_status *st;
    cp_client *c;
    src_side src;
    dst_side dst;
    redisReply **sr; /* a round's source replies */
    size_t sr_cap;
    int64_t start_ms, last_tick;
    char *err;
    size_t errlen;
} vrun;

static int64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int src_append(void *arg, int argc, const char **argv, const size_t *argvlen) {
    src_side *s = arg;
    if (cp__sc_append(s->c, argc, argv, argvlen) != 0)
        return -1;
    s->n++;
    return 0;
}

static int dst_append(void *arg, int argc, const char **argv, const size_t *argvlen) {
    dst_side *d = arg;
    if (cp_append_argv(d->p, argc, argv, argvlen) != 0)
        return -1;
    /* Reads: the library may send one again when its outcome became unknown (a failover). */
    return cp_set_flags(d->p, cp_count(d->p) - 1, CP_CMD_IDEMPOTENT) == 0 ? 0 : -1;
}

static void tick(vrun *r, int final) {
    int64_t now = cp__now_ms();
    r->st->elapsed_s = (double)(now - r->start_ms) / 1000.0;
    if (r->o->progress != NULL && (final || now - r->last_tick >= 1000)) {
        r->last_tick = now;
        r->o->progress(r->st, final, r->o->arg);
    }
}

static void account(vrun *r, const cp__keycmp *k, const char *source) {
    const char *detail;
    cp__kc_reason why = cp__kc_result(k, &detail);
    cp__kc_type type = cp__kc_type_of(k);
    cp__verify_status *st = r->st;
    st->checked++;
    st->per_type[type]++;
    if (type == CP__KC_OTHER && why != CP__KC_VANISHED && r->o->skip_unknown_types) {
        st->skipped++;
        return;
    }
    st->by_reason[why]++;
    if (why == CP__KC_SAME || why == CP__KC_TYPE || why == CP__KC_VALUE || why == CP__KC_TTL)
        st->found++;
    if (why == CP__KC_SAME || why == CP__KC_VANISHED)
        return;
    st->differences++;
    if (r->o->difference != NULL) {
        cp__verify_diff d = {.source = source, .reason = why, .type = type, .detail = detail};
        d.key = cp__kc_key(k, &d.klen);
        r->o->difference(&d, r->o->arg);
    }
}

/* One round: every undecided key's next step, within ROUND_BYTES (one key at least), sent,
 * answered and taken. Returns how many keys it decided, or -1 with err. */
static int round_trip(vrun *r, cp__keycmp **keys, int *decided, size_t n, const char *source) {
    cp__kc_side src = {src_append, &r->src}, dst = {dst_append, &r->dst};
    cp_pipeline_reset(r->dst.p);
    r->src.n = 0;
    size_t budget = 0, in_round = 0, got = 0;
    size_t *at_src = calloc(n, sizeof *at_src), *at_dst = calloc(n, sizeof *at_dst);
    int rc = -1;
    if (at_src == NULL || at_dst == NULL) {
        snprintf(r->err, r->errlen, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (decided[i])
            continue;
        size_t cost = cp__kc_cost(keys[i]);
        if (in_round > 0 && budget + cost > ROUND_BYTES)
            break;
        int ns, nd;
        at_src[i] = r->src.n;
        at_dst[i] = cp_count(r->dst.p);
        if (cp__kc_append(keys[i], &src, &dst, &ns, &nd) != 0) {
            snprintf(r->err, r->errlen, "out of memory");
            goto out;
        }
        decided[i] = -1; /* in this round */
        budget += cost;
        in_round++;
    }
    if (r->src.n > r->sr_cap) {
        redisReply **sr = realloc(r->sr, r->src.n * sizeof *sr);
        if (sr == NULL) {
            snprintf(r->err, r->errlen, "out of memory");
            goto out;
        }
        r->sr = sr;
        r->sr_cap = r->src.n;
    }
    for (; got < r->src.n; got++)
        if (cp__sc_reply(r->src.c, &r->sr[got], r->err, r->errlen) != 0)
            goto out;
    if (cp_count(r->dst.p) > 0 && cp_exec(r->dst.p) != 0) {
        for (size_t i = 0; i < cp_count(r->dst.p); i++)
            if (cp_get_outcome(r->dst.p, i) != CP_DONE) {
                snprintf(r->err, r->errlen, "target %s: %s", r->o->to,
                         cp_pipeline_errstr(r->dst.p));
                goto out;
            }
    }
    size_t nd = cp_count(r->dst.p);
    const redisReply **dr = calloc(nd ? nd : 1, sizeof *dr);
    if (dr == NULL) {
        snprintf(r->err, r->errlen, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < nd; i++)
        dr[i] = cp_reply(r->dst.p, i);
    rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (decided[i] != -1)
            continue;
        decided[i] = cp__kc_take(keys[i], &r->sr[at_src[i]], &dr[at_dst[i]]);
        if (decided[i]) {
            account(r, keys[i], source);
            rc++;
        }
    }
    free(dr);
out:
    for (size_t i = 0; i < got; i++)
        freeReplyObject(r->sr[i]);
    free(at_src);
    free(at_dst);
    return rc;
}

/* Compares a SCAN batch's keys. 0, or -1 with err. */
static int compare_batch(vrun *r, const redisReply *names, const char *source) {
    size_t n = names->elements;
    cp__keycmp **keys = calloc(n ? n : 1, sizeof *keys);
    int *decided = calloc(n ? n : 1, sizeof *decided);
    int rc = 0;
    int64_t now = wall_ms();
    for (size_t i = 0; i < n && keys != NULL && decided != NULL; i++) {
        const redisReply *e = names->element[i];
        keys[i] = cp__kc_new(e->str, e->len, r->o->tolerance_ms, now);
        if (keys[i] == NULL)
            rc = -1;
    }
    if (keys == NULL || decided == NULL || rc != 0) {
        snprintf(r->err, r->errlen, "out of memory");
        rc = -1;
    }
    for (size_t left = n; rc == 0 && left > 0;) {
        int got = round_trip(r, keys, decided, n, source);
        if (got < 0)
            rc = -1;
        else
            left -= (size_t)got;
        tick(r, 0);
    }
    for (size_t i = 0; keys != NULL && i < n; i++)
        cp__kc_free(keys[i]);
    free(keys);
    free(decided);
    return rc;
}

static int verify_source(vrun *r, const char *host, int port) {
    const cp__verify_opts *o = r->o;
    cp__srcconn *c = cp__sc_connect(host, port, o->from_user, o->from_password, o->from_tls,
                                    o->io_timeout_ms, r->err, r->errlen);
    if (c == NULL)
        return -1;
    r->src.c = c;
    int rc = cp__sc_select(c, o->db, r->err, r->errlen);
    char cursor[32] = "0";
    do {
        if (rc != 0)
            break;
        if (o->stop != NULL && *o->stop) {
            snprintf(r->err, r->errlen, "stopped before every key was compared");
            rc = -1;
            break;
        }
        const char *argv[] = {"SCAN", cursor, "COUNT", SCAN_COUNT};
        size_t argvlen[] = {4, strlen(cursor), 5, strlen(SCAN_COUNT)};
        redisReply *s = NULL;
        if (cp__sc_append(c, 4, argv, argvlen) != 0 ||
            cp__sc_reply(c, &s, r->err, r->errlen) != 0) {
            rc = -1;
            break;
        }
        if (s->type != REDIS_REPLY_ARRAY || s->elements != 2 ||
            s->element[0]->type != REDIS_REPLY_STRING || s->element[1]->type != REDIS_REPLY_ARRAY) {
            snprintf(r->err, r->errlen, "source %s: SCAN: %s", cp__sc_name(c),
                     s->type == REDIS_REPLY_ERROR ? s->str : "an unexpected answer");
            freeReplyObject(s);
            rc = -1;
            break;
        }
        snprintf(cursor, sizeof cursor, "%s", s->element[0]->str);
        rc = compare_batch(r, s->element[1], cp__sc_name(c));
        freeReplyObject(s);
    } while (strcmp(cursor, "0") != 0);
    r->src.c = NULL;
    cp__sc_free(c);
    return rc;
}

/* The sources' key counts in the database compared (the progress's total). */
static int count_sources(vrun *r) {
    const cp__verify_opts *o = r->o;
    for (int i = 0; i < o->nsources; i++) {
        cp__srcconn *c = cp__sc_connect(o->hosts[i], o->ports[i], o->from_user, o->from_password,
                                        o->from_tls, o->io_timeout_ms, r->err, r->errlen);
        if (c == NULL)
            return -1;
        cp__keyspace ks;
        int rc = cp__sc_keyspace(c, &ks, r->err, r->errlen);
        cp__sc_free(c);
        if (rc != 0)
            return -1;
        for (int k = 0; k < ks.n; k++)
            if (ks.db[k] == o->db)
                r->st->keys_total += ks.keys[k];
    }
    return 0;
}

/* DBSIZE of every master serving slots per the client's map. */
static int count_target(vrun *r) {
    uint64_t sum = 0;
    for (int i = 0; i < cp_node_count(r->c); i++) {
        cp_node_info n;
        if (cp_node_get(r->c, i, &n) != 0 || n.role != CP_NODE_MASTER || n.nslots == 0)
            continue;
        redisReply *d = cp_command_node(r->c, i, "DBSIZE");
        if (d == NULL || d->type != REDIS_REPLY_INTEGER) {
            snprintf(r->err, r->errlen, "target %s:%d: DBSIZE: %s", n.host, n.port,
                     d == NULL                      ? r->c->errstr
                     : d->type == REDIS_REPLY_ERROR ? d->str
                                                    : "?");
            cp_reply_free(d);
            return -1;
        }
        sum += (uint64_t)d->integer;
        cp_reply_free(d);
    }
    r->st->target_keys = sum;
    r->st->only_in_target = sum > r->st->found ? sum - r->st->found : 0;
    return 0;
}

int cp__verify_run(const cp__verify_opts *o, cp__verify_status *st, char *err, size_t errlen) {
    memset(st, 0, sizeof *st);
    vrun r = {.o = o, .st = st, .err = err, .errlen = errlen};
    r.start_ms = r.last_tick = cp__now_ms();
    cp__verify_opts fixed = *o;
    if (fixed.io_timeout_ms <= 0)
        fixed.io_timeout_ms = 5000;
    r.o = &fixed;
    cp_options co = {0};
    co.seeds = o->to;
    co.password = o->to_password;
    co.username = o->to_user;
    co.io_timeout_ms = fixed.io_timeout_ms;
    cp__rc_tls_into(&co, o->to_tls);
    r.c = cp_connect(&co);
    if (r.c == NULL)
        return snprintf(err, errlen, "out of memory"), -1;
    int rc = -1;
    if (r.c->err) {
        snprintf(err, errlen, "target %s: %s", o->to, r.c->errstr);
        goto out;
    }
    r.dst.p = cp_pipeline_new(r.c);
    if (r.dst.p == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (count_sources(&r) != 0)
        goto out;
    rc = 0;
    for (int i = 0; i < o->nsources && rc == 0; i++)
        rc = verify_source(&r, o->hosts[i], o->ports[i]);
    if (rc == 0)
        rc = count_target(&r);
out:
    tick(&r, 1);
    cp_pipeline_free(r.dst.p);
    cp_free(r.c);
    free(r.sr);
    return rc;
}
