/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The RDB reader (src/migrate/rdbread.h) against a real redis-server: keys of every type in small
 * and large encodings (strings as integer, embstr, raw, LZF-compressed and 1 MB; lists as a small
 * and a 100k-element quicklist; sets as intset, small and 100k hashtable; sorted sets as listpack
 * and 100k skiplist; hashes as listpack and 100k hashtable; a stream with consumer groups,
 * consumers and pending entries), some with TTLs, keys whose names the RDB stores as an integer
 * or LZF, and a key in db 1. The server SAVEs; its dump.rdb is fed to the reader in odd-sized
 * pieces; every key's payload must equal DUMP's reply byte for byte, its expiry PEXPIRETIME's,
 * and the payload must RESTORE into a key holding the same (the same DUMP, or for a hash table,
 * the same members). Both the RDB that SAVE writes and the one a replica gets (redis-cli --rdb)
 * are read, and the payload of a full sync (PSYNC as a replica), diskless and from disk,
 * through the framing, up to the command stream that follows it.
 */
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "asserts.h"

#include "fixture.h"
#include "testutil.h"
#include "migrate/rdbread.h"
#include "migrate/syncframe.h"

static redisContext *shard_conn(cp_fixture *f) {
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++) {
        const cp_proc *pr = cp_topo_proc(f->topo, i);
        if (pr->role == CP_ROLE_SHARD)
            return cp_fixture_conn(f, pr->port);
    }
    return NULL;
}

/* A collection of n elements: cmd key elem... in commands of 1000 elements, pipelined. Each
 * element is `per` arguments made by element(i, k, buf). */
static void fill(redisContext *c, const char *cmd, const char *key, int n, int per,
                 const char *prefix) {
    enum { BATCH = 1000 };
    const char *argv[2 + BATCH * 2];
    size_t argl[2 + BATCH * 2];
    static char bufs[BATCH * 2][48];
    int sent = 0;
    for (int start = 0; start < n; start += BATCH) {
        int argc = 0;
        argv[argc] = cmd, argl[argc++] = strlen(cmd);
        argv[argc] = key, argl[argc++] = strlen(key);
        for (int i = start; i < n && i < start + BATCH; i++) {
            for (int k = 0; k < per; k++) {
                char *b = bufs[argc - 2];
                if (k == 0 && per == 2 && strcmp(cmd, "ZADD") == 0)
                    snprintf(b, 48, "%d.5", i);
                else
                    snprintf(b, 48, "%s%d", prefix, i);
                argv[argc] = b, argl[argc] = strlen(b), argc++;
            }
        }
        assert_int_equal(redisAppendCommandArgv(c, argc, argv, argl), REDIS_OK);
        sent++;
    }
    for (int i = 0; i < sent; i++) {
        redisReply *r;
        assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
        assert_int_not_equal(r->type, REDIS_REPLY_ERROR);
        freeReplyObject(r);
    }
}

static void make_dataset(redisContext *c) {
    cp_test_ok(c, "SET str:int 123456");
    cp_test_ok(c, "SET str:embstr hello");
    cp_test_ok(c, "SET str:raw %s",
               "a raw string longer than forty-four bytes, no repeats: 0123456789");
    char *big = malloc(1 << 20);
    assert_non_null(big);
    uint32_t x = 12345;
    for (size_t i = 0; i < (1 << 20); i++) {
        x = x * 1103515245u + 12345u;
        big[i] = (char)(x >> 16);
    }
    cp_test_ok(c, "SET str:1mb:random %b", big, (size_t)(1 << 20));
    memset(big, 'z', 1 << 20);
    cp_test_ok(c, "SET str:1mb:lzf %b", big, (size_t)(1 << 20));
    free(big);
    cp_test_ok(c, "SET 987654 key-stored-as-an-integer");
    cp_test_ok(c, "SET kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk key-stored-as-lzf");
    cp_test_ok(c, "RPUSH list:small a b c 1 2 3");
    fill(c, "RPUSH", "list:100k", 100000, 1, "element-");
    cp_test_ok(c, "SADD set:intset 1 2 3 100000");
    cp_test_ok(c, "SADD set:small a b c");
    fill(c, "SADD", "set:100k", 100000, 1, "member-");
    cp_test_ok(c, "ZADD zset:small 1 a 2.5 b -3 c");
    fill(c, "ZADD", "zset:100k", 100000, 2, "member-");
    cp_test_ok(c, "HSET hash:small f1 v1 f2 v2 f3 33");
    fill(c, "HSET", "hash:100k", 100000, 2, "field-");
    for (int i = 0; i < 20; i++)
        cp_test_ok(c, "XADD stream * field %d other value-%d", i, i);
    cp_test_ok(c, "XGROUP CREATE stream g1 0");
    cp_test_ok(c, "XGROUP CREATE stream g2 $");
    cp_test_ok(c, "XREADGROUP GROUP g1 alice COUNT 5 STREAMS stream >");
    cp_test_ok(c, "XREADGROUP GROUP g1 bob COUNT 3 STREAMS stream >");
    cp_test_ok(c, "XADD stream * late 1");
    cp_test_ok(c, "XREADGROUP GROUP g2 carol STREAMS stream >");
    cp_test_ok(c, "XADD stream:empty-group * f v");
    cp_test_ok(c, "XGROUP CREATE stream:empty-group g 0");
    cp_test_ok(c, "PEXPIRE str:embstr 3600000");
    cp_test_ok(c, "PEXPIREAT list:small 4102444800123");
    cp_test_ok(c, "EXPIRE hash:100k 7200");
    cp_test_ok(c, "PEXPIRE stream 5000000");
    cp_test_ok(c, "SELECT 1");
    cp_test_ok(c, "SET in:db1 one");
    cp_test_ok(c, "PEXPIRE in:db1 1000000");
    cp_test_ok(c, "SELECT 0");
}

static unsigned char *slurp(const char *path, size_t *len) {
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    *len = (size_t)n;
    return b;
}

static char *config(redisContext *c, const char *name) {
    redisReply *r = redisCommand(c, "CONFIG GET %s", name);
    assert_non_null(r);
    assert_int_equal(r->elements, 2);
    char *v = strdup(r->element[1]->str);
    freeReplyObject(r);
    return v;
}

/* The restored copy of a set or hash holds what the original holds. */
static void same_content(redisContext *c, const cp__rdb_event *ev) {
    char restored[512];
    snprintf(restored, sizeof restored, "restored:%.*s", (int)ev->name_len, ev->name);
    if (ev->value_type == 2) {
        for (int way = 0; way < 2; way++) {
            redisReply *r = way ? redisCommand(c, "SDIFF %s %b", restored, ev->name, ev->name_len)
                                : redisCommand(c, "SDIFF %b %s", ev->name, ev->name_len, restored);
            assert_non_null(r);
            assert_int_equal(r->type, REDIS_REPLY_ARRAY);
            assert_int_equal(r->elements, 0);
            freeReplyObject(r);
        }
        return;
    }
    if (ev->value_type != 4)
        fail_msg("key %.*s (type %d): restored, it dumps differently", (int)ev->name_len, ev->name,
                 ev->value_type);
    redisReply *all = redisCommand(c, "HGETALL %b", ev->name, ev->name_len);
    assert_non_null(all);
    size_t n = all->elements / 2;
    const char **argv = malloc((n + 2) * sizeof *argv);
    size_t *argl = malloc((n + 2) * sizeof *argl);
    assert_non_null(argv);
    assert_non_null(argl);
    argv[0] = "HMGET", argl[0] = 5;
    argv[1] = restored, argl[1] = strlen(restored);
    for (size_t i = 0; i < n; i++)
        argv[2 + i] = all->element[2 * i]->str, argl[2 + i] = all->element[2 * i]->len;
    redisReply *got = redisCommandArgv(c, (int)(n + 2), argv, argl);
    assert_non_null(got);
    assert_int_equal(got->elements, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(got->element[i]->type, REDIS_REPLY_STRING);
        assert_int_equal(got->element[i]->len, all->element[2 * i + 1]->len);
        assert_memory_equal(got->element[i]->str, all->element[2 * i + 1]->str,
                            got->element[i]->len);
    }
    redisReply *hl = redisCommand(c, "HLEN %s", restored);
    assert_int_equal(hl->integer, (long long)n);
    freeReplyObject(hl);
    freeReplyObject(got);
    freeReplyObject(all);
    free(argv);
    free(argl);
}

static void check_key(redisContext *c, const cp__rdb_event *ev, uint64_t *selected) {
    if (*selected != ev->db) {
        cp_test_ok(c, "SELECT %llu", (unsigned long long)ev->db);
        *selected = ev->db;
    }
    redisReply *d = redisCommand(c, "DUMP %b", ev->name, ev->name_len);
    assert_non_null(d);
    if (d->type != REDIS_REPLY_STRING)
        fail_msg("DUMP %.*s: no payload", (int)ev->name_len, ev->name);
    if (d->len != ev->value_len || memcmp(d->str, ev->value, d->len) != 0)
        fail_msg("key %.*s: the payload (%zu bytes) differs from DUMP's (%zu bytes)",
                 (int)ev->name_len, ev->name, ev->value_len, d->len);
    assert_int_equal((unsigned char)d->str[0], ev->value_type);
    freeReplyObject(d);
    redisReply *t = redisCommand(c, "PEXPIRETIME %b", ev->name, ev->name_len);
    assert_non_null(t);
    assert_int_equal(t->type, REDIS_REPLY_INTEGER);
    assert_int_equal(t->integer, ev->expire_ms);
    freeReplyObject(t);
    cp_test_ok(c, "RESTORE restored:%b 0 %b REPLACE", ev->name, ev->name_len, ev->value,
               ev->value_len);
    d = redisCommand(c, "DUMP restored:%b", ev->name, ev->name_len);
    assert_non_null(d);
    assert_int_equal(d->type, REDIS_REPLY_STRING);
    int same = d->len == ev->value_len && memcmp(d->str, ev->value, d->len) == 0;
    freeReplyObject(d);
    if (!same) /* a hash table is dumped in its own order, which a restore may change */
        same_content(c, ev);
    cp_test_ok(c, "DEL restored:%b", ev->name, ev->name_len);
}

/* Reads the RDB at path in pieces and checks every key against the server. */
static void check_rdb(redisContext *c, const char *path) {
    size_t len;
    unsigned char *rdb = slurp(path, &len);
    cp__rdb_reader *r = cp__rdb_new();
    assert_non_null(r);
    size_t fed = 0, piece = 7919; /* a prime: pieces end anywhere in an element */
    cp__rdb_event ev;
    int keys = 0, versions = 0, ends = 0, selects = 0, streams = 0;
    uint64_t selected = 0;
    unsigned seen_types = 0;
    for (;;) {
        int rc = cp__rdb_next(r, &ev);
        if (rc == CP__RDB_ERROR)
            fail_msg("%s", cp__rdb_error(r));
        if (rc == CP__RDB_MORE) {
            if (fed == len)
                break;
            size_t n = len - fed < piece ? len - fed : piece;
            assert_int_equal(cp__rdb_feed(r, rdb + fed, n), 0);
            fed += n;
            continue;
        }
        switch (ev.type) {
        case CP__RDB_EV_VERSION:
            versions++;
            assert_int_equal(ev.version, 10); /* Redis 7.0 */
            break;
        case CP__RDB_EV_SELECTDB:
            selects++;
            break;
        case CP__RDB_EV_KEY:
            keys++;
            streams += ev.value_type == 19;
            seen_types |= 1u << ev.value_type;
            check_key(c, &ev, &selected);
            break;
        case CP__RDB_EV_END:
            ends++;
            assert_int_not_equal(ev.checksum, 0);
            break;
        default:
            break;
        }
    }
    assert_int_equal(versions, 1);
    assert_int_equal(ends, 1);
    assert_int_equal(selects, 2);
    assert_int_equal(streams, 2);
    /* Redis 7.0's encodings, each seen: string (0), set as hashtable (2), hash as hashtable (4),
     * sorted set as skiplist (5), set as intset (11), hash as listpack (16), sorted set as
     * listpack (17), list as quicklist of listpacks (18), stream (19). */
    assert_int_equal(seen_types, 1u << 0 | 1u << 2 | 1u << 4 | 1u << 5 | 1u << 11 | 1u << 16 |
                                     1u << 17 | 1u << 18 | 1u << 19);
    assert_int_equal(keys, 19); /* 18 in db 0, 1 in db 1 */
    assert_int_equal(cp__rdb_consumed(r), len);
    size_t rest;
    cp__rdb_rest(r, &rest);
    assert_int_equal(rest, 0);
    cp__rdb_free(r);
    free(rdb);
    cp_test_ok(c, "SELECT 0");
}

/* Syncs from the server as a replica does (PSYNC ? -1 with capa eof), diskless or not, reads the
 * payload through the framing, checks every key, then writes a key and finds its SET in the
 * command stream that follows the RDB. */
static void sync_as_replica(redisContext *c, int diskless, int want_keys) {
    cp_test_ok(c, "CONFIG SET repl-diskless-sync %s", diskless ? "yes" : "no");
    cp_test_ok(c, "CONFIG SET repl-diskless-sync-delay 0");
    redisContext *rc = redisConnect("127.0.0.1", c->tcp.port);
    assert_non_null(rc);
    assert_int_equal(rc->err, 0);
    struct timeval tv = {20, 0};
    assert_int_equal(setsockopt(rc->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
    cp_test_ok(rc, "REPLCONF capa eof capa psync2");
    assert_int_equal(write(rc->fd, "PSYNC ? -1\r\n", 12), 12);
    char line[256];
    size_t ll = 0;
    while (ll == 0 || line[ll - 1] != '\n') { /* "+FULLRESYNC <replid> <offset>\r\n" */
        assert_int_lt(ll, sizeof line - 1);
        assert_int_equal(read(rc->fd, line + ll, 1), 1);
        ll++;
    }
    assert_memory_equal(line, "+FULLRESYNC ", 12);

    cp__syncframe *s = cp__sync_new();
    assert_non_null(s);
    static char buf[65536];
    cp__rdb_event ev;
    int keys = 0, ended = 0;
    uint64_t selected = 0;
    while (!ended) {
        int rc2 = cp__sync_next(s, &ev);
        if (rc2 == CP__RDB_ERROR)
            fail_msg("%s", cp__sync_error(s));
        if (rc2 == CP__RDB_EVENT) {
            if (ev.type == CP__RDB_EV_KEY) {
                keys++;
                check_key(c, &ev, &selected);
            }
            ended = ev.type == CP__RDB_EV_END;
            continue;
        }
        ssize_t n = read(rc->fd, buf, sizeof buf);
        assert_int_gt(n, 0);
        assert_int_equal(cp__sync_feed(s, buf, (size_t)n), 0);
    }
    cp_test_ok(c, "SELECT 0");
    assert_int_equal(cp__sync_diskless(s), diskless);
    assert_int_equal(keys, want_keys);
    /* A diskless master puts its replica online at its first ACK (it cannot know when the RDB
     * was loaded): acknowledge the snapshot's offset, as a replica does. */
    char *off = strrchr(line, ' ') + 1;
    off[strcspn(off, "\r\n")] = '\0';
    char ack[128];
    int al = snprintf(ack, sizeof ack, "*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$%zu\r\n%s\r\n",
                      strlen(off), off);
    assert_int_equal(write(rc->fd, ack, (size_t)al), al);
    cp_test_ok(c, "SET after:sync %d", diskless);
    for (;;) {
        size_t n;
        const unsigned char *rest = cp__sync_rest(s, &n);
        if (n > 0 && memmem(rest, n, "after:sync", 10) != NULL)
            break;
        ssize_t got = read(rc->fd, buf, sizeof buf);
        assert_int_gt(got, 0);
        assert_int_equal(cp__sync_feed(s, buf, (size_t)got), 0);
    }
    cp__sync_free(s);
    redisFree(rc);
}

static void every_type_matches_dump(void **state) {
    (void)state;
    cp_fixture *f = cp_fixture_twemproxy(1, 1);
    assert_non_null(f);
    redisContext *c = shard_conn(f);
    assert_non_null(c);
    make_dataset(c);
    /* The RDB that SAVE writes, */
    cp_test_ok(c, "SAVE");
    char *dir = config(c, "dir"), *file = config(c, "dbfilename");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    check_rdb(c, path);
    /* and the one a replica gets (redis-cli --rdb syncs as one and strips the framing). */
    char cmd[8192];
    snprintf(path, sizeof path, "%s/replica.rdb", dir);
    snprintf(cmd, sizeof cmd, "redis-cli -h 127.0.0.1 -p %d --rdb %s >/dev/null 2>&1", c->tcp.port,
             path);
    assert_int_equal(system(cmd), 0);
    check_rdb(c, path);
    /* Through the full sync's framing, as a replica gets it: diskless ($EOF:) and from disk. */
    sync_as_replica(c, 1, 19);
    sync_as_replica(c, 0, 20); /* with after:sync */
    free(dir);
    free(file);
    assert_int_equal(cp_fixture_stop(f), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_type_matches_dump),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
