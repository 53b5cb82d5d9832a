/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Topology parsing on replies captured from a real redis-server 7.0 (tests/data/cluster_*.resp):
 * two masters with one replica each and slots 9001-9099 and 16001-16383 unassigned; and a
 * single node that does not know its own address (empty ip/endpoint). Also malformed input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/topology.h"
#include "testutil.h"

static redisReply *load(const char *name) {
    size_t len;
    char *buf = cp_test_read_data(name, &len);
    assert_non_null(buf);
    redisReader *rd = redisReaderCreate();
    void *r = NULL;
    assert_int_equal(redisReaderFeed(rd, buf, len), REDIS_OK);
    assert_int_equal(redisReaderGetReply(rd, &r), REDIS_OK);
    assert_non_null(r);
    redisReaderFree(rd);
    free(buf);
    return r;
}

static void check_replicas_map(const cp__slotmap *m) {
    assert_int_equal(m->nnodes, 4);
    int a = m->owner[0], b = m->owner[5001];
    assert_true(a >= 0 && b >= 0 && a != b);
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

/* Parses RESP text into a reply. */
static redisReply *parse(const char *resp) {
    redisReader *rd = redisReaderCreate();
    void *r = NULL;
    redisReaderFeed(rd, resp, strlen(resp));
    assert_int_equal(redisReaderGetReply(rd, &r), REDIS_OK);
    redisReaderFree(rd);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shards_with_replicas),
        cmocka_unit_test(slots_with_replicas),
        cmocka_unit_test(empty_host_means_asked),
        cmocka_unit_test(malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
