/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `up --rtt`: topologies on real redis-server and nutcracker processes with the project's wire
 * (`clusterpipe wire`, CP_BINARY) on every link that crosses hosts. A cluster whose slot map,
 * MOVED and round trips lead through the wire, its bus direct, and `down` leaving no process;
 * twemproxy in each proxy placement, with the links that cross read back from state.json and
 * checked against where traffic went (the wire's own counters); a shard added to a running
 * topology through a link added to the running wire; and rtt 0, which starts no wire. Every
 * topology is ephemeral and stopped and checked by PID in the teardown, even when an assertion
 * failed. Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "clirun.h"
#include "clitopo.h"
#include "fixture.h"
#include "util/clock.h"
#include "wire/control.h"

#include "clusterpipe/clusterpipe.h"
#include "orch/orch.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define RTT_NS 1000000ull /* 1 ms */

static char err[4096];

static int teardown(void **state) {
    return cp_fixture_teardown(state);
}

static const char *start_host; /* NULL: 127.0.0.1 */

static cp_fixture *start(cp_topo_kind kind, int shards, int more, cp_proxy_placement placement,
                         unsigned long long rtt_ns) {
    cp_up_opts o = CP_UP_OPTS_INIT;
    o.host = start_host;
    o.kind = kind;
    o.shards = shards;
    if (kind == CP_TOPO_CLUSTER)
        o.replicas = more;
    else
        o.proxies = more;
    o.no_password = 1;
    o.rtt_ns = rtt_ns;
    o.proxy_placement = placement;
    o.clusterpipe = CP_BINARY;
    cp_fixture *f = cp_fixture_start(&o);
    assert_non_null(f);
    return f;
}

/* Index of the k-th process with the given role, or -1. */
static int nth(const cp_topo *t, cp_proc_role role, int k) {
    for (size_t i = 0; i < cp_topo_nprocs(t); i++)
        if (cp_topo_proc(t, i)->role == role && k-- == 0)
            return (int)i;
    return -1;
}

static size_t count_role(const cp_topo *t, cp_proc_role role) {
    size_t n = 0;
    for (size_t i = 0; i < cp_topo_nprocs(t); i++)
        n += cp_topo_proc(t, i)->role == role;
    return n;
}

/* The link from -> to, failing the test when there is none. */
static const cp_link *link_of(const cp_topo *t, int from, int to) {
    for (size_t k = 0; k < cp_topo_nlinks(t); k++) {
        const cp_link *l = cp_topo_link(t, k);
        if (l->from == from && l->to == to)
            return l;
    }
    fail_msg("no link from %d to %d", from, to);
    return NULL;
}

/* The wire's "accepted" count of link `name`, from its stats; -1 when it has no such link. */
static long long accepted(const cp_topo *t, const char *name) {
    static char out[65536];
    char e[256];
    assert_int_equal(
        cp__wire_ask(cp_topo_wire_control(t), "stats", out, sizeof(out), 2000, e, sizeof(e)), 0);
    char want[64];
    snprintf(want, sizeof(want), "link %s conns ", name);
    const char *at = strstr(out, want);
    unsigned conns;
    unsigned long long acc;
    if (at == NULL || sscanf(at + strlen(want), "%u accepted %llu", &conns, &acc) != 2)
        return -1;
    return (long long)acc;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* ---- cluster ----------------------------------------------------------------------------------
 */

/* 2 masters x 1 replica at 1 ms: one wire, a crossing link to every node, and the nodes naming
 * its ports to clients. */
static void test_cluster_through_wire(void **state) {
    cp_fixture *f = start(CP_TOPO_CLUSTER, 2, 1, CP_PROXIES_WITH_SERVERS, RTT_NS);
    *state = f;
    const cp_topo *t = f->topo;
    assert_int_equal(count_role(t, CP_ROLE_WIRE), 1);
    assert_int_equal(count_role(t, CP_ROLE_MASTER) + count_role(t, CP_ROLE_REPLICA), 4);
    int w = nth(t, CP_ROLE_WIRE, 0);
    assert_true(cp_topo_alive(t, (size_t)w));
    assert_non_null(cp_topo_wire_control(t));
    assert_int_equal(cp_topo_rtt_ns(t), RTT_NS);
    assert_int_equal(cp_topo_nlinks(t), 4);
    int wire_port[8] = {0}, node_port[8] = {0}, nn = 0;
    for (size_t i = 0; i < cp_topo_nprocs(t); i++) {
        const cp_proc *p = cp_topo_proc(t, i);
        if (p->role != CP_ROLE_MASTER && p->role != CP_ROLE_REPLICA)
            continue;
        const cp_link *l = link_of(t, CP_LINK_CLIENT, (int)i);
        assert_true(l->crosses);
        assert_int_gt(l->port, 0);
        assert_int_not_equal(l->port, p->port);
        assert_int_equal(l->rtt_ns, RTT_NS);
        assert_int_equal(cp_topo_client_port(t, i), l->port);
        wire_port[nn] = l->port;
        node_port[nn++] = p->port;
    }
    /* The endpoints are the wire's ports. */
    for (int k = 0; k < nn; k++) {
        char own[32];
        snprintf(own, sizeof(own), ":%d", node_port[k]);
        if (strstr(f->endpoints, own) != NULL)
            fail_msg("endpoints %s name a node's own port %d", f->endpoints, node_port[k]);
    }
    /* PING through the library, one at a time: a round trip through the wire takes the RTT (a
     * direct loopback one takes tens of microseconds). */
    cp_client *cl = cp_fixture_client(f, NULL);
    uint64_t took[101];
    for (int i = 0; i < 101; i++) {
        uint64_t t0 = cp__now_ns();
        redisReply *p = cp_command(cl, "PING");
        took[i] = cp__now_ns() - t0;
        assert_non_null(p);
        assert_int_equal(p->type, REDIS_REPLY_STATUS);
        cp_reply_free(p);
    }
    qsort(took, 101, sizeof(took[0]), cmp_u64);
    assert_int_ge(took[50], RTT_NS * 8 / 10);
    for (int k = 0; k < nn; k++) {
        char name[32];
        snprintf(name, sizeof(name), "client-%d", node_port[k]);
        assert_int_ge(accepted(t, name), 0); /* the wire knows every node's link */
    }

    /* Keys written through the wire (they also give the replicas data, below). */
    for (int i = 0; i < 300; i++) {
        redisReply *s = cp_command(cl, "SET mv:%d val-%d", i, i);
        assert_non_null(s);
        assert_int_equal(s->type, REDIS_REPLY_STATUS);
        cp_reply_free(s);
    }
    /* CLUSTER SLOTS, asked of a node directly, names every master and replica by its wire
     * port (a replica once it has data: Redis leaves out one at replication offset 0, and
     * learns the offsets by gossip); CLUSTER NODES keeps the bus direct (port + 10000). */
    redisContext *c = cp_fixture_conn(f, node_port[0]);
    assert_non_null(c);
    int named = 0;
    uint64_t deadline = cp__now_ns() + 20000000000ull;
    while (named < 4) {
        assert_int_lt(cp__now_ns(), deadline);
        redisReply *r = redisCommand(c, "CLUSTER SLOTS");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_ARRAY);
        named = 0;
        for (size_t i = 0; i < r->elements; i++)
            for (size_t j = 2; j < r->element[i]->elements; j++) {
                long long port = r->element[i]->element[j]->element[1]->integer;
                int found = 0;
                for (int k = 0; k < nn; k++)
                    found |= port == wire_port[k];
                if (!found)
                    fail_msg("CLUSTER SLOTS names port %lld, not one of the wire's", port);
                named++;
            }
        freeReplyObject(r);
        if (named < 4)
            usleep(50000);
    }
    assert_int_equal(named, 4); /* 2 ranges x (master + replica) */
    redisReply *r = redisCommand(c, "CLUSTER NODES");
    assert_non_null(r);
    for (int k = 0; k < nn; k++) {
        char want[64];
        snprintf(want, sizeof(want), ":%d@%d ", wire_port[k], node_port[k] + 10000);
        assert_contains(r->str, want);
    }
    freeReplyObject(r);

    /* MOVED through the wire: 200 slots of master 0 moved to master 1 with the orchestration's
     * helper. Master 0, reached through its wire port, answers MOVED naming master 1's wire
     * port; the client, its map now stale, follows it and reads every key. */
    size_t m0 = cp_fixture_master(f, 0), m1 = cp_fixture_master(f, 1);
    assert_op(cp_topo_migrate_slots(f->topo, m0, m1, 200, err, sizeof(err)));
    int w0 = link_of(t, CP_LINK_CLIENT, (int)m0)->port;
    int w1 = link_of(t, CP_LINK_CLIENT, (int)m1)->port;
    redisContext *via0 = cp_fixture_conn(f, w0);
    assert_non_null(via0);
    int moved = 0;
    char want[64];
    snprintf(want, sizeof(want), "127.0.0.1:%d", w1);
    for (int i = 0; i < 300; i++) {
        redisReply *g = redisCommand(via0, "GET mv:%d", i);
        assert_non_null(g);
        if (g->type == REDIS_REPLY_ERROR && strncmp(g->str, "MOVED ", 6) == 0) {
            assert_contains(g->str, want);
            moved++;
        }
        freeReplyObject(g);
    }
    assert_int_gt(moved, 0);
    for (int i = 0; i < 300; i++) {
        redisReply *g = cp_command(cl, "GET mv:%d", i);
        assert_non_null(g);
        char v[32];
        snprintf(v, sizeof(v), "val-%d", i);
        if (g->type != REDIS_REPLY_STRING || strcmp(g->str, v) != 0)
            fail_msg("GET mv:%d after the move: %s", i, g->str ? g->str : "nil");
        cp_reply_free(g);
    }
    cp_free(cl);

    /* down stops the wire with the servers: nothing of the topology runs afterwards. */
    pid_t wpid = cp_topo_proc(t, (size_t)w)->pid;
    unsigned long long wstart = cp_topo_proc(t, (size_t)w)->start_time;
    pid_t pids[CP_FIXTURE_MAX_PIDS];
    unsigned long long starts[CP_FIXTURE_MAX_PIDS];
    size_t n = f->nspawned;
    memcpy(pids, f->pids, n * sizeof(pids[0]));
    memcpy(starts, f->start_times, n * sizeof(starts[0]));
    assert_int_equal(cp_fixture_stop(f), 0);
    *state = NULL;
    assert_false(cp_orch_pid_alive(wpid, wstart));
    for (size_t i = 0; i < n; i++)
        assert_false(cp_orch_pid_alive(pids[i], starts[i]));
}

/* ---- twemproxy ------------------------------------------------------------------------------ */

/* 2 shards, 2 proxies in `placement`: which links cross (as state.json holds them, read back),
 * the proxies' configs naming the wire for those, and SET/GET through every endpoint, with the
 * wire's counters showing that the crossing links carried it. */
static void placement_case(void **state, cp_proxy_placement placement) {
    cp_fixture *f = start(CP_TOPO_TWEMPROXY, 2, 2, placement, RTT_NS);
    *state = f;
    cp_topo *t = NULL;
    assert_op(cp_topo_open(f->dir, &t, err, sizeof(err))); /* what state.json recorded */
    assert_int_equal(cp_topo_proxy_placement(t), placement);
    assert_int_equal(cp_topo_nlinks(t), 2 + 2 * 2); /* client -> proxy, proxy -> shard */
    assert_int_equal(count_role(t, CP_ROLE_WIRE), 1);
    for (int p = 0; p < 2; p++) {
        int pi = nth(t, CP_ROLE_PROXY, p);
        const cp_link *in = link_of(t, CP_LINK_CLIENT, pi);
        assert_int_equal(in->crosses, placement != CP_PROXIES_WITH_CLIENTS);
        assert_int_equal(cp_topo_client_port(t, (size_t)pi),
                         in->crosses ? in->port : cp_topo_proc(t, (size_t)pi)->port);
        char path[4200], yml[4096];
        snprintf(path, sizeof(path), "%s/nutcracker-%d/nutcracker.yml", f->dir,
                 cp_topo_proc(t, (size_t)pi)->port);
        FILE *fp = fopen(path, "r");
        assert_non_null(fp);
        size_t n = fread(yml, 1, sizeof(yml) - 1, fp);
        fclose(fp);
        yml[n] = '\0';
        for (int s = 0; s < 2; s++) {
            int si = nth(t, CP_ROLE_SHARD, s);
            const cp_link *out = link_of(t, pi, si);
            /* servers: proxy k shares the host of shard k; clients and tier: every one crosses */
            int same = placement == CP_PROXIES_WITH_SERVERS && p == s;
            assert_int_equal(out->crosses, !same);
            assert_int_equal(out->rtt_ns, same ? 0 : RTT_NS);
            char line[64];
            snprintf(line, sizeof(line), "127.0.0.1:%d:1 shard%d",
                     out->crosses ? out->port : cp_topo_proc(t, (size_t)si)->port, s);
            assert_contains(yml, line);
        }
    }
    for (int p = 0; p < 2; p++) {
        char tag[16];
        snprintf(tag, sizeof(tag), "p%d", p);
        cp_fixture_roundtrip(f, cp_topo_client_port(t, (size_t)nth(t, CP_ROLE_PROXY, p)), 100, tag);
    }
    /* Every crossing link carried a connection; no direct one is known to the wire. */
    for (size_t k = 0; k < cp_topo_nlinks(t); k++) {
        const cp_link *l = cp_topo_link(t, k);
        if (l->crosses)
            assert_int_gt(accepted(t, l->name), 0);
        else
            assert_int_equal(accepted(t, l->name), -1);
    }
    cp_topo_free(t);
}

static void test_twemproxy_servers(void **state) {
    placement_case(state, CP_PROXIES_WITH_SERVERS);
}

static void test_twemproxy_clients(void **state) {
    placement_case(state, CP_PROXIES_WITH_CLIENTS);
}

static void test_twemproxy_tier(void **state) {
    placement_case(state, CP_PROXIES_TIER);
}

/* A shard added to a running topology gets its links through the running wire ("link NAME PORT
 * HOST:PORT" on its control socket), and the restarted proxies reach it through them. */
static void test_add_shard_adds_links(void **state) {
    cp_fixture *f = start(CP_TOPO_TWEMPROXY, 2, 1, CP_PROXIES_WITH_CLIENTS, RTT_NS);
    *state = f;
    size_t s;
    assert_op(cp_topo_add_shard(f->topo, &s, err, sizeof(err)));
    assert_op(cp_topo_restart_proxies(f->topo, err, sizeof(err)));
    const cp_topo *t = f->topo;
    int pi = nth(t, CP_ROLE_PROXY, 0);
    const cp_link *l = link_of(t, pi, (int)s);
    assert_true(l->crosses);
    cp_fixture_roundtrip(f, cp_topo_client_port(t, (size_t)pi), 300, "grown");
    assert_int_gt(accepted(t, l->name), 0);
    /* A name the wire has is refused, as is a port it cannot listen on (its own). */
    char req[128], e[256];
    snprintf(req, sizeof(req), "link %s %d 127.0.0.1:%d", l->name, l->port,
             cp_topo_proc(t, s)->port);
    assert_int_equal(cp__wire_ask(cp_topo_wire_control(t), req, NULL, 0, 2000, e, sizeof(e)),
                     -EPROTO);
    assert_contains(e, "exists");
    snprintf(req, sizeof(req), "link other %d 127.0.0.1:%d", l->port, cp_topo_proc(t, s)->port);
    assert_int_equal(cp__wire_ask(cp_topo_wire_control(t), req, NULL, 0, 2000, e, sizeof(e)),
                     -EPROTO);
    assert_contains(e, "in use");
}

/* A cluster node added while the topology runs: its link is added to the running wire before
 * its config is written, so it announces the wire's port like the others. */
static void test_add_node_announces_wire(void **state) {
    cp_fixture *f = start(CP_TOPO_CLUSTER, 2, 0, CP_PROXIES_WITH_SERVERS, RTT_NS);
    *state = f;
    size_t i;
    assert_op(cp_topo_add_node(f->topo, -1, &i, err, sizeof(err)));
    const cp_topo *t = f->topo;
    const cp_link *l = link_of(t, CP_LINK_CLIENT, (int)i);
    assert_true(l->crosses);
    assert_int_equal(cp_topo_client_port(t, i), l->port);
    redisContext *c = cp_fixture_conn(f, cp_topo_proc(t, (size_t)nth(t, CP_ROLE_MASTER, 0))->port);
    assert_non_null(c);
    redisReply *r = redisCommand(c, "CLUSTER NODES");
    assert_non_null(r);
    char want[64];
    snprintf(want, sizeof(want), "127.0.0.1:%d@%d ", l->port, cp_topo_proc(t, i)->port + 10000);
    assert_contains(r->str, want);
    freeReplyObject(r);
    /* Through the wire's new link, the node answers. */
    redisContext *via = cp_fixture_conn(f, l->port);
    assert_non_null(via);
    r = redisCommand(via, "PING");
    assert_non_null(r);
    assert_string_equal(r->str, "PONG");
    freeReplyObject(r);
    assert_int_gt(accepted(t, l->name), 0);
}

/* On ::1 the wire listens on ::1 and forwards to [::1]:PORT; the nodes announce its ports there,
 * and the library follows them. */
static void test_cluster_v6_through_wire(void **state) {
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = 0};
    sa.sin6_addr = in6addr_loopback;
    int v6 = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    if (fd >= 0)
        close(fd);
    if (!v6) {
        print_message("skipped: this machine cannot bind [::1]: no IPv6 loopback\n");
        skip();
    }
    start_host = "::1";
    cp_fixture *f = start(CP_TOPO_CLUSTER, 2, 0, CP_PROXIES_WITH_SERVERS, RTT_NS);
    start_host = NULL;
    *state = f;
    const cp_topo *t = f->topo;
    size_t m0 = (size_t)nth(t, CP_ROLE_MASTER, 0);
    const cp_link *l = link_of(t, CP_LINK_CLIENT, (int)m0);
    char want[64];
    snprintf(want, sizeof(want), "[::1]:%d", l->port);
    assert_contains(f->endpoints, want);
    redisContext *c = cp_fixture_conn(f, cp_topo_proc(t, m0)->port);
    assert_non_null(c);
    redisReply *r = redisCommand(c, "CLUSTER NODES");
    assert_non_null(r);
    snprintf(want, sizeof(want), "::1:%d@%d ", l->port, cp_topo_proc(t, m0)->port + 10000);
    assert_contains(r->str, want);
    freeReplyObject(r);
    cp_client *cl = cp_fixture_client(f, NULL);
    for (int i = 0; i < 50; i++) {
        redisReply *s = cp_command(cl, "SET v6:%d x%d", i, i);
        assert_non_null(s);
        assert_int_equal(s->type, REDIS_REPLY_STATUS);
        cp_reply_free(s);
    }
    cp_free(cl);
    assert_int_gt(accepted(t, l->name), 0);
}

/* rtt 0: no wire, no links, the endpoints the servers' own ports, whatever the placement. */
static void test_rtt_zero_starts_no_wire(void **state) {
    cp_fixture *f = start(CP_TOPO_TWEMPROXY, 2, 1, CP_PROXIES_TIER, 0);
    *state = f;
    const cp_topo *t = f->topo;
    assert_int_equal(cp_topo_nprocs(t), 3);
    assert_int_equal(count_role(t, CP_ROLE_WIRE), 0);
    assert_int_equal(cp_topo_nlinks(t), 0);
    assert_null(cp_topo_wire_control(t));
    int pi = nth(t, CP_ROLE_PROXY, 0);
    assert_int_equal(cp_topo_client_port(t, (size_t)pi), cp_topo_proc(t, (size_t)pi)->port);
    char path[4200];
    snprintf(path, sizeof(path), "%s/state.json", f->dir);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    static char js[65536];
    size_t n = fread(js, 1, sizeof(js) - 1, fp);
    fclose(fp);
    js[n] = '\0';
    assert_null(strstr(js, "\"links\""));
    assert_null(strstr(js, "\"wire\""));
    cp_fixture_roundtrip(f, cp_topo_proc(t, (size_t)pi)->port, 50, "zero");
}

/* ---- the command ------------------------------------------------------------------------------
 */

static cp_clirun cli;
static cp_clitopo clitopo;

static int cli_setup(void **state) {
    (void)state;
    cp_clirun_init(&cli);
    memset(&clitopo, 0, sizeof(clitopo));
    return 0;
}

static int cli_teardown(void **state) {
    (void)state;
    int rc = clitopo.dir[0] ? cp_clitopo_stop(&clitopo, &cli) : 0;
    cp_clirun_free(&cli);
    return rc;
}

/* `up --rtt --proxy-placement` through the binary (the wire is the binary itself), `status` and
 * `status --json` showing the wire and its links, `down` stopping it with the servers. */
static void test_cli_up_status_down(void **state) {
    (void)state;
    cp_clitopo_new_dir(&clitopo, "wirecli");
    const char *up[] = {"up",    "twemproxy", "--shards",      "2",
                        "--rtt", "500us",     "--no-password", "--proxy-placement",
                        "tier",  "--dir",     clitopo.dir,     "-q",
                        NULL};
    int rc = cp_clirun_run(&cli, up);
    cp_clitopo_note(&clitopo);
    if (rc != 0)
        fail_msg("up: exit %d\n%s", rc, cli.err);
    assert_int_equal(clitopo.npids, 4); /* 2 redis-server, 1 nutcracker, the wire */
    assert_int_equal(cp_clitopo_alive(&clitopo), 4);
    assert_contains(cli.out, "proxy placement: tier");
    assert_contains(cli.out, "wire port");

    const char *status[] = {"status", "--dir", clitopo.dir, "--json", NULL};
    cp_clirun_expect(&cli, status, 0);
    json_error_t je;
    json_t *doc = json_loads(cli.out, 0, &je);
    assert_non_null(doc);
    assert_int_equal(json_integer_value(json_object_get(doc, "rtt_ns")), 500000);
    assert_string_equal(json_string_value(json_object_get(doc, "proxy_placement")), "tier");
    assert_true(json_is_true(json_object_get(doc, "healthy")));
    const json_t *links = json_object_get(doc, "links");
    assert_int_equal(json_array_size(links), 3); /* client -> proxy, proxy -> each shard */
    size_t i;
    const json_t *l;
    json_array_foreach(links, i, l) {
        assert_true(json_is_true(json_object_get(l, "crosses"))); /* tier: every link */
        assert_int_gt(json_integer_value(json_object_get(l, "wire_port")), 0);
        assert_int_equal(json_integer_value(json_object_get(l, "rtt_ns")), 500000);
    }
    int wires = 0;
    json_array_foreach(json_object_get(doc, "processes"), i, l) {
        if (strcmp(json_string_value(json_object_get(l, "role")), "wire") != 0)
            continue;
        wires++;
        assert_true(json_is_true(json_object_get(l, "alive")));
        assert_true(json_is_true(json_object_get(l, "reachable")));
    }
    assert_int_equal(wires, 1);
    json_decref(doc);

    const char *down[] = {"down", "--dir", clitopo.dir, NULL};
    cp_clirun_expect(&cli, down, 0);
    assert_int_equal(cp_clitopo_alive(&clitopo), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_cluster_through_wire, teardown),
        cmocka_unit_test_teardown(test_twemproxy_servers, teardown),
        cmocka_unit_test_teardown(test_twemproxy_clients, teardown),
        cmocka_unit_test_teardown(test_twemproxy_tier, teardown),
        cmocka_unit_test_teardown(test_add_shard_adds_links, teardown),
        cmocka_unit_test_teardown(test_add_node_announces_wire, teardown),
        cmocka_unit_test_teardown(test_cluster_v6_through_wire, teardown),
        cmocka_unit_test_teardown(test_rtt_zero_starts_no_wire, teardown),
        cmocka_unit_test_setup_teardown(test_cli_up_status_down, cli_setup, cli_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
