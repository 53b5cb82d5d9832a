/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe up`, `status` and `down`: flag parsing, printing and exit codes around the
 * orchestration layer (src/orch/orch.h), which does the work. Results go to stdout,
 * progress and errors to stderr. Exit codes: 0 ok, 1 the run failed, 2 bad usage. Single-threaded;
 * the only global is the signal flag that lets SIGINT/SIGTERM during `up` stop what was started.
 */
#include "cli/cli.h"
#include "cli/flags.h"
#include "cli/flagsets.h"

#include "clusterpipe/clusterpipe.h"
#include "orch/orch.h"
#include "util/dur.h"

#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ERRLEN 4096

static void log_stderr(void *ud, const char *line) {
    (void)ud;
    fprintf(stderr, "clusterpipe: %s\n", line);
}

/* ---- up -------------------------------------------------------------------------------------- */

static int parse_hash(const char *cmd, const cp_cli_flag *f, const char *v, void *dst) {
    if (!cp_orch_twemproxy_hash_valid(v))
        return cp_cli_flag_error(cmd, f, "unknown twemproxy hash '%s'", v);
    *(const char **)dst = v;
    return 0;
}

static int parse_distribution(const char *cmd, const cp_cli_flag *f, const char *v, void *dst) {
    if (!cp_orch_twemproxy_distribution_valid(v))
        return cp_cli_flag_error(cmd, f, "'%s' is not ketama, modula or random", v);
    *(const char **)dst = v;
    return 0;
}

static int parse_placement(const char *cmd, const cp_cli_flag *f, const char *v, void *dst) {
    cp_proxy_placement *p = dst;
    if (strcmp(v, "servers") == 0)
        *p = CP_PROXIES_WITH_SERVERS;
    else if (strcmp(v, "clients") == 0)
        *p = CP_PROXIES_WITH_CLIENTS;
    else if (strcmp(v, "tier") == 0)
        *p = CP_PROXIES_TIER;
    else
        return cp_cli_flag_error(cmd, f, "'%s' is not servers, clients or tier", v);
    return 0;
}

#define UP(field) offsetof(cp_up_opts, field)
#define UP_SWITCH(flag, field, text) CP_CLI_SET(flag, CP_CLI_SWITCH, 1, UP(field), text)
#define UP_STRING(flag, field, placeholder, text) CP_CLI_STR(flag, placeholder, UP(field), text)

/* The flags only one kind of topology takes (checked after parsing). */
static const char *const twemproxy_only[] = {"--proxies", "--hash", "--distribution",
                                             "--auto-eject", "--proxy-placement"};

static const cp_cli_flag up_rows[] = {
    CP_CLI_NUM("--shards", "N", CP_CLI_INT, 1, 128, UP(shards),
               "cluster masters / redis servers behind twemproxy (default 3)"),
    CP_CLI_NUM("--replicas", "R", CP_CLI_INT, 0, 8, UP(replicas),
               "cluster: replicas per master (default 0)"),
    CP_CLI_NUM("--proxies", "M", CP_CLI_INT, 1, 64, UP(proxies),
               "twemproxy: nutcracker processes, each fronting every shard\n(default 1)"),
    CP_CLI_FN("--hash", "H", parse_hash, UP(hash), "twemproxy hash (default fnv1a_64)"),
    CP_CLI_FN("--distribution", "D", parse_distribution, UP(distribution),
              "twemproxy distribution: ketama, modula, random (default ketama)"),
    UP_SWITCH("--auto-eject", auto_eject, "twemproxy: auto_eject_hosts true (default false)"),
    CP_CLI_LIKE(cp_cli_def_rtt, UP(rtt_ns),
                "every redis-server is a host of its own, the client one more:\neach link "
                "between two hosts goes through one 'clusterpipe\nwire' process that adds D of "
                "round trip (J: jitter around\nit; 500us~50us). Default 0: no wire"),
    CP_CLI_FN("--proxy-placement", "P", parse_placement, UP(proxy_placement),
              "twemproxy with --rtt: the proxies' hosts: servers (a\nnutcracker on each redis "
              "host; default), clients (on the\nclient's host), tier (hosts of their own)"),
    /* 65535 for twemproxy; a cluster node also needs port+10000 (checked after parsing) */
    CP_CLI_NUM("--base-port", "P", CP_CLI_INT, 1024, 65535, UP(base_port),
               "use ports P, P+1, ... (a busy one is an error); default: free\nports from 10000 "
               "up. Cluster nodes also use port+10000."),
    CP_CLI_LIKE(cp_cli_def_dir, UP(dir),
                "configs, logs and state.json (default: a new directory under\n$TMPDIR or /tmp)"),
    CP_CLI_LIKE(cp_cli_def_password, UP(password),
                "requirepass/masterauth (and redis_auth for twemproxy);\ndefault: a random "
                "password, kept in DIR/password (mode 0600)"),
    UP_SWITCH("--no-password", no_password,
              "no AUTH at all, e.g. to compare with a tool that cannot AUTH;\nany local user "
              "can then use (and FLUSHALL) the servers"),
    UP_SWITCH("--tls", tls,
              "cluster: serve TLS only (clients, cluster bus, replication),\nwith a CA and "
              "certificates made for this run in DIR/tls\n(needs the openssl command; twemproxy "
              "has no TLS)"),
    UP_SWITCH("--tls-auth-clients", tls_auth_clients,
              "with --tls: clients must present a certificate signed by the\nrun's CA "
              "(DIR/tls/client.crt and client.key are made for them)"),
    UP_SWITCH("--persistence", persistence, "RDB + AOF (default: none)"),
    UP_STRING("--redis-server", redis_server, "PATH",
              "redis-server binary (default: $PATH, "
              "/usr/sbin)"),
    UP_STRING("--nutcracker", nutcracker, "PATH", "nutcracker binary (default: $PATH, /usr/sbin)"),
    UP_STRING("--openssl", openssl, "PATH", "openssl command (default: $PATH, /usr/sbin)"),
    CP_CLI_LIKE(cp_cli_def_quiet, UP(quiet), NULL),
    CP_CLI_END,
};

static const cp_cli_cmd up_cmd = {
    .name = "up",
    .usage = "usage: clusterpipe up cluster   [--shards N] [--replicas R] [--rtt D] [options]\n"
             "       clusterpipe up twemproxy [--shards N] [--proxies M] [--hash H]\n"
             "                                [--distribution D] [--auto-eject]\n"
             "                                [--rtt D [--proxy-placement P]] [options]\n"
             "\n"
             "Starts real redis-server (and nutcracker) processes on 127.0.0.1 and returns when\n"
             "the topology serves: every cluster node reports cluster_state:ok and agrees on the\n"
             "slot map, or every proxy answers a SET/GET. Prints the endpoints and the "
             "directory.\n"
             "\n",
    .rows = up_rows,
    .epilog = "\n"
              "Servers listen on 127.0.0.1 only, with protected-mode yes (docs/security.md).\n"
              "Ctrl-C (SIGINT) or SIGTERM while starting stops everything started. The processes\n"
              "keep running after 'up' returns; stop them with 'clusterpipe down --dir DIR'.\n"
              "Exit status: 0 up, 1 failed (nothing left running), 2 bad usage.\n",
    .width = 21,
};

/* "client" or a process's "host:port" (the wire's: "-"), for a link's ends. */
static void link_end(const cp_topo *t, int i, char *buf, size_t len) {
    const cp_proc *p = i >= 0 ? cp_topo_proc(t, (size_t)i) : NULL;
    if (p == NULL)
        snprintf(buf, len, "client");
    else
        snprintf(buf, len, strchr(p->host, ':') ? "[%s]:%d" : "%s:%d", p->host, p->port);
}

/* The links of a topology with a wire: from, to, whether they cross hosts and at which port of
 * the wire. Nothing without a wire. */
static void print_links(const cp_topo *t) {
    size_t n = cp_topo_nlinks(t);
    if (n == 0)
        return;
    char rtt[32];
    printf("wire: %s of round trip on every link that crosses hosts (control %s)\n",
           cp__dur_format(cp_topo_rtt_ns(t), rtt, sizeof(rtt)), cp_topo_wire_control(t));
    if (cp_topo_get_kind(t) == CP_TOPO_TWEMPROXY)
        printf("proxy placement: %s\n", cp_proxy_placement_name(cp_topo_proxy_placement(t)));
    printf("  %-8s %-22s %-8s %-22s %s\n", "FROM", "", "TO", "", "THROUGH");
    for (size_t k = 0; k < n; k++) {
        const cp_link *l = cp_topo_link(t, k);
        char from[96], to[96], via[48];
        link_end(t, l->from, from, sizeof(from));
        link_end(t, l->to, to, sizeof(to));
        if (l->crosses)
            snprintf(via, sizeof(via), "wire port %d (crosses hosts)", l->port);
        else
            snprintf(via, sizeof(via), "direct (same host)");
        printf("  %-8s %-22s %-8s %-22s %s\n",
               l->from < 0 ? "client" : cp_proc_role_name(cp_topo_proc(t, (size_t)l->from)->role),
               l->from < 0 ? "" : from, cp_proc_role_name(cp_topo_proc(t, (size_t)l->to)->role), to,
               via);
    }
}

/* The links as status --json shows them. */
static json_t *links_json(const cp_topo *t) {
    json_t *a = json_array();
    for (size_t k = 0; a != NULL && k < cp_topo_nlinks(t); k++) {
        const cp_link *l = cp_topo_link(t, k);
        char from[96], to[96];
        link_end(t, l->from, from, sizeof(from));
        link_end(t, l->to, to, sizeof(to));
        json_array_append_new(
            a, json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:i, s:I}", "name", l->name, "from", from,
                         "from_role",
                         l->from < 0 ? "client"
                                     : cp_proc_role_name(cp_topo_proc(t, (size_t)l->from)->role),
                         "to", to, "to_role",
                         cp_proc_role_name(cp_topo_proc(t, (size_t)l->to)->role), "crosses",
                         l->crosses, "wire_port", l->port, "rtt_ns", (json_int_t)l->rtt_ns));
    }
    return a;
}

/* Prints what a user needs after `up`: endpoints, dir, processes, how to connect and stop. */
static void print_up(const cp_topo *t) {
    char eps[8192];
    cp_topo_endpoints(t, eps, sizeof(eps));
    int cluster = cp_topo_get_kind(t) == CP_TOPO_CLUSTER;
    size_t n = cp_topo_nprocs(t);
    printf("%s is up\n", cluster ? "Redis Cluster" : "twemproxy");
    printf("endpoints: %s\n", eps);
    printf("dir: %s\n", cp_topo_dir(t));
    for (size_t i = 0; i < n; i++) {
        const cp_proc *p = cp_topo_proc(t, i);
        const char *role = cp_proc_role_name(p->role);
        if (p->role == CP_ROLE_WIRE) {
            printf("  %-8s %-16s pid %ld\n", role, "-", (long)p->pid);
            continue;
        }
        printf("  %-8s %s:%-6d pid %ld", role, p->host, p->port, (long)p->pid);
        if (p->role == CP_ROLE_REPLICA && p->master >= 0)
            printf("  replica of %s:%d", cp_topo_proc(t, (size_t)p->master)->host,
                   cp_topo_proc(t, (size_t)p->master)->port);
        if (p->role == CP_ROLE_PROXY)
            printf("  stats port %d", p->stats_port);
        printf("\n");
    }
    print_links(t);
    char first[64];
    snprintf(first, sizeof(first), "%.*s", (int)strcspn(eps, ","), eps);
    const char *colon = strrchr(first, ':');
    /* Never the password itself: where it is, and commands that read it from there. */
    char tls[PATH_MAX * 3 + 64] = "";
    if (cp_topo_tls_ca(t) != NULL) {
        printf("tls: on (CA %s)\n", cp_topo_tls_ca(t));
        snprintf(tls, sizeof(tls), " --tls --cacert %s", cp_topo_tls_ca(t));
        if (cp_topo_tls_client_cert(t) != NULL)
            snprintf(tls + strlen(tls), sizeof(tls) - strlen(tls), " --cert %s --key %s",
                     cp_topo_tls_client_cert(t), cp_topo_tls_client_key(t));
    }
    const char *pwf = cp_topo_password_file(t);
    if (pwf != NULL) {
        printf("auth: on (password in %s, mode 0600)\n", pwf);
        printf("try:  redis-cli %s-p %s%s --askpass\n", cluster ? "-c " : "",
               colon ? colon + 1 : "?", tls);
        printf("  or: redis-cli %s-p %s%s --no-auth-warning -a \"$(cat %s)\"\n",
               cluster ? "-c " : "", colon ? colon + 1 : "?", tls, pwf);
    } else {
        printf("auth: off (--no-password: any local user can use these servers)\n");
        printf("try:  redis-cli %s-p %s%s\n", cluster ? "-c " : "", colon ? colon + 1 : "?", tls);
    }
    printf("stop: clusterpipe down --dir %s\n", cp_topo_dir(t));
}

/* `clusterpipe up`: flags are checked here so a bad one exits 2 before anything starts; the
 * orchestration layer does the rest, polling our signal flag so Ctrl-C stops what it started. */
int cp_cli_up(int argc, char **argv) {
    const char *cmd = "up";
    if (argc >= 2 && cp_cli_is_help(argv[1])) {
        cp_cli_help(&up_cmd, stdout);
        return CP_EXIT_OK;
    }
    if (argc < 2)
        return cp_cli_usage_error(cmd, "which topology? 'cluster' or 'twemproxy'");
    cp_up_opts o = CP_UP_OPTS_INIT;
    if (strcmp(argv[1], "cluster") == 0)
        o.kind = CP_TOPO_CLUSTER;
    else if (strcmp(argv[1], "twemproxy") == 0)
        o.kind = CP_TOPO_TWEMPROXY;
    else
        return cp_cli_usage_error(cmd, "unknown topology '%s' (cluster or twemproxy)", argv[1]);
    int cluster = o.kind == CP_TOPO_CLUSTER;
    cp_cli_seen seen;
    int prc = cp_cli_parse(&up_cmd, argc, argv, 2, &o, &seen);
    if (prc != CP_CLI_GO)
        return prc;
    /* the twemproxy flag given last, as the one to name */
    const char *saw_tw_flag = NULL;
    for (size_t i = 0, last = 0; i < sizeof(twemproxy_only) / sizeof(twemproxy_only[0]); i++)
        if ((size_t)cp_cli_given(&seen, twemproxy_only[i]) > last) {
            last = (size_t)cp_cli_given(&seen, twemproxy_only[i]);
            saw_tw_flag = twemproxy_only[i];
        }
    int saw_tw = saw_tw_flag != NULL, saw_replicas = cp_cli_given(&seen, "--replicas") > 0;
    if (cluster && o.base_port > 55535)
        return cp_cli_usage_error(cmd, "--base-port: %d is out of range [1024, 55535]",
                                  o.base_port);
    if (cluster && saw_tw)
        return cp_cli_usage_error(cmd, "%s is a twemproxy option", saw_tw_flag);
    if (!cluster && saw_replicas)
        return cp_cli_usage_error(cmd, "--replicas is a cluster option");
    if (o.password != NULL && o.no_password)
        return cp_cli_usage_error(cmd, "--password and --no-password exclude each other");
    if (!cluster && (o.tls || o.tls_auth_clients))
        return cp_cli_usage_error(cmd,
                                  "%s: twemproxy (nutcracker) has no TLS support; TLS needs "
                                  "'up cluster'",
                                  o.tls ? "--tls" : "--tls-auth-clients");
    if (o.tls_auth_clients && !o.tls)
        return cp_cli_usage_error(cmd, "--tls-auth-clients needs --tls");
    if (o.rtt_ns > 0 && o.tls)
        return cp_cli_usage_error(cmd, "--rtt and --tls together are not supported");
    /* The wire is this very program, run as `clusterpipe wire`. */
    char self[PATH_MAX];
    ssize_t selflen = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (o.rtt_ns > 0 && selflen > 0) {
        self[selflen] = '\0';
        o.clusterpipe = self;
    }
    long nprocs = cluster ? (long)o.shards * (1 + o.replicas) : (long)o.shards + o.proxies;
    if (o.base_port > 0 &&
        o.base_port + nprocs + (cluster ? 0 : o.proxies) - 1 > (cluster ? 55535 : 65535))
        return cp_cli_usage_error(cmd, "--base-port %d leaves no room for %ld processes",
                                  o.base_port, nprocs);

    cp_cli_install_signals();
    o.cancel = &cp_cli_interrupted;
    o.log = log_stderr;
    char err[ERRLEN] = "";
    cp_topo *t = NULL;
    int rc = cp_topo_up(&o, &t, err, sizeof(err));
    if (rc != 0) {
        if (cp_cli_interrupted) {
            /* err starts with "interrupted"; keep only what follows (where the logs are). */
            const char *rest = strchr(err, '\n');
            fprintf(stderr,
                    "clusterpipe up: interrupted by signal %d; everything started was stopped%s\n",
                    (int)cp_cli_interrupted, rest ? rest : "");
        } else {
            fprintf(stderr, "clusterpipe up: %s\n", err);
        }
        return CP_EXIT_FAIL;
    }
    if (cp_cli_interrupted) {
        /* The signal came as `up` finished: honour it, leave nothing running. */
        cp_topo_down(t, 0, err, sizeof(err));
        cp_topo_free(t);
        fprintf(stderr, "clusterpipe up: interrupted by signal %d; stopped everything\n",
                (int)cp_cli_interrupted);
        return CP_EXIT_FAIL;
    }
    print_up(t);
    fflush(stdout);
    cp_topo_free(t);
    return CP_EXIT_OK;
}

/* ---- status ---------------------------------------------------------------------------------- */

/* What status and down parse into. */
typedef struct dir_opts {
    const char *dir;
    int json, keep;
} dir_opts;

/* The topology directory both require. */
static const cp_cli_flag dir_rows[] = {
    {.like = &cp_cli_def_dir,
     .off = offsetof(dir_opts, dir),
     .opts = CP_CLI_REQUIRED,
     .help = "the topology's directory (required)"},
    CP_CLI_END,
};

static const cp_cli_flag status_rows[] = {
    {.kind = CP_CLI_INCLUDE, .include = dir_rows},
    CP_CLI_SET("--json", CP_CLI_SWITCH, 1, offsetof(dir_opts, json),
               "one JSON object (\"schema\": \"clusterpipe.status/1\") on stdout"),
    CP_CLI_END,
};

static const cp_cli_cmd status_cmd = {
    .name = "status",
    .usage = "usage: clusterpipe status --dir DIR [--json]\n"
             "\n"
             "Shows every process of the topology started by 'clusterpipe up --dir DIR': role,\n"
             "address, PID, alive, memory (redis used_memory, resident set size), keys; the\n"
             "topology's key count (a cluster's: DBSIZE sent to every master by the library's\n"
             "fan-out, summed); the cluster state (cluster_state:ok everywhere and one agreed\n"
             "slot map); and whether auth and TLS are on (the password file's path, never the\n"
             "password).\n",
    .rows = status_rows,
    .epilog = "Exit status: 0 healthy, 1 something is down or no topology in DIR, 2 bad usage.\n",
    .width = 13,
};

/* The topology's key count. A cluster is asked through the library, whose DBSIZE goes to every
 * master and sums their answers (one client, the same fan-out an application uses); a
 * twemproxy's shards are the per-process rows (the proxy does not answer DBSIZE). Returns the
 * count, or -1 with why set (a master that does not answer, a shard without a count). */
static long long topo_keys(const cp_topo *t, const char *eps, const long long *shard_keys,
                           char *why, size_t whylen) {
    if (cp_topo_get_kind(t) != CP_TOPO_CLUSTER) {
        long long sum = 0;
        for (size_t i = 0; i < cp_topo_nprocs(t); i++) {
            if (cp_topo_proc(t, i)->role != CP_ROLE_SHARD)
                continue;
            if (shard_keys[i] < 0) {
                snprintf(why, whylen, "shard %s:%d gave no count", cp_topo_proc(t, i)->host,
                         cp_topo_proc(t, i)->port);
                return -1;
            }
            sum += shard_keys[i];
        }
        return sum;
    }
    cp_options o = CP_OPTIONS_INIT;
    cp_topo_client_options(t, &o);
    o.seeds = eps;
    o.connect_timeout_ms = 1000;
    o.io_timeout_ms = 2000;
    o.retry_budget_ms = CP_RETRY_NONE; /* status reports what is, it does not wait for a failover */
    cp_client *c = cp_connect(&o);
    if (c == NULL) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    long long n = -1;
    redisReply *r = c->err == 0 ? cp_command(c, "DBSIZE") : NULL;
    if (r != NULL && r->type == REDIS_REPLY_INTEGER)
        n = r->integer;
    else
        snprintf(why, whylen, "%s",
                 r == NULL        ? c->errstr
                 : r->str != NULL ? r->str
                                  : "DBSIZE: not a count");
    cp_reply_free(r);
    cp_free(c);
    return n;
}

/* Human-readable byte count, "-" when unknown. */
static const char *human(long long b, char *buf, size_t len) {
    if (b < 0)
        snprintf(buf, len, "-");
    else if (b >= 1LL << 30)
        snprintf(buf, len, "%.2fG", (double)b / (1LL << 30));
    else if (b >= 1LL << 20)
        snprintf(buf, len, "%.2fM", (double)b / (1LL << 20));
    else
        snprintf(buf, len, "%.1fK", (double)b / 1024);
    return buf;
}

/* `clusterpipe status`: reads state.json and asks every process; the exit code says whether the
 * whole topology is healthy so scripts can wait on it. */
int cp_cli_status(int argc, char **argv) {
    dir_opts so = {0};
    int rc = cp_cli_parse(&status_cmd, argc, argv, 1, &so, NULL);
    if (rc != CP_CLI_GO)
        return rc;
    const char *dir = so.dir;
    int json = so.json;
    signal(SIGPIPE, SIG_IGN);
    char err[ERRLEN] = "";
    cp_topo *t = NULL;
    if (cp_topo_open(dir, &t, err, sizeof(err)) != 0) {
        fprintf(stderr, "clusterpipe status: %s\n", err);
        return CP_EXIT_FAIL;
    }
    char check[ERRLEN] = "";
    int healthy = cp_topo_check(t, check, sizeof(check)) == 0;
    int cluster = cp_topo_get_kind(t) == CP_TOPO_CLUSTER;
    char eps[8192];
    cp_topo_endpoints(t, eps, sizeof(eps));
    size_t n = cp_topo_nprocs(t);
    const char *pwf = cp_topo_password_file(t), *ca = cp_topo_tls_ca(t);
    json_t *root = NULL, *procs = NULL;
    if (json) {
        root = json_object();
        procs = json_array();
        json_object_set_new(root, "schema", json_string("clusterpipe.status/1"));
        json_object_set_new(root, "kind", json_string(cluster ? "cluster" : "twemproxy"));
        json_object_set_new(root, "dir", json_string(cp_topo_dir(t)));
        json_object_set_new(root, "endpoints", json_string(eps));
        json_object_set_new(root, "auth", json_boolean(pwf != NULL));
        json_object_set_new(root, "password_file", pwf ? json_string(pwf) : json_null());
        json_object_set_new(root, "tls", json_boolean(ca != NULL));
        json_object_set_new(root, "tls_ca", ca ? json_string(ca) : json_null());
        if (cp_topo_nlinks(t) > 0) {
            json_object_set_new(root, "rtt_ns", json_integer((json_int_t)cp_topo_rtt_ns(t)));
            if (!cluster)
                json_object_set_new(
                    root, "proxy_placement",
                    json_string(cp_proxy_placement_name(cp_topo_proxy_placement(t))));
            json_object_set_new(root, "wire_control", json_string(cp_topo_wire_control(t)));
            json_object_set_new(root, "links", links_json(t));
        }
    } else {
        printf("%s in %s\nendpoints: %s\n", cluster ? "Redis Cluster" : "twemproxy", cp_topo_dir(t),
               eps);
        /* Whether auth is on and where the secret is; never the password itself. */
        if (pwf != NULL)
            printf("auth: on (password in %s)\n", pwf);
        else
            printf("auth: off\n");
        if (ca != NULL)
            printf("tls: on (CA %s%s)\n", ca,
                   cp_topo_tls_client_cert(t) ? "; clients need a certificate" : "");
        else
            printf("tls: off\n");
        printf("%-8s %-16s %-8s %-6s %-11s %-9s %s\n", "ROLE", "ADDRESS", "PID", "ALIVE",
               "USED_MEMORY", "RSS", "KEYS");
    }
    long long *shard_keys = calloc(n ? n : 1, sizeof(*shard_keys));
    if (shard_keys == NULL) {
        fprintf(stderr, "clusterpipe status: out of memory\n");
        json_decref(root);
        json_decref(procs);
        cp_topo_free(t);
        return CP_EXIT_FAIL;
    }
    for (size_t i = 0; i < n; i++) {
        const cp_proc *p = cp_topo_proc(t, i);
        cp_proc_stats st;
        cp_topo_proc_stats(t, i, &st);
        shard_keys[i] = st.keys;
        char addr[96], m1[32], m2[32], keys[32];
        if (p->role == CP_ROLE_WIRE)
            snprintf(addr, sizeof(addr), "-"); /* its ports are its links' (below) */
        else
            snprintf(addr, sizeof(addr), "%s:%d", p->host, p->port);
        if (json) {
            json_t *o = json_object();
            json_object_set_new(o, "role", json_string(cp_proc_role_name(p->role)));
            json_object_set_new(o, "address", json_string(addr));
            json_object_set_new(o, "pid", json_integer(p->pid));
            json_object_set_new(o, "alive", json_boolean(st.alive));
            json_object_set_new(o, "reachable", json_boolean(st.reachable));
            json_object_set_new(o, "used_memory",
                                st.used_memory >= 0 ? json_integer(st.used_memory) : json_null());
            json_object_set_new(o, "rss", st.rss >= 0 ? json_integer(st.rss) : json_null());
            json_object_set_new(o, "keys", st.keys >= 0 ? json_integer(st.keys) : json_null());
            if (p->id[0])
                json_object_set_new(o, "id", json_string(p->id));
            if (p->role == CP_ROLE_REPLICA && p->master >= 0)
                json_object_set_new(o, "master", json_integer(p->master));
            if (p->role == CP_ROLE_PROXY)
                json_object_set_new(o, "stats_port", json_integer(p->stats_port));
            json_array_append_new(procs, o);
            continue;
        }
        if (st.keys >= 0)
            snprintf(keys, sizeof(keys), "%lld", st.keys);
        else
            snprintf(keys, sizeof(keys), "-");
        printf("%-8s %-16s %-8ld %-6s %-11s %-9s %s\n", cp_proc_role_name(p->role), addr,
               (long)p->pid, st.alive ? (st.reachable ? "yes" : "hung") : "no",
               human(st.used_memory, m1, sizeof(m1)), human(st.rss, m2, sizeof(m2)), keys);
    }
    char why[CP_ERRSTR_LEN] = "";
    long long keys = topo_keys(t, eps, shard_keys, why, sizeof(why));
    free(shard_keys);
    if (json) {
        json_object_set_new(root, "processes", procs);
        json_object_set_new(root, "keys", keys >= 0 ? json_integer(keys) : json_null());
        json_object_set_new(root, "keys_error", keys >= 0 ? json_null() : json_string(why));
        json_object_set_new(root, "healthy", json_boolean(healthy));
        json_object_set_new(root, cluster ? "cluster_state" : "state",
                            json_string(healthy ? "ok" : check));
        char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (text != NULL)
            printf("%s\n", text);
        free(text);
        json_decref(root);
    } else {
        if (keys >= 0)
            printf("keys: %lld (%s)\n", keys,
                   cluster ? "DBSIZE on every master, summed by libclusterpipe"
                           : "the shards' counts summed");
        else
            printf("keys: unknown (%s)\n", why);
        if (healthy)
            printf("%s: ok%s\n", cluster ? "cluster state" : "state",
                   cluster ? " (every node reports cluster_state:ok and the same slot map)"
                           : " (every process answers)");
        else
            printf("%s: NOT ok: %s\n", cluster ? "cluster state" : "state", check);
        print_links(t);
    }
    cp_topo_free(t);
    return healthy ? CP_EXIT_OK : CP_EXIT_FAIL;
}

/* ---- down ------------------------------------------------------------------------------------ */

static const cp_cli_flag down_rows[] = {
    {.kind = CP_CLI_INCLUDE, .include = dir_rows},
    CP_CLI_SET("--keep", CP_CLI_SWITCH, 1, offsetof(dir_opts, keep),
               "keep DIR (configs, logs, state.json)"),
    CP_CLI_END,
};

static const cp_cli_cmd down_cmd = {
    .name = "down",
    .usage = "usage: clusterpipe down --dir DIR [--keep]\n"
             "\n"
             "Stops every process of the topology in DIR by PID (SIGTERM, wait, SIGKILL), each\n"
             "only after checking it is still the process 'up' started, then removes DIR.\n"
             "Running it again is fine.\n",
    .rows = down_rows,
    .epilog = "Exit status: 0 nothing left running, 1 failure, 2 bad usage.\n",
    .width = 13,
};

/* `clusterpipe down`: a missing state.json means there is nothing left to stop (a second `down`
 * is not an error); otherwise every recorded process is stopped by verified PID. */
int cp_cli_down(int argc, char **argv) {
    dir_opts d = {0};
    int prc = cp_cli_parse(&down_cmd, argc, argv, 1, &d, NULL);
    if (prc != CP_CLI_GO)
        return prc;
    const char *dir = d.dir;
    int keep = d.keep;
    char sp[4200];
    snprintf(sp, sizeof(sp), "%s/state.json", dir);
    if (access(sp, F_OK) != 0) {
        fprintf(stderr, "clusterpipe down: nothing to stop: no topology in %s (already down?)\n",
                dir);
        return CP_EXIT_OK;
    }
    char err[ERRLEN] = "";
    cp_topo *t = NULL;
    if (cp_topo_open(dir, &t, err, sizeof(err)) != 0) {
        fprintf(stderr, "clusterpipe down: %s\n", err);
        return CP_EXIT_FAIL;
    }
    size_t n = cp_topo_nprocs(t), running = 0;
    for (size_t i = 0; i < n; i++)
        running += cp_topo_alive(t, i) ? 1 : 0;
    int rc = cp_topo_down(t, keep, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "clusterpipe down: %s\n", err);
        cp_topo_free(t);
        return CP_EXIT_FAIL;
    }
    fprintf(stderr, "clusterpipe: stopped %zu running process(es) of %zu%s%s\n", running, n,
            keep ? "; kept " : "; removed ", dir);
    cp_topo_free(t);
    return CP_EXIT_OK;
}
