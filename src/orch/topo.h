/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The process core of a topology: the private shape of a cp_topo, the per-role table of
 * functions its processes are handled through, and what every module above does with one
 * process (record it, spawn it, describe its death, stop it, connect to it, log progress). It
 * calls nothing above it: per-role behaviour (config files, command lines, readiness probes)
 * comes through the cp__role_ops tables that cluster.c and twemproxy.c fill in, and saving the
 * state is the caller's job (state.h). A cp_topo owns its procs array and strings; cp_topo_free
 * frees them; the role tables are static and only borrowed. One thread at a time per cp_topo.
 *
 * Files: every process has its own directory DIR/<dir_prefix>-PORT (redis-PORT, nutcracker-PORT)
 * holding its config, its own log (the role's log_file), stdout+stderr (stdout.log), and for
 * cluster nodes nodes.conf. Secrets: DIR/password and DIR/tls/ (secure.h).
 */
#ifndef CLUSTERPIPE_ORCH_TOPO_H
#define CLUSTERPIPE_ORCH_TOPO_H

#include "orch/adm.h"
#include "orch/orch.h"
#include "orch/ports.h"
#include "orch/proc.h"

#include <limits.h>

#define CP__MAX_PROCS 256
#define CP__DIR_MAX 3000                      /* longest topology directory path accepted */
#define CP__START_TIMEOUT_MS 20000            /* a process to answer after spawn */
#define CP__CONVERGE_TIMEOUT_MS 60000         /* a cluster to agree */
#define CP__STOP_TIMEOUT_MS 10000             /* SIGTERM before SIGKILL */
#define CP__ADM_TIMEOUT_MS 5000               /* admin command timeout */
#define CP__ROLE_SLOTS 6                      /* role tables are indexed by cp_proc_role (1..5) */
#define CP__MAX_LINKS 384                     /* links through one wire (each takes a port) */
#define CP__ARGV_MAX (2 * CP__MAX_LINKS + 16) /* arguments of one command line (the wire's) */

/* A command line being built: argv[0..n) point into text. Large (the wire's links): allocate
 * it, do not put it on a stack. */
typedef struct cp__argv {
    char *v[CP__ARGV_MAX + 1]; /* NULL-terminated */
    int n;
    size_t used;
    char text[3 * (PATH_MAX + 32) + CP__MAX_LINKS * 64];
} cp__argv;

/* Appends one argument formatted with fmt. Returns 0, or CP_EINVAL when a is full. */
int cp__argv_add(cp__argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Per-role behaviour, the way twemproxy keeps per-kind behaviour behind function pointers: the
 * core never asks which role a process has, it asks the process's table. cluster.c fills in
 * the tables of masters and replicas, twemproxy.c those of shards and proxies; up.c puts them
 * together (cp__role_table) and hands them to every cp_topo it makes or opens. */
typedef struct cp__role_ops {
    const char *program;    /* "redis-server" / "nutcracker": what labels call the process */
    const char *dir_prefix; /* its directory DIR/<dir_prefix>-PORT */
    const char *log_file;   /* the server's own log in that directory */
    int bus_port;           /* 1: also holds port + CP__BUS_OFFSET (the cluster bus) */
    int stats_port;         /* 1: also holds a stats port (cp_proc.stats_port) */
    int endpoint;           /* 1: clients connect here (cp_topo_endpoints) */
    /* The absolute path of its binary, from t's settings ("" when unknown). */
    const char *(*binary)(const cp_topo *t);
    /* Writes the config of process i into its directory (which exists). 0 or CP_E* with err. */
    int (*write_config)(const cp_topo *t, size_t i, char *err, size_t errlen);
    /* Appends the arguments after argv[0] that start process i. 0 or CP_EINVAL (too long). */
    int (*add_args)(const cp_topo *t, size_t i, cp__argv *a);
    /* One readiness probe of process i: 0 when it serves, else a CP_E* code with why in err. */
    int (*probe)(const cp_topo *t, size_t i, char *err, size_t errlen);
} cp__role_ops;

/* One table per role, indexed by cp_proc_role; a NULL entry is a role this topology cannot
 * handle (its processes are still recognised and stopped by PID). */
typedef const cp__role_ops *const cp__role_table[CP__ROLE_SLOTS];

struct cp_topo {
    cp_topo_kind kind;
    char dir[PATH_MAX];
    char *password; /* NULL when none */
    int persistence;
    char host[64]; /* every process's address: 127.0.0.1, or ::1 (cp_up_opts.host) */
    char hash[32];
    char distribution[32];
    int auto_eject;
    int server_timeout_ms; /* twemproxy: nutcracker `timeout:`, 0 none (cp_up_opts) */
    int ephemeral;
    char redis_bin[PATH_MAX];
    char nutcracker_bin[PATH_MAX];
    char openssl_bin[PATH_MAX];
    char clusterpipe_bin[PATH_MAX]; /* runs the wire; "" without one */

    /* Hosts and the wire (cp_up_opts.rtt_ns; links.h). links is empty when rtt_ns is 0. */
    unsigned long long rtt_ns, jitter_ns;
    cp_proxy_placement placement;
    cp_link *links;
    size_t nlinks, caplinks;
    char wire_control[PATH_MAX + 32]; /* DIR/wire/control.sock; "" without a wire */

    /* Security (secure.h). Paths are derived from dir; "" when unused. */
    int tls;
    int tls_auth_clients;
    char password_file[PATH_MAX + 16];
    char tls_ca[PATH_MAX + 16];
    char tls_cert[PATH_MAX + 16];
    char tls_key[PATH_MAX + 16];
    char tls_client_cert[PATH_MAX + 16];
    char tls_client_key[PATH_MAX + 16];

    /* Placement (cp_up_opts.redis_cpus / proxy_cpus), applied at every spawn; pin_*: 0 = none. */
    cpu_set_t redis_cpus, proxy_cpus;
    int pin_redis, pin_proxy;

    const cp__role_ops *const *roles; /* borrowed cp__role_table, or NULL */
    cp_proc *procs;
    size_t nprocs, cap;
    cp__ports ports;
    int auto_ports;  /* 1: a port lost to a concurrent starter may be replaced */
    int dir_created; /* 1: cp_topo_start made dir (a cancelled start removes it again) */

    void (*log)(void *ud, const char *line);
    void (*on_spawn)(void *ud, const cp_proc *p);
    void *hook_ud;
    int quiet;
    const volatile sig_atomic_t *cancel;
};

/* The port process `from` (an index, or CP_LINK_CLIENT) reaches process `to` at: the wire's port
 * when their link crosses hosts, else to's own port. */
int cp__topo_link_port(const cp_topo *t, int from, size_t to);

/* 1 when process i is a redis-server of a cluster (master or replica). */
int cp__topo_is_node(const cp_topo *t, size_t i);

/* An empty handle (automatic ports, default twemproxy hash and distribution) whose processes are
 * handled through roles (borrowed, may be NULL); cp_topo_free releases it. NULL when out of
 * memory. */
cp_topo *cp__topo_new(const cp__role_ops *const *roles);

/* Progress line through the caller's hook (never printed here; nothing when quiet). */
void cp__topo_log(const cp_topo *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 1 when the caller asked us to stop (cancel flag set). */
int cp__topo_cancelled(const cp_topo *t);

/* The table of process i (a fallback that can start nothing when its role has none). */
const cp__role_ops *cp__topo_ops(const cp_topo *t, size_t i);

/* Appends a process record (not started: pid 0) and reserves its ports. Returns 0 with its index
 * in *index, or CP_EINVAL (already CP__MAX_PROCS processes) / CP_ENOMEM with err; t is then
 * unchanged. */
int cp__topo_add_proc(cp_topo *t, cp_proc_role role, int port, int master, size_t *index, char *err,
                      size_t errlen);

/* Takes a port from t->ports (with its bus port when the role's table says so) and records a
 * process of role on it, as cp__topo_add_proc. Returns 0 with *index, or a CP_E* code with err
 * (cp__ports_take's, or cp__topo_add_proc's). */
int cp__topo_add_new(cp_topo *t, cp_proc_role role, int master, size_t *index, char *err,
                     size_t errlen);

/* The reference used to recognise or stop process i. */
cp__pidref cp__topo_ref(const cp_topo *t, size_t i);

/* "redis-server 127.0.0.1:30001 (master)" / "nutcracker 127.0.0.1:30010 (proxy)". */
void cp__topo_proc_label(const cp_topo *t, size_t i, char *buf, size_t len);

/* DIR/<prefix>-PORT and the files in it. */
void cp__topo_proc_dir(const cp_topo *t, size_t i, char *buf, size_t len);
void cp__topo_proc_file(const cp_topo *t, size_t i, const char *file, char *buf, size_t len);

/* Appends s to the string in buf (of size len) between two `quote` characters, with `escape`
 * before every quote inside it (and before every escape, when it is not the quote itself):
 * '"', '\\' for redis.conf (redis's sdssplitargs unescapes it); '\'', '\'' for a YAML
 * single-quoted scalar. Cut short (still quoted) when buf is full. */
void cp__topo_append_quoted(char *buf, size_t len, const char *s, char quote, char escape);

/* Writes text to path with mode 0600 (configs and secrets). 0, or CP_EIO with "path: reason". */
int cp__topo_write_file(const char *path, const char *text, char *err, size_t errlen);

/* Creates the directory of process i and writes its config through its role's table. Returns 0
 * or a CP_E* code with err. */
int cp__topo_write_config(cp_topo *t, size_t i, char *err, size_t errlen);

/* Writes the config and starts process i, records PID and start time and calls on_spawn. Does
 * not wait for it to serve and does not save the state (the caller does). Returns 0 or a CP_E*
 * code with err. */
int cp__topo_spawn(cp_topo *t, size_t i, char *err, size_t errlen);

/* Fills err with "<label>, pid N, <how it exited> <when>; last lines of <log>:\n<tail>". */
void cp__topo_dead_error(const cp_topo *t, size_t i, const char *when, char *err, size_t errlen);

/* 0 while every started process of t is still ours, else CP_ECONNECT with a "died" message
 * naming the first that is not. */
int cp__topo_check_alive(const cp_topo *t, char *err, size_t errlen);

/* Stops processes idx[0..n) (all when idx is NULL) in parallel. Returns how many survived. */
size_t cp__topo_stop(cp_topo *t, const size_t *idx, size_t n);

/* Admin connection to process i (over TLS when the topology has it, AUTH'd). Caller frees with
 * cp__adm_free; NULL with err when it cannot connect. Blocks up to timeout_ms. */
cp__adm *cp__topo_connect(const cp_topo *t, size_t i, int timeout_ms, char *err, size_t errlen);

#endif /* CLUSTERPIPE_ORCH_TOPO_H */
