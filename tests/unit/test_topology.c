/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Topology parsing on replies captured from a real redis-server 7.0 (tests/data/cluster_*.resp):
 * two masters with one replica each and slots 9001-9099 and 16001-16383 unassigned; and a
 * single node that does not know its own address (empty ip/endpoint). CLUSTER NODES text from
 * the same server with 3 masters and a replica each, one master migrating slots 100 and 200 to
 * another, which imports 100 and 16000 (tests/data/cluster_nodes_*.txt). Also malformed input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "asserts.h"
#include "lib/map/topology.h"
#include "testutil.h"

static redisReply *load(const char *name) {
    redisReply *r = cp_test_read_reply(name);
    assert_non_null(r);
    return r;
}

static void check_replicas_map(const cp__slotmap *m) {
    assert_int_equal(m->nnodes, 4);
    int a = m->owner[0], b = m->owner[5001];
    assert_int_ge(a, 0);
    assert_int_ge(b, 0);
    assert_int_not_equal(a, b);
    assert_int_equal(m->owner[5000], a);
    assert_int_equal(m->owner[9000], b);
    assert_int_equal(m->owner[9001], -1);
    assert_int_equal(m->owner[9099], -1);
    assert_int_equal(m->owner[9100], b);
    assert_int_equal(m->owner[16000], b);
    assert_int_equal(m->owner[16001], -1);
    assert_int_equal(m->owner[16383], -1);
    assert_int_equal(cp__slotmap_covered(m), 5001 + 4000 + 6901);
    assert_int_equal(m->nodes[a].port, 47001);
    assert_int_equal(m->nodes[b].port, 47002);
    assert_string_equal(m->nodes[a].host, "127.0.0.1");
    assert_int_equal(m->nodes[a].master, -1);
    assert_int_equal(m->nodes[b].master, -1);
    assert_int_equal(strlen(m->nodes[a].id), 40);
    int replicas = 0;
    for (int i = 0; i < m->nnodes; i++) {
        if (m->nodes[i].master < 0)
            continue;
        replicas++;
        /* 47003 replicates 47001, 47004 replicates 47002. */
        int want = m->nodes[i].port == 47003 ? a : b;
        assert_int_equal(m->nodes[i].master, want);
    }
    assert_int_equal(replicas, 2);
}

static void shards_with_replicas(void **state) {
    (void)state;
    redisReply *r = load("cluster_shards_replicas.resp");
    cp__slotmap m;
    char err[128];
    assert_int_equal(cp__topo_parse_shards(r, "10.0.0.1", 0, &m, err, sizeof(err)), 0);
    check_replicas_map(&m);
    cp__slotmap_free(&m);
    freeReplyObject(r);
}

static void slots_with_replicas(void **state) {
    (void)state;
    redisReply *r = load("cluster_slots_replicas.resp");
    cp__slotmap m;
    char err[128];
    assert_int_equal(cp__topo_parse_slots(r, "10.0.0.1", &m, err, sizeof(err)), 0);
    check_replicas_map(&m);
    cp__slotmap_free(&m);
    freeReplyObject(r);
}

/* A node alone in its cluster reports an empty address: it means the host we asked. */
static void empty_host_means_asked(void **state) {
    (void)state;
    const char *files[2] = {"cluster_shards_single.resp", "cluster_slots_single.resp"};
    for (int f = 0; f < 2; f++) {
        redisReply *r = load(files[f]);
        cp__slotmap m;
        char err[128];
        int rc = f == 0 ? cp__topo_parse_shards(r, "localhost", 0, &m, err, sizeof(err))
                        : cp__topo_parse_slots(r, "localhost", &m, err, sizeof(err));
        assert_int_equal(rc, 0);
        assert_int_equal(m.nnodes, 1);
        assert_string_equal(m.nodes[0].host, "localhost");
        assert_int_equal(m.nodes[0].port, 47005);
        assert_int_equal(cp__slotmap_covered(&m), 16384);
        cp__slotmap_free(&m);
        freeReplyObject(r);
    }
}

static redisReply *parse(const char *resp);

/* A node announcing no endpoint (cluster-preferred-endpoint-type unknown-endpoint) is given a
 * nil host by CLUSTER SLOTS (RESP2's null bulk string here; RESP3's null is the same nil reply
 * from the library's reader): it is reached at the host asked, each node at its own port. */
static void nil_host_means_asked(void **state) {
    (void)state;
    const char *replies[] = {
        "*2\r\n*3\r\n:0\r\n:8191\r\n*3\r\n$-1\r\n:7001\r\n$2\r\nid\r\n"
        "*4\r\n:8192\r\n:16383\r\n*2\r\n$-1\r\n:7002\r\n*2\r\n$-1\r\n:7003\r\n",
    };
    for (size_t i = 0; i < sizeof(replies) / sizeof(replies[0]); i++) {
        redisReply *r = parse(replies[i]);
        cp__slotmap m;
        char err[128];
        assert_int_equal(cp__topo_parse_slots(r, "node.example", &m, err, sizeof(err)), 0);
        assert_int_equal(m.nnodes, 3);
        for (int n = 0; n < 3; n++) {
            assert_string_equal(m.nodes[n].host, "node.example");
            assert_int_equal(m.nodes[n].port, 7001 + n);
        }
        assert_int_equal(m.owner[0], 0);
        assert_int_equal(m.owner[16383], 1);
        assert_int_equal(m.nodes[2].master, 1);
        assert_int_equal(cp__slotmap_covered(&m), 16384);
        cp__slotmap_free(&m);
        freeReplyObject(r);
    }
}

/* Parses RESP text into a reply. */
static redisReply *parse(const char *resp) {
    redisReply *r = cp_test_parse_reply(resp, strlen(resp));
    assert_non_null(r);
    return r;
}

static void malformed(void **state) {
    (void)state;
    const char *bad_slots[] = {
        "+OK\r\n",
        "*1\r\n:5\r\n",
        "*1\r\n*3\r\n:0\r\n:10\r\n:7\r\n",                        /* node not an array */
        "*1\r\n*3\r\n:10\r\n:0\r\n*2\r\n$1\r\nh\r\n:7000\r\n",    /* start > end */
        "*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:7000\r\n", /* slot out of range */
        "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\nh\r\n:70000\r\n",    /* bad port */
        "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n:1\r\n:7000\r\n",          /* host not a string */
        "*1\r\n*2\r\n:0\r\n:1\r\n",                               /* no node */
    };
    for (size_t i = 0; i < sizeof(bad_slots) / sizeof(bad_slots[0]); i++) {
        redisReply *r = parse(bad_slots[i]);
        cp__slotmap m;
        char err[128];
        assert_int_equal(cp__topo_parse_slots(r, "h", &m, err, sizeof(err)), CP_EPROTO);
        assert_non_null(strstr(err, "malformed"));
        assert_null(m.nodes);
        freeReplyObject(r);
    }
    const char *bad_shards[] = {
        ":1\r\n",
        "*1\r\n*1\r\n$5\r\nslots\r\n",       /* odd key/value array */
        "*1\r\n*2\r\n$5\r\nslots\r\n*0\r\n", /* no nodes */
        "*1\r\n*4\r\n$5\r\nslots\r\n*2\r\n:0\r\n:5\r\n$5\r\nnodes\r\n*0\r\n", /* no master */
        "*1\r\n*4\r\n$5\r\nslots\r\n*1\r\n:0\r\n$5\r\nnodes\r\n*0\r\n",       /* odd ranges */
        "*1\r\n*4\r\n$5\r\nslots\r\n*0\r\n$5\r\nnodes\r\n*1\r\n*2\r\n$4\r\nport\r\n$1\r\nx\r\n",
    };
    for (size_t i = 0; i < sizeof(bad_shards) / sizeof(bad_shards[0]); i++) {
        redisReply *r = parse(bad_shards[i]);
        cp__slotmap m;
        char err[128];
        assert_int_equal(cp__topo_parse_shards(r, "h", 0, &m, err, sizeof(err)), CP_EPROTO);
        assert_null(m.nodes);
        freeReplyObject(r);
    }
}

/* The index of the node at 127.0.0.1:port. */
static int at_port(const cp__slotmap *m, int port) {
    for (int i = 0; i < m->nnodes; i++)
        if (m->nodes[i].port == port)
            return i;
    fail_msg("no node at port %d", port);
    return -1;
}

static void nodes_view(cp__nodesview *v, const char *file) {
    size_t len;
    char *text = cp_test_read_data(file, &len);
    char err[128];
    assert_non_null(text);
    assert_int_equal(cp__topo_parse_nodes(text, len, "asked", v, err, sizeof(err)), 0);
    free(text);
}

/* The migrating side: 6 nodes, replicas linked to their masters (a replica may come before its
 * master), myself's MIGRATING marks and nothing else marked. */
static void nodes_migrating(void **state) {
    (void)state;
    cp__nodesview *v = malloc(sizeof(*v));
    nodes_view(v, "cluster_nodes_migrating.txt");
    const cp__slotmap *m = &v->map;
    assert_int_equal(m->nnodes, 6);
    int a = at_port(m, 17120), b = at_port(m, 17121), c = at_port(m, 17122);
    assert_int_equal(v->myself, a);
    assert_string_equal(m->nodes[a].id, "741d58f28fe68d0d4bf8f7357c8b0f558459ea38");
    assert_string_equal(m->nodes[a].host, "127.0.0.1");
    assert_int_equal(m->nodes[a].master, -1);
    assert_int_equal(m->nodes[at_port(m, 17123)].master, a);
    assert_int_equal(m->nodes[at_port(m, 17124)].master, b);
    assert_int_equal(m->nodes[at_port(m, 17125)].master, c);
    assert_int_equal(m->owner[0], a);
    assert_int_equal(m->owner[5460], a);
    assert_int_equal(m->owner[5461], b);
    assert_int_equal(m->owner[10921], b);
    assert_int_equal(m->owner[16383], c);
    assert_int_equal(cp__slotmap_covered(m), CP_SLOTS);
    int marked = 0;
    for (int s = 0; s < CP_SLOTS; s++)
        marked += v->moving[s] != 0;
    assert_int_equal(marked, 2);
    assert_int_equal(v->moving[100], CP__SLOT_MIGRATING);
    assert_int_equal(v->moving[200], CP__SLOT_MIGRATING);
    assert_int_equal(v->peer[100], b);
    assert_int_equal(v->peer[101], -1);
    cp__slotmap_free(&v->map);
    free(v);
}

/* The importing side: marks name the source, the slot still belongs to it. */
static void nodes_importing(void **state) {
    (void)state;
    cp__nodesview *v = malloc(sizeof(*v));
    nodes_view(v, "cluster_nodes_importing.txt");
    int a = at_port(&v->map, 17120), b = at_port(&v->map, 17121), c = at_port(&v->map, 17122);
    assert_int_equal(v->myself, b);
    assert_int_equal(v->moving[100], CP__SLOT_IMPORTING);
    assert_int_equal(v->peer[100], a);
    assert_int_equal(v->map.owner[100], a);
    assert_int_equal(v->moving[16000], CP__SLOT_IMPORTING);
    assert_int_equal(v->peer[16000], c);
    assert_int_equal(v->moving[200], 0);
    cp__slotmap_free(&v->map);
    free(v);
}

/* Lines a server may write: CRLF, no trailing newline, an address it does not know yet, a
 * hostname after the address, a node without an address (left out, its slots unowned), one in
 * handshake, a failed one, a migration peer the view lacks. */
static void nodes_odd(void **state) {
    (void)state;
    static const char text[] =
        "aaaa :7001@17001 myself,master - 0 0 1 connected 0-99 [5->-dddd] [6->-zzzz]\r\n"
        "bbbb 10.0.0.2:7002@17002,host-b master - 0 0 2 connected 100 102-200\n"
        "cccc :0@0 master,fail,noaddr - 0 0 3 disconnected 300-399\n"
        "dddd 10.0.0.4:7004 master,fail - 0 0 4 disconnected 400\n"
        "eeee 10.0.0.5:7005@17005 handshake - 0 0 0 disconnected\n"
        "ffff 10.0.0.6:7006@17006 slave cccc 0 0 3 connected";
    cp__nodesview *v = malloc(sizeof(*v));
    char err[128];
    assert_int_equal(cp__topo_parse_nodes(text, strlen(text), "asked", v, err, sizeof(err)), 0);
    const cp__slotmap *m = &v->map;
    assert_int_equal(m->nnodes, 4); /* cccc and eeee left out */
    assert_int_equal(v->myself, 0);
    assert_string_equal(m->nodes[0].host, "asked");
    assert_int_equal(m->nodes[0].port, 7001);
    assert_string_equal(m->nodes[1].host, "10.0.0.2");
    assert_int_equal(m->nodes[1].port, 7002);
    assert_int_equal(m->owner[99], 0);
    assert_int_equal(m->owner[100], 1);
    assert_int_equal(m->owner[101], -1);
    assert_int_equal(m->owner[200], 1);
    assert_int_equal(m->owner[300], -1);
    assert_int_equal(m->owner[400], 2);
    assert_int_equal(m->nodes[2].healthy, 0);
    assert_int_equal(m->nodes[1].healthy, 1);
    assert_int_equal(m->nodes[3].master, -1); /* its master has no address */
    assert_int_equal(v->moving[5], CP__SLOT_MIGRATING);
    assert_int_equal(v->peer[5], 2);
    assert_int_equal(v->moving[6], CP__SLOT_MIGRATING);
    assert_int_equal(v->peer[6], -1);
    cp__slotmap_free(&v->map);
    /* Nothing at all: no node, no myself. */
    assert_int_equal(cp__topo_parse_nodes("", 0, "asked", v, err, sizeof(err)), 0);
    assert_int_equal(v->map.nnodes, 0);
    assert_int_equal(v->myself, -1);
    cp__slotmap_free(&v->map);
    free(v);
}

static void nodes_malformed(void **state) {
    (void)state;
    static const char *bad[] = {
        "aaaa 1.2.3.4:7001@17001 myself,master - 0 0 1\n",                 /* 7 fields */
        "aaaa 1.2.3.4:7001@17001 myself,master - 0 0 1 connected 16384\n", /* slot too big */
        "aaaa 1.2.3.4:7001@17001 myself,master - 0 0 1 connected 5-3\n",   /* backwards */
        "aaaa 1.2.3.4:7001@17001 myself,master - 0 0 1 connected 5-\n",
        "aaaa 1.2.3.4:7001@17001 myself,master - 0 0 1 connected x\n",
        "aaaa 1.2.3.4:7001@17001 myself,master - 0 0 1 connected [5->-]\n",
        "aaaa 1.2.3.4:7001@17001 myself,master - 0 0 1 connected [5=>-bbbb]\n",
        "aaaa 1.2.3.4:7001@17001 myself,master - 0 0 1 connected [99999->-bbbb]\n",
        "aaaa 1.2.3.4:x@17001 myself,master - 0 0 1 connected\n",                   /* port */
        "aaaa 1.2.3.4:70000@17001 myself,master - 0 0 1 connected\n",               /* port */
        "aaaa 1.2.3.4@17001 myself,master - 0 0 1 connected\n",                     /* no port */
        "aaaa 1.2.3.4:1@1 master - 0 0 1 c\naaaa 1.2.3.5:1@1 master - 0 0 1 c\n",   /* twice */
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa 1.2.3.4:1@1 master - 0 0 1 c\n", /* id */
    };
    cp__nodesview *v = malloc(sizeof(*v));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char err[128];
        if (cp__topo_parse_nodes(bad[i], strlen(bad[i]), "h", v, err, sizeof(err)) != CP_EPROTO)
            fail_msg("accepted: %s", bad[i]);
        assert_non_null(strstr(err, "malformed"));
        assert_null(v->map.nodes);
    }
    free(v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shards_with_replicas),
        cmocka_unit_test(slots_with_replicas),
        cmocka_unit_test(empty_host_means_asked),
        cmocka_unit_test(nil_host_means_asked),
        cmocka_unit_test(malformed),
        cmocka_unit_test(nodes_migrating),
        cmocka_unit_test(nodes_importing),
        cmocka_unit_test(nodes_odd),
        cmocka_unit_test(nodes_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
