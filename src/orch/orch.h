/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Orchestration: bring up, inspect, operate and stop real topologies made of Debian's
 * redis-server and nutcracker processes on 127.0.0.1. A topology lives in a directory that holds
 * its configs, logs and a state file (state.json), so another process can find and stop it.
 *
 * Processes are tracked by PID and stopped by PID (SIGTERM, wait, SIGKILL), and only after
 * checking /proc/PID/cmdline and the start time still match what was started. Nothing is ever
 * stopped by name.
 *
 * Security (docs/security.md). Every server binds 127.0.0.1 only, with protected-mode yes. Unless
 * told otherwise, cp_topo_up generates a password (32 hex characters from /dev/urandom) and uses
 * it as requirepass + masterauth on cluster nodes, requirepass on twemproxy's shards and
 * redis_auth in nutcracker.yml (so clients AUTH to the proxy as well). It is kept in DIR/password
 * (mode 0600) and in DIR/state.json (mode 0600); DIR itself is 0700. cp_up_opts.password sets it
 * explicitly; cp_up_opts.no_password turns auth off (for a tool under comparison that cannot
 * AUTH). Callers get it back with cp_topo_password, or fill a client's options with
 * cp_topo_client_options. The test fixture (tests/support/fixture.h) starts its default
 * topologies with no_password, because the client tests connect to f->endpoints without one.
 *
 * TLS (cluster only; nutcracker has no TLS): cp_up_opts.tls generates a CA and a server
 * certificate for the run with the `openssl` command (DIR/tls/), and the nodes serve TLS only
 * (port 0, tls-port P, tls-cluster and tls-replication yes: the cluster bus and replication are
 * encrypted too). Every admin connection of this layer goes through libclusterpipe's
 * single-endpoint client, so TLS and AUTH apply to it like to any client.
 *
 * Functions block (they spawn, wait for readiness, run admin commands). A cp_topo belongs to one
 * thread at a time. Errors: return 0 or a negative CP_E* code (include/clusterpipe/clusterpipe.h)
 * with a message in `err`, never a bare -1: CP_EINVAL bad options, index, kind, busy fixed port,
 * missing binary, a directory that is not empty or holds a running topology; CP_ENOMEM out of
 * memory; CP_EIO a file, a process that could not be started or stopped, no free port left, or
 * "interrupted" (cancel); CP_ECONNECT a process died or cannot be reached; CP_ETIMEDOUT a process
 * or the cluster did not get ready in time; CP_ESERVER a server refused an admin command;
 * CP_EPROTO an answer we cannot read; CP_ETOPOLOGY the cluster does not agree (cp_topo_check,
 * cp_topo_failover).
 */
#ifndef CLUSTERPIPE_ORCH_ORCH_H
#define CLUSTERPIPE_ORCH_ORCH_H

#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "clusterpipe/clusterpipe.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cp_topo_kind { CP_TOPO_CLUSTER = 1, CP_TOPO_TWEMPROXY = 2 } cp_topo_kind;

typedef enum cp_proc_role {
    CP_ROLE_MASTER = 1,  /* cluster master */
    CP_ROLE_REPLICA = 2, /* cluster replica */
    CP_ROLE_SHARD = 3,   /* plain redis-server behind twemproxy */
    CP_ROLE_PROXY = 4,   /* nutcracker */
    CP_ROLE_WIRE = 5     /* `clusterpipe wire`: the emulated network (up with rtt_ns > 0) */
} cp_proc_role;

/* Where twemproxy's proxies run, as hosts: what decides which of their links cross hosts and
 * so go through the wire (only with cp_up_opts.rtt_ns > 0). */
typedef enum cp_proxy_placement {
    CP_PROXIES_WITH_SERVERS = 0, /* a nutcracker on each redis host (the published setup) */
    CP_PROXIES_WITH_CLIENTS = 1, /* a sidecar on the client's host */
    CP_PROXIES_TIER = 2          /* hosts of their own */
} cp_proxy_placement;

/* "servers", "clients", "tier". */
const char *cp_proxy_placement_name(cp_proxy_placement p);

/* "master", "replica", "shard", "proxy", "wire": the word state.json, status and reports use. */
const char *cp_proc_role_name(cp_proc_role r);

struct cp_proc;

typedef struct cp_up_opts {
    cp_topo_kind kind;
    int shards;               /* masters (cluster) or redis servers (twemproxy) */
    int replicas;             /* cluster: replicas per master */
    int proxies;              /* twemproxy: nutcracker processes, each fronting every shard */
    int base_port;            /* first port tried; 0 = pick free ports from 10000 up */
    const char *dir;          /* NULL: a new directory under $TMPDIR (or /tmp) */
    const char *password;     /* requirepass / masterauth / redis_auth; NULL: generated, unless
                                 no_password */
    int persistence;          /* 0: no RDB/AOF */
    const char *hash;         /* twemproxy: default "fnv1a_64" */
    const char *distribution; /* twemproxy: default "ketama" */
    int auto_eject;           /* twemproxy: auto_eject_hosts, default 0 */
    int ephemeral;            /* 1: children die with the calling thread (tests, compare): they
                                 get PR_SET_PDEATHSIG SIGKILL, which fires when the thread that
                                 called cp_topo_up (or the op that spawned them) exits */
    int quiet;                /* 1: the log hook is never called */

    /* Binaries; NULL: search $PATH, then /usr/sbin, /usr/bin, /usr/local/bin, /usr/local/sbin. */
    const char *redis_server; /* Debian package redis-server */
    const char *nutcracker;   /* Debian package nutcracker */
    /* Progress lines (no trailing newline), e.g. for the CLI to print on stderr. The library
     * never prints. Called from the calling thread only. NULL: no progress. */
    void (*log)(void *ud, const char *line);
    /* Called right after each process is spawned (before it is waited for), also by later
     * operations on the returned topology. Tests use it to record PIDs, or to kill a server
     * during `up` to prove the cleanup. NULL: none. */
    void (*on_spawn)(void *ud, const struct cp_proc *p);
    void *hook_ud; /* passed to log and on_spawn */
    /* When non-NULL and *cancel becomes non-zero (e.g. set by a SIGINT handler), cp_topo_up
     * stops every process it started and returns CP_EIO with "interrupted" in err. Polled at
     * least every 100 ms while waiting. */
    const volatile sig_atomic_t *cancel;

    /* Security (see the top of this file). */
    int no_password;      /* 1: no password at all (password must then be NULL) */
    int tls;              /* cluster only: TLS on every port, certificates generated in DIR/tls */
    int tls_auth_clients; /* with tls: tls-auth-clients yes; a client certificate is generated
                             (DIR/tls/client.crt, client.key) and admin connections use it */
    const char *openssl;  /* the openssl command; NULL: search like the binaries above */

    /* Placement: every redis-server (masters, replicas, shards) is pinned to redis_cpus and
     * every nutcracker to proxy_cpus (sched_setaffinity in the child, before exec, so all their
     * threads inherit it); NULL: inherit the caller's. Copied at cp_topo_up; restarts of the
     * returned handle keep them, a topology reopened from state.json has none. A CPU the kernel
     * refuses fails the spawn (CP_EIO, "sched_setaffinity: ..."). */
    const cpu_set_t *redis_cpus;
    const cpu_set_t *proxy_cpus;
    /* The address every redis-server binds, gossips and is announced on: "127.0.0.1" (NULL)
     * or "::1" (a cluster only). Nothing else: the servers stay on loopback. */
    const char *host;

    /* Hosts and the wire (docs/architecture.md). Every redis-server is a host of its own, the
     * client is one more, and twemproxy's proxies are placed by proxy_placement. With rtt_ns > 0
     * one `clusterpipe wire` process (role CP_ROLE_WIRE, started and stopped by PID like the
     * servers) stands in every link that crosses hosts, adding rtt_ns to each round trip
     * (jitter_ns: spread around it, at most rtt_ns). Cluster: each node announces its wire port
     * (cluster-announce-port) and keeps its bus direct, so the slot map, MOVED and ASK lead
     * clients through the wire; this layer's own admin connections stay direct. With rtt_ns 0
     * nothing of this exists: no wire, no links, the same configs as without these fields. Not
     * with TLS. */
    uint64_t rtt_ns;
    uint64_t jitter_ns; /* adjacent to rtt_ns: the CLI's --rtt fills both */
    cp_proxy_placement proxy_placement;
    const char *clusterpipe; /* the clusterpipe binary that runs `wire`; NULL: $PATH, ... */
    /* twemproxy: nutcracker's `timeout:` (ms a request may wait for its server's answer before
     * the proxy answers an error and closes that server connection); 0, the default: none
     * written, and nutcracker waits forever. */
    int server_timeout_ms;
} cp_up_opts;

#define CP_UP_OPTS_INIT                                                                            \
    {                                                                                              \
        CP_TOPO_CLUSTER, 3, 0, 1, 0, NULL, NULL, 0, NULL, NULL, 0, 0, 0, NULL, NULL, NULL, NULL,   \
            NULL, NULL, 0, 0, 0, NULL, NULL, NULL, NULL, 0, 0, CP_PROXIES_WITH_SERVERS, NULL, 0    \
    }

/* One process of a topology, as recorded in the state file. */
typedef struct cp_proc {
    cp_proc_role role;
    char host[64];
    int port;
    pid_t pid;
    unsigned long long start_time; /* /proc/PID/stat field 22, to recognise our process */
    char id[48];                   /* cluster node id ("" for shards and proxies) */
    int master;                    /* replicas: index of the master in procs; else -1 */
    int stats_port;                /* proxies: nutcracker's stats port (-s); else 0 */
} cp_proc;

typedef struct cp_topo cp_topo;

/* One link of a topology with a wire: who talks to whom, and whether it crosses hosts. */
#define CP_LINK_CLIENT (-1) /* cp_link.from: the client's host */
typedef struct cp_link {
    char name[32];             /* the wire's name for it: "client-30001", "30010-30002" */
    int from;                  /* index of the process that connects, or CP_LINK_CLIENT */
    int to;                    /* index of the process it reaches */
    int crosses;               /* 1: between two hosts, through the wire */
    int port;                  /* crosses: the wire's port standing in for `to`'s; else 0 */
    unsigned long long rtt_ns; /* the round trip it adds: the topology's rtt_ns, or 0 */
} cp_link;

/* Starts a topology and waits until it serves (cluster: every node cluster_state:ok and all
 * agree on the slot map and roles, replicas linked; twemproxy: every proxy answers a SET/GET round
 * trip). On success *out is owned by the caller (cp_topo_free; the processes keep running).
 *
 * opt->dir may name a missing or empty directory, or one holding a topology that is fully down
 * (its files are replaced); a directory with a live topology is refused. Ports: with base_port
 * > 0, ports base_port, base_port+1, ... are used in order (cluster: masters, then replicas;
 * twemproxy: shards, proxies, then the proxies' stats ports) and a busy one is an error naming
 * it; with 0, free ports are picked from a PID-dependent point in 10000..19999 up (below the
 * kernel's ephemeral port range, cluster bus ports included), and a port lost to a concurrent
 * starter is replaced.
 *
 * On failure every process already started is stopped, `err` says which server failed (with the
 * tail of its log), and the directory is kept with the logs (state.json then records only dead
 * processes; `cp_topo_open` + `cp_topo_down` remove it), except that an auto-created directory is
 * removed when the failure was *opt->cancel. Blocks for seconds.
 *
 * Security options (see the top of this file): password and no_password together, tls or
 * tls_auth_clients with twemproxy, and tls_auth_clients without tls are CP_EINVAL. With tls, a
 * missing or failing `openssl` command fails the run before any server starts. */
int cp_topo_up(const cp_up_opts *opt, cp_topo **out, char *err, size_t errlen);

/* cp_topo_up in two steps, for a caller with other work to do while the servers start:
 * cp_topo_start checks, plans and writes the topology and starts every redis-server, returning
 * once they serve (a cluster not yet formed; twemproxy's proxies not started); cp_topo_form
 * forms the cluster, or starts the proxies. Redis keeps a cluster master from reporting
 * cluster_state:ok until 2 s after it started, and for the node timeout after it last served
 * no slot (cp_topo_start gives the masters their slots), so a cluster formed from servers
 * started that long before is up in a fraction of a second: the test fixture keeps one such
 * topology started ahead of the test that will use it. Failures are handled as
 * cp_topo_up handles them; after a failed cp_topo_form, t is only good for cp_topo_free. */
int cp_topo_start(const cp_up_opts *opt, cp_topo **out, char *err, size_t errlen);
int cp_topo_form(cp_topo *t, char *err, size_t errlen);

/* Opens the topology recorded in dir/state.json. */
int cp_topo_open(const char *dir, cp_topo **out, char *err, size_t errlen);

/* Stops every process (by PID, verified), then removes the directory unless keep_dir. Safe to
 * call on a topology that is already down. Does not free t. */
int cp_topo_down(cp_topo *t, int keep_dir, char *err, size_t errlen);

/* Frees the handle only; processes are not touched. */
void cp_topo_free(cp_topo *t);

cp_topo_kind cp_topo_get_kind(const cp_topo *t);
const char *cp_topo_dir(const cp_topo *t);
const char *cp_topo_password(const cp_topo *t); /* NULL when none */

/* DIR/password (mode 0600, the password without a newline), or NULL when there is no password.
 * Lets a script or a message point at the secret without printing it. */
const char *cp_topo_password_file(const cp_topo *t);

/* TLS material of the topology, NULL when it has no TLS: the CA that signed the servers'
 * certificate (DIR/tls/ca.crt), and the client certificate and key (DIR/tls/client.crt,
 * client.key) when the servers require one (tls_auth_clients), else NULL. */
const char *cp_topo_tls_ca(const cp_topo *t);
const char *cp_topo_tls_client_cert(const cp_topo *t);
const char *cp_topo_tls_client_key(const cp_topo *t);

/* Fills the connection fields of *o from the topology: password, tls, tls_ca_file, and the
 * client certificate when required. The other fields (seeds/endpoint, timeouts) are left alone.
 * The strings point into t and live as long as t. */
void cp_topo_client_options(const cp_topo *t, cp_options *o);
size_t cp_topo_nprocs(const cp_topo *t);
const cp_proc *cp_topo_proc(const cp_topo *t, size_t i);

/* The links (none without a wire), and the wire's control socket (wire/control.h; NULL without
 * a wire): what `status` shows and what a scenario blocks or slows. */
size_t cp_topo_nlinks(const cp_topo *t);
const cp_link *cp_topo_link(const cp_topo *t, size_t i);
unsigned long long cp_topo_rtt_ns(const cp_topo *t);
cp_proxy_placement cp_topo_proxy_placement(const cp_topo *t);
const char *cp_topo_wire_control(const cp_topo *t);

/* The port a client reaches process i at: its wire port when the client's link to it crosses
 * hosts, else its own. */
int cp_topo_client_port(const cp_topo *t, size_t i);

/* "127.0.0.1:p,..." of the cluster masters (cluster) or the proxies (twemproxy), each at the
 * port a client reaches it at (cp_topo_client_port), written into buf. Returns 0, or CP_EINVAL when
 * buf is too small. */
int cp_topo_endpoints(const cp_topo *t, char *buf, size_t len);

/* 1 when process i is alive and is the process we started, else 0. */
int cp_topo_alive(const cp_topo *t, size_t i);

/* 1 when the process pid, started at start_time (/proc/PID/stat field 22), is still alive (not a
 * zombie) and its /proc/PID/cmdline names redis-server, nutcracker or clusterpipe (the wire). Lets
 * a test or a script check "nothing left running" by PID after the topology handle is gone. Never
 * signals anything. */
int cp_orch_pid_alive(pid_t pid, unsigned long long start_time);

/* Replace the progress hooks of an opened topology (cp_topo_open has none). Any may be NULL. */
void cp_topo_set_hooks(cp_topo *t, void (*log)(void *ud, const char *line),
                       void (*on_spawn)(void *ud, const cp_proc *p), void *ud);

/* What `status` shows for one process. -1 means unknown (dead, unreachable, or not applicable:
 * proxies have no used_memory/keys/connected_clients/clients_memory). */
typedef struct cp_proc_stats {
    int alive;                   /* cp_topo_alive */
    int reachable;               /* answered PING (after AUTH) */
    long long used_memory;       /* redis: INFO memory used_memory, bytes */
    long long rss;               /* /proc/PID/statm resident set, bytes */
    long long keys;              /* redis: DBSIZE */
    long long connected_clients; /* redis: INFO clients connected_clients (this probe's own
                                    connection included) */
    long long clients_memory;    /* redis: INFO memory mem_clients_normal, bytes: what the
                                    servers' client connections cost (buffers, structures) */
    char reported_role[16];      /* redis: INFO replication role ("master"/"slave"); else "" */
} cp_proc_stats;

/* Fills *st for process i. Blocks briefly (one connection, 1 s timeouts). Returns 0, or CP_EINVAL
 * for a bad index; an unreachable process is not an error (reachable = 0). */
int cp_topo_proc_stats(const cp_topo *t, size_t i, cp_proc_stats *st);

/* Health check without side effects. Cluster: every alive node answers, reports cluster_state:ok,
 * and all agree on the slot map and the roles. Twemproxy: every process alive and answering PING.
 * Returns 0 when healthy, else a negative CP_E* code with the first problem in err. Blocks. */
int cp_topo_check(const cp_topo *t, char *err, size_t errlen);

/* twemproxy: 1 when `hash` / `distribution` is a value nutcracker 0.5 accepts. */
int cp_orch_twemproxy_hash_valid(const char *hash);
int cp_orch_twemproxy_distribution_valid(const char *distribution);

/* ---- operations (cluster unless said otherwise) ---------------------------------------------- */

/* Adds an empty master (replica_of < 0) or a replica of proc replica_of; returns its index in
 * *index. The new node has no slots. */
int cp_topo_add_node(cp_topo *t, int replica_of, size_t *index, char *err, size_t errlen);

/* Moves nslots slots owned by proc `from` to proc `to`, with their keys: SETSLOT IMPORTING and
 * MIGRATING, MIGRATE ... KEYS in batches, SETSLOT NODE on every master. */
int cp_topo_migrate_slots(cp_topo *t, size_t from, size_t to, int nslots, char *err, size_t errlen);

/* Moves slots so every master owns an equal share (within one slot). */
int cp_topo_rebalance(cp_topo *t, char *err, size_t errlen);

/* Sends `sig` to process i (verified PID). SIGKILL simulates a crash. */
int cp_topo_kill(cp_topo *t, size_t i, int sig, char *err, size_t errlen);

/* Restarts process i with its original config and waits until it serves. */
int cp_topo_restart(cp_topo *t, size_t i, char *err, size_t errlen);

/* CLUSTER FAILOVER on replica i; waits until it reports role master. Swaps roles in the state. */
int cp_topo_failover(cp_topo *t, size_t replica, char *err, size_t errlen);

/* twemproxy: adds a redis-server shard and rewrites every proxy's config; returns its index. The
 * running proxies keep their old shard list until cp_topo_restart_proxies. */
int cp_topo_add_shard(cp_topo *t, size_t *index, char *err, size_t errlen);

/* twemproxy: rewrites every proxy config from the current shard list and restarts the proxies
 * one by one (twemproxy cannot reload). */
int cp_topo_restart_proxies(cp_topo *t, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* CLUSTERPIPE_ORCH_ORCH_H */
