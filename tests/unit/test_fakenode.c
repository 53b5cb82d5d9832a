/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Unit tests of the scripted fake node (tests/support/fakenode.c), driven by a plain hiredis
 * synchronous client and, where exact bytes matter, by a raw socket. Each test starts its own
 * node in setup and stops it in teardown; hiredis contexts and sockets are freed by the test
 * that opened them. Runs on the cmocka main thread, plus two worker threads in the concurrency
 * test. Builds with hiredis 0.14 and 1.x: only calls and fields common to both are used.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "asserts.h"

#include <arpa/inet.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "fakenode.h"

/* ---- helpers -------------------------------------------------------------------------------- */

static int setup(void **state) {
    fake_node *n = fake_node_start();
    if (n == NULL)
        return -1;
    *state = n;
    return 0;
}

static int teardown(void **state) {
    fake_node_stop(*state);
    return 0;
}

/* A hiredis client with a read timeout, so a fake-node bug fails the test instead of hanging. */
static redisContext *client(fake_node *n, int timeout_ms) {
    struct timeval tv = {.tv_sec = 2};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", fake_node_port(n), tv);
    assert_non_null(c);
    assert_int_equal(c->err, 0);
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    assert_int_equal(redisSetTimeout(c, tv), REDIS_OK);
    return c;
}

/* Runs a command and checks the reply is a status or error with exactly this text. */
static void expect_text(redisContext *c, int type, const char *want, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    assert_int_equal(r->type, type);
    assert_string_equal(r->str, want);
    freeReplyObject(r);
}

static void expect_int(redisContext *c, long long want, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, want);
    freeReplyObject(r);
}

static void expect_nil(redisContext *c, const char *cmd) {
    redisReply *r = redisCommand(c, cmd);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_NIL);
    freeReplyObject(r);
}

/* Expects the command to fail at the connection level (NULL reply) with this hiredis error. */
static void expect_conn_error(redisContext *c, int err, const char *cmd) {
    redisReply *r = redisCommand(c, cmd);
    assert_null(r);
    assert_int_equal(c->err, err);
}

static int raw_connect(fake_node *n) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_ge(fd, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(fake_node_port(n))};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

static void raw_send(int fd, const char *s) {
    size_t n = strlen(s);
    assert_int_equal(send(fd, s, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Reads until `want` bytes arrived, EOF, or timeout_ms of silence. Returns the bytes read
 * (buf NUL-terminated); *eof tells whether the peer closed. Exact byte checks need this, because
 * hiredis hides what precedes a protocol error. */
static size_t raw_read(int fd, char *buf, size_t cap, size_t want, int timeout_ms, int *eof) {
    size_t len = 0;
    *eof = 0;
    while (len < want && len + 1 < cap) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, timeout_ms) <= 0)
            break;
        ssize_t r = recv(fd, buf + len, cap - 1 - len, 0);
        if (r <= 0) {
            *eof = 1;
            break;
        }
        len += (size_t)r;
    }
    buf[len] = '\0';
    return len;
}

/* ---- default behaviour ---------------------------------------------------------------------- */

static void test_default_commands(void **state) {
    fake_node *n = *state;
    redisContext *c = client(n, 2000);
    expect_text(c, REDIS_REPLY_STATUS, "PONG", "PING");
    expect_text(c, REDIS_REPLY_STATUS, "OK", "SET %s %s", "foo", "bar");
    expect_text(c, REDIS_REPLY_STRING, "bar", "GET %s", "foo");
    expect_text(c, REDIS_REPLY_STRING, "hello", "PING %s", "hello");
    expect_nil(c, "GET missing");
    expect_int(c, 1, "EXISTS foo missing");
    expect_int(c, 1, "INCR ctr");
    expect_int(c, 2, "incr ctr");
    expect_text(c, REDIS_REPLY_ERROR, "ERR value is not an integer or out of range", "INCR foo");

    redisReply *r = redisCommand(c, "MGET foo missing ctr");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    assert_string_equal(r->element[0]->str, "bar");
    assert_int_equal(r->element[1]->type, REDIS_REPLY_NIL);
    assert_string_equal(r->element[2]->str, "2");
    freeReplyObject(r);

    expect_int(c, 2, "DEL foo ctr missing");
    expect_nil(c, "GET foo");
    expect_text(c, REDIS_REPLY_STATUS, "OK", "ASKING");
    expect_text(c, REDIS_REPLY_STATUS, "OK", "READONLY");
    expect_text(c, REDIS_REPLY_STATUS, "OK", "AUTH anything");
    expect_text(c, REDIS_REPLY_ERROR,
                "ERR unknown command 'FLUSHALL', with args beginning with: ", "FLUSHALL");
    expect_text(c, REDIS_REPLY_ERROR, "ERR wrong number of arguments for 'get' command", "GET");
    expect_text(c, REDIS_REPLY_ERROR, "ERR This instance has cluster support disabled",
                "CLUSTER SLOTS");
    expect_text(c, REDIS_REPLY_ERROR, "ERR unknown subcommand 'SHARDS'. Try CLUSTER HELP.",
                "CLUSTER SHARDS");

    /* binary-safe values survive the store */
    r = redisCommand(c, "SET %b %b", "k\r\n", (size_t)3, "v\0\r\n", (size_t)4);
    assert_non_null(r);
    freeReplyObject(r);
    r = redisCommand(c, "GET %b", "k\r\n", (size_t)3);
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_int_equal((size_t)r->len, 4);
    assert_memory_equal(r->str, "v\0\r\n", 4);
    freeReplyObject(r);
    redisFree(c);
}

static void test_inline_pipelined_and_split(void **state) {
    fake_node *n = *state;
    int fd = raw_connect(n);
    char buf[256];
    int eof;
    const char *want = "+PONG\r\n$-1\r\n+PONG\r\n";
    raw_send(fd, "PING\r\nGET nokey\r\n*1\r\n$4\r\nPING\r\n");
    assert_int_equal(raw_read(fd, buf, sizeof(buf), strlen(want), 2000, &eof), strlen(want));
    assert_string_equal(buf, want);

    /* one command delivered in pieces, with an empty inline line in front */
    raw_send(fd, "\r\n*2\r\n$3\r\nGE");
    assert_int_equal(raw_read(fd, buf, sizeof(buf), 1, 100, &eof), 0);
    raw_send(fd, "T\r\n$5\r\nno");
    raw_send(fd, "key\r\n");
    assert_int_equal(raw_read(fd, buf, sizeof(buf), 5, 2000, &eof), 5);
    assert_string_equal(buf, "$-1\r\n");

    /* a malformed request gets a protocol error and a close, like Redis */
    raw_send(fd, "*1\r\n#bad\r\n");
    raw_read(fd, buf, sizeof(buf), sizeof(buf), 2000, &eof);
    if (strncmp(buf, "-ERR Protocol error", 19) != 0)
        fail_msg("reply \"%s\", not -ERR Protocol error...", buf);
    assert_true(eof);
    close(fd);
    assert_int_equal(fake_node_count(n, "PING"), 2);
    assert_int_equal(fake_node_count(n, "get"), 2);
}

static void test_auth(void **state) {
    fake_node *n = *state;
    assert_int_equal(fake_node_require_password(n, NULL, "s3cret"), 0);
    redisContext *c = client(n, 2000);
    expect_text(c, REDIS_REPLY_ERROR, "NOAUTH Authentication required.", "GET foo");
    expect_text(c, REDIS_REPLY_ERROR,
                "WRONGPASS invalid username-password pair or user is disabled.", "AUTH wrong");
    expect_text(c, REDIS_REPLY_STATUS, "OK", "AUTH s3cret");
    expect_text(c, REDIS_REPLY_STATUS, "PONG", "PING");
    redisFree(c);

    assert_int_equal(fake_node_require_password(n, "bench", "pw"), 0);
    c = client(n, 2000);
    expect_text(c, REDIS_REPLY_ERROR, "NOAUTH Authentication required.", "PING");
    expect_text(c, REDIS_REPLY_ERROR,
                "WRONGPASS invalid username-password pair or user is disabled.", "AUTH pw");
    expect_text(c, REDIS_REPLY_ERROR,
                "WRONGPASS invalid username-password pair or user is disabled.", "AUTH default pw");
    expect_text(c, REDIS_REPLY_STATUS, "OK", "AUTH bench pw");
    expect_text(c, REDIS_REPLY_STATUS, "PONG", "PING");
    redisFree(c);

    assert_int_equal(fake_node_require_password(n, NULL, NULL), 0);
    c = client(n, 2000);
    expect_text(c, REDIS_REPLY_STATUS, "PONG", "PING");
    redisFree(c);
}

/* ---- rules ---------------------------------------------------------------------------------- */

static void test_rule_reply(void **state) {
    fake_node *n = *state;
    redisContext *c = client(n, 2000);
    expect_text(c, REDIS_REPLY_STATUS, "OK", "SET foo v");
    int id = fake_node_rule(n, &(fake_rule){.cmd = "get",
                                            .key = "foo",
                                            .times = 1,
                                            .action = FAKE_REPLY,
                                            .payload = "-MOVED 3999 127.0.0.1:7001\r\n"});
    assert_int_equal(id, 0);
    expect_nil(c, "GET bar");                              /* other key: normal */
    expect_text(c, REDIS_REPLY_STATUS, "OK", "SET foo w"); /* other command: normal */
    expect_text(c, REDIS_REPLY_ERROR, "MOVED 3999 127.0.0.1:7001", "GET foo");
    expect_text(c, REDIS_REPLY_STRING, "w", "GET foo"); /* spent after one */
    assert_int_equal(fake_node_rule_fired(n, id), 1);
    assert_int_equal(fake_node_rule_fired(n, 7), -1);

    /* a command without arguments matches only a rule without key; cmd NULL matches anything */
    fake_node_rule(n, &(fake_rule){.key = "foo",
                                   .times = -1,
                                   .action = FAKE_REPLY,
                                   .payload = "-ASK 3999 127.0.0.1:7002\r\n"});
    expect_text(c, REDIS_REPLY_STATUS, "PONG", "PING");
    expect_text(c, REDIS_REPLY_ERROR, "ASK 3999 127.0.0.1:7002", "GET foo");
    expect_text(c, REDIS_REPLY_ERROR, "ASK 3999 127.0.0.1:7002", "SET foo x");
    expect_nil(c, "GET fo"); /* a prefix of the key is another key: normal */
    fake_node_clear_rules(n);
    expect_text(c, REDIS_REPLY_STRING, "w", "GET foo");

    /* a payload that is a whole RESP value, given with its length */
    fake_node_rule(n, &(fake_rule){.cmd = "GET",
                                   .action = FAKE_REPLY,
                                   .payload = "$3\r\na\0b\r\nIGNORED",
                                   .payload_len = 9});
    redisReply *r = redisCommand(c, "GET foo");
    assert_non_null(r);
    assert_int_equal((size_t)r->len, 3);
    assert_memory_equal(r->str, "a\0b", 3);
    freeReplyObject(r);

    /* bad rules are refused */
    assert_int_equal(fake_node_rule(n, &(fake_rule){.action = FAKE_REPLY}), -1);
    assert_int_equal(fake_node_rule(n, &(fake_rule){.action = (fake_action)99}), -1);
    redisFree(c);
}

static void test_skip_and_times(void **state) {
    fake_node *n = *state;
    redisContext *c = client(n, 2000);
    const char *tryagain = "-TRYAGAIN Multiple keys request during rehashing of slot\r\n";
    int id = fake_node_rule(
        n, &(fake_rule){
               .cmd = "GET", .skip = 2, .times = 2, .action = FAKE_REPLY, .payload = tryagain});
    /* a later rule sees what an earlier one skips; the first that fires wins */
    int later = fake_node_rule(n, &(fake_rule){.cmd = "GET",
                                               .times = -1,
                                               .action = FAKE_REPLY,
                                               .payload = "-CLUSTERDOWN The cluster is down\r\n"});
    expect_text(c, REDIS_REPLY_ERROR, "CLUSTERDOWN The cluster is down", "GET a");
    expect_text(c, REDIS_REPLY_ERROR, "CLUSTERDOWN The cluster is down", "GET a");
    expect_text(c, REDIS_REPLY_ERROR, "TRYAGAIN Multiple keys request during rehashing of slot",
                "GET a");
    expect_text(c, REDIS_REPLY_ERROR, "TRYAGAIN Multiple keys request during rehashing of slot",
                "GET a");
    expect_text(c, REDIS_REPLY_ERROR, "CLUSTERDOWN The cluster is down", "GET a");
    assert_int_equal(fake_node_rule_fired(n, id), 2);
    assert_int_equal(fake_node_rule_fired(n, later), 3);
    fake_node_clear_rules(n);

    /* times 0 means once; -1 forever */
    id = fake_node_rule(n, &(fake_rule){.cmd = "PING",
                                        .action = FAKE_REPLY,
                                        .payload = "-LOADING Redis is loading\r\n"});
    assert_int_equal(id, 0);
    expect_text(c, REDIS_REPLY_ERROR, "LOADING Redis is loading", "PING");
    expect_text(c, REDIS_REPLY_STATUS, "PONG", "PING");
    id = fake_node_rule(
        n,
        &(fake_rule){
            .cmd = "PING", .skip = 1, .times = -1, .action = FAKE_REPLY, .payload = "+NOPE\r\n"});
    expect_text(c, REDIS_REPLY_STATUS, "PONG", "PING");
    for (int i = 0; i < 5; i++)
        expect_text(c, REDIS_REPLY_STATUS, "NOPE", "PING");
    assert_int_equal(fake_node_rule_fired(n, id), 5);
    assert_int_equal(fake_node_count(n, "PING"), 8);
    assert_int_equal(fake_node_count(n, "GET"), 5);
    assert_int_equal(fake_node_count(n, NULL), 13);
    redisFree(c);
}

static void test_close(void **state) {
    fake_node *n = *state;
    fake_node_rule(n, &(fake_rule){.cmd = "GET", .key = "x", .action = FAKE_CLOSE});
    redisContext *c = client(n, 2000);
    expect_text(c, REDIS_REPLY_STATUS, "PONG", "PING");
    expect_conn_error(c, REDIS_ERR_EOF, "GET x");
    redisFree(c);

    /* connection closed after k of n pipelined replies: the k replies arrive, then EOF */
    fake_node_rule(n, &(fake_rule){.cmd = "GET", .skip = 2, .action = FAKE_CLOSE});
    c = client(n, 2000);
    for (int i = 0; i < 4; i++)
        assert_int_equal(redisAppendCommand(c, "GET k%d", i), REDIS_OK);
    for (int i = 0; i < 2; i++) {
        redisReply *r = NULL;
        assert_int_equal(redisGetReply(c, (void **)&r), REDIS_OK);
        assert_int_equal(r->type, REDIS_REPLY_NIL);
        freeReplyObject(r);
    }
    redisReply *r = NULL;
    assert_int_equal(redisGetReply(c, (void **)&r), REDIS_ERR);
    assert_int_equal(c->err, REDIS_ERR_EOF);
    redisFree(c);
    /* GET x, then k0 k1 k2; k3 came after the close and was never processed */
    assert_int_equal(fake_node_count(n, "GET"), 4);
    assert_int_equal(fake_node_log_find(n, 0, "GET k3"), -1);
    assert_int_equal(fake_node_connections(n), 2);

    /* the node keeps serving new connections */
    c = client(n, 2000);
    expect_text(c, REDIS_REPLY_STATUS, "PONG", "PING");
    redisFree(c);
}

static void test_stall(void **state) {
    fake_node *n = *state;
    fake_node_rule(n, &(fake_rule){.cmd = "GET", .key = "slow", .action = FAKE_STALL});
    redisContext *c1 = client(n, 200);
    redisContext *c2 = client(n, 2000);
    expect_text(c1, REDIS_REPLY_STATUS, "OK", "SET slow 1");
    redisReply *r = redisCommand(c1, "GET slow");
    assert_null(r);
    assert_int_not_equal(c1->err, 0); /* REDIS_ERR_IO (0.14) or REDIS_ERR_TIMEOUT (1.x) */
    /* the stalled connection does not block the others */
    expect_text(c2, REDIS_REPLY_STATUS, "PONG", "PING");
    expect_text(c2, REDIS_REPLY_STRING, "1", "GET slow"); /* rule spent (times 0 = once) */
    redisFree(c1);
    redisFree(c2);

    /* exact bytes: the reply before the stall arrives, nothing after, and no EOF */
    fake_node_rule(n, &(fake_rule){.cmd = "GET", .key = "slow", .action = FAKE_STALL});
    int fd = raw_connect(n);
    raw_send(fd, "PING\r\nGET slow\r\nPING\r\n");
    char buf[64];
    int eof;
    raw_read(fd, buf, sizeof(buf), sizeof(buf), 300, &eof);
    assert_string_equal(buf, "+PONG\r\n");
    assert_false(eof);
    /* commands on a stalled connection are still received and logged, but never answered */
    raw_send(fd, "SET a b\r\n");
    raw_read(fd, buf, sizeof(buf), sizeof(buf), 200, &eof);
    assert_string_equal(buf, "");
    assert_false(eof);
    assert_int_equal(fake_node_count(n, "SET"), 2);
    close(fd);
}

static void test_partial_close(void **state) {
    fake_node *n = *state;
    fake_node_rule(
        n, &(fake_rule){
               .cmd = "GET", .times = -1, .action = FAKE_PARTIAL_CLOSE, .payload = "$10\r\nabc"});
    int fd = raw_connect(n);
    raw_send(fd, "PING\r\nGET x\r\nPING\r\n");
    char buf[64];
    int eof;
    raw_read(fd, buf, sizeof(buf), sizeof(buf), 2000, &eof);
    assert_string_equal(buf, "+PONG\r\n$10\r\nabc");
    assert_true(eof);
    close(fd);

    redisContext *c = client(n, 2000);
    expect_conn_error(c, REDIS_ERR_EOF, "GET x");
    redisFree(c);
}

static void test_garbage(void **state) {
    fake_node *n = *state;
    fake_node_rule(
        n, &(fake_rule){
               .cmd = "PING", .times = 1, .action = FAKE_GARBAGE, .payload = "%%%garbage\r\n"});
    int fd = raw_connect(n);
    raw_send(fd, "PING\r\nPING\r\n");
    char buf[64];
    int eof;
    const char *want = "%%%garbage\r\n+PONG\r\n";
    raw_read(fd, buf, sizeof(buf), strlen(want), 2000, &eof);
    assert_string_equal(buf, want);
    raw_send(fd, "GET k\r\n"); /* the node kept going on that connection */
    raw_read(fd, buf, sizeof(buf), 5, 2000, &eof);
    assert_string_equal(buf, "$-1\r\n");
    close(fd);

    fake_node_rule(
        n, &(fake_rule){.cmd = "GET", .action = FAKE_GARBAGE, .payload = "@@@ not resp\r\n"});
    redisContext *c = client(n, 2000);
    expect_conn_error(c, REDIS_ERR_PROTOCOL, "GET k");
    redisFree(c);
}

static uint64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* FAKE_DELAY: the reply is held (the replies after it on its connection wait behind it, other
 * connections do not), for delay_ms or until fake_node_release(); the commands behind it are
 * still read and answered, in order. */
static void test_delay(void **state) {
    fake_node *n = *state;
    /* until released: nothing of it, nor of what follows, goes before the release */
    int id = fake_node_rule(n, &(fake_rule){.cmd = "GET",
                                            .key = "held",
                                            .action = FAKE_DELAY,
                                            .payload = "-MOVED 1 127.0.0.1:1\r\n",
                                            .delay_ms = -1});
    assert_int_ge(id, 0);
    int fd = raw_connect(n);
    raw_send(fd, "PING\r\nGET held\r\nSET k v\r\nGET k\r\n");
    char buf[128];
    int eof;
    raw_read(fd, buf, sizeof(buf), sizeof(buf), 300, &eof);
    assert_string_equal(buf, "+PONG\r\n");
    assert_false(eof);
    assert_int_equal(fake_node_count(n, "SET"), 1); /* read and answered behind the hold */
    assert_int_equal(fake_node_rule_fired(n, id), 1);
    redisContext *c = client(n, 2000); /* another connection is not held */
    expect_text(c, REDIS_REPLY_STRING, "v", "GET k");
    fake_node_release(n);
    const char *want = "-MOVED 1 127.0.0.1:1\r\n+OK\r\n$1\r\nv\r\n";
    raw_read(fd, buf, sizeof(buf), strlen(want), 2000, &eof);
    assert_string_equal(buf, want);

    /* a hold made after a release waits for the next one; without a payload it holds the
     * normal answer */
    fake_node_rule(n, &(fake_rule){.cmd = "GET", .key = "k", .action = FAKE_DELAY, .delay_ms = -1});
    raw_send(fd, "GET k\r\nPING\r\n");
    raw_read(fd, buf, sizeof(buf), sizeof(buf), 200, &eof);
    assert_string_equal(buf, "");
    fake_node_release(n);
    want = "$1\r\nv\r\n+PONG\r\n";
    raw_read(fd, buf, sizeof(buf), strlen(want), 2000, &eof);
    assert_string_equal(buf, want);

    /* timed: it goes by itself, no earlier than delay_ms after the command came */
    fake_node_rule(n,
                   &(fake_rule){.cmd = "GET", .key = "k", .action = FAKE_DELAY, .delay_ms = 250});
    uint64_t t0 = mono_ms();
    raw_send(fd, "GET k\r\nPING\r\n");
    raw_read(fd, buf, sizeof(buf), strlen(want), 5000, &eof);
    assert_string_equal(buf, want);
    assert_int_ge(mono_ms() - t0, 250);
    close(fd);
    redisFree(c);

    /* delay_ms is > 0 or -1 */
    assert_int_equal(fake_node_rule(n, &(fake_rule){.action = FAKE_DELAY}), -1);
    assert_int_equal(fake_node_rule(n, &(fake_rule){.action = FAKE_DELAY, .delay_ms = -2}), -1);
}

/* ---- introspection -------------------------------------------------------------------------- */

static void test_log(void **state) {
    fake_node *n = *state;
    redisContext *c1 = client(n, 2000);
    redisContext *c2 = client(n, 2000);
    expect_text(c1, REDIS_REPLY_STATUS, "OK", "SET foo bar");
    expect_text(c1, REDIS_REPLY_STATUS, "OK", "ASKING");
    expect_nil(c2, "GET other");
    expect_text(c1, REDIS_REPLY_STRING, "bar", "GET foo");
    expect_text(c2, REDIS_REPLY_STRING, "bar", "GET foo");
    char big[200];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    expect_text(c2, REDIS_REPLY_STATUS, "OK", "SET big %s", big);

    char line[256];
    assert_int_equal(fake_node_log_len(n), 6);
    assert_int_equal(fake_node_log(n, 0, line, sizeof(line)), 1);
    assert_string_equal(line, "SET foo bar");
    assert_int_equal(fake_node_log(n, 1, line, sizeof(line)), 1);
    assert_string_equal(line, "ASKING");
    assert_int_equal(fake_node_log(n, 2, line, sizeof(line)), 2);
    assert_string_equal(line, "GET other");
    assert_int_equal(fake_node_log(n, 3, line, sizeof(line)), 1);
    assert_string_equal(line, "GET foo");
    assert_int_equal(fake_node_log(n, 5, line, sizeof(line)), 2);
    assert_int_equal(strlen(line), strlen("SET big ") + 64 + 3);
    assert_string_equal(line + strlen(line) - 4, "x...");
    assert_int_equal(fake_node_log(n, 6, line, sizeof(line)), -1);
    assert_int_equal(fake_node_log(n, 0, line, 4), 1); /* truncated, still terminated */
    assert_string_equal(line, "SET");

    /* ASKING right before GET foo on the same connection, even with c2's GET in between */
    assert_int_equal(fake_node_log_find(n, 0, "GET foo"), 3);
    assert_int_equal(fake_node_log_find(n, 4, "GET foo"), 4);
    assert_int_equal(fake_node_log_find(n, 5, "GET foo"), -1);
    assert_int_equal(fake_node_log_follows(n, "ASKING", "GET foo"), 1);
    assert_int_equal(fake_node_log_follows(n, "GET other", "GET foo"), 1);
    assert_int_equal(fake_node_log_follows(n, "SET foo bar", "GET foo"), 0);
    assert_int_equal(fake_node_count(n, "get"), 3);
    assert_int_equal(fake_node_count(n, "Asking"), 1);
    assert_int_equal(fake_node_count(n, "DEL"), 0);
    assert_int_equal(fake_node_connections(n), 2);
    redisFree(c1);
    redisFree(c2);
}

typedef struct worker {
    fake_node *node;
    int ok;
} worker;

/* Each worker has its own connection; the node must interleave them without losing an INCR. */
static void *incr_worker(void *arg) {
    worker *w = arg;
    struct timeval tv = {.tv_sec = 2};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", fake_node_port(w->node), tv);
    if (c == NULL || c->err || redisSetTimeout(c, tv) != REDIS_OK)
        return NULL;
    for (int i = 0; i < 500; i++) {
        /* pipelines of 10 so both connections have requests in flight at once */
        for (int j = 0; j < 10; j++)
            redisAppendCommand(c, "INCR shared");
        for (int j = 0; j < 10; j++) {
            redisReply *r = NULL;
            if (redisGetReply(c, (void **)&r) != REDIS_OK)
                goto out;
            w->ok += r->type == REDIS_REPLY_INTEGER;
            freeReplyObject(r);
        }
    }
out:
    redisFree(c);
    return NULL;
}

static void test_two_connections_concurrently(void **state) {
    fake_node *n = *state;
    worker w[2] = {{.node = n}, {.node = n}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, incr_worker, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(w[0].ok, 5000);
    assert_int_equal(w[1].ok, 5000);
    redisContext *c = client(n, 2000);
    expect_text(c, REDIS_REPLY_STRING, "10000", "GET shared");
    redisFree(c);
    assert_int_equal(fake_node_count(n, "INCR"), 10000);
    assert_int_equal(fake_node_connections(n), 3);
}

/* ---- cluster replies ------------------------------------------------------------------------ */

static void assert_bulk(const redisReply *r, const char *s) {
    assert_int_equal(r->type, REDIS_REPLY_STRING);
    assert_string_equal(r->str, s);
}

static void assert_integer(const redisReply *r, long long v) {
    assert_int_equal(r->type, REDIS_REPLY_INTEGER);
    assert_int_equal(r->integer, v);
}

static void test_cluster_slots(void **state) {
    fake_node *n = *state;
    const int start[] = {0, 5461, 10923};
    const int end[] = {5460, 10922, 16383};
    const int ports[] = {7000, 7001, 7000};
    char buf[4096];
    int len = fake_cluster_slots(buf, sizeof(buf), 3, start, end, ports);
    assert_int_gt(len, 0);
    assert_int_equal((size_t)len, strlen(buf));
    assert_int_equal(fake_cluster_slots(buf, 20, 3, start, end, ports), -1);
    len = fake_cluster_slots(buf, sizeof(buf), 3, start, end, ports);
    assert_int_equal(fake_node_set_cluster_reply(n, "slots", buf), 0);

    char id[41];
    assert_string_equal(fake_node_id(id, 7001), "0000000000000000000000000000000000007001");
    redisContext *c = client(n, 2000);
    redisReply *r = redisCommand(c, "CLUSTER SLOTS");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 3);
    for (size_t i = 0; i < 3; i++) {
        redisReply *e = r->element[i];
        assert_int_equal(e->elements, 3);
        assert_integer(e->element[0], start[i]);
        assert_integer(e->element[1], end[i]);
        redisReply *m = e->element[2];
        assert_int_equal(m->elements, 4);
        assert_bulk(m->element[0], "127.0.0.1");
        assert_integer(m->element[1], ports[i]);
        assert_bulk(m->element[2], fake_node_id(id, ports[i]));
        assert_int_equal(m->element[3]->type, REDIS_REPLY_ARRAY);
        assert_int_equal(m->element[3]->elements, 0);
    }
    freeReplyObject(r);
    assert_int_equal(fake_node_set_cluster_reply(n, "SLOTS", NULL), 0);
    expect_text(c, REDIS_REPLY_ERROR, "ERR This instance has cluster support disabled",
                "CLUSTER SLOTS");
    assert_int_equal(fake_node_set_cluster_reply(n, "NODES", "+x\r\n"), -1);
    redisFree(c);
}

static void test_cluster_shards(void **state) {
    fake_node *n = *state;
    const int start[] = {0, 5461, 10923};
    const int end[] = {5460, 10922, 16383};
    const int ports[] = {7000, 7001, 7000};
    char buf[4096];
    assert_int_gt(fake_cluster_shards(buf, sizeof(buf), 3, start, end, ports), 0);
    assert_int_equal(fake_node_set_cluster_reply(n, "Shards", buf), 0);

    redisContext *c = client(n, 2000);
    redisReply *r = redisCommand(c, "CLUSTER SHARDS");
    assert_non_null(r);
    assert_int_equal(r->type, REDIS_REPLY_ARRAY);
    assert_int_equal(r->elements, 2); /* one shard per port */
    const int want_ports[] = {7000, 7001};
    const size_t want_slots[] = {4, 2};
    for (size_t i = 0; i < 2; i++) {
        redisReply *s = r->element[i];
        assert_int_equal(s->elements, 4);
        assert_bulk(s->element[0], "slots");
        assert_int_equal(s->element[1]->elements, want_slots[i]);
        assert_bulk(s->element[2], "nodes");
        assert_int_equal(s->element[3]->elements, 1);
        redisReply *nd = s->element[3]->element[0];
        assert_int_equal(nd->elements, 14);
        char id[41];
        assert_bulk(nd->element[0], "id");
        assert_bulk(nd->element[1], fake_node_id(id, want_ports[i]));
        assert_bulk(nd->element[2], "port");
        assert_integer(nd->element[3], want_ports[i]);
        assert_bulk(nd->element[4], "ip");
        assert_bulk(nd->element[5], "127.0.0.1");
        assert_bulk(nd->element[6], "endpoint");
        assert_bulk(nd->element[7], "127.0.0.1");
        assert_bulk(nd->element[8], "role");
        assert_bulk(nd->element[9], "master");
        assert_bulk(nd->element[10], "replication-offset");
        assert_integer(nd->element[11], 0);
        assert_bulk(nd->element[12], "health");
        assert_bulk(nd->element[13], "online");
    }
    redisReply *slots0 = r->element[0]->element[1];
    assert_integer(slots0->element[0], 0);
    assert_integer(slots0->element[1], 5460);
    assert_integer(slots0->element[2], 10923);
    assert_integer(slots0->element[3], 16383);
    freeReplyObject(r);

    /* a rule can still fail the command (a client falling back to CLUSTER SLOTS) */
    fake_node_rule(n, &(fake_rule){.cmd = "CLUSTER",
                                   .key = "SHARDS",
                                   .action = FAKE_REPLY,
                                   .payload = "-ERR unknown subcommand 'SHARDS'\r\n"});
    expect_text(c, REDIS_REPLY_ERROR, "ERR unknown subcommand 'SHARDS'", "CLUSTER SHARDS");
    redisFree(c);
    assert_int_equal(fake_cluster_shards(buf, 50, 3, start, end, ports), -1);
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

static void test_quit_and_stop(void **state) {
    (void)state;
    fake_node *n = fake_node_start();
    assert_non_null(n);
    int port = fake_node_port(n);
    assert_int_gt(port, 0);
    redisContext *c = client(n, 2000);
    expect_text(c, REDIS_REPLY_STATUS, "OK", "QUIT");
    expect_conn_error(c, REDIS_ERR_EOF, "PING");
    redisFree(c);

    /* stalled and open connections do not keep stop from returning; clients then see EOF */
    fake_node_rule(n, &(fake_rule){.action = FAKE_STALL});
    redisContext *stalled = client(n, 100);
    assert_null(redisCommand(stalled, "PING"));
    c = client(n, 2000);
    fake_node_stop(n);
    assert_null(redisCommand(c, "PING")); /* EOF, or a reset if our write raced the close */
    assert_int_not_equal(c->err, 0);
    redisFree(c);
    redisFree(stalled);

    /* the port now refuses: "node down" */
    struct timeval tv = {.tv_sec = 2};
    c = redisConnectWithTimeout("127.0.0.1", port, tv);
    assert_non_null(c);
    assert_int_not_equal(c->err, 0);
    redisFree(c);
    fake_node_stop(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_default_commands, setup, teardown),
        cmocka_unit_test_setup_teardown(test_inline_pipelined_and_split, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rule_reply, setup, teardown),
        cmocka_unit_test_setup_teardown(test_skip_and_times, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stall, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_garbage, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_connections_concurrently, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_slots, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_shards, setup, teardown),
        cmocka_unit_test(test_quit_and_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
