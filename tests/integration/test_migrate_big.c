/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Issue 43's move end to end, on real servers: a nutcracker in front of 4 redis-servers (the
 * topology of `clusterpipe up twemproxy --shards 4`; its YAML is --from) moved into a cluster of
 * 3 masters with a replica each (`up cluster --shards 3 --replicas 1`) with `migrate
 * --until-synced --json`, then `verify`.
 *
 * The sources hold every type in small and large encodings: strings (an integer, embstr, raw,
 * three of 1 MB of random bytes and one of 1 MB that LZF compresses), lists (6 elements, and a
 * quicklist of 100k), sets (an intset, a small one, a hashtable of 100k), sorted sets (a listpack,
 * a skiplist of 100k), hashes (a listpack, a hashtable of 100k), streams (one of 100k entries with
 * two consumer groups, consumers and 1,500 pending entries; a small one with a group); keys with
 * TTLs (relative and absolute), 24,000 strings of 512 random bytes, and 200 keys that expire 3 s
 * after they are set, just before the snapshot starts, so that most of them are expired when the
 * snapshot reaches them.
 *
 * The copy is made long on purpose: each source saves its snapshot with rdb-key-save-delay (a
 * delay per key in the fork child that writes it), about 20 s in all, whatever the target does.
 * While the sources are still saving (checked at each source: its fork child is still at work,
 * so the tool cannot hold the whole snapshot yet; and the tool's own --json progress says
 * "snapshot" after the reshard began):
 *   - a writer thread writes through nutcracker, pipelined (INCR counters, SET and DEL, TTLs set
 *     and keys that expire, RPUSH/HSET/SADD/ZADD into the small collections and into the 100k
 *     ones, LPOP, APPEND to a 1 MB string), and the test writes to the streams at their server
 *     (XADD, XACK, XCLAIM, XREADGROUP, XDEL: nutcracker has no stream commands);
 *   - 800 slots move from target master 0 to master 1 and back, twice, with their keys;
 *   - target master 1 is killed with kill -9 (by PID) and its replica takes over.
 * The writes stop while the sources still save: --until-synced, which cannot see a lag of 0
 * before it has read every snapshot, then syncs after the last write (a cutover). It exits 0;
 * its counters add up (no key left marked, every outcome not known re-copied, expired keys
 * skipped and counted, redirects followed); verify finds 0 differences over exactly the keys
 * the sources hold, by type; and, apart from verify, the large values' DUMPs, the streams'
 * pending entries and the TTLs are the same on the target, each counter reads what the writer
 * counted, and no expired key is on the target.
 */
#include <glob.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "asserts.h"

#include "bulk.h"
#include "clirun.h"
#include "jsoncheck.h"
#include "fixture.h"
#include "slotmover.h"
#include "testutil.h"
#include "util/clock.h"

#define NSOURCES 4
#define BIG 100000           /* elements of each large collection */
#define MB (1 << 20)         /* bytes of each large string */
#define SMALL 24000          /* small strings, through nutcracker: about 6,000 a source */
#define SMALL_BYTES 512      /* random bytes each: a full sync's 16 KB writes come every 32 */
#define EXPIRING 200         /* keys set to expire 3 s later, just before the snapshot */
#define SNAPSHOT_US 20000000 /* how long each source's snapshot takes to save, at least */
#define COUNTERS 50          /* the writer's INCR counters */
#define GROUPS 20            /* the writer's small lists, hashes, sets and sorted sets */
#define MOVED_SLOTS 800

/* The writer: a thread writing through nutcracker until told to stop, counting what it did. */
typedef struct writer {
    int port; /* the nutcracker's */
    pthread_t th;
    atomic_int stop;
    long rounds;          /* rounds whose every reply came back well */
    long incrs[COUNTERS]; /* INCRs of w:ctr:N answered */
    long dels;            /* w:k:N keys deleted (DEL answered 1) */
    char err[256];        /* why it stopped on its own */
} writer;

/* One round's commands, appended to c; returns how many, *del_at the DEL's place or -1. */
static int append_round(redisContext *c, long i, int *del_at) {
    int n = 0;
    *del_at = -1;
    redisAppendCommand(c, "INCR w:ctr:%ld", i % COUNTERS), n++;
    redisAppendCommand(c, "SET w:k:%ld v-%ld", i, i), n++;
    if (i % 5 == 0)
        redisAppendCommand(c, "PEXPIRE w:k:%ld 3600000", i), n++;
    if (i >= 10 && i % 4 == 0)
        redisAppendCommand(c, "DEL w:k:%ld", i - 10), *del_at = n++;
    if (i % 10 == 0) /* expired long before the verify */
        redisAppendCommand(c, "SET w:t:%ld x PX 400", i), n++;
    redisAppendCommand(c, "RPUSH w:l:%ld e-%ld", i % GROUPS, i), n++;
    redisAppendCommand(c, "HSET w:h:%ld f%ld v-%ld", i % GROUPS, i % 200, i), n++;
    redisAppendCommand(c, "SADD w:s:%ld m%ld", i % GROUPS, i % 500), n++;
    redisAppendCommand(c, "ZADD w:z:%ld %ld m%ld", i % GROUPS, i, i % 300), n++;
    redisAppendCommand(c, "RPUSH big:list late-%ld", i), n++;
    redisAppendCommand(c, "HSET big:hash field-%ld changed-%ld", i % BIG, i), n++;
    redisAppendCommand(c, "SADD big:set late-%ld", i), n++;
    redisAppendCommand(c, "ZADD big:zset %ld.75 member-%ld", i, (i * 7) % BIG), n++;
    if (i % 10 == 0)
        redisAppendCommand(c, "LPOP big:list"), n++;
    if (i % 100 == 0)
        redisAppendCommand(c, "APPEND str:1mb:0 -%ld", i), n++;
    return n;
}

static void *write_loop(void *arg) {
    writer *w = arg;
    redisContext *c = redisConnect("127.0.0.1", w->port);
    if (c == NULL || c->err) {
        snprintf(w->err, sizeof w->err, "connect: %s", c ? c->errstr : "out of memory");
        redisFree(c);
        return NULL;
    }
    for (long i = 0; !atomic_load(&w->stop); i++) {
        int del_at;
        int n = append_round(c, i, &del_at);
        for (int k = 0; k < n; k++) {
            redisReply *r = NULL;
            if (redisGetReply(c, (void **)&r) != REDIS_OK || r == NULL ||
                r->type == REDIS_REPLY_ERROR) {
                snprintf(w->err, sizeof w->err, "round %ld, command %d: %s", i, k,
                         r ? r->str : c->errstr);
                freeReplyObject(r);
                redisFree(c);
                return NULL;
            }
            if (k == 0)
                w->incrs[i % COUNTERS]++;
            if (k == del_at && r->integer == 1)
                w->dels++;
            freeReplyObject(r);
        }
        w->rounds = i + 1;
        usleep(1000);
    }
    redisFree(c);
    return NULL;
}

/* The ports of the twemproxy fixture's redis-servers, in its order. */
static void shard_ports(cp_fixture *f, int ports[NSOURCES]) {
    int n = 0;
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++) {
        const cp_proc *p = cp_topo_proc(f->topo, i);
        if (p->role == CP_ROLE_SHARD && n < NSOURCES)
            ports[n++] = p->port;
    }
    assert_int_equal(n, NSOURCES);
}

/* n bytes, x the seed of a linear congruential generator (random: LZF cannot shrink them). */
static char *random_bytes(size_t n, uint32_t x) {
    char *b = malloc(n);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        b[i] = (char)(x >> 16);
    }
    return b;
}

/* The dataset: through the proxy (where the writer will write too), but the streams, which
 * nutcracker does not forward: those at the first and third server. */
static void load(redisContext *proxy, redisContext *s[NSOURCES]) {
    char *v = random_bytes(2 * SMALL_BYTES, 777);
    int n = 0;
    for (int i = 0; i < SMALL; i++, n++) /* each its own slice of v */
        redisAppendCommand(proxy, "SET k:%d %b", i, v + i % SMALL_BYTES, (size_t)SMALL_BYTES);
    cp_test_drain(proxy, n);
    free(v);
    cp_test_ok(proxy, "SET str:int 123456");
    cp_test_ok(proxy, "SET str:embstr hello PX 3600000");
    cp_test_ok(proxy, "SET str:raw %s", "a raw string longer than forty-four bytes: 0123456789");
    for (uint32_t k = 0; k < 3; k++) {
        char *b = random_bytes(MB, 12345 + k);
        cp_test_ok(proxy, "SET str:1mb:%u %b", k, b, (size_t)MB);
        free(b);
    }
    char *z = malloc(MB);
    assert_non_null(z);
    memset(z, 'z', MB);
    cp_test_ok(proxy, "SET str:1mb:lzf %b", z, (size_t)MB);
    free(z);
    cp_test_ok(proxy, "RPUSH small:list a b c 1 2 3");
    cp_test_ok(proxy, "PEXPIREAT small:list 4102444800123");
    cp_test_ok(proxy, "SADD small:intset 1 2 3 100000");
    cp_test_ok(proxy, "SADD small:set a b c");
    cp_test_ok(proxy, "ZADD small:zset 1 a 2.5 b -3 c");
    cp_test_ok(proxy, "HSET small:hash f1 v1 f2 v2 f3 33");
    cp_test_ok(proxy, "PEXPIRE small:hash 5000000");
    cp_test_fill(proxy, "RPUSH", "big:list", BIG, 1, (const char *const[]){"element-%d"});
    cp_test_fill(proxy, "SADD", "big:set", BIG, 1, (const char *const[]){"member-%d"});
    cp_test_fill(proxy, "ZADD", "big:zset", BIG, 2, (const char *const[]){"%d.5", "member-%d"});
    cp_test_fill(proxy, "HSET", "big:hash", BIG, 2, (const char *const[]){"field-%d", "v%d"});
    cp_test_ok(proxy, "EXPIRE big:hash 7200");

    /* One entry an XADD: 100k of them in a script, at the server, cost one round trip. */
    cp_test_ok(s[0], "EVAL %s 1 st:big %d",
               "for i = 1, tonumber(ARGV[1]) do redis.call('XADD', KEYS[1], i .. '-1', 'field', "
               "i, 'other', 'value-' .. i) end",
               BIG);
    cp_test_ok(s[0], "XGROUP CREATE st:big g 0");
    cp_test_ok(s[0], "XREADGROUP GROUP g alice COUNT 1000 STREAMS st:big >");
    cp_test_ok(s[0], "XREADGROUP GROUP g bob COUNT 500 STREAMS st:big >");
    cp_test_ok(s[0], "XACK st:big g 1-1 2-1 3-1");
    cp_test_ok(s[0], "XGROUP CREATE st:big h $");
    cp_test_ok(s[0], "XGROUP CREATECONSUMER st:big h idle");
    cp_test_ok(s[0], "XDEL st:big 50000-1");
    cp_test_ok(s[0], "PEXPIRE st:big 9000000");
    for (int i = 1; i <= 5; i++)
        cp_test_ok(s[2], "XADD st:small %d-2 f %d", i, i);
    cp_test_ok(s[2], "XGROUP CREATE st:small g 0");
    cp_test_ok(s[2], "XREADGROUP GROUP g alice COUNT 2 STREAMS st:small >");
}

/* While the tool copies: the streams change at their servers (nutcracker has no X commands). */
static void write_streams(redisContext *s[NSOURCES]) {
    for (int i = 0; i < 100; i++)
        cp_test_ok(s[0], "XADD st:big %d-1 late %d", 200000 + i, i);
    cp_test_ok(s[0], "XACK st:big g 10-1 11-1 12-1");
    cp_test_ok(s[0], "XCLAIM st:big g carol 0 20-1 21-1");
    cp_test_ok(s[0], "XREADGROUP GROUP h dave COUNT 5 STREAMS st:big >");
    cp_test_ok(s[0], "XDEL st:big 7-1");
    cp_test_ok(s[2], "XADD st:small * late 1");
    cp_test_ok(s[2], "XACK st:small g 1-2");
    cp_test_ok(s[2], "XGROUP CREATE st:small g2 0");
}

/* 1 while the server's fork child is saving (for a replica: the snapshot the tool reads). */
static int saving(redisContext *c) {
    redisReply *r = redisCommand(c, "INFO persistence");
    assert_non_null(r);
    int on = strstr(r->str, "rdb_bgsave_in_progress:1") != NULL;
    freeReplyObject(r);
    return on;
}

static long long integer(redisContext *c, const char *cmd) {
    redisReply *r = redisCommand(c, cmd);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    long long v = r->integer;
    freeReplyObject(r);
    return v;
}

/* The source that holds key: exactly one does. */
static redisContext *holder(redisContext *s[NSOURCES], const char *key) {
    redisContext *at = NULL;
    for (int k = 0; k < NSOURCES; k++) {
        redisReply *r = redisCommand(s[k], "EXISTS %s", key);
        assert_non_null(r);
        if (r->integer == 1 && at != NULL)
            fail_msg("%s is on two sources", key);
        if (r->integer == 1)
            at = s[k];
        freeReplyObject(r);
    }
    if (at == NULL)
        fail_msg("%s is on no source", key);
    return at;
}

/* The key's DUMP and its PEXPIRETIME are the same on the target as at its source. */
static void same_dump_and_expiry(redisContext *s[NSOURCES], cp_client *t, const char *key) {
    redisContext *src = holder(s, key);
    redisReply *a = redisCommand(src, "DUMP %s", key);
    redisReply *b = cp_command(t, "DUMP %s", key);
    assert_non_null(a);
    if (b == NULL || b->type != REDIS_REPLY_STRING)
        fail_msg("%s: not on the target (%s)", key, b && b->str ? b->str : t->errstr);
    if (a->len != b->len || memcmp(a->str, b->str, a->len) != 0)
        fail_msg("%s: DUMP is %zu bytes at the source, %zu on the target, not the same", key,
                 a->len, b->len);
    freeReplyObject(a);
    cp_reply_free(b);
    a = redisCommand(src, "PEXPIRETIME %s", key);
    b = cp_command(t, "PEXPIRETIME %s", key);
    assert_non_null(a);
    assert_non_null(b);
    if (a->integer != b->integer)
        fail_msg("%s expires at %lld at the source, %lld on the target", key, a->integer,
                 b->integer);
    freeReplyObject(a);
    cp_reply_free(b);
}

static int same_reply(const redisReply *a, const redisReply *b) {
    if (a->type != b->type || a->integer != b->integer || a->len != b->len ||
        a->elements != b->elements || (a->len > 0 && memcmp(a->str, b->str, a->len) != 0))
        return 0;
    for (size_t i = 0; i < a->elements; i++)
        if (!same_reply(a->element[i], b->element[i]))
            return 0;
    return 1;
}

/* A command (hiredis format, one string argument: the key) answers the same at the key's source
 * and on the target; of an array of arrays, only the elements at the places in keep (-1 ends
 * it; NULL: all) are compared, times of day left out. */
static void same_answer(redisContext *s[NSOURCES], cp_client *t, const char *fmt, const char *key,
                        const int *keep) {
    redisReply *a = redisCommand(holder(s, key), fmt, key);
    redisReply *b = cp_command(t, fmt, key);
    assert_non_null(a);
    if (b == NULL || b->type != a->type || b->elements != a->elements)
        fail_msg("%s: the target answers otherwise", fmt);
    for (size_t i = 0; i < a->elements; i++)
        for (int j = 0; keep != NULL && keep[j] >= 0; j++) {
            const redisReply *x = a->element[i], *y = b->element[i];
            if (x->type != REDIS_REPLY_ARRAY || y->type != REDIS_REPLY_ARRAY ||
                x->elements <= (size_t)keep[j] || y->elements <= (size_t)keep[j] ||
                !same_reply(x->element[keep[j]], y->element[keep[j]]))
                fail_msg("%s (%s): element %zu differs at %d", fmt, key, i, keep[j]);
        }
    if (keep == NULL && !same_reply(a, b))
        fail_msg("%s (%s): the target answers otherwise", fmt, key);
    freeReplyObject(a);
    cp_reply_free(b);
}

/* What verify does not compare of a stream (it compares the entries, the last-generated-id and
 * each group's name, consumers, pending count and last-delivered-id): which entries are pending
 * for which consumer, delivered how often, and the stream's counts of entries added and deleted.
 * Not its DUMP: a consumer's seen-time is the time of day a command touched it, on each server. */
static void same_stream(redisContext *s[NSOURCES], cp_client *t, const char *key,
                        const char *const *groups) {
    static const int id_consumer_deliveries[] = {0, 1, 3, -1};
    for (; *groups != NULL; groups++) {
        char summary[64], pel[64];
        snprintf(summary, sizeof summary, "XPENDING %%s %s", *groups);
        snprintf(pel, sizeof pel, "XPENDING %%s %s - + 100000", *groups);
        same_answer(s, t, summary, key, NULL);
        same_answer(s, t, pel, key, id_consumer_deliveries);
    }
    redisReply *a = redisCommand(holder(s, key), "XINFO STREAM %s", key);
    redisReply *b = cp_command(t, "XINFO STREAM %s", key);
    assert_non_null(a);
    assert_non_null(b);
    static const char *const fields[] = {"length", "last-generated-id", "max-deleted-entry-id",
                                         "entries-added", "recorded-first-entry-id"};
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
        const redisReply *x = NULL, *y = NULL;
        for (size_t i = 0; i + 1 < a->elements; i += 2)
            if (strcmp(a->element[i]->str, fields[f]) == 0)
                x = a->element[i + 1];
        for (size_t i = 0; i + 1 < b->elements; i += 2)
            if (strcmp(b->element[i]->str, fields[f]) == 0)
                y = b->element[i + 1];
        if (x == NULL || y == NULL || !same_reply(x, y))
            fail_msg("%s: its %s differs", key, fields[f]);
    }
    freeReplyObject(a);
    cp_reply_free(b);
}

/* EXISTS of key through c, a hiredis connection or (c NULL) the target's client t: an expired
 * key is deleted as it is asked for, on either side, so counts that follow hold only live keys. */
static long long exists(redisContext *c, cp_client *t, const char *fmt, long i) {
    char key[64];
    snprintf(key, sizeof key, fmt, i);
    redisReply *r = c ? redisCommand(c, "EXISTS %s", key) : cp_command(t, "EXISTS %s", key);
    if (r == NULL || r->type != REDIS_REPLY_INTEGER)
        fail_msg("EXISTS %s: %s", key, r && r->str ? r->str : "no reply");
    long long v = r->integer;
    if (c)
        freeReplyObject(r);
    else
        cp_reply_free(r);
    return v;
}

/* The latest elapsed_s at which migrate's --json progress said the source was in its snapshot
 * (-1: never). */
static double last_said_snapshot(const char *out, const char *source) {
    double at = -1;
    for (const char *line = out; *line != '\0';) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        json_error_t jerr;
        json_t *o = json_loadb(line, len, 0, &jerr);
        if (o == NULL)
            fail_msg("not JSON: %.*s (%s)", (int)len, line, jerr.text);
        const char *src = json_string_value(json_object_get(o, "source"));
        const char *phase = json_string_value(json_object_get(o, "phase"));
        if (src && phase && strcmp(src, source) == 0 && strcmp(phase, "snapshot") == 0)
            at = json_real_value(json_object_get(o, "elapsed_s"));
        json_decref(o);
        line += len + (nl != NULL);
    }
    return at;
}

static long long num(const json_t *o, const char *key) {
    return (long long)cp_json_num(o, key);
}

/* migrate's result (the last line of its --json output): synced, and its counters add up. */
static void check_counters(const char *out) {
    json_t *res = cp_json_last_line(out);
    assert_true(json_is_true(json_object_get(res, "ok")));
    assert_true(json_is_true(json_object_get(res, "synced")));
    long long expired = 0, recopied = 0;
    for (size_t k = 0; k < NSOURCES; k++) {
        json_t *src = json_array_get(json_object_get(res, "sources"), k);
        long long copied = num(src, "keys_copied"), total = num(src, "keys_total");
        long long skipped = num(src, "keys_expired"), again = num(src, "recopied");
        assert_int_equal(num(src, "marked"), 0); /* no key left waiting for a re-copy */
        assert_int_equal(num(src, "lag_bytes"), 0);
        assert_int_le(copied + skipped, total);         /* each key of the snapshot: written, */
        assert_int_ge(copied + skipped + again, total); /* skipped, or (not known) re-copied */
        expired += skipped;
        recopied += again;
    }
    assert_int_gt(expired, 0); /* x:N, read after their 3 s */
    assert_int_le(expired, EXPIRING);
    long long unknown = num(res, "unknown"), not_executed = num(res, "not_executed");
    long long errors = num(res, "errors"), moved = num(res, "moved"), ask = num(res, "ask");
    if (unknown + not_executed + errors > 0)
        assert_int_gt(recopied, 0);
    assert_int_gt(moved + ask, 0); /* the reshard happened under its writes */
    print_message("migrate: %lld expired keys skipped, %lld commands ended unknown, %lld not "
                  "executed, %lld errors; %lld keys re-copied; %lld MOVED, %lld ASK\n",
                  expired, unknown, not_executed, errors, recopied, moved, ask);
    json_decref(res);
}

/* verify's result: 0 differences over exactly the keys the sources hold, by type. */
static void check_verified(const char *out, const writer *w) {
    json_t *res = cp_json_last_line(out);
    assert_true(json_is_true(json_object_get(res, "ok")));
    assert_int_equal(num(res, "differences"), 0);
    assert_int_equal(num(res, "only_in_target"), 0);
    assert_int_equal(num(res, "keys_checked"), num(res, "keys_total"));
    assert_int_equal(num(json_object_get(res, "reasons"), "same"), num(res, "keys_checked"));
    const json_t *types = json_object_get(res, "types");
    long long groups = w->rounds < GROUPS ? w->rounds : GROUPS;
    long long counters = w->rounds < COUNTERS ? w->rounds : COUNTERS;
    /* k:N, str:int/embstr/raw, str:1mb:0/1/2/lzf, the counters, w:k:N not deleted */
    assert_int_equal(num(types, "string"), SMALL + 7 + counters + w->rounds - w->dels);
    assert_int_equal(num(types, "list"), 2 + groups);
    assert_int_equal(num(types, "set"), 3 + groups);
    assert_int_equal(num(types, "zset"), 2 + groups);
    assert_int_equal(num(types, "hash"), 2 + groups);
    assert_int_equal(num(types, "stream"), 2);
    json_decref(res);
}

/* Apart from verify: the values whose encodings DUMP in one order, what verify leaves out of a
 * stream, the TTLs, and each counter's value as the writer counted its INCRs. */
static void check_apart_from_verify(redisContext *s[NSOURCES], cp_client *t, const writer *w) {
    static const char *const dumped[] = {
        "str:int",    "str:embstr",   "str:raw",    "str:1mb:0",  "str:1mb:1", "str:1mb:lzf",
        "small:list", "small:intset", "small:zset", "small:hash", "big:list",  "big:zset",
    };
    for (size_t i = 0; i < sizeof dumped / sizeof dumped[0]; i++)
        same_dump_and_expiry(s, t, dumped[i]);
    same_stream(s, t, "st:big", (const char *const[]){"g", "h", NULL});
    same_stream(s, t, "st:small", (const char *const[]){"g", "g2", NULL});
    same_answer(s, t, "PEXPIRETIME %s", "big:hash", NULL);
    same_answer(s, t, "PEXPIRETIME %s", "st:big", NULL);
    for (int i = 0; i < COUNTERS && i < w->rounds; i++) {
        redisReply *r = cp_command(t, "GET w:ctr:%d", i);
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_STRING);
        assert_int_equal(atoll(r->str), w->incrs[i]);
        cp_reply_free(r);
    }
}

/* The two topologies, loaded, and the ways in. */
typedef struct move {
    cp_fixture *sources, *target;
    int ports[NSOURCES], proxy_port;
    redisContext *s[NSOURCES], *proxy;
    char yaml[4200]; /* the nutcracker's: --from */
} move;

/* Starts both topologies, loads the sources and slows their snapshots; the keys of 3 s come
 * last, so that the snapshot starts right after them. */
static void start(move *m) {
    m->sources = cp_fixture_twemproxy(NSOURCES, 1);
    assert_non_null(m->sources);
    m->target = cp_fixture_cluster(3, 1);
    assert_non_null(m->target);
    shard_ports(m->sources, m->ports);
    for (int k = 0; k < NSOURCES; k++) {
        m->s[k] = cp_fixture_conn(m->sources, m->ports[k]);
        assert_non_null(m->s[k]);
        /* The snapshot sent as it is made (diskless): keys reach the tool all along. */
        cp_test_ok(m->s[k], "CONFIG SET repl-diskless-sync yes");
    }
    const char *colon = strrchr(m->sources->endpoints, ':');
    assert_non_null(colon);
    m->proxy_port = atoi(colon + 1);
    m->proxy = cp_fixture_conn(m->sources, m->proxy_port);
    assert_non_null(m->proxy);
    load(m->proxy, m->s);
    for (int k = 0; k < NSOURCES; k++) {
        long long keys = integer(m->s[k], "DBSIZE");
        assert_int_gt(keys, 1000);
        cp_test_ok(m->s[k], "CONFIG SET rdb-key-save-delay %lld", SNAPSHOT_US / keys);
    }
    char pattern[4200];
    snprintf(pattern, sizeof pattern, "%s/*/nutcracker.yml", m->sources->dir);
    glob_t g;
    assert_int_equal(glob(pattern, 0, NULL, &g), 0);
    assert_int_equal(g.gl_pathc, 1);
    snprintf(m->yaml, sizeof m->yaml, "%s", g.gl_pathv[0]);
    globfree(&g);
    int n = 0;
    for (int i = 0; i < EXPIRING; i++, n++)
        redisAppendCommand(m->proxy, "SET x:%d gone PX 3000", i);
    cp_test_drain(m->proxy, n);
}

/* Waits (10 s at most) until every source's fork child saves the snapshot. */
static void wait_saving(move *m) {
    for (int k = 0; k < NSOURCES; k++)
        for (int tries = 0; !saving(m->s[k]); tries++) {
            if (tries == 500)
                fail_msg("source %d: no snapshot started in 10 s", k);
            usleep(20 * 1000);
        }
}

/* Waits (10 s at most) until the target's master 0 holds keys: the copy has begun. */
static void wait_copying(move *m) {
    for (int tries = 0;; tries++) {
        redisReply *r = cp_fixture_command(m->target, "DBSIZE");
        assert_non_null(r);
        long long keys = r->integer;
        freeReplyObject(r);
        if (keys > 0)
            return;
        if (tries == 500)
            fail_msg("no key reached the target's master 0 in 10 s");
        usleep(20 * 1000);
    }
}

/* MOVED_SLOTS slots from master 0 to master 1 and back, twice, with their keys; then master 1
 * killed (kill -9, by PID) and its replica a master. Returns when the reshard was over. */
static uint64_t reshard_then_kill(cp_fixture *target) {
    size_t m0 = cp_fixture_master(target, 0), m1 = cp_fixture_master(target, 1);
    slot_mover mover;
    slot_mover_start(&mover, target, m0, m1, MOVED_SLOTS, 4);
    int rounds = slot_mover_stop(&mover);
    if (rounds < 0)
        fail_msg("slot mover: %s", mover.err);
    assert_int_equal(rounds, 4);
    uint64_t resharded = cp__now_ms();
    char err[512];
    size_t r1 = cp_fixture_replica(target, m1, 0);
    assert_op(cp_topo_kill(target->topo, m1, SIGKILL, err, sizeof err));
    assert_int_equal(cp_fixture_wait_master(target, r1, 30000), 0);
    return resharded;
}

static void four_servers_behind_nutcracker_into_a_cluster_that_changes(void **state) {
    (void)state;
    uint64_t t0 = cp__now_ms();
    static move m;
    start(&m);
    uint64_t loaded = cp__now_ms();
    cp_clirun run;
    cp_clirun_init(&run);
    const char *args[] = {"migrate",           "--from",         m.yaml,   "--to",
                          m.target->endpoints, "--until-synced", "--json", NULL};
    uint64_t started = cp__now_ms();
    pid_t pid = cp_clirun_start(&run, args);
    wait_saving(&m);
    static writer w;
    memset(&w, 0, sizeof w);
    w.port = m.proxy_port;
    assert_int_equal(pthread_create(&w.th, NULL, write_loop, &w), 0);
    wait_copying(&m);
    uint64_t reshard_at = cp__now_ms();
    uint64_t resharded = reshard_then_kill(m.target);
    uint64_t failed_over = cp__now_ms();
    write_streams(m.s);
    atomic_store(&w.stop, 1);
    pthread_join(w.th, NULL);
    if (w.err[0] != '\0')
        fail_msg("writer: %s", w.err);
    assert_int_gt(w.rounds, 100);
    /* The premise: every source was still saving its snapshot once all of that was over. */
    uint64_t events_ms = cp__now_ms() - started;
    print_message("setup %.1f s; after the start: the copy began at %.1f s, the reshard ended at "
                  "%.1f s, the failover at %.1f s, the writes (%ld rounds) at %.1f s\n",
                  (double)(loaded - t0) / 1000, (double)(reshard_at - started) / 1000,
                  (double)(resharded - started) / 1000, (double)(failed_over - started) / 1000,
                  w.rounds, (double)events_ms / 1000);
    for (int k = 0; k < NSOURCES; k++)
        if (!saving(m.s[k]))
            fail_msg("source %d had saved its whole snapshot %llu ms after the start: the reshard, "
                     "the kill and the writes were not all during the copy",
                     k, (unsigned long long)events_ms);

    int rc = cp_clirun_finish(&run, pid, 120);
    uint64_t synced = cp__now_ms();
    if (rc != 0)
        fail_msg("migrate exited %d\nstdout:\n%s\nstderr:\n%s", rc, run.out, run.err);
    /* The tool's own view: each source still in its snapshot after the reshard began. */
    for (int k = 0; k < NSOURCES; k++) {
        char name[64];
        snprintf(name, sizeof name, "127.0.0.1:%d", m.ports[k]);
        assert_double_gt(last_said_snapshot(run.out, name), (double)(reshard_at - started) / 1000);
    }
    check_counters(run.out);

    /* The keys that expired are on neither side (asking deletes them: the counts verify takes
     * then hold live keys only). */
    cp_client *t = cp_fixture_client(m.target, NULL);
    for (long i = 0; i < EXPIRING; i++)
        assert_int_equal(exists(m.proxy, NULL, "x:%ld", i) + exists(NULL, t, "x:%ld", i), 0);
    for (long i = 0; i < w.rounds; i += 10)
        assert_int_equal(exists(m.proxy, NULL, "w:t:%ld", i) + exists(NULL, t, "w:t:%ld", i), 0);
    const char *verify[] = {"verify", "--from", m.yaml, "--to", m.target->endpoints,
                            "--json", NULL};
    uint64_t verify_at = cp__now_ms();
    cp_clirun_expect(&run, verify, 0);
    uint64_t verified = cp__now_ms();
    check_verified(run.out, &w);
    check_apart_from_verify(m.s, t, &w);
    print_message("synced %.1f s after the start; verify %.1f s; the whole test %.1f s\n",
                  (double)(synced - started) / 1000, (double)(verified - verify_at) / 1000,
                  (double)(cp__now_ms() - t0) / 1000);
    cp_free(t);
    cp_clirun_free(&run);
    assert_int_equal(cp_fixture_stop(m.target), 0);
    assert_int_equal(cp_fixture_stop(m.sources), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(four_servers_behind_nutcracker_into_a_cluster_that_changes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
