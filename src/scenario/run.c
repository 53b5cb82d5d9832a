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
 * the client's path alone fails nothing over (the bus is direct), closed loop and open loop (a
 * closed-loop client stalls once its blocked lane holds all it may queue; open loop shows
 * what the library serves meanwhile); twemproxy runs with and
 * without nutcracker's `timeout:`, which is what decides whether a request to an unreachable
 * server fails or waits. */
#define NUTCRACKER_TIMEOUT_MS 500
static const case_def wire_cases[] = {
    {"cluster", "cluster", CP_TOPO_CLUSTER, 1, 0, 0, 0},
    {"cluster open loop", "cluster", CP_TOPO_CLUSTER, 1, 0, 1, 0},
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

/* ---- faults on the wire (fault.c: the link, the wire, the probes) ---------------------------- */

/* The fault's probes stop when the run is cancelled or the bench ended. */
typedef struct fault_stop_ud {
    const scn *s;
    const bench_thread *b;
} fault_stop_ud;

static int fault_stop(const void *ud) {
    const fault_stop_ud *f = ud;
    return cp__session_cancelled(&f->s->ss) || atomic_load(&f->b->done);
}

/* partition / slow-link (fault.c), its times placed among the case's events. */
static int wire_fault(scn *s, cp_topo *t, const bench_thread *b, json_t *c, char *err,
                      size_t errlen) {
    fault_stop_ud stop = {s, b};
    uint64_t start = 0, heal = 0;
    int rc = cp__scn_wire_fault(s->o, &s->ss, t, fault_stop, &stop, c, &start, &heal, err, errlen);
    if (start != 0 && s->nev < MAX_EVENTS) {
        s->ev[s->nev++] = (event){s->o->kind == CP__SCN_PARTITION ? "blocked" : "slowed", start};
        s->event_start = start;
    }
    if (heal != 0 && s->nev < MAX_EVENTS) {
        s->ev[s->nev++] = (event){"healed", heal};
        s->event_end = heal;
    }
    return rc;
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
    if (cd->open_loop &&
        cp__scn_calibrate(o, &s->ss, cd->name, &target, c, &rate, err, sizeof(err)) != 0) {
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
        cp__scn_fault_after(t, c);
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
