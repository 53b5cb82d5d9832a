/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The topology handle: cp_topo_up / open / down / free and the accessors of orch.h, plus the
 * per-process helpers the other orch modules share (configs, spawn, readiness, stop). A cp_topo
 * owns its procs array and strings (cp_topo_free); the processes themselves outlive the handle
 * unless cp_topo_down stops them. One thread at a time per handle; no globals.
 */
#include "orch/topo.h"

#include "clusterpipe/clusterpipe.h"
#include "orch/adm.h"
#include "orch/cluster.h"
#include "orch/secure.h"
#include "orch/twemproxy.h"
#include "util/clock.h"
#include "util/errmsg.h"
#include "util/file.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_MOVES 5 /* port replacements per process during one wait */

/* ---- small helpers --------------------------------------------------------------------------- */

void cp__topo_log(const cp_topo *t, const char *fmt, ...) {
    if (t->log == NULL || t->quiet)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    t->log(t->hook_ud, line);
}

int cp__topo_cancelled(const cp_topo *t) {
    return t->cancel != NULL && *t->cancel != 0;
}

cp_topo *cp__topo_new(void) {
    cp_topo *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    cp__ports_init(&t->ports, 0);
    t->auto_ports = 1;
    snprintf(t->hash, sizeof(t->hash), "fnv1a_64");
    snprintf(t->distribution, sizeof(t->distribution), "ketama");
    return t;
}

int cp__topo_add_proc(cp_topo *t, cp_proc_role role, int port, int master) {
    if (t->nprocs >= CP__MAX_PROCS)
        return -1;
    if (t->nprocs == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        cp_proc *np = realloc(t->procs, cap * sizeof(*np));
        if (np == NULL)
            return -1;
        t->procs = np;
        t->cap = cap;
    }
    cp_proc *p = &t->procs[t->nprocs];
    memset(p, 0, sizeof(*p));
    p->role = role;
    snprintf(p->host, sizeof(p->host), "127.0.0.1");
    p->port = port;
    p->master = master;
    cp__ports_reserve(&t->ports, port);
    if (role == CP_ROLE_MASTER || role == CP_ROLE_REPLICA)
        cp__ports_reserve(&t->ports, port + CP__BUS_OFFSET);
    return (int)t->nprocs++;
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

cp__pidref cp__topo_ref(const cp_topo *t, size_t i) {
    const cp_proc *p = &t->procs[i];
    const char *bin = p->role == CP_ROLE_PROXY ? t->nutcracker_bin : t->redis_bin;
    cp__pidref r = {p->pid, p->start_time, bin[0] ? base_name(bin) : NULL};
    return r;
}

const char *cp_proc_role_name(cp_proc_role r) {
    switch (r) {
    case CP_ROLE_MASTER:
        return "master";
    case CP_ROLE_REPLICA:
        return "replica";
    case CP_ROLE_SHARD:
        return "shard";
    case CP_ROLE_PROXY:
        return "proxy";
    }
    return "?";
}

void cp__topo_proc_label(const cp_topo *t, size_t i, char *buf, size_t len) {
    const cp_proc *p = &t->procs[i];
    snprintf(buf, len, "%s %s:%d (%s)", p->role == CP_ROLE_PROXY ? "nutcracker" : "redis-server",
             p->host, p->port, cp_proc_role_name(p->role));
}

void cp__topo_proc_dir(const cp_topo *t, size_t i, char *buf, size_t len) {
    const cp_proc *p = &t->procs[i];
    /* cp__topo_prepare_dir keeps dir under CP__DIR_MAX, so the precision never cuts a real path. */
    snprintf(buf, len, "%.*s/%s-%d", CP__DIR_MAX, t->dir,
             p->role == CP_ROLE_PROXY ? "nutcracker" : "redis", p->port);
}

void cp__topo_proc_file(const cp_topo *t, size_t i, const char *file, char *buf, size_t len) {
    char d[PATH_MAX];
    cp__topo_proc_dir(t, i, d, sizeof(d));
    snprintf(buf, len, "%s/%s", d, file);
}

static const char *log_name(const cp_proc *p) {
    return p->role == CP_ROLE_PROXY ? "nutcracker.log" : "redis.log";
}

/* ---- configs --------------------------------------------------------------------------------- */

/* Appends s to buf as a redis.conf double-quoted string (redis's sdssplitargs unescapes it). */
static void conf_quoted(char *buf, size_t len, const char *s) {
    size_t n = strlen(buf);
    if (n + 2 >= len)
        return;
    buf[n++] = '"';
    for (; *s && n + 3 < len; s++) {
        if (*s == '"' || *s == '\\')
            buf[n++] = '\\';
        buf[n++] = *s;
    }
    buf[n++] = '"';
    buf[n] = '\0';
}

/* The redis.conf of one node: loopback only with protected mode, its own directory for logs and
 * nodes.conf, no persistence unless asked (the comparison measures memory, not disks), no
 * diskless-sync delay so replicas link in milliseconds. With TLS the plain port is closed
 * (port 0) and the node serves, gossips (tls-cluster) and replicates (tls-replication) over TLS
 * only; the cluster bus is then tls-port + 10000. */
static int write_redis_conf(const cp_topo *t, size_t i, const char *pdir, char *err,
                            size_t errlen) {
    const cp_proc *p = &t->procs[i];
    char conf[8192], path[PATH_MAX + 32];
    snprintf(conf, sizeof(conf),
             "# Written by clusterpipe; stop with: clusterpipe down --dir %s\n"
             "bind 127.0.0.1\nprotected-mode yes\nport %d\ndaemonize no\nloglevel notice\n"
             "repl-diskless-sync-delay 0\ndir ",
             t->dir, t->tls ? 0 : p->port);
    conf_quoted(conf, sizeof(conf), pdir);
    snprintf(path, sizeof(path), "%s/redis.log", pdir);
    cp__adderr(conf, sizeof(conf), "\nlogfile ");
    conf_quoted(conf, sizeof(conf), path);
    cp__adderr(conf, sizeof(conf), "\n");
    if (t->persistence)
        cp__adderr(conf, sizeof(conf),
                   "save 3600 1 300 100 60 10000\nappendonly yes\nappendfsync everysec\n");
    else
        cp__adderr(conf, sizeof(conf), "save \"\"\nappendonly no\n");
    if (p->role != CP_ROLE_SHARD)
        cp__adderr(conf, sizeof(conf),
                   "cluster-enabled yes\ncluster-config-file nodes.conf\n"
                   "cluster-node-timeout 2000\n");
    if (t->tls) {
        cp__adderr(conf, sizeof(conf), "tls-port %d\ntls-cert-file ", p->port);
        conf_quoted(conf, sizeof(conf), t->tls_cert);
        cp__adderr(conf, sizeof(conf), "\ntls-key-file ");
        conf_quoted(conf, sizeof(conf), t->tls_key);
        cp__adderr(conf, sizeof(conf), "\ntls-ca-cert-file ");
        conf_quoted(conf, sizeof(conf), t->tls_ca);
        cp__adderr(conf, sizeof(conf), "\ntls-auth-clients %s\ntls-replication yes\n%s",
                   t->tls_auth_clients ? "yes" : "no",
                   p->role != CP_ROLE_SHARD ? "tls-cluster yes\n" : "");
    }
    if (t->password != NULL) {
        cp__adderr(conf, sizeof(conf), "requirepass ");
        conf_quoted(conf, sizeof(conf), t->password);
        cp__adderr(conf, sizeof(conf), "\nmasterauth ");
        conf_quoted(conf, sizeof(conf), t->password);
        cp__adderr(conf, sizeof(conf), "\n");
    }
    snprintf(path, sizeof(path), "%s/redis.conf", pdir);
    int rc = cp__write_file(path, conf, strlen(conf), 0600);
    if (rc != 0) {
        cp__seterr(err, errlen, "%s: %s", path, strerror(-rc));
        return -1;
    }
    return 0;
}

int cp__topo_write_config(cp_topo *t, size_t i, char *err, size_t errlen) {
    char pdir[PATH_MAX];
    cp__topo_proc_dir(t, i, pdir, sizeof(pdir));
    int rc = cp__mkdir_p(pdir, 0700);
    if (rc != 0) {
        cp__seterr(err, errlen, "%s: %s", pdir, strerror(-rc));
        return -1;
    }
    if (t->procs[i].role == CP_ROLE_PROXY)
        return cp__twemproxy_write_yaml(t, i, err, errlen);
    return write_redis_conf(t, i, pdir, err, errlen);
}

/* ---- spawn, readiness, death ----------------------------------------------------------------- */

int cp__topo_spawn(cp_topo *t, size_t i, char *err, size_t errlen) {
    cp_proc *p = &t->procs[i];
    if (cp__topo_write_config(t, i, err, errlen) != 0)
        return CP_EIO;
    char pdir[PATH_MAX], conf[PATH_MAX + 32], logf[PATH_MAX + 32], out[PATH_MAX + 32];
    char stats[16];
    cp__topo_proc_dir(t, i, pdir, sizeof(pdir));
    snprintf(out, sizeof(out), "%s/stdout.log", pdir);
    snprintf(logf, sizeof(logf), "%s/%s", pdir, log_name(p));
    snprintf(stats, sizeof(stats), "%d", p->stats_port);
    char *argv[12];
    int argc = 0;
    if (p->role == CP_ROLE_PROXY) {
        snprintf(conf, sizeof(conf), "%s/nutcracker.yml", pdir);
        argv[argc++] = t->nutcracker_bin;
        argv[argc++] = "-c";
        argv[argc++] = conf;
        argv[argc++] = "-s";
        argv[argc++] = stats;
        argv[argc++] = "-a";
        argv[argc++] = "127.0.0.1";
        argv[argc++] = "-o";
        argv[argc++] = logf;
    } else {
        snprintf(conf, sizeof(conf), "%s/redis.conf", pdir);
        argv[argc++] = t->redis_bin;
        argv[argc++] = conf;
    }
    argv[argc] = NULL;
    pid_t pid = 0;
    unsigned long long start = 0;
    int rc = cp__spawn(argv, pdir, out, t->ephemeral, &pid, &start, err, errlen);
    if (rc != 0)
        return CP_EIO;
    p->pid = pid;
    p->start_time = start;
    char label[128];
    cp__topo_proc_label(t, i, label, sizeof(label));
    cp__topo_log(t, "started %s, pid %ld", label, (long)pid);
    if (t->on_spawn != NULL)
        t->on_spawn(t->hook_ud, p);
    return cp__state_save(t, err, errlen);
}

void cp__topo_dead_error(const cp_topo *t, size_t i, const char *when, char *err, size_t errlen) {
    const cp_proc *p = &t->procs[i];
    char label[128], how[96], logf[PATH_MAX + 32], tail[1536];
    cp__topo_proc_label(t, i, label, sizeof(label));
    cp__proc_exit_desc(p->pid, how, sizeof(how));
    cp__topo_proc_file(t, i, log_name(p), logf, sizeof(logf));
    if (cp__file_tail(logf, 8, tail, sizeof(tail)) == 0) {
        cp__topo_proc_file(t, i, "stdout.log", logf, sizeof(logf));
        if (cp__file_tail(logf, 8, tail, sizeof(tail)) == 0)
            snprintf(tail, sizeof(tail), "  (empty)");
    }
    cp__seterr(err, errlen, "%s, pid %ld, %s %s; last lines of %s:\n%s", label, (long)p->pid, how,
               when, logf, tail);
}

int cp__topo_check_alive(const cp_topo *t, char *err, size_t errlen) {
    for (size_t i = 0; i < t->nprocs; i++) {
        cp__pidref r = cp__topo_ref(t, i);
        if (r.pid > 0 && !cp__proc_is_ours(&r)) {
            cp__topo_dead_error(t, i, "while the topology was being set up", err, errlen);
            return -1;
        }
    }
    return 0;
}

cp__adm *cp__topo_connect(const cp_topo *t, size_t i, int timeout_ms, char *err, size_t errlen) {
    const cp_proc *p = &t->procs[i];
    cp__adm_sec sec;
    cp__secure_adm(t, &sec);
    return cp__adm_connect(p->host, p->port, &sec, timeout_ms, err, errlen);
}

/* 0 when redis process i answers PING with PONG (LOADING and refused connections are "not
 * yet"), -1 with the reason otherwise. */
static int probe_redis(const cp_topo *t, size_t i, char *err, size_t errlen) {
    cp__adm *c = cp__topo_connect(t, i, 500, err, errlen);
    if (c == NULL)
        return -1;
    redisReply *r = cp__adm_cmd(c, err, errlen, "PING");
    int ok = r != NULL && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
    if (r != NULL && !ok)
        cp__seterr(err, errlen, "PING answered %s", r->str ? r->str : "?");
    freeReplyObject(r);
    cp__adm_free(c);
    return ok ? 0 : -1;
}

/* A process that lost its port to someone else gets a fresh port (and stats port) and is
 * started again. Only before anything refers to the port (cluster not formed, proxies not
 * configured with it). */
static int move_and_respawn(cp_topo *t, size_t i, char *err, size_t errlen) {
    cp_proc *p = &t->procs[i];
    char pdir[PATH_MAX], label[128];
    cp__topo_proc_label(t, i, label, sizeof(label));
    char how[96];
    cp__proc_exit_desc(p->pid, how, sizeof(how)); /* reap it */
    cp__topo_proc_dir(t, i, pdir, sizeof(pdir));
    cp__rm_rf(pdir);
    int bus = p->role == CP_ROLE_MASTER || p->role == CP_ROLE_REPLICA;
    int port;
    if (cp__ports_take(&t->ports, bus, &port, err, errlen) != 0)
        return CP_EIO;
    if (p->role == CP_ROLE_PROXY && cp__ports_take(&t->ports, 0, &p->stats_port, err, errlen))
        return CP_EIO;
    cp__topo_log(t, "%s lost its port to another program; moving it to port %d", label, port);
    p->port = port;
    p->pid = 0;
    p->start_time = 0;
    return cp__topo_spawn(t, i, err, errlen);
}

int cp__topo_wait_serving(cp_topo *t, const size_t *idx, size_t n, int may_move, char *err,
                          size_t errlen) {
    unsigned char done[CP__MAX_PROCS] = {0}, moves[CP__MAX_PROCS] = {0};
    char last[512] = "";
    int64_t deadline = cp__now_ms() + CP__START_TIMEOUT_MS;
    int nap = 5;
    for (;;) {
        size_t left = 0;
        for (size_t k = 0; k < n; k++) {
            size_t i = idx[k];
            if (done[k])
                continue;
            if (cp__topo_cancelled(t)) {
                cp__seterr(err, errlen, "interrupted");
                return CP_EIO;
            }
            cp__pidref r = cp__topo_ref(t, i);
            if (!cp__proc_is_ours(&r)) {
                char logf[PATH_MAX + 32], outf[PATH_MAX + 32];
                cp__topo_proc_file(t, i, log_name(&t->procs[i]), logf, sizeof(logf));
                cp__topo_proc_file(t, i, "stdout.log", outf, sizeof(outf));
                int lost = cp__file_contains(logf, "Address already in use") ||
                           cp__file_contains(outf, "Address already in use");
                if (may_move && t->auto_ports && lost && moves[k] < MAX_MOVES) {
                    moves[k]++;
                    int rc = move_and_respawn(t, i, err, errlen);
                    if (rc != 0)
                        return rc;
                    deadline = cp__now_ms() + CP__START_TIMEOUT_MS;
                    left++;
                    continue;
                }
                cp__topo_dead_error(t, i, "during startup", err, errlen);
                return CP_ECONNECT;
            }
            int rc = t->procs[i].role == CP_ROLE_PROXY
                         ? cp__twemproxy_probe(t, i, last, sizeof(last))
                         : probe_redis(t, i, last, sizeof(last));
            if (rc == 0)
                done[k] = 1;
            else
                left++;
        }
        if (left == 0)
            return 0;
        if (cp__now_ms() >= deadline) {
            for (size_t k = 0; k < n; k++) {
                if (done[k])
                    continue;
                char label[128];
                cp__topo_proc_label(t, idx[k], label, sizeof(label));
                cp__seterr(err, errlen, "%s did not serve within %d s: %s", label,
                           CP__START_TIMEOUT_MS / 1000, last);
                break;
            }
            return CP_ETIMEDOUT;
        }
        cp__sleep_ms(nap);
        if (nap < 100)
            nap *= 2;
    }
}

size_t cp__topo_stop(cp_topo *t, const size_t *idx, size_t n) {
    cp__pidref refs[CP__MAX_PROCS];
    size_t k = 0;
    size_t count = idx ? n : t->nprocs;
    for (size_t j = 0; j < count && k < CP__MAX_PROCS; j++) {
        size_t i = idx ? idx[j] : j;
        if (t->procs[i].pid > 0)
            refs[k++] = cp__topo_ref(t, i);
    }
    return cp__proc_stop_many(refs, k, CP__STOP_TIMEOUT_MS);
}

/* ---- up -------------------------------------------------------------------------------------- */

/* Rejects option combinations we cannot start, with a message naming the option. */
static int check_opts(const cp_up_opts *o, char *err, size_t errlen) {
    if (o->kind != CP_TOPO_CLUSTER && o->kind != CP_TOPO_TWEMPROXY) {
        cp__seterr(err, errlen, "unknown topology kind %d", (int)o->kind);
        return -1;
    }
    if (o->shards < 1 || o->replicas < 0 || (o->kind == CP_TOPO_TWEMPROXY && o->proxies < 1)) {
        cp__seterr(err, errlen, "need at least 1 shard%s and no negative replica count",
                   o->kind == CP_TOPO_TWEMPROXY ? " and 1 proxy" : "");
        return -1;
    }
    long total = o->kind == CP_TOPO_CLUSTER ? (long)o->shards * (1 + o->replicas)
                                            : (long)o->shards + 2L * o->proxies;
    if (total > CP__MAX_PROCS) {
        cp__seterr(err, errlen, "%ld processes requested; at most %d", total, CP__MAX_PROCS);
        return -1;
    }
    if (o->base_port < 0 || o->base_port > 65535) {
        cp__seterr(err, errlen, "base port %d is out of range", o->base_port);
        return -1;
    }
    if (o->kind == CP_TOPO_TWEMPROXY && o->hash && !cp_orch_twemproxy_hash_valid(o->hash)) {
        cp__seterr(err, errlen, "unknown twemproxy hash '%s'", o->hash);
        return -1;
    }
    if (o->kind == CP_TOPO_TWEMPROXY && o->distribution &&
        !cp_orch_twemproxy_distribution_valid(o->distribution)) {
        cp__seterr(err, errlen, "unknown twemproxy distribution '%s'", o->distribution);
        return -1;
    }
    if (o->password != NULL && o->no_password) {
        cp__seterr(err, errlen, "a password and no_password together");
        return -1;
    }
    if (o->kind == CP_TOPO_TWEMPROXY && (o->tls || o->tls_auth_clients)) {
        cp__seterr(err, errlen,
                   "twemproxy (nutcracker) has no TLS support: it cannot serve TLS to clients "
                   "nor speak it to its shards; use a Redis Cluster for TLS");
        return -1;
    }
    if (o->tls_auth_clients && !o->tls) {
        cp__seterr(err, errlen, "tls_auth_clients needs tls");
        return -1;
    }
    if (o->password != NULL) {
        for (const char *s = o->password; *s; s++)
            if ((unsigned char)*s < 0x20 || *s == 0x7f) {
                cp__seterr(err, errlen, "the password must not contain control characters");
                return -1;
            }
    }
    return 0;
}

/* Records every process of the plan with its port, before anything starts, so a busy fixed port
 * fails the run while nothing is running yet. */
static int plan(cp_topo *t, const cp_up_opts *o, char *err, size_t errlen) {
    int port;
    if (o->kind == CP_TOPO_CLUSTER) {
        for (int m = 0; m < o->shards; m++) {
            if (cp__ports_take(&t->ports, 1, &port, err, errlen) != 0)
                return -1;
            cp__topo_add_proc(t, CP_ROLE_MASTER, port, -1);
        }
        for (int m = 0; m < o->shards; m++)
            for (int r = 0; r < o->replicas; r++) {
                if (cp__ports_take(&t->ports, 1, &port, err, errlen) != 0)
                    return -1;
                cp__topo_add_proc(t, CP_ROLE_REPLICA, port, m);
            }
        return 0;
    }
    for (int s = 0; s < o->shards; s++) {
        if (cp__ports_take(&t->ports, 0, &port, err, errlen) != 0)
            return -1;
        cp__topo_add_proc(t, CP_ROLE_SHARD, port, -1);
    }
    size_t first_proxy = t->nprocs;
    for (int p = 0; p < o->proxies; p++) {
        if (cp__ports_take(&t->ports, 0, &port, err, errlen) != 0)
            return -1;
        cp__topo_add_proc(t, CP_ROLE_PROXY, port, -1);
    }
    for (int p = 0; p < o->proxies; p++)
        if (cp__ports_take(&t->ports, 0, &t->procs[first_proxy + (size_t)p].stats_port, err,
                           errlen) != 0)
            return -1;
    return 0;
}

/* Starts the processes of role(s) selected by `proxies` and waits until they serve. */
static int start_group(cp_topo *t, int proxies, char *err, size_t errlen) {
    size_t idx[CP__MAX_PROCS], n = 0;
    for (size_t i = 0; i < t->nprocs; i++) {
        if ((t->procs[i].role == CP_ROLE_PROXY) != proxies)
            continue;
        if (cp__topo_cancelled(t)) {
            cp__seterr(err, errlen, "interrupted");
            return CP_EIO;
        }
        int rc = cp__topo_spawn(t, i, err, errlen);
        if (rc != 0)
            return rc;
        idx[n++] = i;
    }
    return cp__topo_wait_serving(t, idx, n, 1, err, errlen);
}

int cp_topo_up(const cp_up_opts *opt, cp_topo **out, char *err, size_t errlen) {
    if (out != NULL)
        *out = NULL;
    if (opt == NULL || out == NULL) {
        cp__seterr(err, errlen, "cp_topo_up: NULL argument");
        return CP_EINVAL;
    }
    if (check_opts(opt, err, errlen) != 0)
        return CP_EINVAL;
    cp_topo *t = cp__topo_new();
    if (t == NULL) {
        cp__seterr(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    t->kind = opt->kind;
    t->persistence = opt->persistence;
    t->auto_eject = opt->auto_eject;
    t->ephemeral = opt->ephemeral;
    t->log = opt->log;
    t->on_spawn = opt->on_spawn;
    t->hook_ud = opt->hook_ud;
    t->quiet = opt->quiet;
    t->cancel = opt->cancel;
    if (opt->hash)
        snprintf(t->hash, sizeof(t->hash), "%s", opt->hash);
    if (opt->distribution)
        snprintf(t->distribution, sizeof(t->distribution), "%s", opt->distribution);
    if (opt->password && *opt->password && (t->password = strdup(opt->password)) == NULL) {
        cp_topo_free(t);
        cp__seterr(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    if (t->password == NULL && !opt->no_password) {
        char pw[CP__PASSWORD_HEX + 1];
        if (cp__secure_gen_password(pw, sizeof(pw), err, errlen) != 0) {
            cp_topo_free(t);
            return CP_EIO;
        }
        if ((t->password = strdup(pw)) == NULL) {
            cp_topo_free(t);
            cp__seterr(err, errlen, "out of memory");
            return CP_ENOMEM;
        }
    }
    t->tls = opt->tls;
    t->tls_auth_clients = opt->tls_auth_clients;
    if (cp__find_binary(opt->redis_server, "redis-server", "redis-server", t->redis_bin,
                        sizeof(t->redis_bin), err, errlen) != 0 ||
        (opt->kind == CP_TOPO_TWEMPROXY &&
         cp__find_binary(opt->nutcracker, "nutcracker", "nutcracker", t->nutcracker_bin,
                         sizeof(t->nutcracker_bin), err, errlen) != 0) ||
        (opt->tls && cp__find_binary(opt->openssl, "openssl", "openssl", t->openssl_bin,
                                     sizeof(t->openssl_bin), err, errlen) != 0)) {
        cp_topo_free(t);
        return CP_EINVAL;
    }
    cp__ports_init(&t->ports, opt->base_port);
    t->auto_ports = opt->base_port == 0;
    int created = 0;
    int rc = cp__topo_prepare_dir(t, opt->dir, &created, err, errlen);
    if (rc != 0) {
        cp_topo_free(t);
        return rc;
    }
    cp__secure_paths(t);
    if (plan(t, opt, err, errlen) != 0) {
        if (created)
            cp__rm_rf(t->dir);
        cp_topo_free(t);
        return CP_EINVAL;
    }
    /* Secrets before any server: a failure here leaves nothing running and no files. */
    rc = cp__secure_write_password(t, err, errlen) != 0 ? CP_EIO : 0;
    if (rc == 0 && t->tls)
        rc = cp__secure_gen_tls(t, err, errlen);
    if (rc != 0) {
        cp__secure_remove(t->dir);
        if (created)
            cp__rm_rf(t->dir);
        cp_topo_free(t);
        return rc;
    }
    if (opt->kind == CP_TOPO_CLUSTER)
        cp__topo_log(t, "starting a Redis Cluster: %d masters x %d replicas in %s%s", opt->shards,
                     opt->replicas, t->dir, t->tls ? " (TLS only)" : "");
    else
        cp__topo_log(t, "starting twemproxy: %d nutcracker in front of %d redis-server in %s",
                     opt->proxies, opt->shards, t->dir);
    rc = cp__state_save(t, err, errlen);
    if (rc == 0)
        rc = start_group(t, 0, err, errlen);
    if (rc == 0 && t->kind == CP_TOPO_CLUSTER)
        rc = cp__cluster_create(t, err, errlen);
    if (rc == 0 && t->kind == CP_TOPO_TWEMPROXY)
        rc = start_group(t, 1, err, errlen);
    if (rc == 0)
        rc = cp__state_save(t, err, errlen);
    if (rc == 0) {
        /* Later ports (add_node, add_shard) come from the free pool, not the fixed sequence. */
        t->ports.fixed = 0;
        *out = t;
        return 0;
    }
    size_t left = cp__topo_stop(t, NULL, 0);
    if (left > 0)
        cp__adderr(err, errlen, "\n%zu process(es) could not be stopped; see %s/state.json", left,
                   t->dir);
    if (cp__topo_cancelled(t) && created && left == 0) {
        cp__rm_rf(t->dir);
    } else {
        cp__state_save(t, NULL, 0);
        cp__adderr(err, errlen, "\n(logs kept in %s; 'clusterpipe down --dir %s' removes them)",
                   t->dir, t->dir);
    }
    cp_topo_free(t);
    return rc;
}

/* ---- open, down, free, accessors ------------------------------------------------------------- */

int cp_topo_open(const char *dir, cp_topo **out, char *err, size_t errlen) {
    if (out != NULL)
        *out = NULL;
    if (dir == NULL || out == NULL) {
        cp__seterr(err, errlen, "cp_topo_open: NULL argument");
        return CP_EINVAL;
    }
    return cp__state_load(dir, out, err, errlen);
}

int cp_topo_down(cp_topo *t, int keep_dir, char *err, size_t errlen) {
    if (t == NULL) {
        cp__seterr(err, errlen, "cp_topo_down: NULL topology");
        return CP_EINVAL;
    }
    size_t left = cp__topo_stop(t, NULL, 0);
    if (left > 0) {
        cp__seterr(err, errlen, "%zu process(es) survived SIGKILL; %s kept", left, t->dir);
        return CP_EIO;
    }
    if (!keep_dir)
        cp__topo_remove_files(t->dir);
    return 0;
}

void cp_topo_free(cp_topo *t) {
    if (t == NULL)
        return;
    free(t->password);
    free(t->procs);
    free(t);
}

cp_topo_kind cp_topo_get_kind(const cp_topo *t) {
    return t->kind;
}

const char *cp_topo_dir(const cp_topo *t) {
    return t->dir;
}

const char *cp_topo_password(const cp_topo *t) {
    return t->password;
}

const char *cp_topo_password_file(const cp_topo *t) {
    return t->password != NULL && t->password_file[0] ? t->password_file : NULL;
}

const char *cp_topo_tls_ca(const cp_topo *t) {
    return t->tls ? t->tls_ca : NULL;
}

const char *cp_topo_tls_client_cert(const cp_topo *t) {
    return t->tls && t->tls_auth_clients ? t->tls_client_cert : NULL;
}

const char *cp_topo_tls_client_key(const cp_topo *t) {
    return t->tls && t->tls_auth_clients ? t->tls_client_key : NULL;
}

void cp_topo_client_options(const cp_topo *t, cp_options *o) {
    o->password = t->password;
    o->tls = t->tls;
    o->tls_ca_file = cp_topo_tls_ca(t);
    o->tls_cert_file = cp_topo_tls_client_cert(t);
    o->tls_key_file = cp_topo_tls_client_key(t);
}

size_t cp_topo_nprocs(const cp_topo *t) {
    return t->nprocs;
}

const cp_proc *cp_topo_proc(const cp_topo *t, size_t i) {
    return i < t->nprocs ? &t->procs[i] : NULL;
}

int cp_topo_endpoints(const cp_topo *t, char *buf, size_t len) {
    if (buf == NULL || len == 0)
        return CP_EINVAL;
    cp_proc_role want = t->kind == CP_TOPO_CLUSTER ? CP_ROLE_MASTER : CP_ROLE_PROXY;
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < t->nprocs; i++) {
        const cp_proc *p = &t->procs[i];
        if (p->role != want)
            continue;
        int n = snprintf(buf + used, len - used, "%s%s:%d", used ? "," : "", p->host, p->port);
        if (n < 0 || (size_t)n >= len - used) {
            buf[used] = '\0';
            return CP_EINVAL;
        }
        used += (size_t)n;
    }
    return 0;
}

int cp_topo_alive(const cp_topo *t, size_t i) {
    if (i >= t->nprocs || t->procs[i].pid <= 0)
        return 0;
    cp__pidref r = cp__topo_ref(t, i);
    return cp__proc_is_ours(&r);
}

int cp_orch_pid_alive(pid_t pid, unsigned long long start_time) {
    cp__pidref r = {pid, start_time, NULL};
    return cp__proc_is_ours(&r);
}

void cp_topo_set_hooks(cp_topo *t, void (*log)(void *ud, const char *line),
                       void (*on_spawn)(void *ud, const cp_proc *p), void *ud) {
    t->log = log;
    t->on_spawn = on_spawn;
    t->hook_ud = ud;
}
