/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A set of FAKESET_N scripted fake nodes (fakenode.h) as the pipeline tests use them: node 0
 * serves every slot and is the only one in the topology; the others run but own nothing, so they
 * are "not yet known" to the client until a redirect names them. With the client and pipeline
 * under test, and helpers to script and check them. fakeset_setup / fakeset_teardown are cmocka
 * setup and teardown functions (teardown frees the pipeline, the client and the nodes). Failures
 * are cmocka assertions. Single-threaded use by a test.
 */
#ifndef CLUSTERPIPE_FAKESET_H
#define CLUSTERPIPE_FAKESET_H

#include "clusterpipe/clusterpipe.h"
#include "fakenode.h"

#define FAKESET_N 3

typedef struct fakeset {
    fake_node *node[FAKESET_N];
    int port[FAKESET_N];
    cp_client *c;
    cp_pipeline *p;
} fakeset;

int fakeset_setup(void **state);
int fakeset_teardown(void **state);

/* A cluster client seeded with node 0 (f->c) and a pipeline (f->p), with these options, as
 * cp_options takes them (0: the default; budget_ms CP_RETRY_NONE: no retries). */
void fakeset_connect(fakeset *f, int io_timeout_ms, int budget_ms, unsigned flags);

/* Sets node 0's CLUSTER SHARDS answer to the fakeset's map with `key`'s slot moved to node 1:
 * what the cluster answers once that slot has moved. */
void fakeset_shards_with_slot_of_on_node1(fakeset *f, const char *key);

/* Stores key=value on fake node i directly, through the library in endpoint mode. */
void fakeset_put(fakeset *f, int i, const char *key, const char *val);

/* Adds a rule to node n (fake_rule's fields); asserts it was taken. */
void fakeset_rule(fake_node *n, const char *cmd, const char *key, int skip, int times,
                  fake_action a, const char *payload);

/* Writes "-KIND <slot of key> 127.0.0.1:PORT\r\n" into buf (128 bytes) and returns it. */
char *fakeset_redirect(char *buf, const char *kind, const char *key, int port);

/* Command i ended CP_DONE with the string reply want. */
void fakeset_assert_str(cp_pipeline *p, size_t i, const char *want);

/* Appends GET k0 .. GET k(n-1). */
void fakeset_append_gets(cp_pipeline *p, int n);

#endif
