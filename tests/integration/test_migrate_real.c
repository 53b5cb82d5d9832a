/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe migrate` on real servers: two standalone redis-servers (one syncing diskless, one
 * from disk) loaded with every type (strings, lists, hashes, sets, sorted sets, a stream with a
 * consumer group; small and larger encodings; with and without TTLs; one key that expired) are
 * moved into a 3-master cluster with --until-synced. Writes at the sources (INCR, SET, DEL,
 * MULTI/EXEC in one slot and across slots, RPUSH, HSET, SADD, ZADD, XADD, PEXPIRE) happen while
 * the tool holds the snapshot: the target's masters are paused (CLIENT PAUSE WRITE) from before
 * the tool starts until after the writes, so the tool is still writing its snapshot when they
 * land, and they reach it through the replication stream. Afterwards every key of each source is
 * on the target with the same value (DUMP bytes, or the same members for a hash table) and the
 * same absolute expiry, the target holds no other key, and a counter incremented 500 times
 * during the stream reads exactly 500 more. A second run pauses the target past the tool's I/O
 * timeout, so that outcomes are unknown and keys are re-copied: the same checks hold.
 *
 * Also: a source with keys in db 3 is refused naming db 3 and its count, and --db 3 moves them;
 * an unreachable --to is a clear error with exit 1.
 */
#include <glob.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "asserts.h"

#include "clirun.h"
#include "fixture.h"
#include "replwait.h"
#include "testutil.h"
#include "slotmover.h"
#include "testonly.h"
#include "util/clock.h"

#define COUNTER_INCRS 500

/* The sanitizer build: its quarantine keeps freed memory (no RSS bound holds) and it moves
 * hundreds of MB many times slower than the suite's time allows. */
#if defined(__SANITIZE_ADDRESS__)
#define CP_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CP_TEST_ASAN 1
#endif
#endif

/* Replies of n pipelined commands, each checked not to be an error. */
static void drain(redisContext *c, int n) {
    for (int i = 0; i < n; i++) {
        redisReply *r;
        assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
        if (r->type == REDIS_REPLY_ERROR)
            fail_msg("pipelined command %d: %s", i, r->str);
        freeReplyObject(r);
    }
}

static void load_source(redisContext *c, const char *p) {
    cp_test_ok(c, "SET %s:int 12345", p);
    cp_test_ok(c, "SET %s:str hello", p);
    cp_test_ok(c, "SET %s:ttl value PX 3600000", p);
    char *big = malloc(20000);
    assert_non_null(big);
    for (int i = 0; i < 20000; i++)
        big[i] = (char)('a' + (i * 7919) % 26);
    cp_test_ok(c, "SET %s:big %b", p, big, (size_t)20000);
    free(big);
    cp_test_ok(c, "RPUSH %s:list a b c 1 2", p);
    cp_test_ok(c, "HSET %s:hash f1 v1 f2 v2", p);
    cp_test_ok(c, "SADD %s:intset 1 2 3", p);
    cp_test_ok(c, "SADD %s:set a b c", p);
    cp_test_ok(c, "ZADD %s:zset 1 a 2.5 b", p);
    int n = 0;
    for (int i = 0; i < 1000; i++, n += 4) {
        redisAppendCommand(c, "RPUSH %s:biglist e%d", p, i);
        redisAppendCommand(c, "HSET %s:bighash f%d v%d", p, i, i);
        redisAppendCommand(c, "SADD %s:bigset m%d", p, i);
        redisAppendCommand(c, "ZADD %s:bigzset %d m%d", p, i, i);
    }
    for (int i = 0; i < 300; i++, n++)
        redisAppendCommand(c, "SET %s:k:%d v%d", p, i, i);
    drain(c, n);
    cp_test_ok(c, "PEXPIRE %s:bighash 7200000", p);
    for (int i = 0; i < 10; i++)
        cp_test_ok(c, "XADD %s:stream * f %d", p, i);
    cp_test_ok(c, "XGROUP CREATE %s:stream g 0", p);
    cp_test_ok(c, "XREADGROUP GROUP g alice COUNT 3 STREAMS %s:stream >", p);
    cp_test_ok(c, "SET %s:counter 1000", p);
    cp_test_ok(c, "SET %s:expired gone PX 20", p);
    usleep(100 * 1000); /* expired: no snapshot holds it, no target may */
}

/* The writes made while the tool holds the snapshot: they reach it through the stream. */
static void write_during(redisContext *c, const char *p) {
    int n = 0;
    for (int i = 0; i < COUNTER_INCRS; i++, n++)
        redisAppendCommand(c, "INCR %s:counter", p);
    for (int i = 0; i < 100; i++, n++)
        redisAppendCommand(c, "SET %s:k:%d new%d", p, i, i);
    for (int i = 200; i < 250; i++, n++)
        redisAppendCommand(c, "DEL %s:k:%d", p, i);
    for (int i = 0; i < 20; i++, n += 5) { /* one slot: one unit on the target */
        redisAppendCommand(c, "MULTI");
        redisAppendCommand(c, "INCR {%s:t}a", p);
        redisAppendCommand(c, "SET {%s:t}b v%d", p, i);
        redisAppendCommand(c, "LPUSH {%s:t}l x%d", p, i);
        redisAppendCommand(c, "EXEC");
    }
    for (int i = 0; i < 10; i++, n += 4) { /* across slots: legal on a standalone server */
        redisAppendCommand(c, "MULTI");
        redisAppendCommand(c, "INCR %s:x1", p);
        redisAppendCommand(c, "INCR %s:y1", p);
        redisAppendCommand(c, "EXEC");
    }
    redisAppendCommand(c, "RPUSH %s:list late", p);
    redisAppendCommand(c, "HSET %s:bighash late 1", p);
    redisAppendCommand(c, "SADD %s:bigset late", p);
    redisAppendCommand(c, "ZADD %s:zset 9 late", p);
    redisAppendCommand(c, "XADD %s:stream * late 1", p);
    redisAppendCommand(c, "PEXPIRE %s:str 5000000", p);
    redisAppendCommand(c, "SET %s:new fresh EX 1000", p);
    drain(c, n + 7);
}

static int source_port(cp_fixture *f, int k) {
    for (size_t i = 0; i < cp_topo_nprocs(f->topo); i++) {
        const cp_proc *pr = cp_topo_proc(f->topo, i);
        if (pr->role == CP_ROLE_SHARD && k-- == 0)
            return pr->port;
    }
    fail_msg("no shard %d", k);
    return -1;
}

/* A command (hiredis format) on each of the target's three masters, each answered without an
 * error: a pause, a limit, an ACL user are each node's own. */
static void on_masters(cp_fixture *target, const char *fmt, ...) {
    for (int k = 0; k < 3; k++) {
        int port = cp_topo_proc(target->topo, cp_fixture_master(target, k))->port;
        va_list ap;
        va_start(ap, fmt);
        redisReply *r = redisvCommand(cp_fixture_conn(target, port), fmt, ap);
        va_end(ap);
        assert_non_null(r);
        if (r->type == REDIS_REPLY_ERROR)
            fail_msg("port %d: %s: %s", port, fmt, r->str);
        freeReplyObject(r);
    }
}

/* The sorted members of a set or hash (a hash table dumps in its own order). */
static char *members(redisReply *r) {
    size_t n = r->elements, total = 1;
    for (size_t i = 0; i < n; i++)
        total += r->element[i]->len + 1;
    char **v = malloc(n * sizeof *v + 1);
    char *out = malloc(total);
    assert_non_null(v);
    assert_non_null(out);
    for (size_t i = 0; i < n; i++)
        v[i] = r->element[i]->str;
    for (size_t i = 1; i < n; i++) /* insertion sort: small sets */
        for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
            char *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strcat(out, v[i]);
        strcat(out, "\n");
    }
    free(v);
    return out;
}

static char *content(redisContext *src, cp_client *dst, const char *type, const char *key) {
    const char *cmd = strcmp(type, "set") == 0 ? "SMEMBERS" : "HGETALL";
    redisReply *r = src ? redisCommand(src, "%s %s", cmd, key) : NULL;
    redisReply *d = dst ? cp_command(dst, "%s %s", cmd, key) : NULL;
    char *m = members(src ? r : d);
    freeReplyObject(r);
    cp_reply_free(d);
    return m;
}

/* Every key of the source is on the target, the same. Returns how many keys. */
static long long compare_source(redisContext *src, cp_client *dst) {
    long long keys = 0;
    char cursor[32] = "0";
    do {
        redisReply *s = redisCommand(src, "SCAN %s COUNT 500", cursor);
        assert_non_null(s);
        snprintf(cursor, sizeof cursor, "%s", s->element[0]->str);
        for (size_t i = 0; i < s->element[1]->elements; i++) {
            const char *key = s->element[1]->element[i]->str;
            keys++;
            redisReply *a = redisCommand(src, "DUMP %s", key);
            redisReply *b = cp_command(dst, "DUMP %s", key);
            assert_non_null(a);
            if (b == NULL || b->type != REDIS_REPLY_STRING)
                fail_msg("key %s: not on the target", key);
            int same = a->len == b->len && memcmp(a->str, b->str, a->len) == 0;
            freeReplyObject(a);
            cp_reply_free(b);
            if (!same) {
                redisReply *t = redisCommand(src, "TYPE %s", key);
                char type[16];
                snprintf(type, sizeof type, "%s", t->str);
                freeReplyObject(t);
                if (strcmp(type, "set") != 0 && strcmp(type, "hash") != 0)
                    fail_msg("key %s (%s): the target's DUMP differs", key, type);
                char *x = content(src, NULL, type, key), *y = content(NULL, dst, type, key);
                if (strcmp(x, y) != 0)
                    fail_msg("key %s (%s): the target's members differ", key, type);
                free(x);
                free(y);
            }
            a = redisCommand(src, "PEXPIRETIME %s", key);
            b = cp_command(dst, "PEXPIRETIME %s", key);
            assert_non_null(b);
            if (a->integer != b->integer)
                fail_msg("key %s: expires at %lld on the source, %lld on the target", key,
                         a->integer, b->integer);
            freeReplyObject(a);
            cp_reply_free(b);
        }
        freeReplyObject(s);
    } while (strcmp(cursor, "0") != 0);
    return keys;
}

static long long get_int(cp_client *c, const char *key) {
    redisReply *r = cp_command(c, "GET %s", key);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    long long v = atoll(r->str);
    cp_reply_free(r);
    return v;
}

/* The target's keys: DBSIZE of every node that serves slots per the client's map (a fan-out
 * DBSIZE would also ask a killed master that the map still names). */
static long long dbsize(cp_client *c) {
    long long v = 0;
    int slots = 0;
    for (int i = 0; i < cp_node_count(c); i++) {
        cp_node_info n;
        assert_int_equal(cp_node_get(c, i, &n), 0);
        if (n.nslots == 0)
            continue;
        slots += n.nslots;
        redisReply *r = cp_command_node(c, i, "DBSIZE");
        assert_non_null(r);
        assert_int_equal(r->type, REDIS_REPLY_INTEGER);
        v += r->integer;
        cp_reply_free(r);
    }
    assert_int_equal(slots, 16384);
    return v;
}

/* The keys the tool's last lines say it re-copied, summed over the sources. */
static long long recopied(const char *out) {
    long long sum = 0;
    for (const char *p = strstr(out, " keys re-copied"); p != NULL;
         p = strstr(p + 1, " keys re-copied")) {
        const char *q = p;
        while (q > out && q[-1] >= '0' && q[-1] <= '9')
            q--;
        sum += atoll(q);
    }
    return sum;
}

/* Two sources loaded, the target's masters paused for pause_ms (CLIENT PAUSE WRITE) from before
 * the tool starts, the writes made at the sources during the pause, then every key compared.
 * Below the tool's I/O timeout (--timeout timeout_ms) every command ends done; well above it
 * (the tool's first batch is written within seconds of the pause, and waits past the timeout),
 * the first batch ends unknown: its keys are marked, their stream commands skipped, and all are
 * re-copied. */
static void migrate_while_writing(int pause_ms, int timeout_ms, int want_recopies) {
    cp_fixture *sources = cp_fixture_twemproxy(2, 1);
    assert_non_null(sources);
    cp_fixture *target = cp_fixture_cluster(3, 0);
    assert_non_null(target);
    redisContext *s[2];
    char from[128];
    for (int k = 0; k < 2; k++) {
        s[k] = cp_fixture_conn(sources, source_port(sources, k));
        assert_non_null(s[k]);
        cp_test_ok(s[k], "CONFIG SET repl-diskless-sync %s", k == 0 ? "yes" : "no");
        cp_test_ok(s[k], "CONFIG SET repl-diskless-sync-delay 0");
        load_source(s[k], k == 0 ? "s0" : "s1");
    }
    snprintf(from, sizeof from, "127.0.0.1:%d,127.0.0.1:%d", source_port(sources, 0),
             source_port(sources, 1));

    /* The target's masters take no writes for a while: the tool blocks on its first RESTOREs. */
    uint64_t paused_at = cp__now_ms();
    on_masters(target, "CLIENT PAUSE %d WRITE", pause_ms);
    cp_clirun run;
    cp_clirun_init(&run);
    char timeout[16];
    snprintf(timeout, sizeof timeout, "%d", timeout_ms);
    const char *args[] = {"migrate",        "--from",    from,    "--to", target->endpoints,
                          "--until-synced", "--timeout", timeout, NULL};
    pid_t pid = cp_clirun_start(&run, args);
    for (int k = 0; k < 2; k++)
        cp_test_wait_forked(s[k]);
    write_during(s[0], "s0");
    write_during(s[1], "s1");
    /* The premise: the writes were over before the target took any of the snapshot. */
    assert_int_lt(cp__now_ms() - paused_at, pause_ms);
    int rc = cp_clirun_finish(&run, pid, 120);
    if (rc != 0)
        fail_msg("migrate exited %d\nstdout:\n%s\nstderr:\n%s", rc, run.out, run.err);
    assert_contains(run.out, "synced: every source's lag is 0");
    assert_contains(run.out, "cutover:");
    assert_contains(run.out, "lag 0 B, 0.0 s");
    /* Every write of write_during came through the stream: its commands, MULTI/EXEC not
     * counted (a unit's members are). */
    char applied[64];
    snprintf(applied, sizeof applied, "%d commands applied",
             COUNTER_INCRS + 100 + 50 + 20 * 3 + 10 * 2 + 7);
    if (want_recopies) {
        assert_int_gt(recopied(run.out), 0);
    } else {
        assert_int_equal(recopied(run.out), 0);
        assert_contains(run.out, applied);
    }

    cp_client *c = cp_fixture_client(target, NULL);
    long long keys = compare_source(s[0], c) + compare_source(s[1], c);
    assert_int_equal(dbsize(c), keys); /* and nothing else */
    assert_int_equal(get_int(c, "s0:counter"), 1000 + COUNTER_INCRS);
    assert_int_equal(get_int(c, "s1:counter"), 1000 + COUNTER_INCRS);
    assert_int_equal(get_int(c, "{s0:t}a"), 20);
    assert_int_equal(get_int(c, "s1:x1"), 10);
    static const char *const gone[] = {"s0:expired", "s1:expired", "s0:k:200", "s1:k:249"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
        redisReply *r = cp_command(c, "EXISTS %s", gone[i]);
        assert_non_null(r);
        if (r->integer != 0)
            fail_msg("%s is on the target", gone[i]);
        cp_reply_free(r);
    }
    cp_free(c);
    cp_clirun_free(&run);
    assert_int_equal(cp_fixture_stop(target), 0);
    assert_int_equal(cp_fixture_stop(sources), 0);
}

static void moves_every_type_exactly_while_writes_go_on(void **state) {
    (void)state;
    migrate_while_writing(4500, 5000, 0);
}

static void outcomes_not_known_are_recopied_exactly(void **state) {
    (void)state;
    migrate_while_writing(6000, 1000, 1);
}

/* Follow mode while the target changes under the tool: slots moving back and forth between two
 * masters (failover 0), or a master killed with kill -9 and its replica taking over (failover 1).
 * Writes go on at the sources in rounds, then stop; once the tool has acknowledged each source's
 * last offset (it acknowledges only what it applied or marked), SIGTERM: it finishes, re-copies
 * what is marked, exits 0, and every key is exact. */
static void follow_then_sigterm(int failover) {
    enum { ROUNDS = 10 };
    cp_fixture *sources = cp_fixture_twemproxy(2, 1);
    assert_non_null(sources);
    cp_fixture *target = cp_fixture_cluster(3, failover ? 1 : 0);
    assert_non_null(target);
    redisContext *s[2];
    for (int k = 0; k < 2; k++) {
        s[k] = cp_fixture_conn(sources, source_port(sources, k));
        assert_non_null(s[k]);
        cp_test_ok(s[k], "CONFIG SET repl-diskless-sync-delay 0");
        load_source(s[k], k == 0 ? "s0" : "s1");
    }
    char from[128];
    snprintf(from, sizeof from, "127.0.0.1:%d,127.0.0.1:%d", source_port(sources, 0),
             source_port(sources, 1));
    slot_mover mover;
    if (!failover)
        slot_mover_start(&mover, target, cp_fixture_master(target, 0), cp_fixture_master(target, 1),
                         2000, 4);
    cp_clirun run;
    cp_clirun_init(&run);
    const char *args[] = {"migrate", "--from", from, "--to", target->endpoints, "-q", NULL};
    pid_t pid = cp_clirun_start(&run, args);
    for (int k = 0; k < 2; k++)
        cp_test_wait_forked(s[k]);
    for (int i = 0; i < ROUNDS; i++) {
        if (failover && i == 3) {
            char err[512];
            assert_int_equal(
                cp_topo_kill(target->topo, cp_fixture_master(target, 0), SIGKILL, err, sizeof err),
                0);
        }
        write_during(s[0], "s0");
        write_during(s[1], "s1");
        usleep((failover ? 500 : 100) * 1000); /* failover: past the 2 s node timeout */
    }
    if (!failover) {
        int moved = slot_mover_stop(&mover);
        if (moved < 0)
            fail_msg("slot mover: %s", mover.err);
        assert_int_ge(moved, 4);
    }
    for (int k = 0; k < 2; k++)
        cp_test_wait_acked(s[k]);
    assert_int_equal(kill(pid, SIGTERM), 0);
    int rc = cp_clirun_finish(&run, pid, 120);
    if (rc != 0)
        fail_msg("migrate exited %d\nstdout:\n%s\nstderr:\n%s", rc, run.out, run.err);
    assert_contains(run.out, "offset applied");
    assert_not_contains(run.out, "synced:");
    cp_client *c = cp_fixture_client(target, NULL);
    long long keys = compare_source(s[0], c) + compare_source(s[1], c);
    assert_int_equal(dbsize(c), keys);
    assert_int_equal(get_int(c, "s0:counter"), 1000 + ROUNDS * COUNTER_INCRS);
    assert_int_equal(get_int(c, "s1:counter"), 1000 + ROUNDS * COUNTER_INCRS);
    assert_int_equal(get_int(c, "{s1:t}a"), ROUNDS * 20);
    assert_int_equal(get_int(c, "s0:y1"), ROUNDS * 10);
    cp_free(c);
    cp_clirun_free(&run);
    assert_int_equal(cp_fixture_stop(target), 0);
    assert_int_equal(cp_fixture_stop(sources), 0);
}

static void follows_while_slots_move_then_stops_on_sigterm(void **state) {
    (void)state;
    follow_then_sigterm(0);
}

static void follows_through_a_failover_then_stops_on_sigterm(void **state) {
    (void)state;
    follow_then_sigterm(1);
}

/* The stream's transactions, as Redis writes them: one whose members SELECT another database
 * (--db 0 keeps only database 0's members, and MULTI and EXEC bound the unit whatever database
 * is selected), and one whose member fails on the target as it runs (a key of another type
 * there: WRONGTYPE inside the EXEC's array), so its keys are re-copied. Then --until-synced
 * stopped by SIGINT before it synced exits 1: no cutover. */
static void transactions_across_databases_and_a_member_that_fails(void **state) {
    (void)state;
    cp_fixture *sources = cp_fixture_twemproxy(1, 1);
    assert_non_null(sources);
    cp_fixture *target = cp_fixture_cluster(3, 0);
    assert_non_null(target);
    redisContext *s = cp_fixture_conn(sources, source_port(sources, 0));
    assert_non_null(s);
    cp_test_ok(s, "CONFIG SET repl-diskless-sync-delay 0");
    cp_test_ok(s, "SET pre 0");
    cp_test_ok(s, "SELECT 3");
    cp_test_ok(s, "SET pre3 0");
    cp_test_ok(s, "SELECT 0");
    cp_client *c = cp_fixture_client(target, NULL);
    redisReply *r = cp_command(c, "RPUSH {t}k a-list"); /* only on the target */
    assert_non_null(r);
    cp_reply_free(r);
    char from[64];
    snprintf(from, sizeof from, "127.0.0.1:%d", source_port(sources, 0));
    cp_clirun run;
    cp_clirun_init(&run);
    const char *args[] = {"migrate", "--from", from, "--to", target->endpoints, "--db", "0", NULL};
    pid_t pid = cp_clirun_start(&run, args);
    cp_test_wait_forked(s);
    cp_test_ok(s, "MULTI");
    cp_test_ok(s, "SET a 1");
    cp_test_ok(s, "SELECT 3");
    cp_test_ok(s, "SET b 1");
    cp_test_ok(s, "EXEC"); /* the connection is now in database 3 */
    cp_test_ok(s, "SELECT 0");
    cp_test_ok(s, "SET y 1");
    cp_test_ok(s, "MULTI");
    cp_test_ok(s, "SET z 1");
    cp_test_ok(s, "EXEC");
    cp_test_ok(s, "SELECT 3");
    cp_test_ok(s, "MULTI");
    cp_test_ok(s, "SET x3 1");
    cp_test_ok(s, "SELECT 0");
    cp_test_ok(s, "SET c 1");
    cp_test_ok(s, "EXEC"); /* back in database 0 */
    cp_test_ok(s, "MULTI");
    cp_test_ok(s, "SET {t}x 1");
    cp_test_ok(s, "INCR {t}k");
    cp_test_ok(s, "EXEC");
    cp_test_wait_acked(s);
    assert_int_equal(kill(pid, SIGTERM), 0);
    int rc = cp_clirun_finish(&run, pid, 60);
    if (rc != 0)
        fail_msg("migrate exited %d\nstdout:\n%s\nstderr:\n%s", rc, run.out, run.err);
    assert_contains(run.out, "a member of EXEC: WRONGTYPE");
    static const char *const moved[] = {"pre", "a", "y", "z", "c", "{t}x", "{t}k"};
    for (size_t k = 0; k < sizeof moved / sizeof moved[0]; k++) {
        r = cp_command(c, "GET %s", moved[k]);
        assert_non_null(r);
        if (r->type != REDIS_REPLY_STRING || strcmp(r->str, moved[k][0] == 'p' ? "0" : "1") != 0)
            fail_msg("%s on the target: %s", moved[k],
                     r->type == REDIS_REPLY_STRING  ? r->str
                     : r->type == REDIS_REPLY_ERROR ? r->str
                                                    : "nil");
        cp_reply_free(r);
    }
    static const char *const not_moved[] = {"pre3", "b", "x3"};
    for (size_t k = 0; k < sizeof not_moved / sizeof not_moved[0]; k++) {
        r = cp_command(c, "EXISTS %s", not_moved[k]);
        assert_non_null(r);
        assert_int_equal(r->integer, 0);
        cp_reply_free(r);
    }

    /* --until-synced stopped before it synced: the target takes no writes, so the snapshot's
     * batch waits; SIGINT meanwhile, then the target takes writes again. */
    on_masters(target, "CLIENT PAUSE 30000 WRITE");
    const char *synced[] = {"migrate",         "--from", from, "--to",
                            target->endpoints, "--db",   "0",  "--until-synced",
                            "--timeout",       "40000",  NULL};
    pid = cp_clirun_start(&run, synced);
    cp_test_wait_forked(s);
    usleep(300 * 1000);
    assert_int_equal(kill(pid, SIGINT), 0);
    usleep(300 * 1000);
    on_masters(target, "CLIENT UNPAUSE");
    assert_int_equal(cp_clirun_finish(&run, pid, 60), 1);
    assert_contains(run.err, "stopped before every source was synced: do not cut over");
    assert_not_contains(run.out, "synced: every source");
    cp_free(c);
    cp_clirun_free(&run);
    assert_int_equal(cp_fixture_stop(target), 0);
    assert_int_equal(cp_fixture_stop(sources), 0);
}

/* What the tool refuses before or while it writes, each with exit 1 and the reason: a wrong
 * password at the source; a target with slots no master serves (refused before anything is
 * written); a target that answers OOM (the run stops, naming the command and the answer). */
static void a_wrong_password_missing_slots_and_oom(void **state) {
    (void)state;
    cp_fixture *sources = cp_fixture_twemproxy(1, 1);
    assert_non_null(sources);
    cp_fixture *target = cp_fixture_cluster(3, 0);
    assert_non_null(target);
    redisContext *s = cp_fixture_conn(sources, source_port(sources, 0));
    assert_non_null(s);
    cp_test_ok(s, "SET k v");
    char from[64];
    snprintf(from, sizeof from, "127.0.0.1:%d", source_port(sources, 0));
    cp_clirun run;
    cp_clirun_init(&run);

    cp_test_ok(s, "CONFIG SET requirepass right-one"); /* this connection stays authenticated */
    const char *wrong[] = {"migrate",   "--from",          from,
                           "--to",      target->endpoints, "--from-password",
                           "wrong-one", "--until-synced",  NULL};
    cp_clirun_expect(&run, wrong, 1);
    assert_contains(run.err, from);
    assert_contains(run.err, "AUTH");
    cp_test_ok(s, "CONFIG SET requirepass %s", "");

    int m0 = cp_topo_proc(target->topo, cp_fixture_master(target, 0))->port;
    redisContext *t0 = cp_fixture_conn(target, m0);
    assert_non_null(t0);
    cp_test_ok(t0, "CLUSTER DELSLOTSRANGE 0 99"); /* master 0 holds the lowest slots */
    const char *to_all[] = {"migrate",         "--from",         from, "--to",
                            target->endpoints, "--until-synced", NULL};
    cp_clirun_expect(&run, to_all, 1);
    assert_contains(run.err, "serves 16284 of 16384 slots (none serves slots 0-99)");
    cp_test_ok(t0, "CLUSTER ADDSLOTSRANGE 0 99");
    cp_client *c = cp_fixture_client(target, NULL); /* its map from master 0, which has them */
    assert_int_equal(dbsize(c), 0);                 /* nothing was written */
    on_masters(target, "CONFIG SET maxmemory 1");
    cp_clirun_expect(&run, to_all, 1);
    assert_contains(run.err, "the target refused RESTORE k: OOM");
    on_masters(target, "CONFIG SET maxmemory 0");
    cp_free(c);
    cp_clirun_free(&run);
    assert_int_equal(cp_fixture_stop(target), 0);
    assert_int_equal(cp_fixture_stop(sources), 0);
}

/* ACL users on both sides (AUTH user password): a source user allowed to replicate and a target
 * user allowed to write move the keys and verify; a source user without +psync and +sync is
 * refused replication, and the run says so; a user without its password is a usage error. */
static void acl_users_on_both_sides(void **state) {
    (void)state;
    cp_fixture *sources = cp_fixture_twemproxy(1, 1);
    assert_non_null(sources);
    cp_fixture *target = cp_fixture_cluster(3, 0);
    assert_non_null(target);
    redisContext *s = cp_fixture_conn(sources, source_port(sources, 0));
    assert_non_null(s);
    cp_test_ok(s, "CONFIG SET repl-diskless-sync-delay 0");
    cp_test_ok(s, "SET k v");
    cp_test_ok(s, "ACL SETUSER mover on >move-pw ~* &* +@all");
    cp_test_ok(s, "ACL SETUSER reader on >read-pw ~* &* +@all -psync -sync");
    on_masters(target, "ACL SETUSER writer on >write-pw ~* &* +@all");
    char from[64];
    snprintf(from, sizeof from, "127.0.0.1:%d", source_port(sources, 0));
    cp_clirun run;
    cp_clirun_init(&run);
    const char *both[] = {"migrate",         "--from",         from,       "--to",
                          target->endpoints, "--from-user",    "mover",    "--from-password",
                          "move-pw",         "--to-user",      "writer",   "--to-password",
                          "write-pw",        "--until-synced", "--verify", NULL};
    cp_clirun_expect(&run, both, 0);
    assert_contains(run.out, "synced: every source's lag is 0");
    const char *no_psync[] = {"migrate",         "--from",         from,     "--to",
                              target->endpoints, "--from-user",    "reader", "--from-password",
                              "read-pw",         "--until-synced", NULL};
    cp_clirun_expect(&run, no_psync, 1);
    assert_contains(run.err, from);
    assert_contains(run.err, "NOPERM");
    const char *no_pw[] = {"migrate",         "--from",    from,     "--to",
                           target->endpoints, "--to-user", "writer", NULL};
    cp_clirun_expect(&run, no_pw, 2);
    assert_contains(run.err, "--to-user needs --to-password");
    cp_clirun_free(&run);
    assert_int_equal(cp_fixture_stop(target), 0);
    assert_int_equal(cp_fixture_stop(sources), 0);
}

static void other_databases_and_an_unreachable_target(void **state) {
    (void)state;
    cp_fixture *sources = cp_fixture_twemproxy(1, 1);
    assert_non_null(sources);
    cp_fixture *target = cp_fixture_cluster(3, 0);
    assert_non_null(target);
    redisContext *s = cp_fixture_conn(sources, source_port(sources, 0));
    assert_non_null(s);
    cp_test_ok(s, "SET in:db0 zero");
    cp_test_ok(s, "SELECT 3");
    cp_test_ok(s, "SET in:db3:a one");
    cp_test_ok(s, "SET in:db3:b two PX 3600000");
    cp_test_ok(s, "SELECT 0");
    char from[64];
    snprintf(from, sizeof from, "127.0.0.1:%d", source_port(sources, 0));
    cp_clirun run;
    cp_clirun_init(&run);
    const char *refused[] = {"migrate",         "--from",         from, "--to",
                             target->endpoints, "--until-synced", NULL};
    cp_clirun_expect(&run, refused, 1);
    assert_contains(run.err, "a cluster has database 0 only");
    assert_contains(run.err, "db3 (2 keys)");
    assert_contains(run.err, from);
    assert_contains(run.err, "--db N");

    const char *db3[] = {"migrate", "--from",         from,     "--to", target->endpoints, "--db",
                         "3",       "--until-synced", "--json", NULL};
    cp_clirun_expect(&run, db3, 0);
    /* --json: one object per line, the result last. */
    const char *last = run.out, *nl;
    while ((nl = strchr(last, '\n')) != NULL && nl[1] != '\0')
        last = nl + 1;
    json_error_t jerr;
    json_t *res = json_loads(last, 0, &jerr);
    if (res == NULL)
        fail_msg("not JSON: %s (%s)", last, jerr.text);
    assert_string_equal(json_string_value(json_object_get(res, "schema")), "clusterpipe.migrate/1");
    assert_true(json_is_true(json_object_get(res, "ok")));
    assert_true(json_is_true(json_object_get(res, "synced")));
    json_t *src0 = json_array_get(json_object_get(res, "sources"), 0);
    assert_int_equal(json_integer_value(json_object_get(src0, "keys_copied")), 2);
    assert_int_equal(json_integer_value(json_object_get(src0, "keys_total")), 2);
    assert_int_equal(json_integer_value(json_object_get(src0, "lag_bytes")), 0);
    assert_true(json_is_real(json_object_get(src0, "lag_seconds")));
    assert_double_eq(json_real_value(json_object_get(src0, "lag_seconds")), 0);
    json_decref(res);
    cp_client *c = cp_fixture_client(target, NULL);
    assert_int_equal(dbsize(c), 2);
    redisReply *r = cp_command(c, "GET in:db3:a");
    assert_non_null(r);
    assert_string_equal(r->str, "one");
    cp_reply_free(r);
    cp_free(c);

    /* A port nothing listens on (bound, then closed). */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    close(fd);
    char to[64];
    snprintf(to, sizeof to, "127.0.0.1:%d", ntohs(a.sin_port));
    const char *unreachable[] = {"migrate", "--from", from, "--to", to, "--until-synced", NULL};
    cp_clirun_expect(&run, unreachable, 1);
    assert_contains(run.err, "clusterpipe migrate: target ");
    assert_contains(run.err, to);
    cp_clirun_free(&run);
    assert_int_equal(cp_fixture_stop(target), 0);
    assert_int_equal(cp_fixture_stop(sources), 0);
}

/* --from a nutcracker YAML: its servers are the sources; the proxy's own address is refused
 * with a hint to give the YAML. */
static void from_a_nutcracker_yaml_and_not_from_the_proxy(void **state) {
    (void)state;
    cp_fixture *sources = cp_fixture_twemproxy(2, 1);
    assert_non_null(sources);
    cp_fixture *target = cp_fixture_cluster(3, 0);
    assert_non_null(target);
    redisContext *s[2];
    for (int k = 0; k < 2; k++) {
        s[k] = cp_fixture_conn(sources, source_port(sources, k));
        assert_non_null(s[k]);
        load_source(s[k], k == 0 ? "s0" : "s1");
    }
    char pattern[4200];
    snprintf(pattern, sizeof pattern, "%s/*/nutcracker.yml", sources->dir);
    glob_t g;
    assert_int_equal(glob(pattern, 0, NULL, &g), 0);
    assert_int_equal(g.gl_pathc, 1);
    cp_clirun run;
    cp_clirun_init(&run);
    const char *yaml[] = {"migrate",         "--from",         g.gl_pathv[0], "--to",
                          target->endpoints, "--until-synced", NULL};
    cp_clirun_expect(&run, yaml, 0);
    char name[64];
    for (int k = 0; k < 2; k++) {
        snprintf(name, sizeof name, "source 127.0.0.1:%d: 315 keys copied",
                 source_port(sources, k));
        assert_contains(run.out, name);
    }
    cp_client *c = cp_fixture_client(target, NULL);
    long long keys = compare_source(s[0], c) + compare_source(s[1], c);
    assert_int_equal(dbsize(c), keys);
    cp_free(c);
    globfree(&g);

    const char *proxy[] = {
        "migrate", "--from", sources->endpoints, "--to", target->endpoints, "--until-synced", NULL};
    cp_clirun_expect(&run, proxy, 1);
    assert_contains(run.err, sources->endpoints);
    assert_contains(run.err, "is it a twemproxy? give its nutcracker YAML as --from");
    cp_clirun_free(&run);
    assert_int_equal(cp_fixture_stop(target), 0);
    assert_int_equal(cp_fixture_stop(sources), 0);
}

/* A source that dies, and one that freezes (SIGSTOP), while the tool follows: exit 1 with the
 * source named, within seconds, never a hang. */
static void a_source_that_dies_or_freezes_is_an_error(void **state) {
    (void)state;
    cp_fixture *target = cp_fixture_cluster(3, 0);
    assert_non_null(target);
    for (int freeze = 0; freeze < 2; freeze++) {
        cp_fixture *sources = cp_fixture_twemproxy(1, 1);
        assert_non_null(sources);
        int port = source_port(sources, 0);
        redisContext *s = cp_fixture_conn(sources, port);
        assert_non_null(s);
        cp_test_ok(s, "CONFIG SET repl-diskless-sync-delay 0");
        cp_test_ok(s, "SET k v");
        char from[64], name[80];
        snprintf(from, sizeof from, "127.0.0.1:%d", port);
        snprintf(name, sizeof name, "source %s", from);
        cp_clirun run;
        cp_clirun_init(&run);
        const char *args[] = {"migrate",          "--from", from, "--to", target->endpoints,
                              "--source-timeout", "2",      "-q", NULL};
        pid_t pid = cp_clirun_start(&run, args);
        cp_test_wait_forked(s);
        size_t proc = SIZE_MAX;
        for (size_t i = 0; i < cp_topo_nprocs(sources->topo); i++)
            if (cp_topo_proc(sources->topo, i)->port == port)
                proc = i;
        char err[512];
        uint64_t at = cp__now_ms();
        assert_int_equal(
            cp_topo_kill(sources->topo, proc, freeze ? SIGSTOP : SIGKILL, err, sizeof err), 0);
        int rc = cp_clirun_finish(&run, pid, 60);
        uint64_t took = cp__now_ms() - at;
        if (freeze)
            assert_int_equal(cp_topo_kill(sources->topo, proc, SIGCONT, err, sizeof err), 0);
        if (rc != 1)
            fail_msg("migrate exited %d\nstdout:\n%s\nstderr:\n%s", rc, run.out, run.err);
        assert_contains(run.err, name);
        /* Frozen: the replica connection's 2 s of silence, or the plain connection's INFO
         * unanswered for as long, whichever the tool was waiting on. */
        assert_contains(run.err, freeze ? "2000 ms" : "closed the replication connection");
        assert_int_lt(took, 10000);
        cp_clirun_free(&run);
        assert_int_equal(cp_fixture_stop(sources), 0);
    }
    assert_int_equal(cp_fixture_stop(target), 0);
}

/* A stream command without keys that the cluster refuses (SWAPDB): no key to re-copy, so the
 * run stops, naming the command and the target's answer. */
static void a_keyless_command_refused_stops_the_run(void **state) {
    (void)state;
    cp_fixture *sources = cp_fixture_twemproxy(1, 1);
    assert_non_null(sources);
    cp_fixture *target = cp_fixture_cluster(3, 0);
    assert_non_null(target);
    int port = source_port(sources, 0);
    redisContext *s = cp_fixture_conn(sources, port);
    assert_non_null(s);
    cp_test_ok(s, "CONFIG SET repl-diskless-sync-delay 0");
    cp_test_ok(s, "SET k v");
    char from[64];
    snprintf(from, sizeof from, "127.0.0.1:%d", port);
    cp_clirun run;
    cp_clirun_init(&run);
    const char *args[] = {"migrate", "--from", from, "--to", target->endpoints, "-q", NULL};
    pid_t pid = cp_clirun_start(&run, args);
    cp_test_wait_forked(s);
    cp_test_ok(s, "SWAPDB 0 1");
    int rc = cp_clirun_finish(&run, pid, 60);
    if (rc != 1)
        fail_msg("migrate exited %d\nstdout:\n%s\nstderr:\n%s", rc, run.out, run.err);
    assert_contains(run.err, "SWAPDB, a command without keys, was refused on the target");
    assert_contains(run.err, "nothing can re-copy what it did");
    cp_clirun_free(&run);
    assert_int_equal(cp_fixture_stop(target), 0);
    assert_int_equal(cp_fixture_stop(sources), 0);
}

/* Bad command lines: exit 2, the flag and the value named, nothing started. */
/* size bytes of xorshift64 noise from seed (random: the RDB keeps them uncompressed);
 * the caller frees them. */
static unsigned char *noise(size_t size, uint64_t seed) {
    unsigned char *v = malloc(size);
    assert_non_null(v);
    for (size_t i = 0; i < size; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        v[i] = (unsigned char)seed;
    }
    return v;
}

/* GET key through c answers exactly the size bytes at v. */
static void assert_value(cp_client *c, const char *key, const unsigned char *v, size_t size) {
    redisReply *r = cp_command(c, "GET %s", key);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal(r->len, size);
    assert_memory_equal(r->str, v, size);
    cp_reply_free(r);
}

/* A snapshot far larger than what the tool reads ahead (8 MB) and holds in batches (5 of at most
 * 16 MB) moves with the tool's memory bounded by those, not by the snapshot: 160 values of 1 MB
 * (random bytes: the RDB cannot compress them) while the target's masters hold writes (CLIENT
 * PAUSE WRITE) for 5 s, so the source must wait for the tool. Its peak RSS stays under 112 MB
 * (read-ahead, batches, and the pipelines' copies of the batches running: 37 to 43 MB measured;
 * 149 MB when the read-ahead was 64 MB); reading the snapshot as it comes, the tool would hold
 * all 160 MB of it. Every key arrives. */
static void a_snapshot_larger_than_the_read_ahead_waits_at_the_source(void **state) {
    (void)state;
#ifdef CP_TEST_ASAN
    print_message("skipped under the sanitizer: hundreds of MB, and no RSS bound holds there\n");
    skip();
#endif
    enum { N = 160, SIZE = 1 << 20 };
    cp_fixture *sources = cp_fixture_twemproxy(1, 1);
    assert_non_null(sources);
    cp_fixture *target = cp_fixture_cluster(3, 0);
    assert_non_null(target);
    redisContext *s = cp_fixture_conn(sources, source_port(sources, 0));
    assert_non_null(s);
    unsigned char *v = noise(SIZE, 88172645463325252ull);
    for (int k = 0; k < N; k++) {
        memcpy(v, &k, sizeof k); /* each value its own */
        redisAppendCommand(s, "SET big:%d %b", k, v, (size_t)SIZE);
    }
    drain(s, N);
    on_masters(target, "CLIENT PAUSE 5000 WRITE");
    char from[64];
    snprintf(from, sizeof from, "127.0.0.1:%d", source_port(sources, 0));
    cp_clirun run;
    cp_clirun_init(&run);
    const char *args[] = {"migrate",         "--from",         from, "--to",
                          target->endpoints, "--until-synced", NULL};
    cp_clirun_expect(&run, args, 0);
    print_message("migrate's peak RSS: %ld KB\n", run.maxrss_kb);
    assert_int_lt(run.maxrss_kb, 112 * 1024);
    cp_client *c = cp_fixture_client(target, NULL);
    assert_non_null(c);
    assert_int_equal(dbsize(c), N);
    int k = N - 1;
    memcpy(v, &k, sizeof k);
    char key[32];
    snprintf(key, sizeof key, "big:%d", k);
    assert_value(c, key, v, SIZE);
    cp_free(c);
    free(v);
    cp_clirun_free(&run);
    assert_int_equal(cp_fixture_stop(target), 0);
    assert_int_equal(cp_fixture_stop(sources), 0);
}

/* One key larger than the read-ahead (a string of 24 MB) behind a target that holds writes for
 * 2 s: the reader needs the whole key before it hands it out, so the source is read on past the
 * read-ahead until it is whole (a hold there would wait for ever, the run never ending). */
static void a_key_larger_than_the_read_ahead(void **state) {
    (void)state;
#ifdef CP_TEST_ASAN
    print_message("skipped under the sanitizer: hundreds of MB, and no RSS bound holds there\n");
    skip();
#endif
    enum { SIZE = 24 << 20 };
    cp_fixture *sources = cp_fixture_twemproxy(1, 1);
    assert_non_null(sources);
    cp_fixture *target = cp_fixture_cluster(3, 0);
    assert_non_null(target);
    redisContext *s = cp_fixture_conn(sources, source_port(sources, 0));
    assert_non_null(s);
    unsigned char *v = noise(SIZE, 0x9e3779b97f4a7c15ull);
    redisAppendCommand(s, "SET huge %b", v, (size_t)SIZE);
    redisAppendCommand(s, "SET small one");
    drain(s, 2);
    on_masters(target, "CLIENT PAUSE 2000 WRITE");
    char from[64];
    snprintf(from, sizeof from, "127.0.0.1:%d", source_port(sources, 0));
    cp_clirun run;
    cp_clirun_init(&run);
    const char *args[] = {"migrate",         "--from",         from, "--to",
                          target->endpoints, "--until-synced", NULL};
    pid_t pid = cp_clirun_start(&run, args);
    int rc = cp_clirun_finish(&run, pid, 60);
    if (rc != 0)
        fail_msg("migrate exited %d: %s", rc, run.err);
    cp_client *c = cp_fixture_client(target, NULL);
    assert_non_null(c);
    assert_value(c, "huge", v, SIZE);
    assert_int_equal(dbsize(c), 2);
    cp_free(c);
    free(v);
    cp_clirun_free(&run);
    assert_int_equal(cp_fixture_stop(target), 0);
    assert_int_equal(cp_fixture_stop(sources), 0);
}

static void usage_errors(void **state) {
    (void)state;
    static const struct {
        const char *args[8];
        const char *says;
    } cases[] = {
        {{"migrate", "--from", "x", "--to", "127.0.0.1:1", NULL}, "--from: 'x' is not HOST:PORT"},
        {{"migrate", "--from", "127.0.0.1:0", "--to", "127.0.0.1:1", NULL}, "--from"},
        {{"migrate", "--from", "127.0.0.1:1,", "--to", "127.0.0.1:1", NULL}, "is not HOST:PORT"},
        {{"migrate", "--from", "/nonexistent/nutcracker.yml", "--to", "127.0.0.1:1", NULL},
         "cannot read it"},
        {{"migrate", "--from", "127.0.0.1:1", NULL}, "--to HOST:PORT[,...] is required"},
        {{"migrate", "--to", "127.0.0.1:1", NULL}, "--from"},
        {{"migrate", "--from", "127.0.0.1:1", "--to", "127.0.0.1:1", "--db", "-1", NULL}, "--db"},
        {{"migrate", "--from", "127.0.0.1:1", "--to", "127.0.0.1:1", "--source-timeout", "0", NULL},
         "--source-timeout"},
    };
    cp_clirun run;
    cp_clirun_init(&run);
    char yml[4200];
    snprintf(yml, sizeof yml, "%s", cp_clirun_path(&run, "empty.yml"));
    FILE *fp = fopen(yml, "w");
    assert_non_null(fp);
    fputs("pool:\n  listen: 127.0.0.1:22121\n", fp);
    fclose(fp);
    const char *empty[] = {"migrate", "--from", yml, "--to", "127.0.0.1:1", NULL};
    cp_clirun_expect(&run, empty, 2);
    assert_contains(run.err, "no servers");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cp_clirun_expect(&run, cases[i].args, 2);
        assert_contains(run.err, cases[i].says);
    }
    cp_clirun_free(&run);
}

int main(void) {
    const struct CMUnitTest all[] = {
        cmocka_unit_test(usage_errors),
        cmocka_unit_test(moves_every_type_exactly_while_writes_go_on),
        cmocka_unit_test(outcomes_not_known_are_recopied_exactly),
        cmocka_unit_test(follows_while_slots_move_then_stops_on_sigterm),
        cmocka_unit_test(follows_through_a_failover_then_stops_on_sigterm),
        cmocka_unit_test(transactions_across_databases_and_a_member_that_fails),
        cmocka_unit_test(a_wrong_password_missing_slots_and_oom),
        cmocka_unit_test(acl_users_on_both_sides),
        cmocka_unit_test(other_databases_and_an_unreachable_target),
        cmocka_unit_test(from_a_nutcracker_yaml_and_not_from_the_proxy),
        cmocka_unit_test(a_source_that_dies_or_freezes_is_an_error),
        cmocka_unit_test(a_keyless_command_refused_stops_the_run),
        cmocka_unit_test(a_snapshot_larger_than_the_read_ahead_waits_at_the_source),
        cmocka_unit_test(a_key_larger_than_the_read_ahead),
    };
    struct CMUnitTest tests[sizeof all / sizeof all[0]];
    size_t n = cp_test_only(all, sizeof all / sizeof all[0], tests);
    return _cmocka_run_group_tests("test_migrate_real", tests, n, NULL, NULL);
}
