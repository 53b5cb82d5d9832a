/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Topology fixtures for integration tests: start a real, ephemeral Redis Cluster or twemproxy
 * topology (Debian's redis-server / nutcracker on free 127.0.0.1 ports) in a fresh temp
 * directory, hand back the cp_topo and its endpoints, and stop it again, checking by PID that
 * nothing is left alive. The processes get PR_SET_PDEATHSIG, so even a test process killed by a
 * ctest timeout leaves nothing behind.
 *
 * Typical use (cmocka; the teardown runs even when an assertion in the test failed):
 *
 *     static void test_x(void **state) {
 *         cp_fixture *f = *state;
 *         // f->endpoints: "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3" (cluster masters)
 *         //               or "127.0.0.1:p" (the nutcracker) ; f->topo for orch.h operations
 *     }
 *     ...
 *     cmocka_unit_test_setup_teardown(test_x, cp_fixture_setup_cluster3, cp_fixture_teardown),
 *     cmocka_unit_test_setup_teardown(test_y, cp_fixture_setup_twemproxy2, cp_fixture_teardown),
 *
 * or by hand: cp_fixture *f = cp_fixture_cluster(3, 0); ...; assert_int_equal(
 * cp_fixture_stop(f), 0);
 *
 * Ownership: a cp_fixture is heap-allocated by the start functions (its address is registered as
 * the topology's spawn hook, so it must not move) and freed by cp_fixture_stop. Single thread:
 * start, use and stop it from the test's main thread (PDEATHSIG is tied to the starting thread).
 * The start functions also ignore SIGPIPE for the process, as any hiredis user must.
 *
 * Passwords: cp_fixture_cluster, cp_fixture_twemproxy and the setup functions start without a
 * password (no_password), so tests can cp_connect to f->endpoints with CP_OPTIONS_INIT.
 * cp_fixture_start takes the options as given: CP_UP_OPTS_INIT means a generated password, as
 * with `clusterpipe up`; read it with cp_topo_password(f->topo). The hiredis helpers below
 * (cp_fixture_conn / cp_fixture_command) AUTH with it but speak plain TCP only: for a TLS
 * topology use libclusterpipe with cp_topo_client_options(f->topo, &opt).
 * Set CP_TEST_VERBOSE=1 to see the orchestration's progress lines on stderr.
 */
#ifndef CLUSTERPIPE_FIXTURE_H
#define CLUSTERPIPE_FIXTURE_H

#include <stddef.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#include "clusterpipe/clusterpipe.h"
#include "orch/orch.h"

#define CP_FIXTURE_MAX_PIDS 256
#define CP_FIXTURE_MAX_CONNS 64

typedef struct cp_fixture {
    cp_topo *topo;        /* the running topology */
    char *dir;            /* its directory (malloc'd) */
    char endpoints[1024]; /* cluster: the masters at start; twemproxy: the proxies */
    char err[4096];       /* the last error of a start/stop */
    /* Every process ever spawned for this fixture, recorded by the spawn hook, including those
     * started later by cp_topo_add_node / add_shard / restart. */
    size_t nspawned;
    pid_t pids[CP_FIXTURE_MAX_PIDS];
    unsigned long long start_times[CP_FIXTURE_MAX_PIDS];
    /* Connections cached by cp_fixture_command (closed by cp_fixture_stop). */
    int conn_port[CP_FIXTURE_MAX_CONNS];
    redisContext *conn[CP_FIXTURE_MAX_CONNS];
} cp_fixture;

/* A cluster of `shards` masters with `replicas` replicas each and no password, ready
 * (cluster_state:ok everywhere, one slot map, replicas linked). NULL on failure, with the reason
 * printed on stderr and nothing left running. */
cp_fixture *cp_fixture_cluster(int shards, int replicas);

/* `proxies` nutcracker processes in front of `shards` redis-servers, no password, default
 * twemproxy settings (fnv1a_64, ketama, ...), each proxy serving. NULL on failure as above. */
cp_fixture *cp_fixture_twemproxy(int shards, int proxies);

/* General form: opt is copied; dir, ephemeral, quiet and the hooks are set by the fixture; the
 * password follows opt (CP_UP_OPTS_INIT: generated). */
cp_fixture *cp_fixture_start(const cp_up_opts *opt);

/* How many recorded processes are still alive (by PID + start time). */
size_t cp_fixture_alive(const cp_fixture *f);

/* Stops the topology (cp_topo_down), removes its directory, SIGKILLs by PID anything recorded
 * that still lives (and reports it on stderr), frees f. Returns 0 when nothing was left alive,
 * -1 otherwise. NULL is fine (returns 0). */
int cp_fixture_stop(cp_fixture *f);

/* Runs one command (hiredis format) on the topology and returns its reply (caller frees with
 * freeReplyObject), or NULL when no connection could be made. Cluster: sent to the first
 * endpoint, following MOVED and ASK (ASKING + resend) up to 5 times; twemproxy: sent to the first
 * proxy. AUTHs with the topology's password. A plain, slow checker for data, not a client under
 * test. */
redisReply *cp_fixture_command(cp_fixture *f, const char *fmt, ...);

/* The cached connection to the topology's host (127.0.0.1, or ::1: cp_up_opts.host) and port
 * (AUTH'd), or NULL. Owned by f. */
redisContext *cp_fixture_conn(cp_fixture *f, int port);

/* SETs then GETs n keys key:TAG:i through port (a client's way in: a proxy, a node, the wire),
 * with values that embed the key; fails the test on a reply that is not OK or not the value. */
void cp_fixture_roundtrip(cp_fixture *f, int port, int n, const char *tag);

/* Fails the test unless call (an orch.h operation writing its error into the caller's char
 * array err) returns 0, naming the call, its code and err. */
#define assert_op(call)                                                                            \
    do {                                                                                           \
        err[0] = '\0';                                                                             \
        int rc_ = (call);                                                                          \
        if (rc_ != 0)                                                                              \
            fail_msg("%s failed (%d): %s", #call, rc_, err);                                       \
    } while (0)

/* The process index of the k-th master (k = 0, 1, ...) in the order the fixture gave out the
 * slot ranges (master 0 holds the lowest slots at start); SIZE_MAX when there is no such one. */
size_t cp_fixture_master(const cp_fixture *f, int k);

/* The process index of master proc m's k-th replica (k = 0, 1, ...); SIZE_MAX when none. */
size_t cp_fixture_replica(const cp_fixture *f, size_t m, int k);

/* Waits up to timeout_ms until process i (by index in f->topo) answers INFO replication with
 * role:master: a replica promoted by a failover. 0, or -1 when it did not in time. */
int cp_fixture_wait_master(cp_fixture *f, size_t i, int timeout_ms);

/* A blocking client of the fixture's cluster (cp_connect with seeds f->endpoints), connected:
 * the test fails (with the client's error) when it could not be. opt: the options to start from
 * (NULL: CP_OPTIONS_INIT); its seeds are replaced, and opt is not kept. Caller frees with
 * cp_free. */
cp_client *cp_fixture_client(const cp_fixture *f, const cp_options *opt);

/* How every master of the fixture's cluster names the nodes to clients (CLUSTER SLOTS, SHARDS,
 * MOVED), set at run time: hostname != NULL: each announces it (cluster-announce-hostname,
 * cluster-preferred-endpoint-type hostname), and the call waits (up to 30 s: names travel by
 * gossip) until each master's CLUSTER SLOTS names every node by it; NULL: no address at all
 * (cluster-preferred-endpoint-type unknown-endpoint, as behind NAT: a nil host, "the address you
 * reached me on"), which the call also checks. Asserts (cmocka) every step. */
void cp_fixture_announce(cp_fixture *f, const char *hostname);

/* cmocka setup/teardown pairs: *state becomes the cp_fixture. Setups return -1 on failure. */
int cp_fixture_setup_cluster3(void **state);   /* 3 masters, no replicas */
int cp_fixture_setup_cluster3x1(void **state); /* 3 masters, 1 replica each */
/* 3 masters bound to ::1 only (cp_up_opts.host); *state NULL, for the test to skip(), when this
 * machine cannot bind ::1 (it says why). */
int cp_fixture_setup_cluster3_v6(void **state);
int cp_fixture_setup_twemproxy2(void **state); /* 1 nutcracker in front of 2 redis-servers */
int cp_fixture_teardown(void **state);         /* cp_fixture_stop; -1 if anything survived */

/* One cluster for the cases of a program that leave it as they found it (no slot moved, no node
 * stopped, paused or reconfigured): starting one costs about 2.2 s, 2 of them Redis's own (a
 * master stays cluster_state:fail for 2 s after it starts). The first setup starts it; each later
 * one hands it over emptied (FLUSHALL, SCRIPT FLUSH, FUNCTION FLUSH on every master, CONFIG
 * RESETSTAT on every node) once every node is checked alive, its view of the cluster (CLUSTER
 * NODES: ids, addresses, roles, slots, migrations) is still the one at the start, and the clients
 * of the case before are gone (each node's connected_clients back to its count at the start). The
 * teardown checks the view, so a case that changed the cluster fails there, by name, and the next
 * case gets a new cluster. A setup asking for another shape stops the shared cluster and starts
 * that one. The group teardown (cmocka_run_group_tests(tests, NULL, cp_fixture_group_teardown))
 * stops it. */
int cp_fixture_setup_shared_cluster3(void **state);   /* 3 masters, no replicas */
int cp_fixture_setup_shared_cluster3x1(void **state); /* 3 masters, 1 replica each */
int cp_fixture_teardown_shared(void **state);
int cp_fixture_group_teardown(void **state);

#endif /* CLUSTERPIPE_FIXTURE_H */
