/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The bench's masters and slot owners, read from a cluster client's map (bench/nodes.c,
 * cp__nodemap_read), against three scripted fake nodes (fakenode.h) whose CLUSTER SHARDS splits
 * two masters' slots in two ranges each: every master under the library's address for it, each
 * slot's owner, masters numbered by their first slot whatever order the client met them in, and
 * the seed (`localhost`, a name the map does not use) no master, as it serves no slot. How a
 * node that announces no address is named is the library's rule (src/lib/topology.c);
 * the clusters of tests/integration/test_bench_addresses.c run it through the command.
 * Single-threaded (the fake nodes run threads of their own).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "bench/nodes.h"
#include "clusterpipe/clusterpipe.h"
#include "fakenode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void masters_by_first_slot_at_the_librarys_address(void **state) {
    (void)state;
    fake_node *node[3];
    int port[3];
    for (int i = 0; i < 3; i++) {
        node[i] = fake_node_start();
        assert_non_null(node[i]);
        port[i] = fake_node_port(node[i]);
    }
    /* In the reply's order: node 2 serves 100..8000, node 1 0..59 and 61..99, node 0 60 and
     * 8001..16383. */
    const int start[] = {100, 0, 60, 61, 8001}, end[] = {8000, 59, 60, 99, CP_SLOTS - 1};
    const int ports[] = {port[2], port[1], port[0], port[1], port[0]};
    char raw[4096];
    assert_int_gt(fake_cluster_shards(raw, sizeof(raw), 5, start, end, ports), 0);
    assert_int_equal(fake_node_set_cluster_reply(node[2], "SHARDS", raw), 0);
    char seeds[64];
    snprintf(seeds, sizeof(seeds), "localhost:%d", port[2]);
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = seeds;
    cp_client *c = cp_connect(&o);
    assert_non_null(c);
    if (c->err != 0)
        fail_msg("cp_connect %s: %s", seeds, c->errstr);
    cp__nodemap *m = malloc(sizeof(*m));
    assert_non_null(m);
    char err[256] = "";
    if (cp__nodemap_read(c, m, err, sizeof(err)) != 0)
        fail_msg("cp__nodemap_read: %s", err);

    assert_int_equal(m->nmasters, 3);
    const struct {
        const char *host;
        int port;
    } want[3] = {{"127.0.0.1", port[1]}, {"127.0.0.1", port[0]}, {"127.0.0.1", port[2]}};
    for (int k = 0; k < 3; k++) {
        assert_string_equal(m->masters[k].host, want[k].host);
        assert_int_equal(m->masters[k].port, want[k].port);
    }
    for (int s = 0; s < CP_SLOTS; s++) {
        int w = s == 60 || s > 8000 ? 1 : s < 100 ? 0 : 2;
        if (m->owner[s] != w)
            fail_msg("slot %d: master %d, want %d", s, m->owner[s], w);
    }
    char where[CP__HOST_MAX + 8], exp[CP__HOST_MAX + 8];
    cp__nodemap_key_node(m, "foo", 3, where, sizeof(where)); /* slot 12182: node 0 */
    snprintf(exp, sizeof(exp), "127.0.0.1:%d", port[0]);
    assert_string_equal(where, exp);

    free(m);
    cp_free(c);
    for (int i = 0; i < 3; i++)
        fake_node_stop(node[i]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(masters_by_first_slot_at_the_librarys_address),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
