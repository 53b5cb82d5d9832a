/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A set of scripted fake nodes for the pipeline tests (see fakeset.h). Single-threaded use by a
 * test; the nodes serve from their own threads.
 */
#include "fakeset.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "asserts.h"

/* Node 0 serves every slot; nodes 1..FAKESET_N-1 run but own nothing (redirect targets). Only node
 * 0 is in the topology, so the others are "not yet known" to the client until a redirect. */
int fakeset_setup(void **state) {
    fakeset *f = calloc(1, sizeof(*f));
    for (int i = 0; i < FAKESET_N; i++) {
        f->node[i] = fake_node_start();
        assert_non_null(f->node[i]);
        f->port[i] = fake_node_port(f->node[i]);
    }
    char buf[1024];
    int start = 0, end = 16383;
    assert_int_gt(fake_cluster_shards(buf, sizeof(buf), 1, &start, &end, &f->port[0]), 0);
    for (int i = 0; i < FAKESET_N; i++)
        fake_node_set_cluster_reply(f->node[i], "SHARDS", buf);
    *state = f;
    return 0;
}

int fakeset_teardown(void **state) {
    fakeset *f = *state;
    cp_pipeline_free(f->p);
    cp_free(f->c);
    for (int i = 0; i < FAKESET_N; i++)
        fake_node_stop(f->node[i]);
    free(f);
    return 0;
}

void fakeset_connect(fakeset *f, int io_timeout_ms, int budget_ms, unsigned flags) {
    char seeds[64];
    snprintf(seeds, sizeof(seeds), "127.0.0.1:%d", f->port[0]);
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = seeds;
    o.io_timeout_ms = io_timeout_ms;
    o.retry_budget_ms = budget_ms;
    o.flags = flags;
    f->c = cp_connect(&o);
    assert_non_null(f->c);
    assert_int_equal(f->c->err, 0);
    f->p = cp_pipeline_new(f->c);
    assert_non_null(f->p);
}

/* Stores key=value on fake node i directly through the library in endpoint mode. */
void fakeset_put(fakeset *f, int i, const char *key, const char *val) {
    char ep[64];
    snprintf(ep, sizeof(ep), "127.0.0.1:%d", f->port[i]);
    cp_options o = CP_OPTIONS_INIT;
    o.endpoint = ep;
    cp_client *c = cp_connect(&o);
    assert_int_equal(c->err, 0);
    redisReply *r = cp_command(c, "SET %s %s", key, val);
    assert_non_null(r);
    freeReplyObject(r);
    cp_free(c);
}

void fakeset_rule(fake_node *n, const char *cmd, const char *key, int skip, int times,
                  fake_action a, const char *payload) {
    fake_rule r = {cmd, key, skip, times, a, payload, 0, 0};
    assert_int_ge(fake_node_rule(n, &r), 0);
}

char *fakeset_redirect(char *buf, const char *kind, const char *key, int port) {
    sprintf(buf, "-%s %u 127.0.0.1:%d\r\n", kind, cp_keyslot(key, strlen(key)), port);
    return buf;
}

void fakeset_assert_str(cp_pipeline *p, size_t i, const char *want) {
    assert_int_equal(cp_get_outcome(p, i), CP_DONE);
    const redisReply *r = cp_reply(p, i);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, want);
}

void fakeset_append_gets(cp_pipeline *p, int n) {
    for (int i = 0; i < n; i++)
        assert_int_equal(cp_append(p, "GET k%d", i), 0);
}

void fakeset_shards_with_slot_of_on_node1(fakeset *f, const char *key) {
    int s = (int)cp_keyslot(key, strlen(key));
    int start[3] = {0, s, s + 1}, end[3] = {s - 1, s, 16383};
    int ports[3] = {f->port[0], f->port[1], f->port[0]};
    char shards[2048];
    assert_int_gt(fake_cluster_shards(shards, sizeof(shards), 3, start, end, ports), 0);
    fake_node_set_cluster_reply(f->node[0], "SHARDS", shards);
}
