/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Host names and IPv6 on real servers (issue 31, point 6). A host name is resolved on the
 * client's loop (c-ares; docs/async.md, "Nothing blocks"), and every call the loop makes into
 * the library is timed (calltime.h): none may block, also while a DNS server never answers.
 *
 * - blackhole_*: the DNS server is a UDP socket of this test on 127.0.0.1 that never replies
 *   (dns_servers): the resolution ends at the connect timeout, CP_ETIMEDOUT, with a message
 *   naming the host, on an event-loop client and on a blocking one; a client freed while its
 *   query is under way leaves nothing behind.
 * - hostname_cluster: a cluster whose nodes announce `localhost` (cluster-announce-hostname,
 *   cluster-preferred-endpoint-type hostname, set at run time): the map, the seeds and a MOVED
 *   all name `localhost`, each connection resolved through c-ares (cp_stats.resolved) from the
 *   hosts file; the DNS server is the black hole, so nothing leaves the machine.
 * - ipv6_cluster: a cluster bound to ::1 only (cp_up_opts.host): seeds "[::1]:p", the map and a
 *   MOVED name "::1", no name is resolved. Skipped, saying why, only when ::1 cannot be bound.
 *
 * Processes: the fixtures' redis-servers, by PID. One thread.
 */
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "asserts.h"
#include "calltime.h"
#include "clusterpipe/clusterpipe.h"
#include "fixture.h"
#include "testutil.h"
#include "util/clock.h"

/* The calls being timed (run_until_idle), NULL when none. Each of its runs turns the loop at
 * least once, so a test that ran it three times (exercise) timed more than 2 calls. */
static calltime *tl_calls;

/* ---- a DNS server that never answers ------------------------------------------------------ */

typedef struct blackhole {
    int fd;
    char servers[64]; /* "127.0.0.1:port" for dns_servers */
} blackhole;

static void blackhole_open(blackhole *b) {
    b->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_int_ge(b->fd, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(b->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    socklen_t len = sizeof(sa);
    assert_int_equal(getsockname(b->fd, (struct sockaddr *)&sa, &len), 0);
    snprintf(b->servers, sizeof(b->servers), "127.0.0.1:%d", ntohs(sa.sin_port));
}

/* Queries that reached it (each read and dropped: the server never replies). */
static int blackhole_drain(blackhole *b) {
    char buf[512];
    int n = 0;
    while (recv(b->fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
        n++;
    return n;
}

/* Options of a client whose DNS server is b, opened here: a 300 ms connect timeout, no
 * retries (one resolution per command). */
static cp_options blackhole_options(blackhole *b) {
    blackhole_open(b);
    cp_options o = CP_OPTIONS_INIT;
    o.dns_servers = b->servers;
    o.connect_timeout_ms = 300;
    o.retry_budget_ms = CP_RETRY_NONE;
    return o;
}

/* ---- async commands on a cp_loop -------------------------------------------------------- */

typedef struct result {
    int calls;
    cp_outcome outcome;
    int err;
    char errstr[CP_ERRSTR_LEN];
    char value[64];
} result;

static void on_reply(cp_client *c, const cp_response *r, void *privdata) {
    (void)c;
    result *res = privdata;
    res->calls++;
    res->outcome = r->outcome;
    res->err = r->err;
    snprintf(res->errstr, sizeof(res->errstr), "%s", r->errstr ? r->errstr : "");
    if (r->reply != NULL && r->reply->type == REDIS_REPLY_STRING)
        snprintf(res->value, sizeof(res->value), "%.*s", (int)r->reply->len, r->reply->str);
}

/* Turns the loop until the client has nothing pending (or 20 s: then the test fails). Each
 * turn is one call into the library that never waits (cp_loop_run_once with 0 ms), timed
 * when a calltime is set; the test paces the turns 1 ms apart outside them. */
static void run_until_idle(cp_loop *l, cp_client *c) {
    uint64_t until = cp__now_ns() + 20000000000ull;
    while (cp_pending(c) > 0) {
        assert_int_lt(cp__now_ns(), until);
        calltimer t;
        if (tl_calls != NULL)
            calltime_begin(tl_calls, &t);
        int rc = cp_loop_run_once(l, 0);
        if (tl_calls != NULL)
            calltime_end(tl_calls, &t);
        assert_int_ge(rc, 0);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

static void blackhole_async(void **state) {
    (void)state;
    blackhole b;
    cp_options o = blackhole_options(&b);
    o.endpoint = "blackhole.test:6379";
    cp_test_protocol(&o);
    cp_client *c = cp_client_new(&o);
    assert_int_equal(c->err, 0);
    cp_loop *l = cp_loop_new();
    calltime k = {0};
    tl_calls = &k;
    assert_int_equal(cp_loop_attach(l, c), 0);
    result res = {0};
    uint64_t t0 = cp__now_ns();
    assert_int_equal(cp_async_command(c, on_reply, &res, "GET k"), 0);
    run_until_idle(l, c);
    double ms = (double)(cp__now_ns() - t0) / 1e6;
    tl_calls = NULL;
    print_message("resolution black-holed: ended after %.0f ms: %s\n", ms, res.errstr);
    assert_int_equal(res.calls, 1);
    assert_int_equal(res.outcome, CP_NOT_EXECUTED);
    assert_int_equal(res.err, CP_ETIMEDOUT);
    assert_contains(res.errstr, "resolving blackhole.test timed out");
    assert_double_ge(ms, 300.0);
    assert_int_ge(blackhole_drain(&b), 1); /* c-ares did ask it */
    cp_stats st;
    cp_get_stats(c, &st);
    assert_int_equal(st.resolved, 0);
    calltime_assert_never_blocked(&k, 2, CALLTIME_ASSERTED, "cp_loop, black-holed DNS");
    cp_free(c);
    cp_loop_free(l);
    close(b.fd);
}

static void blackhole_blocking(void **state) {
    (void)state;
    blackhole b;
    cp_options o = blackhole_options(&b);
    o.seeds = "blackhole.test:7000";
    uint64_t t0 = cp__now_ns();
    cp_test_protocol(&o);
    cp_client *c = cp_connect(&o);
    double ms = (double)(cp__now_ns() - t0) / 1e6;
    print_message("cp_connect, black-holed: %.0f ms: %s\n", ms, c->errstr);
    assert_int_not_equal(c->err, 0);
    assert_contains(c->errstr, "resolving blackhole.test timed out");
    assert_double_ge(ms, 300.0);
    cp_free(c);
    close(b.fd);
}

/* A client freed while its query waits: the query ends with it (ASan's leak check and the
 * loop's own: nothing is left registered). */
static void blackhole_free_while_resolving(void **state) {
    (void)state;
    blackhole b;
    cp_options o = blackhole_options(&b);
    o.endpoint = "blackhole.test:6379";
    o.connect_timeout_ms = 0; /* the default, 2 s: the free comes long before */
    cp_test_protocol(&o);
    cp_client *c = cp_client_new(&o);
    cp_loop *l = cp_loop_new();
    assert_int_equal(cp_loop_attach(l, c), 0);
    result res = {0};
    assert_int_equal(cp_async_command(c, on_reply, &res, "GET k"), 0);
    for (int i = 0; i < 5; i++) /* the query goes out */
        assert_int_ge(cp_loop_run_once(l, 10), 0);
    assert_int_ge(blackhole_drain(&b), 1);
    cp_free(c);
    assert_int_equal(res.calls, 1);
    assert_int_equal(res.err, CP_ECANCELED);
    assert_int_equal(cp_loop_run_once(l, 0), 0); /* nothing registered is left to wait for */
    cp_loop_free(l);
    close(b.fd);
}

/* ---- real clusters ------------------------------------------------------------------------- */

static void pipeline_done(cp_pipeline *p, void *privdata) {
    (void)p;
    *(int *)privdata = 1;
}

/* Every node of the client's map is host. */
static void assert_hosts(cp_client *c, const char *host, int min_nodes) {
    int masters = 0;
    for (int i = 0; i < cp_node_count(c); i++) {
        cp_node_info ni;
        assert_int_equal(cp_node_get(c, i, &ni), 0);
        assert_string_equal(ni.host, host);
        masters += ni.role == CP_NODE_MASTER;
    }
    assert_int_ge(masters, min_nodes);
}

/* SETs then GETs n keys on an event-loop client, timed; then one SET routed by a wrong slot,
 * which the server answers with a MOVED naming its node as the map does. Frees c; its
 * counters in *st, every node of its map checked to be host. */
static void exercise(cp_client *c, calltime *k, int n, const char *host, cp_stats *st) {
    cp_loop *l = cp_loop_new();
    tl_calls = k;
    assert_int_equal(cp_loop_attach(l, c), 0);
    result *res = calloc((size_t)n, sizeof(*res));
    assert_non_null(res);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            char key[32], val[32];
            snprintf(key, sizeof(key), "dns:%d", i);
            snprintf(val, sizeof(val), "v%d", i);
            int rc = pass == 0 ? cp_async_command(c, on_reply, &res[i], "SET %s %s", key, val)
                               : cp_async_command(c, on_reply, &res[i], "GET %s", key);
            assert_int_equal(rc, 0);
        }
        run_until_idle(l, c);
        for (int i = 0; i < n; i++) {
            char val[32];
            snprintf(val, sizeof(val), "v%d", i);
            assert_int_equal(res[i].outcome, CP_DONE);
            if (pass == 1)
                assert_string_equal(res[i].value, val);
        }
    }
    /* A wrong slot: MOVED, followed to the node the server names. */
    cp_pipeline *p = cp_pipeline_new(c);
    const char *argv[] = {"SET", "dns:moved", "1"};
    unsigned right = cp_keyslot("dns:moved", 9);
    assert_int_equal(cp_append_argv_slot(p, 3, argv, NULL, (int)((right + 8192) % CP_SLOTS)), 0);
    int done = 0;
    assert_int_equal(cp_exec_async(p, pipeline_done, &done), 0);
    run_until_idle(l, c);
    assert_int_equal(cp_get_outcome(p, 0), CP_DONE);
    cp_pipeline_free(p);
    tl_calls = NULL;
    free(res);
    assert_int_equal(done, 1);
    cp_get_stats(c, st);
    assert_int_ge(st->moved, 1);
    assert_hosts(c, host, 3);
    cp_free(c);
    cp_loop_free(l);
}

static void hostname_cluster(void **state) {
    cp_fixture *f = *state;
    cp_fixture_announce(f, "localhost");
    blackhole b;
    blackhole_open(&b);
    char seeds[64];
    snprintf(seeds, sizeof(seeds), "localhost:%d",
             cp_topo_proc(f->topo, cp_fixture_master(f, 0))->port);
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = seeds;
    o.dns_servers = b.servers; /* a name the hosts file lacks would ask here, never outside */
    cp_test_protocol(&o);
    cp_client *c = cp_client_new(&o);
    assert_int_equal(c->err, 0);
    calltime k = {0};
    cp_stats st;
    exercise(c, &k, 300, "localhost", &st);
    print_message("hostname cluster: %llu names resolved; %d queries reached the DNS server; "
                  "%llu MOVED\n",
                  (unsigned long long)st.resolved, blackhole_drain(&b),
                  (unsigned long long)st.moved);
    /* One per connection: each master's (the seed, localhost:p0, is one of them). */
    assert_int_ge(st.resolved, 3);
    calltime_assert_never_blocked(&k, 2, CALLTIME_ASSERTED, "cp_loop, host names");
    close(b.fd);
}

static void ipv6_cluster(void **state) {
    cp_fixture *f = *state;
    if (f == NULL) {
        skip();
        return;
    }
    print_message("seeds %s\n", f->endpoints);
    assert_contains(f->endpoints, "[::1]:");
    cp_options o = CP_OPTIONS_INIT;
    o.seeds = f->endpoints;
    cp_test_protocol(&o);
    cp_client *c = cp_client_new(&o);
    assert_int_equal(c->err, 0);
    calltime k = {0};
    cp_stats st;
    exercise(c, &k, 300, "::1", &st);
    assert_int_equal(st.resolved, 0);
    cp_client *b = cp_fixture_client(f, NULL); /* blocking, the same map */
    assert_hosts(b, "::1", 3);
    redisReply *r = cp_command(b, "GET dns:2");
    assert_non_null(r);
    assert_string_equal(r->str, "v2");
    cp_reply_free(r);
    cp_get_stats(b, &st);
    assert_int_equal(st.resolved, 0); /* numeric: never resolved */
    cp_free(b);
    calltime_assert_never_blocked(&k, 2, CALLTIME_ASSERTED, "cp_loop, ::1");
}

/* prefer_ip on a name with both families: a hosts file (c-ares reads the one CARES_HOSTS names)
 * gives "both.cp.test" 127.0.0.1 and ::1, a redis-server listens on 127.0.0.1:P and this test on
 * [::1]:P, so the address each connection took shows: CP_PREFER_IPV4 gets the server's PONG and
 * never reaches the test's socket; CP_PREFER_IPV6 reaches the test's socket first (accepted, never
 * answered: the command times out). Skipped, saying why, when ::1 cannot be bound. */
static void prefer_ip_orders_families(void **state) {
    cp_fixture *f = *state;
    int port = cp_topo_proc(f->topo, cp_fixture_master(f, 0))->port;
    int v6 = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    sa.sin6_addr = in6addr_loopback;
    int one = 1;
    if (v6 >= 0)
        setsockopt(v6, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (v6 < 0 || bind(v6, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(v6, 8) != 0) {
        print_message("skipped: cannot listen on [::1]:%d (%s)\n", port, strerror(errno));
        if (v6 >= 0)
            close(v6);
        skip();
        return;
    }
    char *dir = cp_test_mkdtemp("hosts");
    char hosts[512];
    snprintf(hosts, sizeof(hosts), "%s/hosts", dir);
    FILE *fp = fopen(hosts, "w");
    assert_non_null(fp);
    fprintf(fp, "127.0.0.1 both.cp.test\n::1 both.cp.test\n");
    fclose(fp);
    setenv("CARES_HOSTS", hosts, 1);
    blackhole b;
    cp_options o = blackhole_options(&b); /* nothing leaves the machine */
    char ep[64];
    snprintf(ep, sizeof(ep), "both.cp.test:%d", port);
    o.endpoint = ep;
    o.io_timeout_ms = 300;
    o.connect_timeout_ms = 2000;
    cp_test_protocol(&o);
    o.prefer_ip = CP_PREFER_IPV4;
    cp_client *c = cp_connect(&o);
    if (c->err != 0)
        fail_msg("prefer IPv4: %s", c->errstr);
    redisReply *r = cp_command(c, "PING");
    assert_non_null(r);
    assert_string_equal(r->str, "PONG");
    cp_reply_free(r);
    cp_free(c);
    int got = accept(v6, NULL, NULL);
    assert_int_lt(got, 0); /* the IPv6 address was never tried */
    o.prefer_ip = CP_PREFER_IPV6;
    c = cp_connect(&o);
    r = c->err == 0 ? cp_command(c, "PING") : NULL;
    print_message("prefer IPv6: %s: %s\n", cp_err_name(c->err), r == NULL ? c->errstr : r->str);
    assert_null(r); /* the test's socket answers nothing, and the error says so */
    assert_contains(c->errstr, "both.cp.test");
    got = accept(v6, NULL, NULL);
    assert_int_ge(got, 0); /* ... and it is where the connection went */
    close(got);
    cp_free(c);
    unsetenv("CARES_HOSTS");
    close(v6);
    close(b.fd);
    unlink(hosts);
    rmdir(dir);
    free(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(blackhole_async),
        cmocka_unit_test(blackhole_blocking),
        cmocka_unit_test(blackhole_free_while_resolving),
        cmocka_unit_test_setup_teardown(hostname_cluster, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(ipv6_cluster, cp_fixture_setup_cluster3_v6,
                                        cp_fixture_teardown),
        cmocka_unit_test_setup_teardown(prefer_ip_orders_families, cp_fixture_setup_cluster3,
                                        cp_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
