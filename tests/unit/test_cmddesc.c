/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A command's descriptor (lib/cmd/cmddesc.h) without a server: with the COMMAND reply recorded
 * from Debian's redis-server 7.0 (tests/data/command_redis7.resp, as test_keyspec uses it) and
 * without a server's table. Each case is one argv: its keys' slot (or CROSS) and the positions
 * to split by, read-only and cacheable, the blocking timeout of BLPOP and XREAD (with BLOCK and
 * without), WAIT's, the refusal of SELECT 1 (and none for SELECT 0), the every-master rule of
 * SCRIPT LOAD and FLUSH, a container's subcommand entry, and the name's part handed back for
 * another argv of the same name giving what a fresh lookup gives.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "asserts.h"
#include "clusterpipe/clusterpipe.h"
#include "lib/cmd/cmddesc.h"
#include "testutil.h"

static cp__cmdtable *recorded_table(void) {
    redisReply *r = cp_test_read_reply("command_redis7.resp");
    assert_non_null(r);
    cp__cmdtable *t = NULL;
    char err[128];
    assert_int_equal(cp__cmdtable_parse(r, &t, err, sizeof(err)), 0);
    freeReplyObject(r);
    return t;
}

/* Describes a command line split on spaces, asking for the slot, in *d. */
static void describe_in(cp__cmddesc *d, const cp__cmdtable *t, const char *cmdline,
                        const cp__cmdname *name) {
    static char line[256];
    static const char *argv[32];
    static size_t len[32];
    snprintf(line, sizeof(line), "%s", cmdline);
    int argc = 0;
    for (char *tok = strtok(line, " "); tok != NULL && argc < 32; tok = strtok(NULL, " ")) {
        argv[argc] = tok;
        len[argc++] = strlen(tok);
    }
    cp__cmddesc_fill(d, t, name, argc, argv, len, CP__DESC_WANT_SLOT);
}

static cp__cmddesc describe(const cp__cmdtable *t, const char *cmdline) {
    cp__cmddesc d;
    describe_in(&d, t, cmdline, NULL);
    return d;
}

static int slot_of(const char *key) {
    return (int)cp_keyslot(key, strlen(key));
}

/* GET and SET, with and without the server's table: one key's slot, read-only and cacheable for
 * GET only, both plain (the pipeline's fast path). */
static void get_and_set(void **state) {
    (void)state;
    cp__cmdtable *t = recorded_table();
    const cp__cmdtable *tables[2] = {t, NULL};
    for (int i = 0; i < 2; i++) {
        cp__cmddesc d = describe(tables[i], "get user:1");
        assert_int_equal(d.slot, slot_of("user:1"));
        assert_true(d.flags & CP__DESC_READONLY);
        assert_true(d.flags & CP__DESC_CACHE);
        assert_true(d.flags & CP__DESC_PLAIN);
        assert_false(d.flags & (CP__DESC_BLOCKS | CP__DESC_BLOCKING | CP__DESC_WAIT));
        assert_null(d.refusal);
        assert_int_equal(d.fan, CP__MERGE_NONE);
        assert_string_equal(d.name.ci->name, "GET");
        if (tables[i] != NULL)
            assert_memory_equal(cp__cmdtable_name(t, d.e), "get", 3);
        else
            assert_null(d.e);
        d = describe(tables[i], "SET user:2 v");
        assert_int_equal(d.slot, slot_of("user:2"));
        assert_false(d.flags & (CP__DESC_READONLY | CP__DESC_CACHE));
        assert_true(d.flags & CP__DESC_PLAIN);
    }
    /* Without CP__DESC_WANT_SLOT the keys are not looked at. */
    const char *argv[2] = {"GET", "k"};
    size_t len[2] = {3, 1};
    cp__cmddesc d;
    cp__cmddesc_fill(&d, t, NULL, 2, argv, len, 0);
    assert_int_equal(d.slot, CP__SLOT_NONE);
    assert_true(d.flags & CP__DESC_READONLY);
    cp__cmdtable_free(t);
}

/* MSET across slots: CROSS, splittable, split by key-value pairs; in one slot (a hash tag): that
 * slot. */
static void mset_across_slots(void **state) {
    (void)state;
    cp__cmdtable *t = recorded_table();
    assert_int_not_equal(slot_of("a"), slot_of("b"));
    const cp__cmdtable *tables[2] = {t, NULL};
    for (int i = 0; i < 2; i++) {
        cp__cmddesc d = describe(tables[i], "MSET a 1 b 2");
        assert_int_equal(d.slot, CP__SLOT_CROSS);
        assert_true(d.name.ci->flags & CP__CMD_SPLIT);
        assert_int_equal(d.split_first, 1);
        assert_int_equal(d.split_step, 2);
        assert_int_equal(d.nsplit, 2);
        assert_false(d.flags & CP__DESC_READONLY);
        d = describe(tables[i], "mset {t}a 1 {t}b 2");
        assert_int_equal(d.slot, slot_of("t"));
    }
    cp__cmdtable_free(t);
}

/* EVAL's keys are numkeys after the script; none with numkeys 0; a bad numkeys gives none. */
static void eval_numkeys(void **state) {
    (void)state;
    cp__cmdtable *t = recorded_table();
    const cp__cmdtable *tables[2] = {t, NULL};
    for (int i = 0; i < 2; i++) {
        cp__cmddesc d = describe(tables[i], "EVAL return 2 {x}a {x}b arg");
        assert_int_equal(d.slot, slot_of("x"));
        d = describe(tables[i], "EVAL return 2 a b arg");
        assert_int_equal(d.slot, CP__SLOT_CROSS);
        assert_false(d.name.ci->flags & CP__CMD_SPLIT);
        d = describe(tables[i], "eval return 0 a");
        assert_int_equal(d.slot, CP__SLOT_NONE);
    }
    cp__cmdtable_free(t);
}

/* BLPOP blocks for its last argument in seconds (0: for ever); XREAD only with BLOCK (ms), with
 * or without the server's table; WAIT is never a pool command, its timeout is its last argument
 * in ms. */
static void blocking_and_wait(void **state) {
    (void)state;
    cp__cmdtable *t = recorded_table();
    const cp__cmdtable *tables[2] = {t, NULL};
    for (int i = 0; i < 2; i++) {
        cp__cmddesc d = describe(tables[i], "BLPOP q1 q2 1.5");
        assert_true(d.flags & CP__DESC_BLOCKING);
        assert_int_equal(d.block_ms, 1500);
        assert_false(d.flags & CP__DESC_PLAIN);
        assert_int_equal(d.slot, CP__SLOT_CROSS);
        d = describe(tables[i], "blpop q 0");
        assert_true(d.flags & CP__DESC_BLOCKING);
        assert_int_equal(d.block_ms, UINT32_MAX);
        d = describe(tables[i], "XREAD COUNT 1 STREAMS s 0");
        assert_true(d.flags & CP__DESC_BLOCKS);
        assert_false(d.flags & CP__DESC_BLOCKING);
        assert_false(d.flags & CP__DESC_PLAIN);
        /* Its keys follow STREAMS: the server's key specs find them; the built-in table, which
         * has no XREAD, routes it by argv[1] like any unknown command. */
        assert_int_equal(d.slot, slot_of(tables[i] != NULL ? "s" : "COUNT"));
        d = describe(tables[i], "xread block 250 streams s 0");
        assert_true(d.flags & CP__DESC_BLOCKING);
        assert_int_equal(d.block_ms, 250);
        assert_int_equal(d.slot, slot_of(tables[i] != NULL ? "s" : "block"));
        d = describe(tables[i], "WAIT 1 100");
        assert_true(d.flags & CP__DESC_WAIT);
        assert_false(d.flags & (CP__DESC_BLOCKS | CP__DESC_BLOCKING));
        assert_false(d.flags & CP__DESC_PLAIN); /* with a caller's slot too: CP__F_WAIT */
        assert_int_equal(d.block_ms, 100);
        /* Keyless to the server; an unknown command, routed by argv[1], to the built-in table. */
        assert_int_equal(d.slot, tables[i] != NULL ? CP__SLOT_NONE : slot_of("1"));
    }
    cp__cmdtable_free(t);
}

/* SELECT 1 is refused with the reason; SELECT 0 changes nothing the library relies on. */
static void select_refusal(void **state) {
    (void)state;
    cp__cmdtable *t = recorded_table();
    cp__cmddesc d = describe(t, "SELECT 1");
    assert_non_null(d.refusal);
    assert_non_null(strstr(d.refusal, "SELECT"));
    assert_false(d.flags & CP__DESC_PLAIN);
    d = describe(t, "select 0");
    assert_null(d.refusal);
    d = describe(NULL, "CLIENT REPLY OFF");
    assert_non_null(d.refusal);
    assert_null(describe(NULL, "CLIENT SETNAME x").refusal);
    cp__cmdtable_free(t);
}

/* SCRIPT LOAD goes to every master and merges to the one answer; FLUSH to +OK; EXISTS is not
 * fanned out by itself; DBSIZE sums. */
static void fan_out_rules(void **state) {
    (void)state;
    cp__cmdtable *t = recorded_table();
    const cp__cmdtable *tables[2] = {t, NULL};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(describe(tables[i], "SCRIPT LOAD return").fan, CP__MERGE_SAME);
        assert_int_equal(describe(tables[i], "script flush").fan, CP__MERGE_OK);
        assert_int_equal(describe(tables[i], "SCRIPT EXISTS abc").fan, CP__MERGE_NONE);
        assert_int_equal(describe(tables[i], "FUNCTION LOAD code").fan, CP__MERGE_SAME);
        assert_int_equal(describe(tables[i], "DBSIZE").fan, CP__MERGE_SUM);
        assert_int_equal(describe(tables[i], "GET k").fan, CP__MERGE_NONE);
        assert_false(describe(tables[i], "SCRIPT LOAD return").flags & CP__DESC_PLAIN);
    }
    cp__cmdtable_free(t);
}

/* A container's argv gets its subcommand's entry from the server's table, and what that entry
 * says (OBJECT ENCODING reads; the container's own entry does not say so); its keys are the
 * subcommand's. */
static void container_subcommand(void **state) {
    (void)state;
    cp__cmdtable *t = recorded_table();
    cp__cmddesc d = describe(t, "OBJECT ENCODING user:3");
    assert_non_null(d.e);
    assert_int_equal(d.e->namelen, 15);
    assert_memory_equal(cp__cmdtable_name(t, d.e), "object|encoding", 15);
    assert_memory_equal(cp__cmdtable_name(t, d.name.named), "object", 6);
    assert_true(d.name.flags & CP__DESC_SUBS);
    assert_false(d.name.flags & CP__DESC_PLAIN);
    assert_false(d.name.flags & CP__DESC_READONLY);
    assert_true(d.flags & CP__DESC_READONLY);
    assert_int_equal(d.slot, slot_of("user:3"));
    /* An unknown subcommand: the container's entry. */
    d = describe(t, "OBJECT NOSUCH k");
    assert_ptr_equal(d.e, d.name.named);
    /* PUBLISH is pub/sub to the server; SPUBLISH's shard channel routes it. */
    d = describe(t, "SPUBLISH chan msg");
    assert_true(d.flags & CP__DESC_PUBSUB);
    assert_int_equal(d.slot, slot_of("chan"));
    cp__cmdtable_free(t);
}

/* The name's part kept from one argv and handed back for another gives the descriptor a fresh
 * lookup gives. */
static void name_part_reused(void **state) {
    (void)state;
    cp__cmdtable *t = recorded_table();
    static const char *const lines[][2] = {
        {"GET a", "get b"},
        {"BLPOP q 2", "BLPOP r s 0.25"},
        {"OBJECT ENCODING k", "OBJECT FREQ j"},
        {"SCRIPT LOAD x", "SCRIPT FLUSH"},
        {"MSET a 1 b 2", "MSET c 3"},
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        cp__cmddesc first, again, fresh;
        describe_in(&first, t, lines[i][0], NULL);
        cp__cmdname kept = first.name;
        describe_in(&again, t, lines[i][1], &kept);
        describe_in(&fresh, t, lines[i][1], NULL);
        assert_ptr_equal(again.name.ci, fresh.name.ci);
        assert_ptr_equal(again.name.named, fresh.name.named);
        assert_ptr_equal(again.e, fresh.e);
        assert_int_equal(again.flags, fresh.flags);
        assert_int_equal(again.slot, fresh.slot);
        assert_int_equal(again.block_ms, fresh.block_ms);
        assert_int_equal(again.fan, fresh.fan);
        assert_int_equal(again.nsplit, fresh.nsplit);
    }
    cp__cmdtable_free(t);
}

/* A name neither table knows: a write routed by argv[1]. */
static void unknown_command(void **state) {
    (void)state;
    cp__cmdtable *t = recorded_table();
    cp__cmddesc d = describe(t, "NOSUCHCMD key arg");
    assert_string_equal(d.name.ci->name, "");
    assert_null(d.e);
    assert_int_equal(d.slot, slot_of("key"));
    assert_false(d.flags & (CP__DESC_READONLY | CP__DESC_CACHE));
    assert_true(d.flags & CP__DESC_PLAIN);
    cp__cmdtable_free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(get_and_set),          cmocka_unit_test(mset_across_slots),
        cmocka_unit_test(eval_numkeys),         cmocka_unit_test(blocking_and_wait),
        cmocka_unit_test(select_refusal),       cmocka_unit_test(fan_out_rules),
        cmocka_unit_test(container_subcommand), cmocka_unit_test(name_part_reused),
        cmocka_unit_test(unknown_command),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
