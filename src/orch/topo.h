/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The private shape of a cp_topo and the helpers its modules share: spawning one process of the
 * topology from its recorded settings, waiting for it to serve, describing a dead one with its
 * log tail, and stopping a set. A cp_topo owns its procs array and strings; cp_topo_free frees
 * them. One thread at a time per cp_topo.
 *
 * Files: every process has its own directory DIR/redis-PORT or DIR/nutcracker-PORT holding its
 * config (redis.conf / nutcracker.yml), its log (redis.log / nutcracker.log), stdout+stderr
 * (stdout.log), and for cluster nodes nodes.conf. Secrets: DIR/password and DIR/tls/ (secure.h).
 */
#ifndef CLUSTERPIPE_ORCH_TOPO_H
#define CLUSTERPIPE_ORCH_TOPO_H

#include "orch/orch.h"
#include "orch/adm.h"
#include "orch/ports.h"
#include "orch/proc.h"

#include <limits.h>

#define CP__MAX_PROCS 256
#define CP__DIR_MAX 3000              /* longest topology directory path accepted */
#define CP__START_TIMEOUT_MS 20000    /* a process to answer after spawn */
#define CP__CONVERGE_TIMEOUT_MS 60000 /* a cluster to agree */
#define CP__STOP_TIMEOUT_MS 10000     /* SIGTERM before SIGKILL */
#define CP__ADM_TIMEOUT_MS 5000       /* admin command timeout */

struct cp_topo {
    cp_topo_kind kind;
    char dir[PATH_MAX];
    char *password; /* NULL when none */
    int persistence;
    char hash[32];
    char distribution[32];
    int auto_eject;
    int ephemeral;
    char redis_bin[PATH_MAX];
    char nutcracker_bin[PATH_MAX];
    char openssl_bin[PATH_MAX];

    /* Security (secure.h). Paths are derived from dir; "" when unused. */
    int tls;
    int tls_auth_clients;
    char password_file[PATH_MAX + 16];
    char tls_ca[PATH_MAX + 16];
    char tls_cert[PATH_MAX + 16];
    char tls_key[PATH_MAX + 16];
    char tls_client_cert[PATH_MAX + 16];
    char tls_client_key[PATH_MAX + 16];

    cp_proc *procs;
    size_t nprocs, cap;
    cp__ports ports;
    int auto_ports; /* 1: a port lost to a concurrent starter may be replaced */

    void (*log)(void *ud, const char *line);
    void (*on_spawn)(void *ud, const cp_proc *p);
    void *hook_ud;
    int quiet;
    const volatile sig_atomic_t *cancel;
};

/* Progress line through the caller's hook (never printed here). */
void cp__topo_log(const cp_topo *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 1 when the caller asked us to stop (cancel flag set). */
int cp__topo_cancelled(const cp_topo *t);

/* Appends a process record (not started: pid 0). Returns its index or -1 when full / no memory. */
int cp__topo_add_proc(cp_topo *t, cp_proc_role role, int port, int master);

/* The reference used to recognise or stop process i. */
cp__pidref cp__topo_ref(const cp_topo *t, size_t i);

/* "redis-server 127.0.0.1:30001" / "nutcracker 127.0.0.1:30010". */
void cp__topo_proc_label(const cp_topo *t, size_t i, char *buf, size_t len);

/* DIR/<name>-PORT and the files in it. */
void cp__topo_proc_dir(const cp_topo *t, size_t i, char *buf, size_t len);
void cp__topo_proc_file(const cp_topo *t, size_t i, const char *file, char *buf, size_t len);

/* Writes the config of process i (redis.conf, or nutcracker.yml from the current shard list).
 * Creates its directory. Returns 0 or -1 with err. */
int cp__topo_write_config(cp_topo *t, size_t i, char *err, size_t errlen);

/* Writes the config and starts process i, records PID and start time, saves the state and calls
 * on_spawn. Does not wait for it to serve. Returns 0 or a CP_E* code with err. */
int cp__topo_spawn(cp_topo *t, size_t i, char *err, size_t errlen);

/* Waits until every process in idx[0..n) serves: redis answers PING with PONG, a proxy serves a
 * SET/GET round trip. A process that died meanwhile fails the wait with its log tail, unless it
 * died because its port was taken by someone else and ports are automatic: then it is moved to a
 * fresh port and started again (only allowed before a cluster is formed: `may_move`). */
int cp__topo_wait_serving(cp_topo *t, const size_t *idx, size_t n, int may_move, char *err,
                          size_t errlen);

/* Fills err with "<label> (pid N) <how it exited>; last lines of <log>:\n<tail>". */
void cp__topo_dead_error(const cp_topo *t, size_t i, const char *when, char *err, size_t errlen);

/* Returns -1 with a "died" message when an earlier-started process of t is no longer ours. */
int cp__topo_check_alive(const cp_topo *t, char *err, size_t errlen);

/* Stops processes idx[0..n) (all when idx is NULL) in parallel. Returns how many survived. */
size_t cp__topo_stop(cp_topo *t, const size_t *idx, size_t n);

/* Admin connection to process i (over TLS when the topology has it, AUTH'd). Caller frees. */
cp__adm *cp__topo_connect(const cp_topo *t, size_t i, int timeout_ms, char *err, size_t errlen);

/* topodir.c: makes t->dir usable for a new topology (a fresh mkdtemp under $TMPDIR when dir is
 * NULL, an empty directory, or one whose recorded topology is entirely down, whose files are then
 * removed); *created says whether we made it. Returns 0 or a CP_E* code with err. */
int cp__topo_prepare_dir(cp_topo *t, const char *dir, int *created, char *err, size_t errlen);

/* topodir.c: removes what a topology wrote in dir, then dir itself when that leaves it empty. */
void cp__topo_remove_files(const char *dir);

/* state.c: state.json in the topology directory (written atomically; read with jansson). */
int cp__state_save(const cp_topo *t, char *err, size_t errlen);
int cp__state_load(const char *dir, cp_topo **out, char *err, size_t errlen);

/* topo.c: allocation of an empty handle; cp_topo_free releases it. */
cp_topo *cp__topo_new(void);

#endif /* CLUSTERPIPE_ORCH_TOPO_H */
