/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The server's command table and key positions without a server: a COMMAND reply recorded from
 * Debian's redis-server 7.0 (tests/data/command_redis7.resp, written by
 * tests/integration/test_keyspec_real.c with CP_RECORD_COMMAND=path) parsed and looked up; the
 * keys of sample commands of every kind of key spec, as that server's COMMAND GETKEYS gives them;
 * the legacy (pre-7) shape; the built-in fallback; and malformed replies: hand-written ones, and
 * every entry of the recording truncated at every array and with every node replaced by a node
 * of another type. None may crash, leak or yield a key position outside the argv.
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
#include "lib/cmd/keyspec.h"
#include "testutil.h"

/* One reply, parsed (the test fails when buf is not exactly one). */
static redisReply *parse_resp(const char *buf, size_t len) {
    redisReply *r = cp_test_parse_reply(buf, len);
    assert_non_null(r);
    return r;
}

static redisReply *load_recorded(void) {
    redisReply *r = cp_test_read_reply("command_redis7.resp");
    assert_non_null(r);
    return r;
}

static cp__cmdtable *recorded_table(void) {
    redisReply *r = load_recorded();
    cp__cmdtable *t = NULL;
    char err[128];
    assert_int_equal(cp__cmdtable_parse(r, &t, err, sizeof(err)), 0);
    freeReplyObject(r);
    return t;
}

/* Splits a command line on spaces ("" is an empty argument) into argv; returns argc. */
static int split(char *line, const char **argv, size_t *len, int cap) {
    int argc = 0;
    for (char *tok = strtok(line, " "); tok != NULL && argc < cap; tok = strtok(NULL, " ")) {
        if (strcmp(tok, "\"\"") == 0)
            tok[0] = '\0';
        argv[argc] = tok;
        len[argc] = strlen(tok);
        argc++;
    }
    return argc;
}

/* Appends to a string buffer; what does not fit is dropped whole (a test's message). */
static void append(char *out, size_t outlen, const char *fmt, ...) {
    char piece[160];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(piece, sizeof(piece), fmt, ap);
    va_end(ap);
    size_t used = strlen(out);
    if (n > 0 && (size_t)n < sizeof(piece) && used + (size_t)n < outlen)
        memcpy(out + used, piece, (size_t)n + 1);
}

/* The key positions of a command line as "1 3 5" (and its flags). */
static const char *keys_of(const cp__cmdtable *t, const char *cmdline, unsigned search,
                           unsigned *flags) {
    static char out[256];
    char line[512];
    const char *argv[64];
    size_t len[64];
    snprintf(line, sizeof(line), "%s", cmdline);
    int argc = split(line, argv, len, 64);
    cp__keys k;
    int n = cp__keys_find(t, argc, argv, len, search, &k);
    assert_int_equal(n, k.n);
    out[0] = '\0';
    for (int i = 0; i < k.n; i++) {
        int a = cp__keys_at(&k, i);
        assert_int_ge(a, 1);
        assert_int_lt(a, argc);
        append(out, sizeof(out), "%s%d", i ? " " : "", a);
    }
    if (flags)
        *flags = k.flags;
    return out;
}

static void recorded_reply_parses(void **state) {
    (void)state;
    cp__cmdtable *t = recorded_table();
    /* redis-server 7.0.15: 240 commands, 126 subcommands of 15 containers, all well formed. */
    assert_int_equal(t->ncmds, 366);
    assert_int_equal(t->skipped, 0);
    int containers = 0, subs = 0;
    for (uint32_t i = 0; i < t->ncmds; i++) {
        const cp__cmdspec *e = &t->cmds[i];
        assert_ptr_equal(cp__cmdtable_find(t, cp__cmdtable_name(t, e), e->namelen), e);
        containers += e->has_subs;
        subs += e->baselen != e->namelen;
        assert_true(e->has_specs);
    }
    assert_int_equal(containers, 15);
    assert_int_equal(subs, 126);
    const cp__cmdspec *get = cp__cmdtable_find(t, "GET", 3);
    assert_non_null(get);
    assert_int_equal(get->arity, 2);
    assert_true(get->flags & CP__CF_READONLY);
    assert_true(get->flags & CP__CF_FAST);
    assert_int_equal(get->nspecs, 1);
    assert_int_equal(t->specs[get->spec0].bs, CP__BS_INDEX);
    assert_int_equal(t->specs[get->spec0].fk, CP__FK_RANGE);
    const cp__cmdspec *xread = cp__cmdtable_find(t, "xread", 5);
    const cp__keyspec *xs = &t->specs[xread->spec0];
    assert_int_equal(xs->bs, CP__BS_KEYWORD);
    assert_int_equal(xs->kwlen, 7);
    assert_memory_equal(t->pool + xs->kw, "STREAMS", 7);
    assert_int_equal(xs->a, -1); /* lastkey */
    assert_int_equal(xs->c, 2);  /* limit */
    const cp__cmdspec *sort = cp__cmdtable_find(t, "sort", 4);
    assert_int_equal(sort->proc, CP__PROC_SORT);
    assert_int_equal(sort->nspecs, 3);
    assert_int_equal(t->specs[sort->spec0 + 2].bs, CP__BS_UNKNOWN);
    assert_int_equal(cp__cmdtable_find(t, "migrate", 7)->proc, CP__PROC_MIGRATE);
    const cp__cmdspec *spub = cp__cmdtable_find(t, "spublish", 8);
    assert_true(t->specs[spub->spec0].flags & CP__KF_NOT_KEY);
    cp__cmdtable_free(t);
}

static void lookup_by_argv(void **state) {
    (void)state;
    cp__cmdtable *t = recorded_table();
    const char *argv[3] = {"gEt", "k", "x"};
    size_t len[3] = {3, 1, 1};
    const cp__cmdspec *e = cp__cmdtable_lookup(t, 2, argv, len);
    assert_non_null(e);
    assert_memory_equal(cp__cmdtable_name(t, e), "get", 3);
    /* A container gives its subcommand's entry, in any case. */
    argv[0] = "OBJECT", argv[1] = "Encoding", len[0] = 6, len[1] = 8;
    e = cp__cmdtable_lookup(t, 3, argv, len);
    assert_int_equal(e->namelen, 15);
    assert_memory_equal(cp__cmdtable_name(t, e), "object|encoding", 15);
    assert_int_equal(e->baselen, 6);
    /* An unknown subcommand, or none, gives the container itself. */
    argv[1] = "nosuch", len[1] = 6;
    e = cp__cmdtable_lookup(t, 3, argv, len);
    assert_memory_equal(cp__cmdtable_name(t, e), "object", 6);
    assert_int_equal(e->namelen, 6);
    assert_ptr_equal(cp__cmdtable_lookup(t, 1, argv, len), e);
    /* A subcommand name is not a command of its own; unknown and odd names are absent. */
    argv[0] = "encoding", len[0] = 8;
    assert_null(cp__cmdtable_lookup(t, 1, argv, len));
    argv[0] = "object|encoding", len[0] = 15;
    assert_null(cp__cmdtable_lookup(t, 1, argv, len));
    argv[0] = "", len[0] = 0;
    assert_null(cp__cmdtable_lookup(t, 1, argv, len));
    char longname[200];
    memset(longname, 'g', sizeof(longname));
    argv[0] = longname, len[0] = sizeof(longname);
    assert_null(cp__cmdtable_lookup(t, 1, argv, len));
    assert_null(cp__cmdtable_lookup(NULL, 1, argv, len));
    assert_null(cp__cmdtable_find(t, "OBJECT|NOSUCH", 13));
    assert_non_null(cp__cmdtable_find(t, "CONFIG|get", 10));
    cp__cmdtable_free(t);
}

/* The expected positions are what redis-server 7.0.15 answers to COMMAND GETKEYS for the same
 * argv (test_keyspec_real checks every command against the server itself). */
static void keys_of_every_spec_kind(void **state) {
    (void)state;
    cp__cmdtable *t = recorded_table();
    unsigned f;
    static const struct {
        const char *cmd, *keys;
    } cases[] = {
        {"GET k", "1"},
        {"get k", "1"},
        {"SET k v GET", "1"},
        {"MGET a b c", "1 2 3"},
        {"MSET a 1 b 2 c 3", "1 3 5"},
        {"DEL a b", "1 2"},
        {"RENAME a b", "1 2"},
        {"LMOVE a b LEFT RIGHT", "1 2"},
        {"BLMOVE a b LEFT RIGHT 0", "1 2"},
        {"BLPOP a b c 0", "1 2 3"},
        {"BZPOPMIN a b 0", "1 2"},
        {"COPY a b", "1 2"},
        {"OBJECT ENCODING k", "2"},
        {"object freq k", "2"},
        {"MEMORY USAGE k SAMPLES 5", "2"},
        {"XINFO STREAM s FULL", "2"},
        {"XINFO GROUPS s", "2"},
        {"XGROUP CREATE s g $", "2"},
        {"CONFIG GET maxmemory", ""},
        {"CLUSTER KEYSLOT k", ""},
        {"PING", ""},
        {"OBJECT", ""},
        {"XREAD STREAMS a 0", "2"},
        {"XREAD COUNT 1 BLOCK 0 STREAMS a b 0 0", "6 7"},
        {"XREAD STREAMS a b c", "2"},
        {"XREADGROUP GROUP g c STREAMS s 0", "5"},
        {"XREADGROUP GROUP g c COUNT 1 STREAMS s t 0 0", "7 8"},
        {"EVAL s 2 a b x", "3 4"},
        {"EVALSHA s 1 a", "3"},
        {"FCALL f 2 a b", "3 4"},
        {"ZUNIONSTORE d 2 a b WEIGHTS 1 2", "1 3 4"},
        {"ZINTER 2 a b", "2 3"},
        {"ZINTERCARD 2 a b LIMIT 1", "2 3"},
        {"SINTERCARD 1 a", "2"},
        {"LMPOP 2 a b LEFT", "2 3"},
        {"BLMPOP 0 2 a b LEFT", "3 4"},
        {"BZMPOP 0 1 a MIN", "3"},
        {"GEORADIUS k 0 0 1 m STORE d", "1 7"},
        {"GEORADIUS k 0 0 1 m STORE d STOREDIST e", "1 7 9"},
        {"GEORADIUSBYMEMBER k m 1 km STOREDIST d", "1 6"},
        {"GEOSEARCHSTORE d s FROMMEMBER m BYRADIUS 1 km", "1 2"},
        {"SORT k", "1"},
        {"SORT k BY p LIMIT 0 1 GET g STORE d", "1 10"},
        {"SORT k STORE a STORE b", "1 5"},
        {"SORT k LIMIT STORE x STORE", "1"},
        {"SORT k GET STORE x", "1"},
        {"SORT_RO k STORE d", "1"},
        {"MIGRATE h p k 0 5", "3"},
        {"MIGRATE h p \"\" 0 5 KEYS a b", "7 8"},
        {"MIGRATE h p \"\" 0 5 AUTH KEYS KEYS a", "9"},
        {"MIGRATE h p \"\" 0 5 COPY REPLACE AUTH2 u p KEYS a", "12"},
        {"MIGRATE h p k 0 5 KEYS a", ""},
        {"WATCH a b", "1 2"},
        {"PFCOUNT a b", "1 2"},
        {"BITOP AND d a b", "2 3 4"},
        {"SPUBLISH ch m", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = keys_of(t, cases[i].cmd, 0, &f);
        if (strcmp(got, cases[i].keys) != 0)
            fail_msg("%s: keys at \"%s\", expected \"%s\"", cases[i].cmd, got, cases[i].keys);
        assert_true(f & CP__KEYS_SERVER);
    }
    /* Invalid for the specs (the server answers "Invalid arguments"): no keys. */
    static const char *invalid[] = {
        "ZUNIONSTORE d 5 a",  "ZUNIONSTORE d 0 a", "ZUNIONSTORE d x a", "ZUNIONSTORE d 02 a",
        "ZUNIONSTORE d -1 a", "EVAL s 3 a",        "LMPOP 0 a LEFT",    "XREAD STREAMS a",
    };
    for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
        assert_string_equal(keys_of(t, invalid[i], 0, &f), "");
        assert_true(f & CP__KEYS_INVALID);
    }
    /* EVAL with no keys is valid (no_mandatory_keys), and keyword-less XREAD finds none. */
    assert_string_equal(keys_of(t, "EVAL s 0", 0, &f), "");
    assert_string_equal(keys_of(t, "XREAD COUNT 1 a b", 0, &f), "");
    assert_false(f & CP__KEYS_INVALID);
    /* Shard channels: routed by, when asked for, but not keys. */
    assert_string_equal(keys_of(t, "SPUBLISH ch m", CP__KEYS_WITH_CHANNELS, &f), "1");
    assert_true(f & CP__KEYS_CHANNELS);
    assert_string_equal(keys_of(t, "SSUBSCRIBE a b", CP__KEYS_WITH_CHANNELS, &f), "1 2");
    assert_string_equal(keys_of(t, "GET k", CP__KEYS_WITH_CHANNELS, &f), "1");
    assert_false(f & CP__KEYS_CHANNELS);
    cp__cmdtable_free(t);
}

static void readonly_from_flags(void **state) {
    (void)state;
    cp__cmdtable *t = recorded_table();
    unsigned f;
    static const char *ro[] = {"GET k",
                               "MGET a b",
                               "XREAD STREAMS a 0",
                               "OBJECT ENCODING k",
                               "MEMORY USAGE k",
                               "XINFO STREAM s",
                               "SORT_RO k",
                               "EVAL_RO s 0",
                               "GEORADIUS_RO k 0 0 1 m",
                               "KEYS *",
                               "SCAN 0",
                               "DBSIZE"};
    for (size_t i = 0; i < sizeof(ro) / sizeof(ro[0]); i++) {
        keys_of(t, ro[i], 0, &f);
        if (!(f & CP__KEYS_READONLY))
            fail_msg("%s: not read-only", ro[i]);
    }
    /* Writes, and commands the server flags neither readonly nor write (PING, CONFIG GET,
     * EVAL: they may do anything), are not read-only. */
    static const char *rw[] = {"SET k v",           "SORT k",  "GEORADIUS k 0 0 1 m", "EVAL s 0",
                               "MIGRATE h p k 0 5", "PING",    "CONFIG GET x",        "OBJECT",
                               "PUBLISH c m",       "FLUSHALL"};
    for (size_t i = 0; i < sizeof(rw) / sizeof(rw[0]); i++) {
        keys_of(t, rw[i], 0, &f);
        if (f & CP__KEYS_READONLY)
            fail_msg("%s: read-only", rw[i]);
    }
    cp__cmdtable_free(t);
}

/* No table, or a name the table lacks: the built-in table answers (argv[1] for unknown names). */
static void builtin_fallback(void **state) {
    (void)state;
    unsigned f;
    assert_string_equal(keys_of(NULL, "GET k", 0, &f), "1");
    assert_int_equal(f, CP__KEYS_READONLY);
    assert_string_equal(keys_of(NULL, "MSET a 1 b 2", 0, &f), "1 3");
    assert_int_equal(f, 0);
    assert_string_equal(keys_of(NULL, "EVAL s 2 a b", 0, &f), "3 4");
    assert_string_equal(keys_of(NULL, "PING", 0, &f), "");
    assert_int_equal(f, CP__KEYS_READONLY);
    assert_string_equal(keys_of(NULL, "NOSUCH a b", 0, &f), "1");
    assert_string_equal(keys_of(NULL, "NOSUCH", 0, &f), "");
    cp__cmdtable *t = recorded_table();
    assert_string_equal(keys_of(t, "MODULECMD a b", 0, &f), "1");
    assert_false(f & CP__KEYS_SERVER);
    cp__cmdtable_free(t);
    cp__keys k;
    assert_int_equal(cp__keys_find(NULL, 0, NULL, NULL, 0, &k), 0);
}

/* A Redis 6 / 5 shaped reply: 7 or 6 fields, no key specs. The triple gives the keys; movable
 * commands the built-in table knows (EVAL) use it, others get the triple (none: any node). */
static void legacy_reply(void **state) {
    (void)state;
    static const char resp[] =
        "*5\r\n"
        "*7\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n*1\r\n+@read\r\n"
        "*6\r\n$4\r\nmset\r\n:-3\r\n*2\r\n+write\r\n+denyoom\r\n:1\r\n:-1\r\n:2\r\n"
        "*6\r\n$4\r\neval\r\n:-3\r\n*2\r\n+noscript\r\n+movablekeys\r\n:0\r\n:0\r\n:0\r\n"
        "*6\r\n$5\r\nxread\r\n:-4\r\n*2\r\n+readonly\r\n+movablekeys\r\n:0\r\n:0\r\n:0\r\n"
        "*6\r\n$6\r\nrename\r\n:3\r\n*1\r\n+write\r\n:1\r\n:2\r\n:1\r\n";
    redisReply *r = parse_resp(resp, sizeof(resp) - 1);
    cp__cmdtable *t = NULL;
    char err[128];
    assert_int_equal(cp__cmdtable_parse(r, &t, err, sizeof(err)), 0);
    freeReplyObject(r);
    assert_int_equal(t->ncmds, 5);
    unsigned f;
    assert_string_equal(keys_of(t, "GET k", 0, &f), "1");
    assert_int_equal(f, CP__KEYS_SERVER | CP__KEYS_READONLY);
    assert_string_equal(keys_of(t, "MSET a 1 b 2", 0, &f), "1 3");
    assert_string_equal(keys_of(t, "MSET a 1 b", 0, &f), "1 3");
    assert_string_equal(keys_of(t, "RENAME a b", 0, &f), "1 2");
    assert_string_equal(keys_of(t, "RENAME a", 0, &f), "");
    assert_string_equal(keys_of(t, "EVAL s 2 a b", 0, &f), "3 4");
    assert_int_equal(f, CP__KEYS_SERVER);
    assert_string_equal(keys_of(t, "XREAD STREAMS a 0", 0, &f), "");
    assert_int_equal(f, CP__KEYS_SERVER | CP__KEYS_READONLY);
    cp__cmdtable_free(t);
}

/* A spec of a type this parser does not know, on a command without a rule of its own: the
 * keys of the other specs (partial), not none. */
static void unknown_spec_type_is_partial(void **state) {
    (void)state;
    static const char resp[] =
        "*1\r\n*10\r\n$3\r\nfoo\r\n:-2\r\n*1\r\n+write\r\n:1\r\n:1\r\n:1\r\n*0\r\n*0\r\n"
        "*2\r\n"
        "*6\r\n$5\r\nflags\r\n*1\r\n+RW\r\n"
        "$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\n"
        "index\r\n:1\r\n"
        "$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$"
        "7\r\nlastkey\r\n"
        ":0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n"
        "*6\r\n$5\r\nflags\r\n*0\r\n"
        "$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$6\r\nfuture\r\n$4\r\nspec\r\n*0\r\n"
        "$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$7\r\nunknown\r\n$4\r\nspec\r\n*0\r\n"
        "*0\r\n";
    redisReply *r = parse_resp(resp, sizeof(resp) - 1);
    cp__cmdtable *t = NULL;
    char err[128];
    assert_int_equal(cp__cmdtable_parse(r, &t, err, sizeof(err)), 0);
    freeReplyObject(r);
    unsigned f;
    assert_string_equal(keys_of(t, "FOO a b", 0, &f), "1");
    assert_true(f & CP__KEYS_PARTIAL);
    cp__cmdtable_free(t);
}

static void malformed_replies(void **state) {
    (void)state;
    static const struct {
        const char *resp;
        int rc;
        unsigned ncmds, skipped;
    } cases[] = {
        {"-ERR unknown command 'COMMAND'\r\n", CP_ESERVER, 0, 0},
        {":1\r\n", CP_EPROTO, 0, 0},
        {"$3\r\nget\r\n", CP_EPROTO, 0, 0},
        {"*0\r\n", CP_EPROTO, 0, 0},
        {"*-1\r\n", CP_EPROTO, 0, 0},
        {"*1\r\n$-1\r\n", CP_EPROTO, 0, 0},
        {"*2\r\n:1\r\n*0\r\n", CP_EPROTO, 0, 2},
        /* too few fields, a name that is not a string, empty, with '|' or a space */
        {"*1\r\n*5\r\n$3\r\nget\r\n:2\r\n*0\r\n:1\r\n:1\r\n", CP_EPROTO, 0, 1},
        {"*1\r\n*6\r\n:3\r\n:2\r\n*0\r\n:1\r\n:1\r\n:1\r\n", CP_EPROTO, 0, 1},
        {"*1\r\n*6\r\n$0\r\n\r\n:2\r\n*0\r\n:1\r\n:1\r\n:1\r\n", CP_EPROTO, 0, 1},
        {"*1\r\n*6\r\n$3\r\na|b\r\n:2\r\n*0\r\n:1\r\n:1\r\n:1\r\n", CP_EPROTO, 0, 1},
        {"*1\r\n*6\r\n$3\r\na b\r\n:2\r\n*0\r\n:1\r\n:1\r\n:1\r\n", CP_EPROTO, 0, 1},
        /* flags not an array / not strings; step 0 with a first key; huge integers */
        {"*1\r\n*6\r\n$3\r\nget\r\n:2\r\n:0\r\n:1\r\n:1\r\n:1\r\n", CP_EPROTO, 0, 1},
        {"*1\r\n*6\r\n$3\r\nget\r\n:2\r\n*1\r\n:5\r\n:1\r\n:1\r\n:1\r\n", CP_EPROTO, 0, 1},
        {"*1\r\n*6\r\n$3\r\nget\r\n:2\r\n*0\r\n:1\r\n:1\r\n:0\r\n", CP_EPROTO, 0, 1},
        {"*1\r\n*6\r\n$3\r\nget\r\n:2\r\n*0\r\n:-1\r\n:1\r\n:1\r\n", CP_EPROTO, 0, 1},
        {"*1\r\n*6\r\n$3\r\nget\r\n:99999999999\r\n*0\r\n:1\r\n:1\r\n:1\r\n", CP_EPROTO, 0, 1},
        {"*1\r\n*6\r\n$3\r\nget\r\n:2\r\n*0\r\n:1\r\n:-99999999999\r\n:1\r\n", CP_EPROTO, 0, 1},
        /* key specs not an array, a spec not a map, a map of odd length, types missing */
        {"*1\r\n*9\r\n$3\r\nget\r\n:2\r\n*0\r\n:1\r\n:1\r\n:1\r\n*0\r\n*0\r\n:1\r\n", CP_EPROTO, 0,
         1},
        {"*1\r\n*9\r\n$3\r\nget\r\n:2\r\n*0\r\n:1\r\n:1\r\n:1\r\n*0\r\n*0\r\n*1\r\n:1\r\n",
         CP_EPROTO, 0, 1},
        {"*1\r\n*9\r\n$3\r\nget\r\n:2\r\n*0\r\n:1\r\n:1\r\n:1\r\n*0\r\n*0\r\n*1\r\n*1\r\n$5\r\n"
         "flags\r\n",
         CP_EPROTO, 0, 1},
        {"*1\r\n*9\r\n$3\r\nget\r\n:2\r\n*0\r\n:1\r\n:1\r\n:1\r\n*0\r\n*0\r\n*1\r\n*2\r\n$5\r\n"
         "flags\r\n*0\r\n",
         CP_EPROTO, 0, 1},
        /* good entries survive bad neighbours; a bad subcommand alone is left out; a
         * subcommand of another container, or a second name, is not taken */
        {"*3\r\n:1\r\n*6\r\n$3\r\nget\r\n:2\r\n*0\r\n:1\r\n:1\r\n:1\r\n$1\r\nx\r\n", 0, 1, 2},
        {"*1\r\n*10\r\n$3\r\nobj\r\n:-2\r\n*0\r\n:0\r\n:0\r\n:0\r\n*0\r\n*0\r\n*0\r\n*3\r\n"
         "*9\r\n$5\r\nobj|a\r\n:3\r\n*0\r\n:2\r\n:2\r\n:1\r\n*0\r\n*0\r\n*0\r\n"
         "*9\r\n$5\r\nobk|b\r\n:3\r\n*0\r\n:2\r\n:2\r\n:1\r\n*0\r\n*0\r\n*0\r\n"
         "*9\r\n$4\r\nobj|\r\n:3\r\n*0\r\n:2\r\n:2\r\n:1\r\n*0\r\n*0\r\n*0\r\n",
         0, 2, 2},
        {"*1\r\n*10\r\n$3\r\nobj\r\n:-2\r\n*0\r\n:0\r\n:0\r\n:0\r\n*0\r\n*0\r\n*0\r\n:7\r\n",
         CP_EPROTO, 0, 1},
        {"*2\r\n*6\r\n$3\r\nget\r\n:2\r\n*0\r\n:1\r\n:1\r\n:1\r\n*6\r\n$3\r\nGET\r\n:3\r\n*0\r\n"
         ":1\r\n:1\r\n:1\r\n",
         0, 2, 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        redisReply *r = parse_resp(cases[i].resp, strlen(cases[i].resp));
        cp__cmdtable *t = (cp__cmdtable *)1;
        char err[128] = "";
        int rc = cp__cmdtable_parse(r, &t, err, sizeof(err));
        freeReplyObject(r);
        if (rc != cases[i].rc)
            fail_msg("case %zu: rc %d, expected %d (%s)", i, rc, cases[i].rc, err);
        if (rc != 0) {
            assert_null(t);
            assert_int_not_equal(err[0], '\0');
            continue;
        }
        if (t->ncmds != cases[i].ncmds || t->skipped != cases[i].skipped)
            fail_msg("case %zu: %u entries, %u skipped", i, t->ncmds, t->skipped);
        cp__cmdtable_free(t);
    }
}

/* ---- mutations of the recording ------------------------------------------------------------ */

static const char *const tokens[] = {"k",     "0",     "1",       "2",        "-1",  "",
                                     "STORE", "KEYS",  "STREAMS", "LIMIT",    "GET", "BY",
                                     "AUTH",  "AUTH2", "x",       "STOREDIST"};
#define NTOKENS (sizeof(tokens) / sizeof(tokens[0]))

/* Every entry of t is looked up and asked for keys on a few argv of its own name: positions
 * stay inside the argv, counts add up. */
static void exercise(const cp__cmdtable *t, unsigned seed) {
    for (uint32_t i = 0; i < t->ncmds; i++) {
        const cp__cmdspec *e = &t->cmds[i];
        const char *name = cp__cmdtable_name(t, e);
        for (int v = 0; v < 4; v++) {
            const char *argv[12];
            size_t len[12];
            int argc = 1 + (int)((seed + (unsigned)v * 7u + i) % 11u);
            argv[0] = name, len[0] = e->baselen;
            int a = 1;
            if (e->baselen != e->namelen) {
                argv[1] = name + e->baselen + 1, len[1] = e->namelen - e->baselen - 1u;
                a = 2;
                if (argc < 2)
                    argc = 2;
            }
            for (; a < argc; a++) {
                seed = seed * 1103515245u + 12345u;
                argv[a] = tokens[(seed >> 16) % NTOKENS];
                len[a] = strlen(argv[a]);
            }
            cp__keys k;
            int n = cp__keys_find(t, argc, argv, len, v & 1 ? CP__KEYS_WITH_CHANNELS : 0, &k);
            int sum = 0;
            assert_int_ge(k.nruns, 0);
            assert_int_le(k.nruns, CP__KEYRUNS);
            for (int r = 0; r < k.nruns; r++) {
                sum += k.run[r].count;
                assert_int_ge(k.run[r].step, 1);
                assert_int_ge(k.run[r].count, 1);
            }
            assert_int_equal(sum, n);
            for (int j = 0; j < n; j++) {
                int p = cp__keys_at(&k, j);
                assert_int_ge(p, 1);
                assert_int_lt(p, argc);
            }
        }
    }
}

static unsigned mutations;

static void parse_and_exercise(const redisReply *top) {
    cp__cmdtable *t = NULL;
    char err[128];
    int rc = cp__cmdtable_parse(top, &t, err, sizeof(err));
    mutations++;
    if (rc == 0) {
        exercise(t, mutations);
        cp__cmdtable_free(t);
    } else {
        if (rc != CP_EPROTO && rc != CP_ESERVER)
            fail_msg("cp__cmdtable_parse: %d (%s), neither CP_EPROTO nor CP_ESERVER", rc,
                     cp_strerror(rc));
        assert_null(t);
    }
}

/* Walks every node under `node` (the entry being mutated is wrapped alone in `top`): each array
 * is cut short at every length, and each node is swapped for nodes of other types. */
static void mutate(const redisReply *top, redisReply *node) {
    static redisReply integer = {.type = REDIS_REPLY_INTEGER, .integer = 3};
    static redisReply huge = {.type = REDIS_REPLY_INTEGER, .integer = -(1LL << 40)};
    static redisReply nil = {.type = REDIS_REPLY_NIL};
    static redisReply empty = {.type = REDIS_REPLY_ARRAY};
    static char s[] = "index";
    static redisReply str = {.type = REDIS_REPLY_STRING, .str = s, .len = 5};
    static redisReply err = {.type = REDIS_REPLY_ERROR, .str = s, .len = 5};
    if (node->type != REDIS_REPLY_ARRAY)
        return;
    size_t n = node->elements;
    for (size_t cut = 0; cut < n; cut++) {
        node->elements = cut;
        parse_and_exercise(top);
    }
    node->elements = n;
    redisReply *swaps[] = {&integer, &huge, &nil, &empty, &str, &err};
    for (size_t i = 0; i < n; i++) {
        redisReply *keep = node->element[i];
        for (size_t j = 0; j < sizeof(swaps) / sizeof(swaps[0]); j++) {
            node->element[i] = swaps[j];
            parse_and_exercise(top);
        }
        node->element[i] = keep;
        mutate(top, keep);
    }
}

static void every_entry_truncated_and_retyped(void **state) {
    (void)state;
    redisReply *r = load_recorded();
    mutations = 0;
    for (size_t i = 0; i < r->elements; i++) {
        redisReply *one[1] = {r->element[i]};
        redisReply top = {.type = REDIS_REPLY_ARRAY, .elements = 1, .element = one};
        mutate(&top, r->element[i]);
    }
    /* And the whole reply cut short at every entry count. */
    size_t n = r->elements;
    for (size_t cut = 0; cut <= n; cut += 17) {
        r->elements = cut;
        parse_and_exercise(r);
    }
    r->elements = n;
    print_message("%u mutated replies parsed\n", mutations);
    assert_int_gt(mutations, 10000);
    freeReplyObject(r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(recorded_reply_parses),
        cmocka_unit_test(lookup_by_argv),
        cmocka_unit_test(keys_of_every_spec_kind),
        cmocka_unit_test(readonly_from_flags),
        cmocka_unit_test(builtin_fallback),
        cmocka_unit_test(legacy_reply),
        cmocka_unit_test(unknown_spec_type_is_partial),
        cmocka_unit_test(malformed_replies),
        cmocka_unit_test(every_entry_truncated_and_retyped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
