/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Topology fixtures for integration tests (see fixture.h). Each cp_fixture is heap-allocated,
 * registered as its topology's spawn hook, and freed by cp_fixture_stop. Main test thread only.
 */
#include "fixture.h"

#include "testutil.h"
#include "util/clock.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* Spawn hook: remember every process so the stop can prove it is gone. */
static void record_spawn(void *ud, const cp_proc *p) {
    cp_fixture *f = ud;
    if (f->nspawned < CP_FIXTURE_MAX_PIDS) {
        f->pids[f->nspawned] = p->pid;
        f->start_times[f->nspawned] = p->start_time;
        f->nspawned++;
    }
}

static void log_stderr(void *ud, const char *line) {
    (void)ud;
    fprintf(stderr, "fixture: %s\n", line);
}

size_t cp_fixture_alive(const cp_fixture *f) {
    size_t n = 0;
    for (size_t i = 0; f != NULL && i < f->nspawned; i++)
        n += cp_orch_pid_alive(f->pids[i], f->start_times[i]) ? 1 : 0;
    return n;
}

/* Last resort after a failed stop: SIGKILL by PID what we recorded and is still ours. */
static size_t kill_leftovers(cp_fixture *f) {
    size_t left = 0;
    for (size_t i = 0; i < f->nspawned; i++) {
        if (!cp_orch_pid_alive(f->pids[i], f->start_times[i]))
            continue;
        left++;
        fprintf(stderr, "fixture: pid %ld survived the stop; killing it\n", (long)f->pids[i]);
        kill(f->pids[i], SIGKILL);
    }
    return left;
}

/* Removes a directory left behind by a failed start (the orchestration keeps the logs). */
static void remove_dir(const char *dir) {
    cp_topo *t = NULL;
    char err[256];
    if (cp_topo_open(dir, &t, err, sizeof(err)) == 0) {
        cp_topo_down(t, 0, err, sizeof(err));
        cp_topo_free(t);
    }
    rmdir(dir);
}

/* A fixture whose servers are started (cp_topo_start), not yet formed. NULL on failure, with
 * the reason on stderr and nothing left. */
static cp_fixture *fixture_begin(const cp_up_opts *opt) {
    signal(SIGPIPE, SIG_IGN);
    cp_fixture *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return NULL;
    f->dir = cp_test_mkdtemp("orch");
    cp_up_opts o = *opt;
    o.dir = f->dir;
    o.ephemeral = 1;
    const char *verbose = getenv("CP_TEST_VERBOSE");
    o.quiet = !(verbose != NULL && *verbose && strcmp(verbose, "0") != 0);
    o.log = log_stderr;
    o.on_spawn = record_spawn;
    o.hook_ud = f;
    if (cp_topo_start(&o, &f->topo, f->err, sizeof(f->err)) != 0) {
        fprintf(stderr, "fixture: cannot start the topology: %s\n", f->err);
        kill_leftovers(f);
        remove_dir(f->dir);
        free(f->dir);
        free(f);
        return NULL;
    }
    return f;
}

/* Forms a begun fixture (cp_topo_form); on failure frees it as above and returns NULL. */
static cp_fixture *fixture_form(cp_fixture *f) {
    if (cp_topo_form(f->topo, f->err, sizeof(f->err)) != 0) {
        fprintf(stderr, "fixture: cannot start the topology: %s\n", f->err);
        cp_topo_free(f->topo);
        kill_leftovers(f);
        remove_dir(f->dir);
        free(f->dir);
        free(f);
        return NULL;
    }
    cp_topo_endpoints(f->topo, f->endpoints, sizeof(f->endpoints));
    return f;
}

cp_fixture *cp_fixture_start(const cp_up_opts *opt) {
    cp_fixture *f = fixture_begin(opt);
    return f != NULL ? fixture_form(f) : NULL;
}

/* ---- a cluster started ahead ----
 * Redis keeps a new cluster master from reporting cluster_state:ok until 2 s after it started,
 * and for the node timeout (2 s) after it last served no slot: most of what a cluster per test
 * cost. So cp_fixture_cluster also starts the servers of the next cluster of the same shape
 * (cp_topo_start: started, with their slots), which pass that time while the test runs; the next
 * call asking for that shape forms them (cp_topo_form) in a fraction of a second. A spare of
 * another shape is stopped; the last one is stopped when the program exits (by the process
 * that started it, not a forked child), and PDEATHSIG covers a crash. */
static struct {
    cp_fixture *f;
    int shards, replicas;
    pid_t owner;
} spare;

static cp_up_opts cluster_opts(int shards, int replicas) {
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.kind = CP_TOPO_CLUSTER;
    o.shards = shards;
    o.replicas = replicas;
    o.no_password = 1; /* client tests connect to f->endpoints without a password */
    return o;
}

static void spare_stop(void) {
    if (spare.f != NULL && spare.owner == getpid()) {
        if (cp_fixture_stop(spare.f) != 0)
            fprintf(stderr, "fixture: the spare cluster did not stop cleanly\n");
        spare.f = NULL;
    }
}

static void spare_start(int shards, int replicas) {
    static int registered;
    if (!registered) {
        atexit(spare_stop);
        registered = 1;
    }
    cp_up_opts o = cluster_opts(shards, replicas);
    spare.f = fixture_begin(&o); /* NULL: the next call starts from scratch */
    spare.shards = shards;
    spare.replicas = replicas;
    spare.owner = getpid();
}

cp_fixture *cp_fixture_cluster(int shards, int replicas) {
    cp_fixture *f = NULL;
    if (spare.f != NULL && spare.owner == getpid() && spare.shards == shards &&
        spare.replicas == replicas) {
        f = spare.f;
        spare.f = NULL;
    } else {
        spare_stop();
        cp_up_opts o = cluster_opts(shards, replicas);
        f = fixture_begin(&o);
    }
    if (f == NULL)
        return NULL;
    spare_start(shards, replicas);
    return fixture_form(f);
}

cp_fixture *cp_fixture_twemproxy(int shards, int proxies) {
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.kind = CP_TOPO_TWEMPROXY;
    o.shards = shards;
    o.proxies = proxies;
    o.no_password = 1;
    return cp_fixture_start(&o);
}

redisContext *cp_fixture_conn(cp_fixture *f, int port) {
    size_t free_slot = CP_FIXTURE_MAX_CONNS;
    for (size_t i = 0; i < CP_FIXTURE_MAX_CONNS; i++) {
        if (f->conn[i] != NULL && f->conn_port[i] == port) {
            if (!f->conn[i]->err)
                return f->conn[i];
            redisFree(f->conn[i]); /* broken (server restarted): reconnect */
            f->conn[i] = NULL;
        }
        if (f->conn[i] == NULL && free_slot == CP_FIXTURE_MAX_CONNS)
            free_slot = i;
    }
    if (free_slot == CP_FIXTURE_MAX_CONNS)
        return NULL;
    struct timeval tv = {5, 0};
    const char *host =
        f->topo && cp_topo_nprocs(f->topo) > 0 ? cp_topo_proc(f->topo, 0)->host : "127.0.0.1";
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (c == NULL || c->err || redisSetTimeout(c, tv) != REDIS_OK) {
        if (c != NULL)
            redisFree(c);
        return NULL;
    }
    const char *pw = f->topo ? cp_topo_password(f->topo) : NULL;
    if (pw != NULL) {
        redisReply *r = redisCommand(c, "AUTH %s", pw);
        int ok = r != NULL && r->type != REDIS_REPLY_ERROR;
        freeReplyObject(r);
        if (!ok) {
            redisFree(c);
            return NULL;
        }
    }
    f->conn[free_slot] = c;
    f->conn_port[free_slot] = port;
    return c;
}

void cp_fixture_roundtrip(cp_fixture *f, int port, int n, const char *tag) {
    redisContext *c = cp_fixture_conn(f, port);
    assert_non_null(c);
    for (int i = 0; i < n; i++) {
        redisReply *r = redisCommand(c, "SET key:%s:%d v-%s-%d", tag, i, tag, i);
        assert_non_null(r);
        if (r->type != REDIS_REPLY_STATUS)
            fail_msg("SET through port %d: %s", port, r->str ? r->str : "?");
        freeReplyObject(r);
    }
    char want[64];
    for (int i = 0; i < n; i++) {
        redisReply *r = redisCommand(c, "GET key:%s:%d", tag, i);
        assert_non_null(r);
        snprintf(want, sizeof(want), "v-%s-%d", tag, i);
        if (r->type != REDIS_REPLY_STRING || strcmp(r->str, want) != 0)
            fail_msg("GET %s:%d through port %d: %s", tag, i, port, r->str ? r->str : "nil");
        freeReplyObject(r);
    }
}

/* Port of the first endpoint ("127.0.0.1:p,..." or "[::1]:p,..."). */
static int first_port(const cp_fixture *f) {
    const char *end = strchr(f->endpoints, ',');
    size_t n = end ? (size_t)(end - f->endpoints) : strlen(f->endpoints);
    while (n > 0 && f->endpoints[n - 1] != ':')
        n--;
    return n > 0 ? atoi(f->endpoints + n) : 0;
}

redisReply *cp_fixture_command(cp_fixture *f, const char *fmt, ...) {
    char *cmd = NULL;
    va_list ap;
    va_start(ap, fmt);
    int len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    if (len < 0)
        return NULL;
    int port = first_port(f), asking = 0, retried = 0;
    redisReply *r = NULL;
    for (int hop = 0; hop < 6; hop++) {
        redisContext *c = cp_fixture_conn(f, port);
        if (c == NULL)
            break;
        if (asking)
            redisAppendCommand(c, "ASKING");
        redisAppendFormattedCommand(c, cmd, (size_t)len);
        void *reply = NULL;
        int ok = 1;
        if (asking) {
            ok = redisGetReply(c, &reply) == REDIS_OK;
            freeReplyObject(reply);
            reply = NULL;
        }
        if (ok)
            ok = redisGetReply(c, &reply) == REDIS_OK;
        if (!ok) {
            /* A cached connection to a server that restarted since: reconnect once. */
            if (retried++)
                break;
            hop--;
            continue;
        }
        r = reply;
        int moved = r->type == REDIS_REPLY_ERROR && strncmp(r->str, "MOVED ", 6) == 0;
        int ask = r->type == REDIS_REPLY_ERROR && strncmp(r->str, "ASK ", 4) == 0;
        if (!moved && !ask)
            break;
        const char *colon = strrchr(r->str, ':');
        port = colon ? atoi(colon + 1) : 0;
        asking = ask;
        freeReplyObject(r);
        r = NULL;
    }
    redisFreeCommand(cmd);
    return r;
}

int cp_fixture_stop(cp_fixture *f) {
    if (f == NULL)
        return 0;
    int rc = 0;
    for (size_t i = 0; i < CP_FIXTURE_MAX_CONNS; i++)
        if (f->conn[i] != NULL)
            redisFree(f->conn[i]);
    if (f->topo != NULL) {
        if (cp_topo_down(f->topo, 0, f->err, sizeof(f->err)) != 0) {
            fprintf(stderr, "fixture: down failed: %s\n", f->err);
            rc = -1;
        }
        cp_topo_free(f->topo);
    }
    if (kill_leftovers(f) != 0)
        rc = -1;
    struct stat st;
    if (f->dir != NULL && stat(f->dir, &st) == 0) {
        remove_dir(f->dir);
        if (stat(f->dir, &st) == 0) {
            fprintf(stderr, "fixture: %s was not removed\n", f->dir);
            rc = -1;
        }
    }
    free(f->dir);
    free(f);
    return rc;
}

int cp_fixture_setup_cluster3(void **state) {
    *state = cp_fixture_cluster(3, 0);
    return *state ? 0 : -1;
}

int cp_fixture_setup_cluster3x1(void **state) {
    *state = cp_fixture_cluster(3, 1);
    return *state ? 0 : -1;
}

int cp_fixture_setup_cluster3_v6(void **state) {
    *state = NULL;
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = 0};
    sa.sin6_addr = in6addr_loopback;
    int ok = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    if (!ok)
        print_message("skipped: this machine cannot bind [::1] (%s): no IPv6 loopback\n",
                      strerror(errno));
    if (fd >= 0)
        close(fd);
    if (!ok)
        return 0;
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.no_password = 1;
    o.host = "::1";
    *state = cp_fixture_start(&o);
    return *state ? 0 : -1;
}

int cp_fixture_setup_twemproxy2(void **state) {
    *state = cp_fixture_twemproxy(2, 1);
    return *state ? 0 : -1;
}

int cp_fixture_teardown(void **state) {
    int rc = cp_fixture_stop(*state);
    *state = NULL;
    return rc;
}

size_t cp_fixture_master(const cp_fixture *f, int k) {
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++)
        if (cp_topo_proc(f->topo, i)->role == CP_ROLE_MASTER && k-- == 0)
            return i;
    return SIZE_MAX;
}

size_t cp_fixture_replica(const cp_fixture *f, size_t m, int k) {
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++) {
        const cp_proc *pr = cp_topo_proc(f->topo, i);
        if (pr->role == CP_ROLE_REPLICA && pr->master == (int)m && k-- == 0)
            return i;
    }
    return SIZE_MAX;
}

int cp_fixture_wait_master(cp_fixture *f, size_t i, int timeout_ms) {
    int port = cp_topo_proc(f->topo, i)->port;
    for (uint64_t end = cp__now_ns() + (uint64_t)timeout_ms * 1000000ull;; cp__sleep_ms(50)) {
        redisContext *hc = cp_fixture_conn(f, port);
        redisReply *r = hc != NULL ? redisCommand(hc, "INFO replication") : NULL;
        int master =
            r != NULL && r->type == REDIS_REPLY_STRING && strstr(r->str, "role:master") != NULL;
        if (r != NULL)
            freeReplyObject(r);
        if (master)
            return 0;
        if (cp__now_ns() > end)
            return -1;
    }
}

cp_client *cp_fixture_client(const cp_fixture *f, const cp_options *opt) {
    cp_options o = CP_OPTIONS_INIT;
    if (opt != NULL)
        o = *opt;
    o.seeds = f->endpoints;
    cp_test_protocol(&o);
    cp_client *c = cp_connect(&o);
    if (c == NULL)
        fail_msg("cp_connect %s: out of memory", f->endpoints);
    if (c->err != 0)
        fail_msg("cp_connect %s: %d (%s) %s", f->endpoints, c->err, cp_strerror(c->err), c->errstr);
    return c;
}

/* 1 when CLUSTER SLOTS on port names every node by hostname (NULL: by a nil host). */
static int slots_name(cp_fixture *f, int port, const char *hostname) {
    redisContext *rc = cp_fixture_conn(f, port);
    assert_non_null(rc);
    redisReply *r = redisCommand(rc, "CLUSTER SLOTS");
    int ok = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0;
    for (size_t i = 0; ok && i < r->elements; i++)
        for (size_t j = 2; ok && j < r->element[i]->elements; j++) {
            const redisReply *n = r->element[i]->element[j];
            ok = n->type == REDIS_REPLY_ARRAY && n->elements >= 2 &&
                 (hostname == NULL ? n->element[0]->type == REDIS_REPLY_NIL
                                   : n->element[0]->type == REDIS_REPLY_STRING &&
                                         strcmp(n->element[0]->str, hostname) == 0);
        }
    freeReplyObject(r);
    return ok;
}

void cp_fixture_announce(cp_fixture *f, const char *hostname) {
    for (int k = 0; cp_fixture_master(f, k) != SIZE_MAX; k++) {
        redisContext *rc = cp_fixture_conn(f, cp_topo_proc(f->topo, cp_fixture_master(f, k))->port);
        assert_non_null(rc);
        redisReply *r = hostname != NULL ? redisCommand(rc,
                                                        "CONFIG SET cluster-announce-hostname %s "
                                                        "cluster-preferred-endpoint-type hostname",
                                                        hostname)
                                         : redisCommand(rc, "CONFIG SET cluster-preferred-endpoint-"
                                                            "type unknown-endpoint");
        assert_non_null(r);
        if (r->type != REDIS_REPLY_STATUS)
            fail_msg("CONFIG SET: %s", r->str != NULL ? r->str : "not OK");
        freeReplyObject(r);
    }
    uint64_t until = cp__now_ns() + 30000000000ull;
    for (int k = 0; cp_fixture_master(f, k) != SIZE_MAX; k++)
        while (!slots_name(f, cp_topo_proc(f->topo, cp_fixture_master(f, k))->port, hostname)) {
            if (cp__now_ns() > until)
                fail_msg("master %d's CLUSTER SLOTS does not name every node by %s after 30 s", k,
                         hostname != NULL ? hostname : "a nil host");
            struct timespec ts = {0, 20000000};
            nanosleep(&ts, NULL);
        }
}

/* ---- one cluster shared by the cases of a program ------------------------------------------- */

static cp_fixture *shared;      /* the program's shared cluster, or NULL */
static int shared_shape[2];     /* its shards and replicas */
static size_t shared_nspawned;  /* its processes at the start: none may have been added */
static char shared_view[16384]; /* its view of itself at the start (node_view) */
static long shared_clients[CP_FIXTURE_MAX_PIDS]; /* each node's connected_clients at the start */

static int cmp_lines(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Node i's view of the cluster, in a form that can be compared across nodes and across time: its
 * CLUSTER NODES lines with the fields that change by themselves (ping sent, pong received, link
 * state) left out and "myself," taken out of the flags, sorted. 0, or -1 with the reason in
 * f->err. */
static int node_view(cp_fixture *f, size_t i, char *out, size_t len) {
    int port = cp_topo_proc(f->topo, i)->port;
    redisContext *c = cp_fixture_conn(f, port);
    redisReply *r = c != NULL ? redisCommand(c, "CLUSTER NODES") : NULL;
    if (r == NULL || r->type != REDIS_REPLY_STRING) {
        snprintf(f->err, sizeof(f->err), "port %d: no answer to CLUSTER NODES", port);
        if (r != NULL)
            freeReplyObject(r);
        return -1;
    }
    char *lines[CP_FIXTURE_MAX_PIDS];
    size_t n = 0;
    for (char *save = NULL, *l = strtok_r(r->str, "\n", &save);
         l != NULL && n < CP_FIXTURE_MAX_PIDS; l = strtok_r(NULL, "\n", &save)) {
        char kept[1024] = "";
        int field = 0;
        for (char *fs = NULL, *w = strtok_r(l, " ", &fs); w != NULL; w = strtok_r(NULL, " ", &fs)) {
            if (field == 2 && strncmp(w, "myself,", 7) == 0)
                w += 7;
            if (field != 4 && field != 5 && field != 7)
                snprintf(kept + strlen(kept), sizeof(kept) - strlen(kept), "%s ", w);
            field++;
        }
        lines[n++] = strdup(kept);
    }
    freeReplyObject(r);
    qsort(lines, n, sizeof(lines[0]), cmp_lines);
    out[0] = '\0';
    for (size_t k = 0; k < n; k++) {
        if (lines[k] != NULL)
            snprintf(out + strlen(out), len - strlen(out), "%s\n", lines[k]);
        free(lines[k]);
    }
    return 0;
}

/* 0 when the shared cluster is as it was at its start: no process added or gone, every node's
 * view the one recorded. Else -1 with the difference in shared->err. */
static int shared_unchanged(void) {
    if (shared->nspawned != shared_nspawned || cp_fixture_alive(shared) != shared_nspawned) {
        snprintf(shared->err, sizeof(shared->err), "%zu of its %zu processes alive, %zu spawned",
                 cp_fixture_alive(shared), shared_nspawned, shared->nspawned);
        return -1;
    }
    static char view[sizeof(shared_view)];
    for (size_t i = 0; i < cp_topo_nprocs(shared->topo); i++) {
        if (node_view(shared, i, view, sizeof(view)) != 0)
            return -1;
        if (strcmp(view, shared_view) != 0) {
            snprintf(shared->err, sizeof(shared->err),
                     "port %d sees\n%.1900swhere at the start\n%.1900s",
                     cp_topo_proc(shared->topo, i)->port, view, shared_view);
            return -1;
        }
    }
    return 0;
}

/* Node i's connected_clients (INFO clients), or -1. */
static long node_clients(cp_fixture *f, size_t i) {
    redisContext *c = cp_fixture_conn(f, cp_topo_proc(f->topo, i)->port);
    redisReply *r = c != NULL ? redisCommand(c, "INFO clients") : NULL;
    const char *at =
        r != NULL && r->type == REDIS_REPLY_STRING ? strstr(r->str, "connected_clients:") : NULL;
    long n = at != NULL ? atol(at + strlen("connected_clients:")) : -1;
    if (r != NULL)
        freeReplyObject(r);
    return n;
}

/* Waits (up to 2 s: the server reads a closed connection's end on its next turn) until every
 * node has only the clients it had at the start: the fixture's own and the replication links,
 * none of the case before (a blocked BLPOP, a subscriber). 0, or -1 with the count in err. */
static int shared_clients_gone(void) {
    for (size_t i = 0; i < cp_topo_nprocs(shared->topo); i++) {
        long n = -1;
        for (int tries = 0; tries < 200 && (n = node_clients(shared, i)) != shared_clients[i];
             tries++)
            cp__sleep_ms(10);
        if (n != shared_clients[i]) {
            snprintf(shared->err, sizeof(shared->err),
                     "port %d has %ld connected clients, %ld at the start",
                     cp_topo_proc(shared->topo, i)->port, n, shared_clients[i]);
            return -1;
        }
    }
    return 0;
}

/* Empties every master of the shared cluster (the replicas follow) and zeroes every node's
 * statistics (INFO commandstats, stats), as a new cluster's would be. */
static int shared_empty(void) {
    static const char *const cmds[] = {"CONFIG RESETSTAT", "FLUSHALL", "SCRIPT FLUSH",
                                       "FUNCTION FLUSH"};
    for (size_t i = 0; i < cp_topo_nprocs(shared->topo); i++) {
        const cp_proc *p = cp_topo_proc(shared->topo, i);
        size_t ncmds = p->role == CP_ROLE_MASTER ? sizeof(cmds) / sizeof(cmds[0]) : 1;
        redisContext *c = cp_fixture_conn(shared, p->port);
        for (size_t k = 0; k < ncmds; k++) {
            redisReply *r = c != NULL ? redisCommand(c, cmds[k]) : NULL;
            int ok = r != NULL && r->type == REDIS_REPLY_STATUS;
            if (r != NULL)
                freeReplyObject(r);
            if (!ok) {
                snprintf(shared->err, sizeof(shared->err), "port %d: %s failed", p->port, cmds[k]);
                return -1;
            }
        }
    }
    return 0;
}

int cp_fixture_group_teardown(void **state) {
    (void)state;
    int rc = cp_fixture_stop(shared);
    shared = NULL;
    return rc;
}

static int setup_shared(void **state, int shards, int replicas) {
    *state = NULL;
    if (shared != NULL && (shared_shape[0] != shards || shared_shape[1] != replicas))
        cp_fixture_group_teardown(NULL);
    if (shared != NULL) {
        if (shared_unchanged() != 0 || shared_clients_gone() != 0 || shared_empty() != 0) {
            fprintf(stderr, "fixture: the shared cluster cannot be handed on: %s\n", shared->err);
            return -1;
        }
        *state = shared;
        return 0;
    }
    shared = cp_fixture_cluster(shards, replicas);
    if (shared == NULL)
        return -1;
    shared_shape[0] = shards;
    shared_shape[1] = replicas;
    shared_nspawned = shared->nspawned;
    for (size_t i = 0; i < cp_topo_nprocs(shared->topo); i++)
        shared_clients[i] = node_clients(shared, i);
    if (node_view(shared, 0, shared_view, sizeof(shared_view)) != 0 || shared_unchanged() != 0) {
        fprintf(stderr, "fixture: the shared cluster's nodes disagree: %s\n", shared->err);
        cp_fixture_group_teardown(NULL);
        return -1;
    }
    *state = shared;
    return 0;
}

int cp_fixture_setup_shared_cluster3(void **state) {
    return setup_shared(state, 3, 0);
}

int cp_fixture_setup_shared_cluster3x1(void **state) {
    return setup_shared(state, 3, 1);
}

int cp_fixture_teardown_shared(void **state) {
    *state = NULL;
    if (shared == NULL)
        return -1;
    if (shared_unchanged() == 0)
        return 0;
    /* Not for the next case: it gets a new one. */
    fprintf(stderr, "fixture: the case changed the shared cluster: %s\n", shared->err);
    cp_fixture_group_teardown(NULL);
    return -1;
}
