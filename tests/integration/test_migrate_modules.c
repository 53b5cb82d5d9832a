/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe migrate` and `verify` with a source holding data of module types, into a real
 * 3-master cluster. Debian has no Redis module, so the source is the scripted fake node
 * (support/fakenode.h) playing a redis-server 7.0 with a module loaded: it answers INFO, SELECT
 * and REPLCONF, and PSYNC with +FULLRESYNC and an RDB built here holding a module's aux data, two
 * keys of module type ReJSON-RL (their values as the module API writes them) and two strings;
 * for the verify, SCAN, TYPE, PEXPIRETIME, STRLEN and GETRANGE of those keys. Without
 * --skip-unknown-types the migrate is refused with exit 1, naming the count, the module types and
 * the keys, and no module key reaches the target; with it the strings are moved, the module data
 * is counted and listed (text and --json), and verify finds 0 differences with the flag (the two
 * keys skipped) and 2 without it (missing).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "asserts.h"

#include "clirun.h"
#include "fakenode.h"
#include "fixture.h"
#include "testutil.h"

typedef struct buf {
    unsigned char b[1024];
    size_t n;
} buf;

static void put(buf *w, const void *p, size_t n) {
    assert_int_le(w->n + n, sizeof w->b);
    memcpy(w->b + w->n, p, n);
    w->n += n;
}

static void put_len(buf *w, unsigned n) { /* < 64 */
    unsigned char b = (unsigned char)n;
    put(w, &b, 1);
}

static void put_str(buf *w, const char *s) {
    put_len(w, (unsigned)strlen(s));
    put(w, s, strlen(s));
}

/* A module type's 64-bit id, as RDB_64BITLEN (0x81, big endian). */
static void put_module_id(buf *w, const char *name, unsigned ver) {
    static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    uint64_t id = 0;
    for (int j = 0; j < 9; j++)
        id = id << 6 | (uint64_t)(strchr(set, name[j]) - set);
    id = id << 10 | ver;
    unsigned char b[9] = {0x81};
    for (int i = 0; i < 8; i++)
        b[1 + i] = (unsigned char)(id >> (56 - 8 * i));
    put(w, b, 9);
}

static void put_json_key(buf *w, const char *key, const char *doc) {
    put(w, "\x07", 1); /* RDB_TYPE_MODULE_2 */
    put_str(w, key);
    put_module_id(w, "ReJSON-RL", 3);
    put_len(w, 2); /* UINT */
    put_len(w, 1);
    put_len(w, 5); /* STRING */
    put_str(w, doc);
    put_len(w, 0); /* EOF */
}

/* magic "REDIS0010": RDB version 10 (redis 7.0's, which the target runs). No checksum (0: none
 * computed). */
static size_t module_rdb(buf *w, const char *magic) {
    w->n = 0;
    put(w, magic, 9);
    put(w, "\xfe\x00", 2); /* SELECT 0 */
    put(w, "\xf7", 1);     /* a module's aux data, before the keys */
    put_module_id(w, "ft-index0", 1);
    put_len(w, 2);
    put_len(w, 1); /* when: before the keys */
    put_len(w, 5);
    put_str(w, "an index definition");
    put_len(w, 0);
    put_json_key(w, "doc:1", "{\"a\":1}");
    put(w, "\x00", 1);
    put_str(w, "plain:1");
    put_str(w, "one");
    put_json_key(w, "doc:2", "{\"b\":[1,2]}");
    put(w, "\x00", 1);
    put_str(w, "plain:2");
    put_str(w, "two");
    put(w, "\xff\0\0\0\0\0\0\0\0", 9);
    return w->n;
}

static void rule(fake_node *n, const char *cmd, const char *key, const char *payload, size_t len) {
    fake_rule r = {.cmd = cmd,
                   .key = key,
                   .times = -1,
                   .action = FAKE_REPLY,
                   .payload = payload,
                   .payload_len = len};
    assert_int_ge(fake_node_rule(n, &r), 0);
}

/* The fake source: a redis-server 7.0 with a JSON module, as migrate and verify see it (magic:
 * its RDB's, "REDIS0010" for 7.0). */
static fake_node *module_source(const char *magic) {
    fake_node *n = fake_node_start();
    assert_non_null(n);
    static buf rdb;
    size_t rl = module_rdb(&rdb, magic);
    static char psync[2048];
    int hl = snprintf(psync, sizeof psync, "+FULLRESYNC %040d 0\r\n$%zu\r\n", 7, rl);
    memcpy(psync + hl, rdb.b, rl);
    static const char keyspace[] = "# Keyspace\r\ndb0:keys=4,expires=0,avg_ttl=0\r\n";
    static char ks[128];
    snprintf(ks, sizeof ks, "$%zu\r\n%s\r\n", strlen(keyspace), keyspace);
    rule(n, "INFO", "keyspace", ks, 0);
    rule(n, "INFO", "cluster", "$30\r\n# Cluster\r\ncluster_enabled:0\r\n\r\n", 0);
    rule(n, "INFO", "replication", "$22\r\nmaster_repl_offset:0\r\n\r\n", 0);
    rule(n, "SELECT", NULL, "+OK\r\n", 0);
    rule(n, "REPLCONF", "ACK", "", 0); /* a master never answers a replica's ACK */
    rule(n, "REPLCONF", NULL, "+OK\r\n", 0);
    rule(n, "PSYNC", NULL, psync, (size_t)hl + rl);
    /* The verify's reads. */
    rule(n, "SCAN", NULL,
         "*2\r\n$1\r\n0\r\n*4\r\n$5\r\ndoc:1\r\n$7\r\nplain:1\r\n$5\r\ndoc:2\r\n$7\r\nplain:2\r\n",
         0);
    rule(n, "TYPE", "doc:1", "+ReJSON-RL\r\n", 0);
    rule(n, "TYPE", "doc:2", "+ReJSON-RL\r\n", 0);
    rule(n, "TYPE", NULL, "+string\r\n", 0);
    rule(n, "PEXPIRETIME", NULL, ":-1\r\n", 0);
    rule(n, "DUMP", NULL, "$-1\r\n", 0);
    rule(n, "STRLEN", NULL, ":3\r\n", 0);
    rule(n, "GETRANGE", "plain:1", "$3\r\none\r\n", 0);
    rule(n, "GETRANGE", "plain:2", "$3\r\ntwo\r\n", 0);
    return n;
}

/* The last line of out, parsed. */
static json_t *last_json(const char *out) {
    const char *last = out, *nl;
    while ((nl = strchr(last, '\n')) != NULL && nl[1] != '\0')
        last = nl + 1;
    json_error_t jerr;
    json_t *res = json_loads(last, 0, &jerr);
    if (res == NULL)
        fail_msg("not JSON: %s (%s)", last, jerr.text);
    return res;
}

static long long exists(cp_client *c, const char *key) {
    redisReply *r = cp_command(c, "EXISTS %s", key);
    assert_non_null(r);
    long long n = r->integer;
    cp_reply_free(r);
    return n;
}

static void module_keys_refused_or_skipped_and_listed(void **state) {
    (void)state;
    fake_node *src = module_source("REDIS0010");
    cp_fixture *target = cp_fixture_cluster(3, 0);
    assert_non_null(target);
    char from[64];
    snprintf(from, sizeof from, "127.0.0.1:%d", fake_node_port(src));
    cp_clirun run;
    cp_clirun_init(&run);

    const char *refused[] = {"migrate",         "--from",         from, "--to",
                             target->endpoints, "--until-synced", NULL};
    cp_clirun_expect(&run, refused, 1);
    assert_contains(run.err, "clusterpipe migrate: source ");
    assert_contains(run.err, from);
    assert_contains(run.err, "2 keys and 1 aux data of module types (ft-index0,ReJSON-RL)");
    assert_contains(run.err, "--skip-unknown-types");
    assert_contains(run.err, "\"doc:1\" \"doc:2\"");
    cp_client *c = cp_fixture_client(target, NULL);
    assert_int_equal(exists(c, "doc:1") + exists(c, "doc:2"), 0);

    const char *skip[] = {"migrate",
                          "--from",
                          from,
                          "--to",
                          target->endpoints,
                          "--until-synced",
                          "--skip-unknown-types",
                          NULL,
                          NULL};
    cp_clirun_expect(&run, skip, 0);
    assert_contains(run.out, "2 keys copied");
    assert_contains(run.out, "not moved: 2 keys and 1 aux data of module types "
                             "(ft-index0,ReJSON-RL); the first keys: \"doc:1\" \"doc:2\"");
    redisReply *r = cp_command(c, "GET plain:2");
    assert_non_null(r);
    assert_string_equal(r->str, "two");
    cp_reply_free(r);
    assert_int_equal(exists(c, "plain:1"), 1);
    assert_int_equal(exists(c, "doc:1") + exists(c, "doc:2"), 0);

    skip[7] = "--json"; /* the same run, as JSON lines */
    cp_clirun_expect(&run, skip, 0);
    json_t *res = last_json(run.out);
    json_t *md = json_object_get(json_array_get(json_object_get(res, "sources"), 0), "module_data");
    assert_non_null(md);
    assert_int_equal(json_integer_value(json_object_get(md, "keys")), 2);
    assert_int_equal(json_integer_value(json_object_get(md, "aux")), 1);
    assert_string_equal(json_string_value(json_object_get(md, "types")), "ft-index0,ReJSON-RL");
    json_t *first = json_object_get(md, "first_keys");
    assert_int_equal(json_array_size(first), 2);
    assert_string_equal(json_string_value(json_array_get(first, 1)), "doc:2");
    json_decref(res);

    /* verify: without the flag the module keys are missing on the target; with it, skipped. */
    const char *verify[] = {"verify", "--from", from, "--to", target->endpoints, "-q", NULL};
    cp_clirun_expect(&run, verify, 1);
    assert_contains(run.out, "verify: 2 differences (missing 2,");
    assert_contains(run.out, "\"doc:1\" (other, source ");
    const char *verify_skip[] = {
        "verify", "--from", from, "--to", target->endpoints, "-q", "--skip-unknown-types", NULL};
    cp_clirun_expect(&run, verify_skip, 0);
    assert_contains(run.out, "verify: 0 differences");
    assert_contains(run.out, "verify: 2 keys of other types (modules') skipped");
    assert_contains(run.out, "every key of the sources is on the target, the same.");

    cp_free(c);
    cp_clirun_free(&run);
    assert_int_equal(cp_fixture_stop(target), 0);
    fake_node_stop(src);
}

/* A source newer than the target (RDB version 11, redis 7.2's; the target runs 7.0, whose
 * RESTORE reads up to 10): the reader knows 11, the target refuses the first RESTORE, and the run
 * stops naming the key and the target's answer. */
static void an_rdb_newer_than_the_target_reads_stops_the_run(void **state) {
    (void)state;
    fake_node *src = module_source("REDIS0011");
    cp_fixture *target = cp_fixture_cluster(3, 0);
    assert_non_null(target);
    char from[64];
    snprintf(from, sizeof from, "127.0.0.1:%d", fake_node_port(src));
    cp_clirun run;
    cp_clirun_init(&run);
    const char *args[] = {"migrate",
                          "--from",
                          from,
                          "--to",
                          target->endpoints,
                          "--until-synced",
                          "--skip-unknown-types",
                          NULL};
    cp_clirun_expect(&run, args, 1);
    assert_contains(run.err, "the target refused RESTORE plain:");
    assert_contains(run.err, "payload version or checksum are wrong");
    cp_client *c = cp_fixture_client(target, NULL);
    assert_int_equal(exists(c, "plain:1") + exists(c, "plain:2"), 0);
    cp_free(c);
    cp_clirun_free(&run);
    assert_int_equal(cp_fixture_stop(target), 0);
    fake_node_stop(src);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(module_keys_refused_or_skipped_and_listed),
        cmocka_unit_test(an_rdb_newer_than_the_target_reads_stops_the_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
