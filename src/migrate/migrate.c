/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A migration's loop (migrate.h): one poll(2) over the sources and the target client; take what
 * the sources sent into the writer's batch being filled, send it while fewer than
 * CP__MW_IN_FLIGHT batches run, check the batches that ended (in the order sent), move each
 * source's written offset and acknowledge it, and when nothing waits, measure each source's lag
 * and re-copy its marked keys.
 */
#include "migrate/migrate.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "clusterpipe/clusterpipe.h"
#include "migrate/keyset.h"
#include "migrate/laghist.h"
#include "migrate/respconn.h"
#include "migrate/source.h"
#include "migrate/srcconn.h"
#include "migrate/tpoll.h"
#include "migrate/writer.h"
#include "util/clock.h"

#define READ_PER_TURN (4u << 20) /* bytes read from one source per turn */
#define WAIT_MS 20               /* the longest wait for a source or the target */

typedef struct msrc {
    cp__src *rep;
    cp__srcconn *plain;
    int selected; /* the stream's database (its SELECTs) */
    int snapshot_done;
    int need_ack;
    uint64_t consumed; /* the offset after the last item taken */
    int in_txn;        /* between a MULTI and its EXEC */
    uint64_t txn_offset;
    cp__mw_cmd *txn;
    int ntxn, txn_cap;
    cp__laghist offsets; /* the source's offset over time, for the lag in seconds */
} msrc;

typedef struct run {
    const cp__migrate_opts *o;
    cp_client *c;
    cp__tpoll *tp;
    struct pollfd *pf; /* the sources', then the target client's */
    int pf_cap;
    cp__migrate_status *st;
    int db;
    msrc *s;
    cp__keyset *marks;
    uint64_t *copied; /* per source: snapshot keys written */
    cp__mw *w;
    cp__mw_stats ws;
    uint64_t *written; /* per source, what cp__mw_check raises */
    char *err;
    size_t errlen;
} run;

static int64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int is(const cp__cmd *c, int i, const char *word) {
    return c->argc > i && strlen(word) == c->argvlen[i] && strcasecmp(c->argv[i], word) == 0;
}

static void free_txn(msrc *m) {
    for (int i = 0; i < m->ntxn; i++) {
        for (int a = 0; a < m->txn[i].argc; a++)
            free(m->txn[i].argv[a]);
        free(m->txn[i].argv);
        free(m->txn[i].argvlen);
    }
    m->ntxn = 0;
}

/* A member of a transaction, copied (the stream's bytes go at the next read). */
static int keep_member(msrc *m, const cp__cmd *c) {
    if (m->ntxn == m->txn_cap) {
        int cap = m->txn_cap ? m->txn_cap * 2 : 8;
        cp__mw_cmd *t = realloc(m->txn, (size_t)cap * sizeof *t);
        if (t == NULL)
            return -1;
        m->txn = t;
        m->txn_cap = cap;
    }
    cp__mw_cmd *k = &m->txn[m->ntxn];
    k->argv = calloc((size_t)c->argc, sizeof *k->argv);
    k->argvlen = calloc((size_t)c->argc, sizeof *k->argvlen);
    k->argc = 0;
    m->ntxn++;
    if (k->argv == NULL || k->argvlen == NULL)
        return -1;
    for (int i = 0; i < c->argc; i++) {
        k->argv[i] = malloc(c->argvlen[i] + 1);
        if (k->argv[i] == NULL)
            return -1;
        memcpy(k->argv[i], c->argv[i], c->argvlen[i] + 1);
        k->argvlen[i] = c->argvlen[i];
        k->argc++;
    }
    return 0;
}

/* EXEC: the unit goes to the writer (its members counted as applied), unless a member touches a
 * marked key: then every member's keys are marked and the unit waits for the re-copy with them. */
static int apply_unit(run *r, int i) {
    msrc *m = &r->s[i];
    int hit = 0;
    for (int k = 0; k < m->ntxn; k++) {
        int t = cp__mw_taints(r->w, i, m->txn[k].argc, (const char *const *)m->txn[k].argv,
                              m->txn[k].argvlen);
        if (t < 0)
            return -1;
        hit |= t;
    }
    if (!hit) {
        r->st->src[i].commands_applied += (uint64_t)m->ntxn;
        return cp__mw_unit(r->w, i, m->txn, m->ntxn);
    }
    for (int k = 0; k < m->ntxn; k++) {
        int n;
        const int *at = cp__mw_keys(r->w, m->txn[k].argc, (const char *const *)m->txn[k].argv,
                                    m->txn[k].argvlen, &n);
        if (at == NULL)
            return -1;
        for (int j = 0; j < n; j++)
            if (cp__keyset_add(&r->marks[i], m->txn[k].argv[at[j]], m->txn[k].argvlen[at[j]]))
                return -1;
    }
    return 0;
}

/* One command of the stream. MULTI and EXEC bound a unit whatever the database selected: a
 * transaction's members may SELECT another database (Redis 7.2 puts the SELECT inside the
 * MULTI; 7.0 can switch databases between members), and only the members of the database moved
 * are kept. */
static int take_command(run *r, int i, const cp__cmd *c) {
    msrc *m = &r->s[i];
    cp__migrate_source_status *ss = &r->st->src[i];
    if (c->argc == 0)
        return 0; /* a keepalive */
    if (is(c, 0, "SELECT") && c->argc == 2) {
        m->selected = atoi(c->argv[1]);
        return 0;
    }
    if (is(c, 0, "PING"))
        return 0;
    if (is(c, 0, "REPLCONF")) {
        m->need_ack |= is(c, 1, "GETACK");
        return 0;
    }
    if (is(c, 0, "MULTI")) {
        free_txn(m);
        m->in_txn = 1;
        m->txn_offset = c->offset;
        return 0;
    }
    if (is(c, 0, "EXEC") && m->in_txn) {
        int rc = m->ntxn > 0 ? apply_unit(r, i) : 0;
        free_txn(m);
        m->in_txn = 0;
        return rc;
    }
    if (m->selected != r->db) {
        ss->commands_other_db++;
        return 0;
    }
    if (m->in_txn)
        return keep_member(m, c);
    int t = cp__mw_taints(r->w, i, c->argc, c->argv, c->argvlen);
    if (t != 0)
        return t < 0 ? -1 : 0;
    ss->commands_applied++;
    return cp__mw_command(r->w, i, c->argc, c->argv, c->argvlen);
}

/* Source i's snapshot held data of module types, and skipping them was not asked for. -1. */
static int refuse_unknowns(run *r, int i) {
    const cp__unknowns *u = &r->st->src[i].unknown;
    size_t n = (size_t)snprintf(
        r->err, r->errlen,
        "source %s: its snapshot holds %llu keys and %llu aux data of module types (%s), which "
        "a target without those modules cannot take: stopped. The sources were only read; the "
        "keys copied so far are copies (running again rewrites them). --skip-unknown-types moves "
        "the rest and lists what it skips. The first keys:",
        r->st->src[i].name, (unsigned long long)u->keys, (unsigned long long)u->aux, u->types);
    for (int k = 0; k < u->listed && n < r->errlen; k++)
        n += (size_t)snprintf(r->err + n, r->errlen - n, " \"%s\"", u->key[k]);
    return -1;
}

/* Takes source i's items into the batch until it is full or the source has nothing more. */
static int take(run *r, int i) {
    msrc *m = &r->s[i];
    cp__migrate_source_status *ss = &r->st->src[i];
    cp__src_item it;
    while (!cp__mw_full(r->w)) {
        int rc = cp__src_next(m->rep, &it);
        if (rc < 0)
            return snprintf(r->err, r->errlen, "%s", cp__src_error(m->rep)), -1;
        if (rc == 0)
            return 0;
        if (it.type == CP__SRC_MODULE_AUX ||
            (it.type == CP__SRC_KEY && it.rdb.value_type == CP__RDB_TYPE_MODULE2 &&
             it.rdb.db == (uint64_t)r->db)) { /* a RESTORE of it needs the module */
            cp__unknowns_note(&ss->unknown, &it.rdb);
            continue;
        }
        if (it.type == CP__SRC_KEY) {
            const cp__rdb_event *ev = &it.rdb;
            if (ev->db != (uint64_t)r->db)
                ss->keys_other_db++;
            else if (ev->expire_ms >= 0 && ev->expire_ms <= wall_ms())
                ss->keys_expired++;
            else if (cp__mw_restore(r->w, i, 1, ev->name, ev->name_len, ev->value, ev->value_len,
                                    ev->expire_ms) != 0)
                return snprintf(r->err, r->errlen, "%s", cp__mw_error(r->w)), -1;
            continue;
        }
        if (it.type == CP__SRC_SNAPSHOT_END) {
            if (ss->unknown.keys + ss->unknown.aux > 0 && !r->o->skip_unknown_types)
                return refuse_unknowns(r, i);
            m->snapshot_done = 1;
            m->consumed = it.offset;
            m->need_ack = 1; /* a diskless master puts its replica online at its first ACK */
            continue;
        }
        if (take_command(r, i, &it.cmd) != 0)
            return snprintf(r->err, r->errlen, "source %s: %s", r->st->src[i].name,
                            cp__mw_error(r->w)),
                   -1;
        m->consumed = it.cmd.end;
    }
    return 0;
}

/* The offset after the last item taken into a batch (a transaction's members wait for EXEC). */
static uint64_t applied(const msrc *m) {
    return m->in_txn ? m->txn_offset : m->consumed;
}

static void update(run *r) {
    for (int i = 0; i < r->st->n; i++) {
        cp__migrate_source_status *ss = &r->st->src[i];
        ss->phase = (int)cp__src_phase_of(r->s[i].rep);
        ss->snapshot_bytes = cp__src_snapshot_bytes(r->s[i].rep);
        ss->marked = r->marks[i].count;
        ss->keys_copied = r->copied[i];
        if (r->s[i].snapshot_done)
            ss->offset_applied = r->written[i];
    }
    r->st->unknown = r->ws.unknown;
    r->st->not_executed = r->ws.not_executed;
    r->st->errors = r->ws.errors;
    cp_stats cs;
    cp_get_stats(r->c, &cs);
    r->st->moved = cs.moved;
    r->st->ask = cs.ask;
    snprintf(r->st->first_error, sizeof r->st->first_error, "%s", r->ws.first_error);
}

/* Sends the batch being filled, tagged with each source's offset as taken. */
static int send(run *r) {
    uint64_t off[CP__MIGRATE_MAX_SOURCES];
    for (int i = 0; i < r->st->n; i++)
        off[i] = r->s[i].snapshot_done ? applied(&r->s[i]) : 0;
    return cp__mw_send(r->w, off, r->err, r->errlen);
}

/* What was checked moves each source's written offset (all of what was taken, once nothing
 * runs nor waits), which is acknowledged where asked. */
static int settle(run *r) {
    int quiet = cp__mw_running(r->w) == 0 && cp__mw_count(r->w) == 0;
    for (int i = 0; i < r->st->n; i++) {
        msrc *m = &r->s[i];
        if (!m->snapshot_done)
            continue;
        if (quiet)
            r->written[i] = applied(m);
        /* Not before the snapshot's last keys are checked: a diskless source puts the tool
         * online at its first ACK, and an ACK below the snapshot would say what is not so. */
        if (m->need_ack && r->written[i] >= cp__src_snapshot_offset(m->rep)) {
            if (cp__src_ack(m->rep, r->written[i]) != 0)
                return snprintf(r->err, r->errlen, "%s", cp__src_error(m->rep)), -1;
            m->need_ack = 0;
        }
    }
    update(r);
    return 0;
}

/* One wait of up to timeout_ms: for the target client's fds and timer and, with_sources, for
 * the sources' fds (their results left in r->pf[0..n) for the caller), then the target's results
 * handed over and the batches that ended checked. 0, or -1 with err. */
static int wait_once(run *r, int with_sources, int timeout_ms) {
    int ns = with_sources ? r->st->n : 0, need = ns + cp__tpoll_count(r->tp);
    if (need > r->pf_cap) {
        struct pollfd *p = realloc(r->pf, (size_t)need * sizeof *p);
        if (p == NULL)
            return snprintf(r->err, r->errlen, "out of memory"), -1;
        r->pf = p;
        r->pf_cap = need;
    }
    for (int i = 0; i < ns; i++)
        r->pf[i] =
            (struct pollfd){.fd = cp__src_fd(r->s[i].rep), .events = cp__src_events(r->s[i].rep)};
    int nt = cp__tpoll_fill(r->tp, r->pf + ns, &timeout_ms);
    int pr = poll(r->pf, (nfds_t)(ns + nt), timeout_ms);
    if (pr < 0 && errno != EINTR)
        return snprintf(r->err, r->errlen, "poll: %s", strerror(errno)), -1;
    if (pr < 0)
        for (int i = 0; i < ns + nt; i++)
            r->pf[i].revents = 0;
    cp__tpoll_dispatch(r->tp, r->pf + ns, nt);
    if (cp__mw_check(r->w, &r->ws, r->written, r->err, r->errlen) != 0)
        return -1;
    return settle(r);
}

/* Sends what fills and waits until no batch runs. 0, or -1 with err. */
static int drain(run *r) {
    if (send(r) != 0)
        return -1;
    while (cp__mw_running(r->w) > 0)
        if (wait_once(r, 0, WAIT_MS) != 0)
            return -1;
    return settle(r);
}

/* A stop on an error: the batches still running are waited for (each ends within the client's
 * retry budget and I/O timeout), so the counts said are those of every command sent. */
static void finish_running(run *r) {
    char scratch[256];                    /* the first error stays the one said */
    int64_t until = cp__now_ms() + 60000; /* the library ends them sooner: this only bounds it */
    for (;;) {
        cp__mw_check(r->w, &r->ws, r->written, scratch, sizeof scratch);
        int timeout = WAIT_MS, nt = cp__tpoll_count(r->tp);
        if (cp__mw_running(r->w) == 0 || cp__now_ms() >= until || nt > r->pf_cap)
            break; /* (no room to poll: cp_free ends them, uncounted) */
        nt = cp__tpoll_fill(r->tp, r->pf, &timeout);
        if (poll(r->pf, (nfds_t)nt, timeout) < 0 && errno != EINTR)
            break;
        cp__tpoll_dispatch(r->tp, r->pf, nt);
    }
    update(r);
}

/* Room in the writer for one more command: the batch filling is sent, and waits until one
 * ends. 0, or -1 with err. */
static int make_room(run *r) {
    if (send(r) != 0)
        return -1;
    while (cp__mw_full(r->w))
        if (wait_once(r, 0, WAIT_MS) != 0)
            return -1;
    return 0;
}

/* Source i's offset now (its plain connection); when the source went away, the error says so. */
static int source_offset(run *r, int i, uint64_t *off) {
    if (cp__sc_offset(r->s[i].plain, off, r->err, r->errlen) == 0)
        return 0;
    if (cp__src_gone(r->s[i].rep))
        snprintf(r->err, r->errlen, "%s", cp__src_error(r->s[i].rep));
    return -1;
}

/* Re-copies source i's marked keys. confirm: only if the source's offset equals the offset
 * applied after the re-copy as it did before (the caller checked before): else the keys stay
 * marked. 0, or -1 with err. */
static int recopy(run *r, int i, int confirm) {
    msrc *m = &r->s[i];
    cp__keyset taking = r->marks[i];
    r->marks[i] = (cp__keyset){0};
    size_t at = 0;
    const char *key;
    size_t klen;
    int rc = 0;
    while (rc == 0 && cp__keyset_walk(&taking, &at, &key, &klen)) {
        char *payload = NULL;
        size_t plen;
        int64_t exp;
        rc = cp__sc_dump(m->plain, key, klen, &payload, &plen, &exp, r->err, r->errlen);
        if (rc == 0 && cp__mw_full(r->w))
            rc = make_room(r);
        if (rc != 0) {
            free(payload);
            break;
        }
        rc = payload ? cp__mw_restore(r->w, i, 0, key, klen, (unsigned char *)payload, plen, exp)
                     : cp__mw_del(r->w, i, key, klen);
        free(payload);
        if (rc != 0)
            snprintf(r->err, r->errlen, "%s", cp__mw_error(r->w));
    }
    if (rc == 0)
        rc = drain(r);
    uint64_t off = 0;
    if (rc == 0 && confirm)
        rc = source_offset(r, i, &off);
    if (rc != 0 || (confirm && off != applied(m))) {
        at = 0;
        while (cp__keyset_walk(&taking, &at, &key, &klen))
            cp__keyset_add(&r->marks[i], key, klen);
    } else {
        r->st->src[i].recopied += taking.count - r->marks[i].count;
    }
    cp__keyset_clear(&taking);
    update(r);
    return rc;
}

/* Every source's keyspace: records each source's total in the database moved and, when none was
 * chosen, refuses sources with keys in another one, naming each such database and its count. */
static int check_databases(run *r) {
    size_t n = 0;
    for (int i = 0; i < r->st->n; i++) {
        cp__keyspace ks;
        if (cp__sc_keyspace(r->s[i].plain, &ks, r->err, r->errlen) != 0)
            return -1;
        int named = 0;
        for (int k = 0; k < ks.n; k++) {
            if (ks.db[k] == r->db)
                r->st->src[i].snapshot_keys_total = ks.keys[k];
            if (ks.db[k] == r->db || r->o->db >= 0 || n >= r->errlen)
                continue;
            if (n == 0)
                n += (size_t)snprintf(r->err, r->errlen, "a cluster has database 0 only:");
            if (n < r->errlen && !named)
                n += (size_t)snprintf(r->err + n, r->errlen - n, "%s source %s has keys in",
                                      n > 40 ? ";" : "", r->st->src[i].name);
            if (n < r->errlen)
                n += (size_t)snprintf(r->err + n, r->errlen - n, "%s db%d (%llu keys)",
                                      named ? "," : "", ks.db[k], (unsigned long long)ks.keys[k]);
            named = 1;
        }
    }
    if (n > 0 && n < r->errlen)
        snprintf(r->err + n, r->errlen - n, "; move one database with --db N");
    return n > 0 ? -1 : 0;
}

/* The source's offset off, just read: source i's lag in bytes and in seconds. */
static void note_lag(run *r, int i, uint64_t off) {
    msrc *m = &r->s[i];
    cp__migrate_source_status *ss = &r->st->src[i];
    int64_t now = cp__now_ms();
    cp__laghist_note(&m->offsets, now, off);
    if (r->written[i] < cp__src_snapshot_offset(m->rep))
        return; /* the snapshot's last keys still running: no lag yet */
    ss->lag_bytes = (int64_t)(off - r->written[i]);
    ss->lag_seconds = cp__laghist_seconds(&m->offsets, now, r->written[i], &ss->lag_at_least);
}

static int lag_check(run *r, int *all_synced) {
    *all_synced = 1;
    for (int i = 0; i < r->st->n; i++) {
        msrc *m = &r->s[i];
        uint64_t off = 0;
        if (m->snapshot_done && source_offset(r, i, &off) != 0)
            return -1;
        if (m->snapshot_done)
            note_lag(r, i, off);
        if (!m->snapshot_done || off != applied(m) || m->in_txn) {
            *all_synced = 0;
            continue;
        }
        if (r->marks[i].count > 0 && recopy(r, i, 1) != 0)
            return -1;
        if (r->marks[i].count > 0)
            *all_synced = 0;
    }
    return 0;
}

/* Each source's lag as it stands (what it sent and is not yet written included), for the
 * progress lines. */
static int measure_lag(run *r) {
    uint64_t off;
    for (int i = 0; i < r->st->n; i++)
        if (r->s[i].snapshot_done) {
            if (source_offset(r, i, &off) != 0)
                return -1;
            note_lag(r, i, off);
        }
    return 0;
}

static int idle(run *r) {
    if (cp__mw_count(r->w) > 0 || cp__mw_running(r->w) > 0)
        return 0;
    for (int i = 0; i < r->st->n; i++)
        if (!r->s[i].snapshot_done || cp__src_received(r->s[i].rep) != r->s[i].consumed)
            return 0;
    return 1;
}

static int loop(run *r) {
    const cp__migrate_opts *o = r->o;
    int n = r->st->n;
    int64_t start = cp__now_ms(), last_tick = start, last_check = 0;
    int check_every = o->until_synced ? 20 : 1000;
    unsigned turn = 0;
    for (;;) {
        int stopping = o->stop != NULL && *o->stop;
        if (wait_once(r, !stopping, WAIT_MS) != 0)
            return -1;
        if (!stopping) {
            /* Each source read as fast as it sends (the stream: what the target has not taken
             * yet waits in this process, not in the source's replica output buffer, which has a
             * limit; the snapshot up to its read-ahead); the batch filled from a different
             * source first each turn, so none waits behind another's backlog. */
            for (int k = 0; k < n; k++) {
                int i = (int)((turn + (unsigned)k) % (unsigned)n);
                if (cp__src_io(r->s[i].rep, r->pf[i].revents, READ_PER_TURN) != 0)
                    return snprintf(r->err, r->errlen, "%s", cp__src_error(r->s[i].rep)), -1;
                if (take(r, i) != 0)
                    return -1;
                if (r->s[i].snapshot_done) /* the stream's bytes as they come: its times */
                    cp__laghist_note(&r->s[i].offsets, cp__now_ms(), cp__src_received(r->s[i].rep));
            }
            turn++;
            if (send(r) != 0)
                return -1;
        }
        int64_t now = cp__now_ms();
        r->st->elapsed_s = (double)(now - start) / 1000.0;
        if (now - last_tick >= 1000) {
            for (int i = 0; i < n; i++)
                r->s[i].need_ack |= r->s[i].snapshot_done;
            if (settle(r) != 0 || measure_lag(r) != 0)
                return -1;
            if (o->progress != NULL)
                o->progress(r->st, 0, o->progress_arg);
            last_tick = now;
        }
        if (stopping || (o->stop != NULL && *o->stop)) /* also a stop asked during the wait */
            return drain(r); /* what was taken is written and checked, then the run ends */
        if (idle(r) && now - last_check >= check_every) {
            last_check = now;
            int synced;
            if (lag_check(r, &synced) != 0)
                return -1;
            if (o->until_synced && synced) {
                r->st->synced = 1;
                return 0;
            }
        }
    }
}

/* A cluster target must serve every slot: a key of a slot no master serves could not be
 * written, and each batch holding one would wait out the retry budget. 0, or -1 with err naming
 * the first slots without a master. */
static int target_unserved(cp_client *c, const char *to, char *err, size_t errlen) {
    if (!cp_is_cluster(c))
        return 0;
    static unsigned char served[CP_SLOTS];
    memset(served, 0, sizeof served);
    int total = 0;
    for (int n = 0; n < cp_node_count(c); n++) {
        static int ranges[CP_SLOTS][2];
        int k = cp_node_slots(c, n, ranges, CP_SLOTS);
        for (int j = 0; j < k && j < CP_SLOTS; j++)
            for (int s = ranges[j][0]; s <= ranges[j][1] && s < CP_SLOTS; s++) {
                total += !served[s];
                served[s] = 1;
            }
    }
    if (total == CP_SLOTS)
        return 0;
    int first = 0;
    while (served[first])
        first++;
    int last = first;
    while (last + 1 < CP_SLOTS && !served[last + 1])
        last++;
    snprintf(err, errlen,
             "target %s serves %d of %d slots (none serves slots %d-%d%s): a key there could "
             "not be written; give every slot a master first",
             to, total, CP_SLOTS, first, last, CP_SLOTS - total > last - first + 1 ? ", ..." : "");
    return -1;
}

int cp__migrate_run(const cp__migrate_opts *o, cp__migrate_status *st, char *err, size_t errlen) {
    memset(st, 0, sizeof *st);
    if (o->nsources < 1 || o->nsources > CP__MIGRATE_MAX_SOURCES)
        return snprintf(err, errlen, "1 to %d sources", CP__MIGRATE_MAX_SOURCES), -1;
    st->n = o->nsources;
    run r = {.o = o, .st = st, .db = o->db < 0 ? 0 : o->db, .err = err, .errlen = errlen};
    for (int i = 0; i < st->n; i++) {
        snprintf(st->src[i].name, sizeof st->src[i].name, "%s:%d", o->hosts[i], o->ports[i]);
        st->src[i].lag_bytes = -1;
        st->src[i].lag_seconds = -1;
    }
    int timeout = o->io_timeout_ms > 0 ? o->io_timeout_ms : 5000;
    cp_options co = {0};
    co.seeds = o->to;
    co.password = o->to_password;
    co.username = o->to_user;
    co.io_timeout_ms = timeout;
    co.max_pending = CP_PENDING_UNLIMITED; /* the writer bounds what runs: CP__MW_IN_FLIGHT */
    cp__rc_tls_into(&co, o->to_tls);
    cp_client *c = cp_connect(&co);
    if (c == NULL)
        return snprintf(err, errlen, "out of memory"), -1;
    int rc = -1;
    if (c->err || target_unserved(c, o->to, err, errlen) != 0) {
        if (c->err)
            snprintf(err, errlen, "target %s: %s", o->to, c->errstr);
        cp_free(c);
        return -1;
    }
    r.c = c;
    r.s = calloc((size_t)st->n, sizeof *r.s);
    r.marks = calloc((size_t)st->n, sizeof *r.marks);
    r.copied = calloc((size_t)st->n, sizeof *r.copied);
    r.written = calloc((size_t)st->n, sizeof *r.written);
    r.tp = cp__tpoll_new();
    r.w = r.marks && r.copied ? cp__mw_new(c, st->n, r.marks, r.copied) : NULL;
    if (r.s == NULL || r.w == NULL || r.written == NULL || r.tp == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (cp__tpoll_attach(r.tp, c) != 0) {
        snprintf(err, errlen, "target %s: the client could not be put on the loop", o->to);
        goto out;
    }
    for (int i = 0; i < st->n; i++) {
        /* Its answers are due within the source timeout: a frozen source is named then, a busy
         * one (a fork, a long command) is waited for as long. */
        int silence = o->silence_ms > 0 ? o->silence_ms : 60000;
        r.s[i].plain = cp__sc_connect(o->hosts[i], o->ports[i], o->from_user, o->from_password,
                                      o->from_tls, silence, err, errlen);
        if (r.s[i].plain == NULL)
            goto out;
    }
    if (check_databases(&r) != 0)
        goto out;
    for (int i = 0; i < st->n; i++) {
        if (cp__sc_select(r.s[i].plain, r.db, err, errlen) != 0)
            goto out;
        r.s[i].rep = cp__src_new(o->hosts[i], o->ports[i], o->from_user, o->from_password,
                                 o->from_tls, o->silence_ms > 0 ? o->silence_ms : 60000);
        if (r.s[i].rep == NULL) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        if (cp__src_start(r.s[i].rep) != 0) {
            snprintf(err, errlen, "%s", cp__src_error(r.s[i].rep));
            goto out;
        }
    }
    rc = loop(&r);
    if (rc == 0 && !st->synced) { /* stopped: what is marked is re-copied as the source is now */
        for (int i = 0; i < st->n && rc == 0; i++)
            if (r.marks[i].count > 0 && r.s[i].snapshot_done)
                rc = recopy(&r, i, 0);
        if (rc == 0)
            rc = measure_lag(&r); /* where each source stands, for the last lines */
    }
    if (rc == 0) { /* the last acknowledgements, written before the connections close */
        for (int i = 0; i < st->n; i++)
            if (r.s[i].snapshot_done && cp__src_ack(r.s[i].rep, r.written[i]) == 0)
                cp__src_io(r.s[i].rep, POLLOUT, 0);
    }
    update(&r);
out:
    if (r.w != NULL && cp__mw_running(r.w) > 0)
        finish_running(&r);
    if (o->progress != NULL)
        o->progress(st, 1, o->progress_arg);
    for (int i = 0; r.s != NULL && i < st->n; i++) {
        cp__src_free(r.s[i].rep);
        cp__sc_free(r.s[i].plain);
        free_txn(&r.s[i]);
        free(r.s[i].txn);
    }
    for (int i = 0; r.marks != NULL && i < st->n; i++)
        cp__keyset_clear(&r.marks[i]);
    cp__mw_free(r.w);
    free(r.written);
    free(r.pf);
    free(r.copied);
    free(r.marks);
    free(r.s);
    cp_free(c);
    cp__tpoll_free(r.tp);
    return rc;
}
