/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The RDB reader (src/migrate/rdbread.h) and the full sync's framing (syncframe.h) on an RDB that
 * redis-server 7.0 wrote (tests/data/rdb/small-v10.rdb: strings, a key stored as LZF, list, intset,
 * set, sorted set, hash, a stream with a group and a pending entry, a TTL, a key in db 1) and on
 * RDBs built here: fed in one piece and byte by byte, the events are the same; every truncation
 * asks for more; every corrupted byte gives an error or asks for more, never an end; versions
 * newer than the reader knows, unknown types and modules' values of Redis 4.0's release candidates
 * are refused, naming them; modules' values and aux data are read whole and named by their module
 * type; every type's grammar the server at hand does not write (streams of version 1 and 3,
 * quicklists of ziplists, ziplists, zipmaps, set listpacks, old sorted sets) ends its value
 * exactly.
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

#include "migrate/crc64.h"
#include "migrate/rdbread.h"
#include "migrate/syncframe.h"

typedef struct blob {
    unsigned char *p;
    size_t len;
} blob;

static blob load(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/rdb/%s", CP_TEST_DATA, name);
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    blob b = {malloc(1 << 16), 0};
    assert_non_null(b.p);
    b.len = fread(b.p, 1, 1 << 16, fp);
    fclose(fp);
    return b;
}

/* Appends a line describing ev to log (payloads as their length and the CRC64 of their first
 * half: a whole payload sums to 0, its own CRC64 closing it). */
static void describe(char *log, size_t cap, const cp__rdb_event *ev) {
    size_t n = strlen(log);
    if (ev->type == CP__RDB_EV_AUX) {
        snprintf(log + n, cap - n, "aux [%.*s=%.*s]\n", (int)ev->name_len, ev->name,
                 (int)ev->value_len, (const char *)ev->value);
        return;
    }
    snprintf(log + n, cap - n, "%d v%d db%llu %llu/%llu [%.*s] %zu:%016llx exp%lld t%d sum%llx\n",
             ev->type, ev->version, (unsigned long long)ev->db, (unsigned long long)ev->db_size,
             (unsigned long long)ev->expires_size, (int)ev->name_len, ev->name ? ev->name : "",
             ev->value_len, (unsigned long long)cp__crc64(0, ev->value, ev->value_len / 2),
             (long long)ev->expire_ms, ev->value_type, (unsigned long long)ev->checksum);
}

/* Feeds b in pieces of `piece` bytes; returns the reader's last answer (CP__RDB_MORE once all
 * was fed and no more events came, or CP__RDB_ERROR) and logs the events. */
static int run(const unsigned char *p, size_t len, size_t piece, char *log, size_t cap, int *ends) {
    cp__rdb_reader *r = cp__rdb_new();
    assert_non_null(r);
    size_t fed = 0;
    cp__rdb_event ev;
    int rc;
    log[0] = '\0';
    *ends = 0;
    for (;;) {
        rc = cp__rdb_next(r, &ev);
        if (rc == CP__RDB_ERROR) {
            assert_non_null(cp__rdb_error(r));
            break;
        }
        if (rc == CP__RDB_EVENT) {
            describe(log, cap, &ev);
            *ends += ev.type == CP__RDB_EV_END;
            continue;
        }
        if (fed == len)
            break;
        size_t n = len - fed < piece ? len - fed : piece;
        assert_int_equal(cp__rdb_feed(r, p + fed, n), 0);
        fed += n;
    }
    cp__rdb_free(r);
    return rc;
}

static void whole_and_byte_by_byte_agree(void **state) {
    (void)state;
    blob b = load("small-v10.rdb");
    static char whole[16384], bytewise[16384], odd[16384];
    int ends;
    assert_int_equal(run(b.p, b.len, b.len, whole, sizeof whole, &ends), CP__RDB_MORE);
    assert_int_equal(ends, 1);
    assert_int_equal(run(b.p, b.len, 1, bytewise, sizeof bytewise, &ends), CP__RDB_MORE);
    assert_int_equal(ends, 1);
    assert_int_equal(run(b.p, b.len, 13, odd, sizeof odd, &ends), CP__RDB_MORE);
    assert_string_equal(whole, bytewise);
    assert_string_equal(whole, odd);
    /* 10 keys (9 in db 0, 1 in db 1), the version, the end. */
    int keys = 0;
    for (const char *l = whole; (l = strchr(l, '\n')) != NULL; l++)
        keys += l[1] == '4' && l[2] == ' ';
    assert_non_null(strstr(whole, "[kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk]")); /* LZF name */
    assert_non_null(strstr(whole, "[redis-bits=64]")); /* an aux field stored as an integer */
    assert_int_equal(keys, 10);
    free(b.p);
}

static void every_truncation_asks_for_more(void **state) {
    (void)state;
    blob b = load("small-v10.rdb");
    static char log[16384];
    int ends;
    for (size_t cut = 0; cut < b.len; cut++) {
        assert_int_equal(run(b.p, cut, 1 + cut % 7, log, sizeof log, &ends), CP__RDB_MORE);
        assert_int_equal(ends, 0);
    }
    free(b.p);
}

static void every_corrupted_byte_is_caught(void **state) {
    (void)state;
    blob b = load("small-v10.rdb");
    static char log[16384];
    int ends, errors = 0;
    for (size_t at = 0; at < b.len; at++) {
        for (int flip = 1; flip < 256; flip <<= 1) {
            b.p[at] ^= (unsigned char)flip;
            int rc = run(b.p, b.len, 64, log, sizeof log, &ends);
            b.p[at] ^= (unsigned char)flip;
            /* The file has a checksum: no change to it may reach its end unnoticed. */
            assert_int_equal(ends, 0);
            errors += rc == CP__RDB_ERROR;
        }
    }
    assert_int_gt(errors, 0);
    free(b.p);
}

static int first_error(const char *rdb, size_t len, char *msg, size_t cap) {
    cp__rdb_reader *r = cp__rdb_new();
    assert_int_equal(cp__rdb_feed(r, rdb, len), 0);
    cp__rdb_event ev;
    int rc;
    while ((rc = cp__rdb_next(r, &ev)) == CP__RDB_EVENT)
        ;
    snprintf(msg, cap, "%s", rc == CP__RDB_ERROR ? cp__rdb_error(r) : "");
    cp__rdb_free(r);
    return rc;
}

static void newer_versions_are_refused(void **state) {
    (void)state;
    char msg[256];
    assert_int_equal(first_error("REDIS0012\xff", 10, msg, sizeof msg), CP__RDB_ERROR);
    assert_non_null(strstr(msg, "RDB version 12 is newer than this reader knows (up to 11)"));
    assert_int_equal(first_error("REDIS0011", 9, msg, sizeof msg), CP__RDB_MORE);
    assert_int_equal(first_error("REDXS0010", 9, msg, sizeof msg), CP__RDB_ERROR);
    assert_non_null(strstr(msg, "not an RDB"));
}

/* The id a module type named `name` (9 characters) with encoding version `ver` saves. */
static uint64_t module_id(const char *name, unsigned ver) {
    static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    uint64_t id = 0;
    for (int j = 0; j < 9; j++)
        id = id << 6 | (uint64_t)(strchr(set, name[j]) - set);
    return id << 10 | ver;
}

static void old_module_values_are_refused_by_name(void **state) {
    (void)state;
    uint64_t id = module_id("ReJSON-RL", 3);
    char rdb[64] = "REDIS0010\x06\x01k\x81"; /* RDB_TYPE_MODULE_PRE_GA */
    for (int i = 0; i < 8; i++)
        rdb[13 + i] = (char)(id >> (56 - 8 * i));
    char msg[256];
    assert_int_equal(first_error(rdb, 21, msg, sizeof msg), CP__RDB_ERROR);
    assert_contains(msg, "module type 'ReJSON-RL' (encoding version 3)");
    assert_contains(msg, "RDB type 6");
}

/* A hand-built RDB without checksum (0): an old-style sorted set (type 3, doubles as text, one
 * +inf), a list of strings with an INT16 element, a seconds expiry, LFU and LRU hints. */
static void old_types_and_hints(void **state) {
    (void)state;
    static const char rdb[] = "REDIS0009"
                              "\xfd\x10\x00\x00\x00" /* expire in 16 s */
                              "\xf9\x05\xf8\x07"     /* freq 5, idle 7 */
                              "\x03\x01z\x02\x01"
                              "a\x03"
                              "1.5\x01"
                              "b\xfe"                          /* zset {a:1.5, b:+inf} */
                              "\x01\x01l\x02\xc1\x39\x30\x01x" /* list [12345, "x"] */
                              "\xff\0\0\0\0\0\0\0\0";
    static char log[4096];
    int ends;
    assert_int_equal(run((const unsigned char *)rdb, sizeof rdb - 1, 1, log, sizeof log, &ends),
                     CP__RDB_MORE);
    assert_int_equal(ends, 1);
    assert_non_null(strstr(log, "[z] 21:"));
    assert_non_null(strstr(log, "exp16000 t3"));
    assert_non_null(strstr(log, "[l] 17:"));
    assert_non_null(strstr(log, "exp-1 t1"));
}

/* An RDB built byte by byte: a key of type `type` whose value is what build() appends, then a
 * sentinel string key. The reader must end the value exactly where it ends: the payload holds it
 * whole, and the sentinel is read after it. */
typedef struct rdbbuf {
    unsigned char b[1024];
    size_t n;
} rdbbuf;

static void put(rdbbuf *w, const void *p, size_t n) {
    assert_int_le(w->n + n, sizeof w->b);
    memcpy(w->b + w->n, p, n);
    w->n += n;
}

static void put_len(rdbbuf *w, unsigned n) { /* 6 or 14 bits */
    unsigned char b[2] = {(unsigned char)(0x40 | n >> 8), (unsigned char)n};
    if (n < 64)
        put(w, b + 1, 1);
    else
        put(w, b, 2);
}

static void put_str(rdbbuf *w, const char *s) {
    put_len(w, (unsigned)strlen(s));
    put(w, s, strlen(s));
}

static void put_zeros(rdbbuf *w, size_t n) {
    static const unsigned char z[16];
    put(w, z, n);
}

/* A stream of version 1 (type 15), 2 (19) or 3 (21): one node, one group with one pending entry
 * and one consumer owning it; listpacks are opaque here, so any bytes will do. */
static void put_stream(rdbbuf *w, int version) {
    put_len(w, 1);
    put_str(w, "0123456789abcdef"); /* the node's key: its master id */
    put_str(w, "a listpack, opaque to the reader");
    for (int i = 0; i < (version == 1 ? 3 : 8); i++) /* length, ids, entries added */
        put_len(w, (unsigned)i + 100);
    put_len(w, 1);
    put_str(w, "group");
    put_len(w, 7);
    put_len(w, 8);
    if (version > 1)
        put_len(w, 300); /* entries read */
    put_len(w, 1);       /* the group's PEL: id, delivery time, count */
    put_zeros(w, 16);
    put_zeros(w, 8);
    put_len(w, 2);
    put_len(w, 1); /* its consumers: name, seen time (and active time), PEL of ids */
    put_str(w, "alice");
    put_zeros(w, version == 3 ? 16 : 8);
    put_len(w, 1);
    put_zeros(w, 16);
}

static void value_ends_exactly(int type, void (*build)(rdbbuf *, int), int arg) {
    rdbbuf w = {.n = 0};
    put(&w, "REDIS0011", 9);
    unsigned char t = (unsigned char)type;
    put(&w, &t, 1);
    put_str(&w, "k");
    size_t start = w.n;
    build(&w, arg);
    size_t value_len = w.n - start;
    put(&w, "\x00", 1);
    put_str(&w, "sentinel");
    put_str(&w, "v");
    put(&w, "\xff\0\0\0\0\0\0\0\0", 9);
    static char log[4096];
    int ends;
    assert_int_equal(run(w.b, w.n, 1, log, sizeof log, &ends), CP__RDB_MORE);
    assert_int_equal(ends, 1);
    char want[64];
    snprintf(want, sizeof want, "[k] %zu:", 1 + value_len + 10);
    assert_non_null(strstr(log, want));
    assert_non_null(strstr(log, "[sentinel] 13:"));
}

static void put_blob(rdbbuf *w, int unused) {
    (void)unused;
    put_str(w, "a listpack or ziplist or intset: one string");
}

static void put_quicklist1(rdbbuf *w, int unused) {
    (void)unused;
    put_len(w, 2);
    put_str(w, "ziplist one");
    put_str(w, "ziplist two");
}

static void put_quicklist2(rdbbuf *w, int unused) {
    (void)unused;
    put_len(w, 2);
    put_len(w, 2); /* a packed node */
    put_str(w, "listpack");
    put_len(w, 1); /* a plain node */
    put_str(w, "a large element");
}

static void every_grammar_ends_exactly(void **state) {
    (void)state;
    value_ends_exactly(15, put_stream, 1);
    value_ends_exactly(19, put_stream, 2);
    value_ends_exactly(21, put_stream, 3);
    for (int type = 9; type <= 20; type++)
        if (type != 14 && type != 15 && type != 18 && type != 19)
            value_ends_exactly(type, put_blob, 0);
    value_ends_exactly(14, put_quicklist1, 0);
    value_ends_exactly(18, put_quicklist2, 0);
}

static void put_u64_len(rdbbuf *w, uint64_t v) { /* RDB_64BITLEN: big endian */
    unsigned char b[9] = {0x81};
    for (int i = 0; i < 8; i++)
        b[1 + i] = (unsigned char)(v >> (56 - 8 * i));
    put(w, b, 9);
}

/* A module's value as the module API writes it: its id, then an operand of every opcode (SINT,
 * UINT, FLOAT, DOUBLE, STRING; `strings` strings), then EOF. */
static void put_module_value(rdbbuf *w, int strings) {
    put_u64_len(w, module_id("ReJSON-RL", 3));
    put_len(w, 1); /* SINT */
    put_len(w, 9);
    put_len(w, 2); /* UINT */
    put_u64_len(w, 1ULL << 40);
    put_len(w, 3); /* FLOAT */
    put_zeros(w, 4);
    put_len(w, 4); /* DOUBLE */
    put_zeros(w, 8);
    for (int i = 0; i < strings; i++) {
        put_len(w, 5); /* STRING */
        put_str(w, "{\"a\": [1, 2, 3]}");
    }
    put_len(w, 0); /* EOF */
}

/* Events of a whole RDB fed byte by byte: the key events' module names and types into log. */
static int module_events(const rdbbuf *w, char *log, size_t cap) {
    cp__rdb_reader *r = cp__rdb_new();
    assert_non_null(r);
    cp__rdb_event ev;
    int rc = CP__RDB_MORE;
    log[0] = '\0';
    for (size_t fed = 0; fed <= w->n;) {
        rc = cp__rdb_next(r, &ev);
        if (rc == CP__RDB_EVENT &&
            (ev.type == CP__RDB_EV_KEY || ev.type == CP__RDB_EV_MODULE_AUX)) {
            size_t n = strlen(log);
            snprintf(log + n, cap - n, "%s [%.*s] t%d module '%s' %zu\n",
                     ev.type == CP__RDB_EV_KEY ? "key" : "aux", (int)ev.name_len,
                     ev.name ? ev.name : "", ev.value_type, ev.module, ev.value_len);
        }
        if (rc == CP__RDB_ERROR || (rc == CP__RDB_MORE && fed == w->n))
            break;
        if (rc == CP__RDB_MORE)
            assert_int_equal(cp__rdb_feed(r, w->b + fed++, 1), 0);
    }
    cp__rdb_free(r);
    return rc;
}

static void module_values_are_read_whole_and_named(void **state) {
    (void)state;
    value_ends_exactly(CP__RDB_TYPE_MODULE2, put_module_value, 0);
    value_ends_exactly(CP__RDB_TYPE_MODULE2, put_module_value, 3);
    /* Aux data (0xF7: id, "when" as UINT, then the value's opcodes), a module key, a string. */
    rdbbuf w = {.n = 0};
    put(&w, "REDIS0011\xf7", 10);
    put_u64_len(&w, module_id("ft-index0", 1));
    put_len(&w, 2); /* UINT */
    put_len(&w, 2); /* REDISMODULE_AUX_AFTER_RDB */
    put_len(&w, 5);
    put_str(&w, "an index definition");
    put_len(&w, 0);
    put(&w, "\x07", 1);
    put_str(&w, "doc:1");
    size_t start = w.n;
    put_module_value(&w, 2);
    size_t value_len = w.n - start;
    put(&w, "\x00", 1);
    put_str(&w, "plain");
    put_str(&w, "v");
    put(&w, "\xff\0\0\0\0\0\0\0\0", 9);
    static char log[1024], want[1024];
    assert_int_equal(module_events(&w, log, sizeof log), CP__RDB_MORE);
    snprintf(want, sizeof want,
             "aux [] t0 module 'ft-index0' 0\nkey [doc:1] t7 module 'ReJSON-RL' %zu\n"
             "key [plain] t0 module '' 13\n",
             1 + value_len + 10);
    assert_string_equal(log, want);
    /* An opcode the module API does not write is an error naming it. */
    w.n = start;
    put_u64_len(&w, module_id("ReJSON-RL", 3));
    put_len(&w, 6);
    put(&w, "\xff\0\0\0\0\0\0\0\0", 9);
    char msg[256];
    assert_int_equal(first_error((const char *)w.b, w.n, msg, sizeof msg), CP__RDB_ERROR);
    assert_contains(msg, "opcode 6, which the module API does not write");
}

static void unknown_types_are_refused(void **state) {
    (void)state;
    char msg[256];
    assert_int_equal(first_error("REDIS0011\x16\x01k", 12, msg, sizeof msg), CP__RDB_ERROR);
    assert_non_null(strstr(msg, "unknown value type 22"));
}

/* ---- the full sync's framing ------------------------------------------------------------------
 */

static int sync_run(const unsigned char *p, size_t len, size_t piece, int *keys, int *ends,
                    char *rest, size_t *rest_len) {
    cp__syncframe *s = cp__sync_new();
    assert_non_null(s);
    size_t fed = 0;
    cp__rdb_event ev;
    int rc;
    *keys = *ends = 0;
    for (;;) {
        rc = cp__sync_next(s, &ev);
        if (rc == CP__RDB_ERROR)
            break;
        if (rc == CP__RDB_EVENT) {
            *keys += ev.type == CP__RDB_EV_KEY;
            *ends += ev.type == CP__RDB_EV_END;
            continue;
        }
        if (fed == len)
            break;
        size_t n = len - fed < piece ? len - fed : piece;
        if (cp__sync_feed(s, p + fed, n) != 0) {
            rc = CP__RDB_ERROR;
            break;
        }
        fed += n;
    }
    size_t n;
    const unsigned char *r = cp__sync_rest(s, &n);
    if (r != NULL)
        memcpy(rest, r, n);
    *rest_len = n;
    cp__sync_free(s);
    return rc;
}

static void sync_frames_disk_and_diskless(void **state) {
    (void)state;
    blob b = load("small-v10.rdb");
    const char *mark = "0123456789abcdefghij0123456789abcdefghij";
    const char *stream = "*1\r\n$4\r\nPING\r\n";
    unsigned char *disk = malloc(b.len + 128), *eof = malloc(b.len + 128);
    int dl = sprintf((char *)disk, "\n\n$%zu\r\n", b.len);
    memcpy(disk + dl, b.p, b.len);
    dl += (int)b.len + sprintf((char *)disk + dl + b.len, "%s", stream);
    int el = sprintf((char *)eof, "\n$EOF:%s\r\n", mark);
    memcpy(eof + el, b.p, b.len);
    el += (int)b.len + sprintf((char *)eof + el + b.len, "%s%s", mark, stream);
    char rest[256];
    size_t rest_len;
    int keys, ends;
    for (size_t piece = 1; piece <= 4096; piece = piece * 3 + 1) {
        assert_int_equal(sync_run(disk, (size_t)dl, piece, &keys, &ends, rest, &rest_len),
                         CP__RDB_MORE);
        assert_int_equal(keys, 10);
        assert_int_equal(ends, 1);
        assert_int_equal(rest_len, strlen(stream));
        assert_memory_equal(rest, stream, rest_len);
        assert_int_equal(sync_run(eof, (size_t)el, piece, &keys, &ends, rest, &rest_len),
                         CP__RDB_MORE);
        assert_int_equal(keys, 10);
        assert_int_equal(ends, 1);
        assert_int_equal(rest_len, strlen(stream));
        assert_memory_equal(rest, stream, rest_len);
    }
    /* A wrong mark, a length one short or one long: errors, never an end. */
    eof[el - strlen(stream) - 1] ^= 1;
    assert_int_equal(sync_run(eof, (size_t)el, 7, &keys, &ends, rest, &rest_len), CP__RDB_ERROR);
    assert_int_equal(ends, 0);
    for (int delta = -1; delta <= 1; delta += 2) {
        int n = sprintf((char *)disk, "$%zu\r\n", b.len + (size_t)delta);
        memcpy(disk + n, b.p, b.len);
        memset(disk + n + b.len, 'x', 8);
        assert_int_equal(sync_run(disk, (size_t)n + b.len + 8, 5, &keys, &ends, rest, &rest_len),
                         CP__RDB_ERROR);
        assert_int_equal(ends, 0);
    }
    assert_int_equal(
        sync_run((const unsigned char *)"+OK\r\n", 5, 1, &keys, &ends, rest, &rest_len),
        CP__RDB_ERROR);
    free(disk);
    free(eof);
    free(b.p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(whole_and_byte_by_byte_agree),
        cmocka_unit_test(every_truncation_asks_for_more),
        cmocka_unit_test(every_corrupted_byte_is_caught),
        cmocka_unit_test(newer_versions_are_refused),
        cmocka_unit_test(old_module_values_are_refused_by_name),
        cmocka_unit_test(module_values_are_read_whole_and_named),
        cmocka_unit_test(old_types_and_hints),
        cmocka_unit_test(every_grammar_ends_exactly),
        cmocka_unit_test(unknown_types_are_refused),
        cmocka_unit_test(sync_frames_disk_and_diskless),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
