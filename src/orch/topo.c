/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The process core (see topo.h): the cp_topo handle and its accessors of orch.h, and what is done
 * to one process of it (record, spawn, describe, stop, connect), through the per-role tables it
 * was given. Calls only proc.h, ports.h, adm.h and util/: never cluster, twemproxy, state or the
 * `up` flow. A cp_topo owns its procs array and password (cp_topo_free); the processes outlive
 * the handle unless cp_topo_down stops them. One thread at a time per handle; no globals.
 */
#include "orch/topo.h"

#include "clusterpipe/clusterpipe.h"
#include "util/errmsg.h"
#include "util/file.h"
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A role without a table: recognised and stopped by PID, never started. */
static const cp__role_ops no_role = {"process", "process", "stdout.log", 0,    0,
                                     0,         NULL,      NULL,         NULL, NULL};

/* ---- the handle ------------------------------------------------------------------------------ */

cp_topo *cp__topo_new(const cp__role_ops *const *roles) {
    cp_topo *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    t->roles = roles;
    cp__ports_init(&t->ports, 0);
    t->auto_ports = 1;
    snprintf(t->host, sizeof(t->host), "127.0.0.1");
    snprintf(t->hash, sizeof(t->hash), "fnv1a_64");
    snprintf(t->distribution, sizeof(t->distribution), "ketama");
    return t;
}

void cp_topo_free(cp_topo *t) {
    if (t != NULL) {
        free(t->password);
        free(t->procs);
        free(t->links);
    }
    free(t);
}

void cp__topo_log(const cp_topo *t, const char *fmt, ...) {
    if (t->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    cp__vlogf(t->log, t->hook_ud, fmt, ap);
    va_end(ap);
}

int cp__topo_cancelled(const cp_topo *t) {
    return t->cancel != NULL && *t->cancel != 0;
}

static const cp__role_ops *ops_of_role(const cp_topo *t, cp_proc_role role) {
    int r = (int)role;
    const cp__role_ops *o = t->roles != NULL && r > 0 && r < CP__ROLE_SLOTS ? t->roles[r] : NULL;
    return o != NULL ? o : &no_role;
}

const cp__role_ops *cp__topo_ops(const cp_topo *t, size_t i) {
    return ops_of_role(t, t->procs[i].role);
}

int cp__topo_add_proc(cp_topo *t, cp_proc_role role, int port, int master, size_t *index, char *err,
                      size_t errlen) {
    if (t->nprocs >= CP__MAX_PROCS) {
        cp__seterr(err, errlen, "too many processes: at most %d", CP__MAX_PROCS);
        return CP_EINVAL;
    }
    if (t->nprocs == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        cp_proc *np = realloc(t->procs, cap * sizeof(*np));
        if (np == NULL) {
            cp__seterr(err, errlen, "out of memory");
            return CP_ENOMEM;
        }
        t->procs = np;
        t->cap = cap;
    }
    size_t i = t->nprocs++;
    cp_proc *p = &t->procs[i];
    memset(p, 0, sizeof(*p));
    p->role = role;
    snprintf(p->host, sizeof(p->host), "%s", t->host);
    p->port = port;
    p->master = master;
    cp__ports_reserve(&t->ports, port);
    if (ops_of_role(t, role)->bus_port)
        cp__ports_reserve(&t->ports, port + CP__BUS_OFFSET);
    *index = i;
    return 0;
}

int cp__topo_add_new(cp_topo *t, cp_proc_role role, int master, size_t *index, char *err,
                     size_t errlen) {
    int port;
    int rc = cp__ports_take(&t->ports, ops_of_role(t, role)->bus_port, &port, err, errlen);
    return rc != 0 ? rc : cp__topo_add_proc(t, role, port, master, index, err, errlen);
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

cp__pidref cp__topo_ref(const cp_topo *t, size_t i) {
    const cp_proc *p = &t->procs[i];
    const cp__role_ops *o = cp__topo_ops(t, i);
    const char *bin = o->binary != NULL ? o->binary(t) : "";
    cp__pidref r = {p->pid, p->start_time, bin[0] ? base_name(bin) : NULL};
    return r;
}

const char *cp_proc_role_name(cp_proc_role r) {
    static const char *const names[CP__ROLE_SLOTS] = {"?",     "master", "replica",
                                                      "shard", "proxy",  "wire"};
    return (int)r > 0 && (int)r < CP__ROLE_SLOTS ? names[r] : "?";
}

/* A process without a port of its own (the wire: its ports are its links') is named by its role
 * alone, and its directory has no port in its name. */
void cp__topo_proc_label(const cp_topo *t, size_t i, char *buf, size_t len) {
    const cp_proc *p = &t->procs[i];
    if (p->port == 0)
        snprintf(buf, len, "%s (%s)", cp__topo_ops(t, i)->program, cp_proc_role_name(p->role));
    else
        snprintf(buf, len, "%s %s:%d (%s)", cp__topo_ops(t, i)->program, p->host, p->port,
                 cp_proc_role_name(p->role));
}

void cp__topo_proc_dir(const cp_topo *t, size_t i, char *buf, size_t len) {
    /* cp__topo_prepare_dir keeps dir under CP__DIR_MAX, so the precision never cuts a real path. */
    if (t->procs[i].port == 0)
        snprintf(buf, len, "%.*s/%s", CP__DIR_MAX, t->dir, cp__topo_ops(t, i)->dir_prefix);
    else
        snprintf(buf, len, "%.*s/%s-%d", CP__DIR_MAX, t->dir, cp__topo_ops(t, i)->dir_prefix,
                 t->procs[i].port);
}

int cp__topo_is_node(const cp_topo *t, size_t i) {
    return t->procs[i].role == CP_ROLE_MASTER || t->procs[i].role == CP_ROLE_REPLICA;
}

int cp__topo_link_port(const cp_topo *t, int from, size_t to) {
    for (size_t k = 0; k < t->nlinks; k++) {
        const cp_link *l = &t->links[k];
        if (l->from == from && l->to == (int)to && l->crosses)
            return l->port;
    }
    return t->procs[to].port;
}

void cp__topo_proc_file(const cp_topo *t, size_t i, const char *file, char *buf, size_t len) {
    char d[PATH_MAX];
    cp__topo_proc_dir(t, i, d, sizeof(d));
    snprintf(buf, len, "%s/%s", d, file);
}

/* ---- configs and spawn ----------------------------------------------------------------------- */

int cp__argv_add(cp__argv *a, const char *fmt, ...) {
    if (a->n >= CP__ARGV_MAX || a->used >= sizeof(a->text))
        return CP_EINVAL;
    char *at = a->text + a->used;
    size_t room = sizeof(a->text) - a->used;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(at, room, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= room)
        return CP_EINVAL;
    a->used += (size_t)n + 1;
    a->v[a->n++] = at;
    a->v[a->n] = NULL;
    return 0;
}

void cp__topo_append_quoted(char *buf, size_t len, const char *s, char quote, char escape) {
    size_t n = strlen(buf);
    if (n + 2 >= len)
        return;
    buf[n++] = quote;
    for (; *s && n + 3 < len; s++) {
        if (*s == quote || (*s == escape && escape != quote))
            buf[n++] = escape;
        buf[n++] = *s;
    }
    buf[n++] = quote;
    buf[n] = '\0';
}

int cp__topo_write_file(const char *path, const char *text, char *err, size_t errlen) {
    int rc = cp__write_file(path, text, strlen(text), 0600);
    if (rc != 0) {
        cp__seterr(err, errlen, "%s: %s", path, strerror(-rc));
        return CP_EIO;
    }
    return 0;
}

int cp__topo_write_config(cp_topo *t, size_t i, char *err, size_t errlen) {
    const cp__role_ops *o = cp__topo_ops(t, i);
    char pdir[PATH_MAX], label[128];
    if (o->write_config == NULL) {
        cp__topo_proc_label(t, i, label, sizeof(label));
        cp__seterr(err, errlen, "%s: a %s topology has no config for it", label,
                   t->kind == CP_TOPO_CLUSTER ? "cluster" : "twemproxy");
        return CP_EINVAL;
    }
    cp__topo_proc_dir(t, i, pdir, sizeof(pdir));
    int rc = cp__mkdir_p(pdir, 0700);
    if (rc != 0) {
        cp__seterr(err, errlen, "%s: %s", pdir, strerror(-rc));
        return CP_EIO;
    }
    return o->write_config(t, i, err, errlen);
}

int cp__topo_spawn(cp_topo *t, size_t i, char *err, size_t errlen) {
    cp_proc *p = &t->procs[i];
    const cp__role_ops *o = cp__topo_ops(t, i);
    char label[128];
    cp__topo_proc_label(t, i, label, sizeof(label));
    int rc = cp__topo_write_config(t, i, err, errlen);
    if (rc != 0)
        return rc;
    cp__argv *a = calloc(1, sizeof(*a));
    if (a == NULL) {
        cp__seterr(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    rc = o->binary != NULL && o->add_args != NULL ? cp__argv_add(a, "%s", o->binary(t)) : CP_EINVAL;
    if (rc == 0)
        rc = o->add_args(t, i, a);
    if (rc != 0) {
        free(a);
        cp__seterr(err, errlen, "%s: no usable command line", label);
        return rc;
    }
    char pdir[PATH_MAX], out[PATH_MAX + 32];
    cp__topo_proc_dir(t, i, pdir, sizeof(pdir));
    snprintf(out, sizeof(out), "%s/stdout.log", pdir);
    pid_t pid = 0;
    unsigned long long start = 0;
    /* The wire is the network, no server: it runs where the caller does, never pinned with the
     * servers (its CPU would then count against theirs). */
    const cpu_set_t *cpus = p->role == CP_ROLE_PROXY  ? (t->pin_proxy ? &t->proxy_cpus : NULL)
                            : p->role == CP_ROLE_WIRE ? NULL
                                                      : (t->pin_redis ? &t->redis_cpus : NULL);
    rc = cp__spawn(a->v, pdir, out, t->ephemeral, cpus, &pid, &start, err, errlen);
    free(a);
    if (rc != 0)
        return rc;
    p->pid = pid;
    p->start_time = start;
    cp__topo_log(t, "started %s, pid %ld", label, (long)pid);
    if (t->on_spawn != NULL)
        t->on_spawn(t->hook_ud, p);
    return 0;
}

/* ---- death, stop, connect -------------------------------------------------------------------- */

void cp__topo_dead_error(const cp_topo *t, size_t i, const char *when, char *err, size_t errlen) {
    const cp_proc *p = &t->procs[i];
    char label[128], how[96], logf[PATH_MAX + 32], tail[1536];
    cp__topo_proc_label(t, i, label, sizeof(label));
    cp__proc_exit_desc(p->pid, how, sizeof(how));
    cp__topo_proc_file(t, i, cp__topo_ops(t, i)->log_file, logf, sizeof(logf));
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
            return CP_ECONNECT;
        }
    }
    return 0;
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

cp__adm *cp__topo_connect(const cp_topo *t, size_t i, int timeout_ms, char *err, size_t errlen) {
    const cp_proc *p = &t->procs[i];
    cp__adm_sec sec = {t->password, NULL, NULL, NULL};
    if (t->tls) {
        sec.tls_ca = t->tls_ca;
        if (t->tls_auth_clients) {
            sec.tls_cert = t->tls_client_cert;
            sec.tls_key = t->tls_client_key;
        }
    }
    return cp__adm_connect(p->host, p->port, &sec, timeout_ms, err, errlen);
}

/* ---- accessors (orch.h) ---------------------------------------------------------------------- */

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
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < t->nprocs; i++) {
        const cp_proc *p = &t->procs[i];
        if (!cp__topo_ops(t, i)->endpoint)
            continue;
        int n = snprintf(buf + used, len - used, strchr(p->host, ':') ? "%s[%s]:%d" : "%s%s:%d",
                         used ? "," : "", p->host, cp_topo_client_port(t, i));
        if (n < 0 || (size_t)n >= len - used) {
            buf[used] = '\0';
            return CP_EINVAL;
        }
        used += (size_t)n;
    }
    return 0;
}

size_t cp_topo_nlinks(const cp_topo *t) {
    return t->nlinks;
}

const cp_link *cp_topo_link(const cp_topo *t, size_t i) {
    return i < t->nlinks ? &t->links[i] : NULL;
}

unsigned long long cp_topo_rtt_ns(const cp_topo *t) {
    return t->nlinks > 0 ? t->rtt_ns : 0;
}

const char *cp_topo_wire_control(const cp_topo *t) {
    return t->wire_control[0] ? t->wire_control : NULL;
}

cp_proxy_placement cp_topo_proxy_placement(const cp_topo *t) {
    return t->placement;
}

int cp_topo_client_port(const cp_topo *t, size_t i) {
    return i < t->nprocs ? cp__topo_link_port(t, CP_LINK_CLIENT, i) : 0;
}

const char *cp_proxy_placement_name(cp_proxy_placement p) {
    return p == CP_PROXIES_WITH_CLIENTS ? "clients" : p == CP_PROXIES_TIER ? "tier" : "servers";
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
