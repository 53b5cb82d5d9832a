/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Running a scenario (scenario.h): the cases of each scenario, and for each case the sequence
 * up -> load -> bench in a thread + the event from this thread -> join -> read-back -> down, with
 * every event time recorded on CLOCK_MONOTONIC and placed on the run's timeline afterwards.
 *
 * Threads: the calling thread does all orchestration (so PR_SET_PDEATHSIG ties every server to
 * it) and the bench engine runs in one extra thread per case (cp__bench_run, which starts its own
 * workers). The two share only the bench_thread struct: the config and target are written before
 * the thread starts, `done` and `start_est_ns` are atomics, and the result is read after
 * pthread_join. The per-key version table is written by the workers and read (snapshot, read
 * back) here with relaxed atomics. The topology is changed only after the bench has started its
 * measured interval, when the engine no longer reads it.
 *
 * Ownership: the document and every per-case object are built here and handed to the caller;
 * version tables, bench results and topology handles are freed before a case ends. Never prints:
 * progress goes to the log hook.
 */
#include "scenario/scenario.h"

#include "bench/readback.h"
#include "bench/load.h"
#include "bench/report.h"
#include "bench/session.h"
#include "bench/target.h"
#include "util/clock.h"
#include "util/dur.h"
#include "util/env.h"
#include "wire/control.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SHARDS 4  /* the published experiment: 4 redis servers / 4 cluster masters */
#define PROXIES 4 /* and 4 nutcracker processes */
#define ERRLEN 1024
#define MAX_EVENTS 16
#define PROMOTE_TIMEOUT_NS (60ull * 1000000000ull)

/* ---- cases ---------------------------------------------------------------------------------- */

typedef struct case_def {
    const char *name;  /* in the document and the chart */
    const char *setup; /* "cluster" | "twemproxy" */
    cp_topo_kind kind;
    int replicas, auto_eject;
    int open_loop;  /* at half the capacity a closed-loop calibration measured (bench --rate) */
    int timeout_ms; /* twemproxy: nutcracker's `timeout:`; 0: none */
} case_def;

static const case_def reshard_cases[] = {
    {"cluster", "cluster", CP_TOPO_CLUSTER, 0, 0, 0, 0},
    {"twemproxy", "twemproxy", CP_TOPO_TWEMPROXY, 0, 0, 0, 0},
};

static const case_def failover_cases[] = {
    {"cluster", "cluster", CP_TOPO_CLUSTER, 1, 0, 0, 0},
    {"cluster open loop", "cluster", CP_TOPO_CLUSTER, 1, 0, 1, 0},
    {"twemproxy eject", "twemproxy", CP_TOPO_TWEMPROXY, 0, 1, 0, 0},
    {"twemproxy no-eject", "twemproxy", CP_TOPO_TWEMPROXY, 0, 0, 0, 0},
};

/* The faults on the wire. The cluster keeps a replica per master, to show that a partition of
 * the client's path alone fails nothing over (the bus is direct); twemproxy runs with and
 * without nutcracker's `timeout:`, which is what decides whether a request to an unreachable
 * server fails or waits. */
#define NUTCRACKER_TIMEOUT_MS 500
static const case_def wire_cases[] = {
    {"cluster", "cluster", CP_TOPO_CLUSTER, 1, 0, 0, 0},
    {"twemproxy timeout", "twemproxy", CP_TOPO_TWEMPROXY, 0, 0, 0, NUTCRACKER_TIMEOUT_MS},
    {"twemproxy no-timeout", "twemproxy", CP_TOPO_TWEMPROXY, 0, 0, 0, 0},
};

typedef struct event {
    const char *name;
    uint64_t ns; /* CLOCK_MONOTONIC */
} event;

typedef struct scn {
    const cp__scn_opts *o;
    cp__session ss; /* o's hooks, cancel flag and hgrm_dir */
    json_t *doc;
    json_t *procs; /* processes spawned in the current case */
    event ev[MAX_EVENTS];
    int nev;
    uint64_t event_start, event_end; /* the change began / its effects ended (monotonic ns) */
} scn;

static void mark(scn *s, const char *name) {
    if (s->nev < MAX_EVENTS)
        s->ev[s->nev++] = (event){name, cp__now_ns()};
}

static void fwd_log(void *ud, const char *line) {
    const scn *s = ud;
    if (s->o->log != NULL)
        s->o->log(s->o->ud, line);
}

/* Every spawn is recorded in the case (so a reader can check by PID that nothing was left
 * running) and passed on to the caller's hook. */
static void on_spawn(void *ud, const cp_proc *p) {
    scn *s = ud;
    if (s->procs != NULL)
        json_array_append_new(s->procs,
                              json_pack("{s:s,s:i,s:I,s:I}", "role", cp_proc_role_name(p->role),
                                        "port", p->port, "pid", (json_int_t)p->pid, "start_time",
                                        (json_int_t)p->start_time));
    if (s->o->on_spawn != NULL)
        s->o->on_spawn(s->o->ud, p);
}

/* ---- the bench thread ----------------------------------------------------------------------- */

typedef struct bench_thread {
    const cp__bench_target *target;
    cp__bench_config cfg;
    cp__bench_result res;
    int rc;
    char err[ERRLEN];
    pthread_t tid;
    _Atomic int done;
    _Atomic uint64_t start_est_ns; /* estimated start of the measured interval; 0: not yet */
} bench_thread;

/* Called by the engine at the end of each second (on the bench thread): the first call tells
 * this thread when the measured interval began, so the event can be scheduled after the
 * warm-up. The exact start comes with the result (res.start_ns) for placing events. */
static void bench_progress(void *ud, const cp__bench_progress *p) {
    bench_thread *b = ud;
    if (atomic_load(&b->start_est_ns) == 0)
        atomic_store(&b->start_est_ns, cp__now_ns() - (uint64_t)(p->elapsed * 1e9));
}

static void *bench_main(void *arg) {
    bench_thread *b = arg;
    b->rc = cp__bench_run(b->target, &b->cfg, &b->res, b->err, sizeof(b->err));
    atomic_store(&b->done, 1);
    return NULL;
}

/* Waits until monotonic time `until`. Returns 0 then, or 1 when cancelled or (with stop_on_done)
 * when the bench ended first. */
static int wait_until(const scn *s, const bench_thread *b, uint64_t until, int stop_on_done) {
    while (cp__now_ns() < until) {
        if (cp__session_cancelled(&s->ss) || (stop_on_done && atomic_load(&b->done)))
            return 1;
        cp__sleep_ms(20);
    }
    return 0;
}

/* ---- events --------------------------------------------------------------------------------- */

/* Cluster: a new empty master, then a fifth of every master's slots moved to it with their keys,
 * one master after the other, while the load runs. */
static int reshard_cluster(scn *s, cp_topo *t, json_t *c, char *err, size_t errlen) {
    size_t masters[64], nm = 0;
    for (size_t i = 0; i < cp_topo_nprocs(t) && nm < 64; i++)
        if (cp_topo_proc(t, i)->role == CP_ROLE_MASTER)
            masters[nm++] = i;
    int per = (int)(CP_SLOTS / nm / (nm + 1));
    cp__session_say(
        &s->ss, "cluster: adding a master, then moving %d slots to it from each of the %zu masters",
        per, nm);
    size_t idx;
    mark(s, "change begins");
    s->event_start = s->ev[s->nev - 1].ns;
    int rc = cp_topo_add_node(t, -1, &idx, err, errlen);
    if (rc != 0)
        return rc;
    mark(s, "master added");
    for (size_t k = 0; k < nm; k++) {
        rc = cp_topo_migrate_slots(t, masters[k], idx, per, err, errlen);
        if (rc != 0)
            return rc;
    }
    mark(s, "slots moved");
    s->event_end = s->ev[s->nev - 1].ns;
    json_object_set_new(c, "slots_moved", json_integer(per * (int)nm));
    return 0;
}

/* twemproxy: a fifth server in every proxy's config, then the proxies restarted one by one
 * (nutcracker cannot reload or migrate: keys that ketama now places on the new server stay
 * behind on the old ones). */
static int reshard_twemproxy(scn *s, cp_topo *t, char *err, size_t errlen) {
    cp__session_say(&s->ss,
                    "twemproxy: adding a fifth server, then restarting the %d proxies one by one",
                    PROXIES);
    mark(s, "change begins");
    s->event_start = s->ev[s->nev - 1].ns;
    int rc = cp_topo_add_shard(t, NULL, err, errlen);
    if (rc != 0)
        return rc;
    mark(s, "server added");
    rc = cp_topo_restart_proxies(t, err, errlen);
    if (rc != 0)
        return rc;
    mark(s, "proxies back");
    s->event_end = s->ev[s->nev - 1].ns;
    return 0;
}

/* Polls the replica until it reports role master (Redis Cluster promotes it on its own after
 * cluster-node-timeout). Returns 0, or -1 on timeout / cancel. */
static int wait_promoted(const scn *s, const cp_topo *t, size_t replica, uint64_t deadline) {
    char ep[96];
    snprintf(ep, sizeof(ep), "%s:%d", cp_topo_proc(t, replica)->host,
             cp_topo_proc(t, replica)->port);
    cp_options co = CP_OPTIONS_INIT;
    cp_topo_client_options(t, &co);
    co.endpoint = ep;
    co.connect_timeout_ms = 500;
    co.io_timeout_ms = 500;
    cp_client *c = NULL;
    int rc = -1;
    while (cp__now_ns() < deadline && !cp__session_cancelled(&s->ss)) {
        if (c == NULL || c->err != 0) {
            if (c != NULL)
                cp_free(c);
            c = cp_connect(&co);
        }
        if (c != NULL && c->err == 0) {
            redisReply *r = cp_command(c, "ROLE");
            int master = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                         r->element[0]->type == REDIS_REPLY_STRING &&
                         strcmp(r->element[0]->str, "master") == 0;
            if (r != NULL)
                cp_reply_free(r);
            if (master) {
                rc = 0;
                break;
            }
        }
        cp__sleep_ms(50);
    }
    if (c != NULL)
        cp_free(c);
    return rc;
}

/* Kills one master (cluster) or one server (twemproxy) with SIGKILL, waits the down time (and,
 * in a cluster, for the replica to take over), then restarts it with its original config. */
static int failover(scn *s, cp_topo *t, const bench_thread *b, json_t *c, char *err,
                    size_t errlen) {
    int cluster = cp_topo_get_kind(t) == CP_TOPO_CLUSTER;
    size_t victim = SIZE_MAX, replica = SIZE_MAX;
    for (size_t i = 0; i < cp_topo_nprocs(t) && victim == SIZE_MAX; i++)
        if (cp_topo_proc(t, i)->role == (cluster ? CP_ROLE_MASTER : CP_ROLE_SHARD))
            victim = i;
    for (size_t i = 0; cluster && i < cp_topo_nprocs(t); i++)
        if (cp_topo_proc(t, i)->role == CP_ROLE_REPLICA &&
            cp_topo_proc(t, i)->master == (int)victim)
            replica = i;
    if (victim == SIZE_MAX || (cluster && replica == SIZE_MAX)) {
        snprintf(err, errlen, "no %s to kill", cluster ? "master with a replica" : "server");
        return CP_EINVAL;
    }
    const cp_proc *v = cp_topo_proc(t, victim);
    json_object_set_new(c, "killed",
                        json_pack("{s:s,s:i,s:I}", "role", cp_proc_role_name(v->role), "port",
                                  v->port, "pid", (json_int_t)v->pid));
    cp__session_say(&s->ss, "%s: kill -9 the %s on port %d (pid %ld)",
                    cluster ? "cluster" : "twemproxy", cluster ? "master" : "server", v->port,
                    (long)v->pid);
    mark(s, "killed");
    s->event_start = s->ev[s->nev - 1].ns;
    int rc = cp_topo_kill(t, victim, SIGKILL, err, errlen);
    if (rc != 0)
        return rc;
    if (cluster) {
        if (wait_promoted(s, t, replica, s->event_start + PROMOTE_TIMEOUT_NS) != 0) {
            snprintf(err, errlen, "the replica on port %d did not take over within %llu s",
                     cp_topo_proc(t, replica)->port,
                     (unsigned long long)(PROMOTE_TIMEOUT_NS / 1000000000ull));
            return cp__session_cancelled(&s->ss) ? CP_EIO : CP_ETIMEDOUT;
        }
        mark(s, "replica promoted");
        cp__session_say(&s->ss, "cluster: the replica on port %d is master %.2f s after the kill",
                        cp_topo_proc(t, replica)->port,
                        (double)(s->ev[s->nev - 1].ns - s->event_start) / 1e9);
    }
    if (wait_until(s, b, s->event_start + (uint64_t)(s->o->down_s * 1e9), 0) != 0) {
        snprintf(err, errlen, "interrupted");
        return CP_EIO;
    }
    cp__session_say(&s->ss, "%s: restarting the killed %s", cluster ? "cluster" : "twemproxy",
                    cluster ? "master" : "server");
    mark(s, "restart");
    rc = cp_topo_restart(t, victim, err, errlen);
    if (rc != 0)
        return rc;
    mark(s, "back");
    s->event_end = s->ev[s->nev - 1].ns;
    return 0;
}

/* ---- faults on the wire --------------------------------------------------------------------- */

#define WIRE_ASK_MS 2000
#define PROBE_MS 50          /* one GET per shard this often during the fault */
#define PROBE_TIMEOUT_MS 250 /* a probe not answered by then counts as unanswered */
#define PROBE_MAX 4096       /* samples per shard kept */

/* The link the fault is on: cluster, the client's link to the first master; twemproxy, the
 * first proxy's link to the first shard not on its host. *via: the process a probe talks to
 * (the master itself, or that proxy). -1 when there is none. */
static int fault_link(const cp_topo *t, size_t *victim, size_t *via) {
    int cluster = cp_topo_get_kind(t) == CP_TOPO_CLUSTER;
    for (size_t k = 0; k < cp_topo_nlinks(t); k++) {
        const cp_link *l = cp_topo_link(t, k);
        if (!l->crosses)
            continue;
        cp_proc_role to = cp_topo_proc(t, (size_t)l->to)->role;
        if (cluster && l->from == CP_LINK_CLIENT && to == CP_ROLE_MASTER) {
            *victim = *via = (size_t)l->to;
            return (int)k;
        }
        if (!cluster && l->from >= 0 && to == CP_ROLE_SHARD) {
            *victim = (size_t)l->to;
            *via = (size_t)l->from;
            return (int)k;
        }
    }
    return -1;
}

/* Bytes the wire delivered on link `name`, both ways ("stats": wire/control.h). 0 when the
 * wire could not be asked (err set) or has no such link. */
static int link_bytes(const cp_topo *t, const char *name, uint64_t *bytes, char *err,
                      size_t errlen) {
    char out[16384], key[64];
    if (cp__wire_ask(cp_topo_wire_control(t), "stats", out, sizeof(out), WIRE_ASK_MS, err,
                     errlen) != 0)
        return CP_EIO;
    snprintf(key, sizeof(key), "link %s ", name);
    for (const char *line = out; line != NULL && *line;) {
        unsigned long long up, down;
        if (strncmp(line, key, strlen(key)) == 0) {
            const char *u = strstr(line, " up ");
            if (u != NULL && sscanf(u, " up %llu down %llu", &up, &down) == 2) {
                *bytes = up + down;
                return 0;
            }
        }
        line = strchr(line, '\n');
        line = line != NULL ? line + 1 : NULL;
    }
    snprintf(err, errlen, "the wire's stats have no link %s", name);
    return CP_EIO;
}

static int ask_wire(const cp_topo *t, const char *fmt, const char *name, const char *arg, char *err,
                    size_t errlen) {
    char req[160], e[256];
    snprintf(req, sizeof(req), fmt, name, arg);
    if (cp__wire_ask(cp_topo_wire_control(t), req, NULL, 0, WIRE_ASK_MS, e, sizeof(e)) != 0) {
        snprintf(err, errlen, "the wire refused '%s': %s", req, e);
        return CP_EIO;
    }
    return 0;
}

/* One shard as the probe sees it: a key it holds (RANDOMKEY on its own port, direct), and a
 * client that reaches it by the load's path (the master's client port, or the faulted proxy). */
typedef struct probe {
    size_t shard;
    char key[128];
    cp_client *c;
    double *us; /* answered GETs' round trips */
    size_t n;
    uint64_t sent, unanswered;
} probe;

static cp_client *probe_client(const cp_topo *t, size_t i, int port) {
    char ep[96];
    snprintf(ep, sizeof(ep), "%s:%d", cp_topo_proc(t, i)->host, port);
    cp_options co = CP_OPTIONS_INIT;
    cp_topo_client_options(t, &co);
    co.endpoint = ep;
    co.connect_timeout_ms = PROBE_TIMEOUT_MS;
    co.io_timeout_ms = PROBE_TIMEOUT_MS;
    co.retry_budget_ms = CP_RETRY_NONE;
    cp_client *c = cp_connect(&co);
    if (c != NULL && c->err != 0) {
        cp_free(c);
        c = NULL;
    }
    return c;
}

/* Fills the probes' keys (before the fault: the admin path is direct anyway). */
static size_t probes_init(const cp_topo *t, probe *p, size_t max) {
    size_t n = 0;
    cp_proc_role role = cp_topo_get_kind(t) == CP_TOPO_CLUSTER ? CP_ROLE_MASTER : CP_ROLE_SHARD;
    for (size_t i = 0; i < cp_topo_nprocs(t) && n < max; i++) {
        if (cp_topo_proc(t, i)->role != role)
            continue;
        cp_client *c = probe_client(t, i, cp_topo_proc(t, i)->port);
        redisReply *r = c != NULL ? cp_command(c, "RANDOMKEY") : NULL;
        if (r != NULL && r->type == REDIS_REPLY_STRING && r->len < sizeof(p[n].key)) {
            memset(&p[n], 0, sizeof(p[n]));
            p[n].shard = i;
            memcpy(p[n].key, r->str, r->len);
            p[n].us = malloc(PROBE_MAX * sizeof(double));
            if (p[n].us != NULL)
                n++;
        }
        if (r != NULL)
            cp_reply_free(r);
        if (c != NULL)
            cp_free(c);
    }
    return n;
}

/* One GET per probe, each through the load's path to its shard. */
static void probes_round(const cp_topo *t, probe *p, size_t n, size_t via) {
    int cluster = cp_topo_get_kind(t) == CP_TOPO_CLUSTER;
    for (size_t k = 0; k < n; k++) {
        size_t to = cluster ? p[k].shard : via;
        p[k].sent++;
        if (p[k].c == NULL)
            p[k].c = probe_client(t, to, cp_topo_client_port(t, to));
        uint64_t t0 = cp__now_ns();
        redisReply *r = p[k].c != NULL ? cp_command(p[k].c, "GET %s", p[k].key) : NULL;
        double us = (double)(cp__now_ns() - t0) / 1e3;
        if (r != NULL && r->type == REDIS_REPLY_STRING) {
            if (p[k].n < PROBE_MAX)
                p[k].us[p[k].n++] = us;
        } else {
            p[k].unanswered++;
            if (p[k].c != NULL) { /* a timed-out connection is out of step: a new one */
                cp_free(p[k].c);
                p[k].c = NULL;
            }
        }
        if (r != NULL)
            cp_reply_free(r);
    }
}

static double percentile(double *v, size_t n, double q) {
    if (n == 0)
        return NAN;
    cp__scn_median(v, n); /* sorts */
    size_t i = (size_t)ceil(q / 100.0 * (double)n);
    return v[i > 0 ? i - 1 : 0];
}

/* The probes as JSON (one object per shard), freeing them. */
static json_t *probes_json(const cp_topo *t, probe *p, size_t n, size_t victim) {
    json_t *a = json_array();
    for (size_t k = 0; k < n; k++) {
        json_array_append_new(
            a,
            json_pack("{s:i,s:b,s:I,s:I,s:I,s:o,s:o}", "port", cp_topo_proc(t, p[k].shard)->port,
                      "faulted", p[k].shard == victim, "gets", (json_int_t)p[k].sent, "answered",
                      (json_int_t)p[k].n, "unanswered", (json_int_t)p[k].unanswered, "p50_us",
                      p[k].n ? json_real(percentile(p[k].us, p[k].n, 50)) : json_null(), "p99_us",
                      p[k].n ? json_real(percentile(p[k].us, p[k].n, 99)) : json_null()));
        if (p[k].c != NULL)
            cp_free(p[k].c);
        free(p[k].us);
    }
    return a;
}

/* After the heal: probes the faulted shard alone until a GET through the healed path is
 * answered (or the run ends). Returns the seconds from the heal to that answer, NaN when none
 * came. The samples are not kept: the probes' numbers are the fault's. */
static double probe_recovery(const scn *s, const cp_topo *t, probe *p, size_t n, size_t victim,
                             size_t via, const bench_thread *b) {
    size_t k = 0;
    while (k < n && p[k].shard != victim)
        k++;
    if (k == n)
        return NAN;
    probe one = p[k];
    one.n = PROBE_MAX; /* full: keeps no sample */
    while (!cp__session_cancelled(&s->ss) && !atomic_load(&b->done)) {
        uint64_t unanswered = one.unanswered;
        probes_round(t, &one, 1, via);
        if (one.unanswered == unanswered)
            break;
        cp__sleep_ms(PROBE_MS / 5);
    }
    p[k].c = one.c;
    return one.unanswered == p[k].unanswered + (one.sent - p[k].sent)
               ? NAN
               : (double)(cp__now_ns() - s->event_end) / 1e9;
}

/* 1 when process i answers ROLE with "master" on its own port, 0 when with something else, -1
 * when it could not be asked. */
static int role_is_master(const cp_topo *t, size_t i) {
    cp_client *c = probe_client(t, i, cp_topo_proc(t, i)->port);
    redisReply *r = c != NULL ? cp_command(c, "ROLE") : NULL;
    int rc = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                     r->element[0]->type == REDIS_REPLY_STRING
                 ? strcmp(r->element[0]->str, "master") == 0
                 : -1;
    if (r != NULL)
        cp_reply_free(r);
    if (c != NULL)
        cp_free(c);
    return rc;
}

/* partition / slow-link: the link is blocked (or slowed) for down_s, the shards probed all the
 * while, then it heals. The link's bytes are read from the wire at the fault, at the heal and
 * (by the caller, after the run: fault_after) at the end, so the report shows that nothing
 * passed during a partition and that traffic came back after it. */
static int wire_fault(scn *s, cp_topo *t, const bench_thread *b, json_t *c, char *err,
                      size_t errlen) {
    int partition = s->o->kind == CP__SCN_PARTITION;
    int cluster = cp_topo_get_kind(t) == CP_TOPO_CLUSTER;
    size_t victim = 0, via = 0;
    int li = fault_link(t, &victim, &via);
    if (li < 0) {
        snprintf(err, errlen, "no link crossing hosts to put the fault on");
        return CP_EINVAL;
    }
    const cp_link *l = cp_topo_link(t, (size_t)li);
    probe pr[16];
    size_t npr = probes_init(t, pr, 16);
    char delay[32] = "0";
    cp__dur_format(s->o->delay_ns, delay, sizeof(delay));
    uint64_t b0 = 0, b1 = 0;
    const cp_proc *v = cp_topo_proc(t, victim);
    cp__session_say(&s->ss, "%s: %s link %s (to the %s on port %d) for %g s",
                    cluster ? "cluster" : "twemproxy", partition ? "blocking" : "slowing", l->name,
                    cp_proc_role_name(v->role), v->port, s->o->down_s);
    mark(s, partition ? "blocked" : "slowed");
    s->event_start = s->ev[s->nev - 1].ns;
    int rc = partition ? ask_wire(t, "block %s%s", l->name, "", err, errlen)
                       : ask_wire(t, "delay %s %s", l->name, delay, err, errlen);
    if (rc == 0) /* from the block on: a partition lets nothing through */
        rc = link_bytes(t, l->name, &b0, err, errlen);
    uint64_t until = s->event_start + (uint64_t)(s->o->down_s * 1e9);
    while (rc == 0 && cp__now_ns() < until && !cp__session_cancelled(&s->ss) &&
           !atomic_load(&b->done)) {
        uint64_t next = cp__now_ns() + PROBE_MS * 1000000ull;
        probes_round(t, pr, npr, via);
        while (cp__now_ns() < next && cp__now_ns() < until)
            cp__sleep_ms(5);
    }
    if (rc == 0 && link_bytes(t, l->name, &b1, err, errlen) != 0)
        rc = CP_EIO;
    /* heal, whatever happened meanwhile */
    char herr[ERRLEN] = "";
    int hrc = partition ? ask_wire(t, "unblock %s%s", l->name, "", herr, sizeof(herr))
                        : ask_wire(t, "delay %s %s", l->name, "0", herr, sizeof(herr));
    double recovered = NAN;
    if (hrc == 0) {
        mark(s, "healed");
        s->event_end = s->ev[s->nev - 1].ns;
        recovered = probe_recovery(s, t, pr, npr, victim, via, b);
    }
    json_t *f = json_pack("{s:s,s:s,s:i,s:s,s:i,s:I,s:I}", "link", l->name, "to",
                          cp_proc_role_name(v->role), "to_port", v->port, "from",
                          l->from >= 0 ? cp_proc_role_name(cp_topo_proc(t, via)->role) : "client",
                          "from_port", l->from >= 0 ? cp_topo_proc(t, via)->port : 0,
                          "bytes_before", (json_int_t)b0, "bytes_at_heal", (json_int_t)b1);
    json_object_set_new(f, "bytes_during", json_integer((json_int_t)(b1 - b0)));
    if (!partition)
        json_object_set_new(f, "delay_ns", json_integer((json_int_t)s->o->delay_ns));
    json_object_set_new(f, "probes", probes_json(t, pr, npr, victim));
    json_object_set_new(f, "recovered_after",
                        isnan(recovered) ? json_null() : json_real(recovered));
    if (cluster && partition) /* the bus is direct: the nodes never saw the partition */
        json_object_set_new(f, "still_master", json_integer(role_is_master(t, victim)));
    json_object_set_new(c, "fault", f);
    if (rc == 0 && hrc != 0) {
        snprintf(err, errlen, "%s", herr);
        rc = hrc;
    }
    return rc;
}

/* After the run: the faulted link's bytes since the heal (traffic came back). */
static void fault_after(const cp_topo *t, json_t *c) {
    json_t *f = json_object_get(c, "fault");
    uint64_t b2 = 0;
    char err[256];
    if (f == NULL ||
        link_bytes(t, json_string_value(json_object_get(f, "link")), &b2, err, sizeof(err)) != 0)
        return;
    json_int_t b1 = json_integer_value(json_object_get(f, "bytes_at_heal"));
    json_object_set_new(f, "bytes_after_heal", json_integer((json_int_t)b2 - b1));
}

/* ---- one case ------------------------------------------------------------------------------- */

static double rel_s(uint64_t ns, uint64_t start) {
    return ns >= start ? (double)(ns - start) / 1e9 : -(double)(start - ns) / 1e9;
}

static void case_error(json_t *c, int *failed, const char *what, const char *err) {
    char buf[ERRLEN + 64];
    snprintf(buf, sizeof(buf), "%s: %s", what, err);
    if (json_object_get(c, "error") == NULL)
        json_object_set_new(c, "error", json_string(buf));
    *failed = 1;
}

/* The open-loop case's rate: half of what a short closed-loop run of the same workload measured
 * on the loaded topology, so the load is below capacity and a drop is the topology's doing. */
#define CALIBRATION_S 3.0
static int calibrate(scn *s, const case_def *cd, const cp__bench_target *target, json_t *c,
                     double *rate, char *err, size_t errlen) {
    const cp__scn_opts *o = s->o;
    cp__bench_config cfg;
    cp__bench_config_init(&cfg);
    cfg.threads = o->threads;
    cfg.clients = o->clients;
    cfg.pipeline = o->pipeline;
    cfg.requests = 0;
    cfg.duration_s = CALIBRATION_S;
    cfg.ratio_set = o->ratio_set;
    cfg.ratio_get = o->ratio_get;
    cfg.commands = o->commands;
    cfg.keys = o->keys;
    cfg.value_size = o->value_size;
    cfg.dist = o->dist;
    cfg.retry_budget_ms = o->retry_budget_ms;
    cfg.command_line = "calibration";
    cfg.cancel = o->cancel;
    cp__bench_result r;
    cp__session_say(&s->ss, "%s: %.0f s closed loop to measure capacity", cd->name, CALIBRATION_S);
    int rc = cp__bench_run(target, &cfg, &r, err, errlen);
    if (rc == 0 && r.ops_per_sec <= 0) {
        snprintf(err, errlen, "the calibration run answered nothing");
        rc = -1;
    }
    if (rc == 0) {
        *rate = r.ops_per_sec / 2;
        json_object_set_new(c, "calibration",
                            json_pack("{s:f,s:f,s:f}", "seconds", CALIBRATION_S, "ops_per_sec",
                                      r.ops_per_sec, "offered_rate", *rate));
        cp__session_say(&s->ss, "%s: capacity %.0f ops/s; the run offers %.0f ops/s, open loop",
                        cd->name, r.ops_per_sec, *rate);
    }
    cp__bench_result_free(&r);
    return rc == 0 && !cp__session_cancelled(&s->ss) ? 0 : -1;
}

/* Loads the keys, then runs the bench thread with the event in between. Fills c; sets *failed
 * when something could not be done. The topology is up and stays up (the caller stops it). */
static void measure(scn *s, const case_def *cd, cp_topo *t, json_t *c, int *failed) {
    const cp__scn_opts *o = s->o;
    char err[ERRLEN] = "";
    cp__bench_target target;
    if (cp__bench_target_from_topo(&target, t, NULL, NULL) != 0) {
        case_error(c, failed, "target", "endpoint list too long");
        return;
    }
    cp__load_config lc;
    cp__load_config_init(&lc);
    lc.keys = o->keys;
    lc.value_size = o->value_size;
    lc.threads = o->threads;
    lc.cancel = o->cancel;
    cp__load_result lr;
    char sizes[256], dist[64];
    cp__value_sizes_format(&o->value_size, sizes, sizeof(sizes));
    cp__dist_format(&o->dist, dist, sizeof(dist));
    cp__session_say(&s->ss, "%s: loading %" PRIu64 " keys of %s bytes", cd->name, o->keys, sizes);
    if (cp__load_run(&target, &lc, &lr, err, sizeof(err)) != 0 || cp__session_cancelled(&s->ss)) {
        case_error(c, failed, "load", cp__session_cancelled(&s->ss) ? "interrupted" : err);
        return;
    }
    json_object_set_new(c, "load",
                        json_pack("{s:I,s:f,s:f}", "keys", (json_int_t)lr.written, "seconds",
                                  lr.seconds, "keys_per_sec", lr.keys_per_sec));

    double rate = 0;
    if (cd->open_loop && calibrate(s, cd, &target, c, &rate, err, sizeof(err)) != 0) {
        case_error(c, failed, "calibration", cp__session_cancelled(&s->ss) ? "interrupted" : err);
        return;
    }

    /* SET:GET: every SET's version per key (--command: none, see scenario.h) */
    int track = o->commands == NULL;
    _Atomic uint32_t *acked = track ? malloc(o->keys * sizeof(*acked)) : NULL;
    uint32_t *snap = track ? malloc(o->keys * sizeof(*snap)) : NULL;
    bench_thread *b = calloc(1, sizeof(*b));
    if ((track && (acked == NULL || snap == NULL)) || b == NULL) {
        free(acked);
        free(snap);
        free(b);
        case_error(c, failed, "memory", "cannot allocate the version table");
        return;
    }
    for (uint64_t k = 0; track && k < o->keys; k++)
        atomic_init(&acked[k], 1); /* the load wrote version 1 everywhere */
    char cmdline[12288], ratearg[48] = "", mix[10240];
    if (rate > 0)
        snprintf(ratearg, sizeof(ratearg), " --rate %.0f", rate);
    if (o->commands != NULL)
        cp__cmdset_flags(o->commands, mix, sizeof(mix));
    else
        snprintf(mix, sizeof(mix), " --ratio %u:%u", o->ratio_set, o->ratio_get);
    snprintf(cmdline, sizeof(cmdline),
             "clusterpipe bench --dir DIR --threads %d --clients %d --pipeline %d --duration %g"
             "%s --keys %" PRIu64 " --value-size %s --key-dist %s%s",
             o->threads, o->clients, o->pipeline, o->duration_s, mix, o->keys, sizes, dist,
             ratearg);
    b->target = &target;
    cp__bench_config_init(&b->cfg);
    b->cfg.threads = o->threads;
    b->cfg.clients = o->clients;
    b->cfg.pipeline = o->pipeline;
    b->cfg.requests = 0;
    b->cfg.duration_s = o->duration_s;
    b->cfg.ratio_set = o->ratio_set;
    b->cfg.ratio_get = o->ratio_get;
    b->cfg.commands = o->commands;
    b->cfg.keys = o->keys;
    b->cfg.value_size = o->value_size;
    b->cfg.dist = o->dist;
    b->cfg.retry_budget_ms = o->retry_budget_ms;
    b->cfg.rate = rate;
    b->cfg.acked_versions = acked;
    b->cfg.command_line = cmdline;
    b->cfg.progress = bench_progress;
    b->cfg.progress_ud = b;
    b->cfg.cancel = o->cancel;
    s->nev = 0;
    s->event_start = s->event_end = 0;
    char what[64];
    if (o->commands != NULL)
        cp__cmdset_label(o->commands, what, sizeof(what));
    else
        snprintf(what, sizeof(what), "SET:GET %u:%u", o->ratio_set, o->ratio_get);
    cp__session_say(
        &s->ss, "%s: %g s of %s, %d threads, %d connections, pipeline %d; the event after %g s",
        cd->name, o->duration_s, what, o->threads, o->clients, o->pipeline, o->warmup_s);
    if (pthread_create(&b->tid, NULL, bench_main, b) != 0) {
        case_error(c, failed, "bench", "cannot start a thread");
        free(acked);
        free(snap);
        free(b);
        return;
    }
    /* the warm-up: wait for the measured interval to begin, then warmup seconds */
    int rc = 0;
    while (atomic_load(&b->start_est_ns) == 0 && !atomic_load(&b->done) &&
           !cp__session_cancelled(&s->ss))
        cp__sleep_ms(20);
    if (atomic_load(&b->start_est_ns) == 0 ||
        wait_until(s, b, atomic_load(&b->start_est_ns) + (uint64_t)(o->warmup_s * 1e9), 1) != 0) {
        rc = -1; /* the bench ended early (its error is reported below) or we were stopped */
    } else {
        for (uint64_t k = 0; track && k < o->keys; k++) /* keys written after: "touched" */
            snap[k] = atomic_load_explicit(&acked[k], memory_order_relaxed);
        if (o->kind == CP__SCN_RESHARD)
            rc = cd->kind == CP_TOPO_CLUSTER ? reshard_cluster(s, t, c, err, sizeof(err))
                                             : reshard_twemproxy(s, t, err, sizeof(err));
        else if (o->kind == CP__SCN_FAILOVER)
            rc = failover(s, t, b, c, err, sizeof(err));
        else
            rc = wire_fault(s, t, b, c, err, sizeof(err));
        if (rc != 0)
            case_error(c, failed, "event", err);
        else
            cp__session_say(&s->ss, "%s: the change took %.2f s", cd->name,
                            (double)(s->event_end - s->event_start) / 1e9);
    }
    pthread_join(b->tid, NULL);
    if (cp__scn_kind_wire(o->kind))
        fault_after(t, c);
    cp__bench_result *r = &b->res;
    if (b->rc != 0)
        case_error(c, failed, "bench", b->err);
    if (cp__session_cancelled(&s->ss))
        case_error(c, failed, "run", "interrupted");

    /* every key read back, and compared with its last acknowledged version */
    cp__readback_result rb;
    memset(&rb, 0, sizeof(rb));
    int have_rb = 0;
    if (track && b->rc == 0 && !cp__session_cancelled(&s->ss)) {
        cp__readback_config rc_cfg;
        cp__readback_config_init(&rc_cfg);
        rc_cfg.keys = o->keys;
        rc_cfg.value_size = o->value_size;
        rc_cfg.threads = o->threads;
        rc_cfg.retry_budget_ms = o->retry_budget_ms;
        rc_cfg.cancel = o->cancel;
        if (cp__readback_run(&target, &rc_cfg, acked, snap, &rb, err, sizeof(err)) != 0)
            case_error(c, failed, "read-back", err);
        else
            have_rb = 1;
    }
    if (b->rc == 0) {
        json_t *ev = json_array();
        for (int i = 0; i < s->nev; i++)
            json_array_append_new(ev, json_pack("{s:s,s:f}", "name", s->ev[i].name, "t",
                                                rel_s(s->ev[i].ns, r->start_ns)));
        json_object_set_new(c, "events", ev);
        if (s->event_start != 0) {
            double t0 = rel_s(s->event_start, r->start_ns);
            double t1 = s->event_end ? rel_s(s->event_end, r->start_ns) : t0;
            json_object_set_new(
                c, "summary", cp__scn_summary_json(o->kind, r, &rb, have_rb, t0, t1, b->cfg.rate));
        }
        if (have_rb)
            json_object_set_new(c, "readback", cp__scn_readback_json(&rb));
        json_t *bo = cp__bench_json(&target, &b->cfg, r);
        if (bo != NULL) {
            json_object_set_new(c, "bench", bo);
            /* "<case>.hgrm", and each command's beside it; one that fails fails the case */
            char herr[ERRLEN] = "";
            if (cp__session_write_hgrm(&s->ss, bo, cd->name, b->cfg.commands, r, herr,
                                       sizeof(herr)) != 0)
                case_error(c, failed, "hgrm", herr);
        }
        if (r->verify_mismatches > 0 || (have_rb && rb.mismatched > 0))
            case_error(c, failed, "verification",
                       o->commands != NULL
                           ? "replies that fail their command's check (a value of another key, "
                             "or a counter that went back: see the bench's commands)"
                           : "replies that do not belong to their key");
    }
    cp__bench_result_free(r);
    free(acked);
    free(snap);
    free(b);
}

/* One case on its own topology: up, measure, down (always, whatever happened in between). */
static json_t *run_case(scn *s, const case_def *cd, int *failed) {
    const cp__scn_opts *o = s->o;
    json_t *c = json_object();
    json_object_set_new(c, "name", json_string(cd->name));
    json_object_set_new(c, "setup", json_string(cd->setup));
    json_object_set_new(
        c, "topology",
        cd->kind == CP_TOPO_CLUSTER
            ? json_pack("{s:i,s:i}", "masters", SHARDS, "replicas_per_master", cd->replicas)
            : json_pack("{s:i,s:i,s:s,s:s,s:b,s:i,s:i}", "servers", SHARDS, "proxies", PROXIES,
                        "hash", "fnv1a_64", "distribution", "ketama", "auto_eject_hosts",
                        cd->auto_eject, "server_retry_timeout_ms", 2000, "server_failure_limit",
                        3));
    if (cd->kind == CP_TOPO_TWEMPROXY && cp__scn_kind_wire(o->kind))
        json_object_set_new(json_object_get(c, "topology"), "timeout_ms",
                            cd->timeout_ms > 0 ? json_integer(cd->timeout_ms) : json_null());
    s->procs = json_array();
    json_object_set_new(c, "processes", json_incref(s->procs));
    cp_up_opts up = CP_UP_OPTS_INIT;
    up.kind = cd->kind;
    up.shards = SHARDS;
    up.replicas = cd->replicas;
    up.proxies = PROXIES;
    up.auto_eject = cd->auto_eject;
    up.server_timeout_ms = cd->timeout_ms;
    up.rtt_ns = o->rtt_ns;
    up.jitter_ns = o->jitter_ns;
    up.clusterpipe = o->clusterpipe;
    up.persistence = o->persistence;
    up.ephemeral = 1;
    up.quiet = o->log == NULL;
    up.log = fwd_log;
    up.on_spawn = on_spawn;
    up.hook_ud = s;
    up.cancel = o->cancel;
    char err[ERRLEN] = "";
    cp__session_say(&s->ss, "%s: starting %s", cd->name,
                    cd->kind == CP_TOPO_CLUSTER
                        ? (cd->replicas ? "a 4-master Redis Cluster with a replica per master"
                                        : "a 4-master Redis Cluster")
                        : (cd->auto_eject ? "4 redis-server + 4 nutcracker (auto_eject_hosts: true)"
                                          : "4 redis-server + 4 nutcracker"));
    cp_topo *t = NULL;
    if (cp_topo_up(&up, &t, err, sizeof(err)) != 0) {
        case_error(c, failed, "up", err);
    } else {
        measure(s, cd, t, c, failed);
        if (cp_topo_down(t, 0, err, sizeof(err)) != 0)
            case_error(c, failed, "down", err);
        else
            cp__session_say(&s->ss, "%s: stopped", cd->name);
        cp_topo_free(t);
    }
    size_t i;
    json_t *p;
    json_array_foreach(s->procs, i, p) {
        pid_t pid = (pid_t)json_integer_value(json_object_get(p, "pid"));
        unsigned long long st =
            (unsigned long long)json_integer_value(json_object_get(p, "start_time"));
        if (cp_orch_pid_alive(pid, st)) {
            char msg[128];
            snprintf(msg, sizeof(msg), "process %ld still running after teardown", (long)pid);
            case_error(c, failed, "teardown", msg);
        }
    }
    json_decref(s->procs);
    s->procs = NULL;
    return c;
}

/* Versions, cores, CPU model (from the first case that measured), kernel and date: what makes
 * the numbers reproducible. */
static json_t *environment_json(const cp__scn_opts *o, const json_t *cases) {
    const char *redis = NULL, *nutcracker = NULL, *model = NULL;
    int cores = 0, seen = 0;
    size_t i;
    json_t *c;
    json_array_foreach(cases, i, c) {
        json_t *bo = json_object_get(c, "bench");
        json_t *ver = json_object_get(bo, "versions");
        if (bo != NULL && !seen) {
            json_t *mach = json_object_get(bo, "machine");
            seen = 1;
            redis = json_string_value(json_object_get(ver, "redis"));
            model = json_string_value(json_object_get(mach, "cpu_model"));
            cores = (int)json_integer_value(json_object_get(mach, "cores"));
        }
        /* nutcracker's version comes from a twemproxy case */
        const char *nv = json_string_value(json_object_get(ver, "nutcracker"));
        if (nv != NULL)
            nutcracker = nv;
    }
    return cp__env_json(o->version ? o->version : "unknown", redis, nutcracker, cores, model);
}

int cp__scn_run(const cp__scn_opts *o, json_t **doc) {
    scn s;
    memset(&s, 0, sizeof(s));
    s.o = o;
    s.ss = (cp__session){o->log, o->ud, o->cancel, o->hgrm_dir};
    s.doc = json_object();
    *doc = s.doc;
    char ratio[32];
    snprintf(ratio, sizeof(ratio), "%u:%u", o->ratio_set, o->ratio_get);
    json_object_set_new(s.doc, "schema", json_string(CP__SCENARIO_SCHEMA));
    json_object_set_new(s.doc, "scenario", json_string(cp__scn_kind_name(o->kind)));
    json_object_set_new(s.doc, "command",
                        o->command_line ? json_string(o->command_line) : json_null());
    json_t *set = json_pack(
        "{s:I,s:I,s:f,s:f,s:s,s:i,s:i,s:i,s:i,s:i}", "keys", (json_int_t)o->keys, "value_size",
        (json_int_t)llround(cp__value_sizes_mean(&o->value_size)), "duration", o->duration_s,
        "warmup", o->warmup_s, "ratio", ratio, "threads", o->threads, "clients", o->clients,
        "pipeline", o->pipeline, "shards", SHARDS, "proxies", PROXIES);
    if (o->kind == CP__SCN_FAILOVER || cp__scn_kind_wire(o->kind))
        json_object_set_new(set, "down", json_real(o->down_s));
    if (o->rtt_ns > 0)
        json_object_set_new(set, "rtt_ns", json_integer((json_int_t)o->rtt_ns));
    if (o->kind == CP__SCN_SLOW_LINK)
        json_object_set_new(set, "delay_ns", json_integer((json_int_t)o->delay_ns));
    json_object_set_new(set, "persistence", json_boolean(o->persistence));
    char sizes[256], dist[64];
    cp__value_sizes_format(&o->value_size, sizes, sizeof(sizes));
    cp__dist_format(&o->dist, dist, sizeof(dist));
    json_object_set_new(set, "value_sizes", json_string(sizes));
    json_object_set_new(set, "key_dist", json_string(dist));
    if (o->commands != NULL) {
        cp__bench_json_templates(set, o->commands);
        json_object_set_new(set, "ratio", json_null()); /* no SET:GET mix ran */
    }
    json_object_set_new(s.doc, "settings", set);
    json_t *cases = json_array();
    json_object_set_new(s.doc, "cases", cases);
    const case_def *defs = o->kind == CP__SCN_RESHARD    ? reshard_cases
                           : o->kind == CP__SCN_FAILOVER ? failover_cases
                                                         : wire_cases;
    size_t ndefs = o->kind == CP__SCN_RESHARD ? sizeof(reshard_cases) / sizeof(reshard_cases[0])
                   : o->kind == CP__SCN_FAILOVER
                       ? sizeof(failover_cases) / sizeof(failover_cases[0])
                       : sizeof(wire_cases) / sizeof(wire_cases[0]);
    int failed = 0;
    for (size_t i = 0; i < ndefs; i++) {
        if (o->only != NULL && strcmp(o->only, defs[i].setup) != 0)
            continue;
        if (cp__session_cancelled(&s.ss)) {
            json_array_append_new(cases, json_pack("{s:s,s:s,s:s}", "name", defs[i].name, "setup",
                                                   defs[i].setup, "error", "interrupted"));
            failed = 1;
            continue;
        }
        json_array_append_new(cases, run_case(&s, &defs[i], &failed));
    }
    json_object_set_new(s.doc, "environment", environment_json(o, cases));
    json_object_set_new(s.doc, "failed", json_boolean(failed));
    return failed ? -1 : 0;
}
