/* SPDX-License-Identifier: BSD-3-Clause
 *
 * CPU lists both ways (util/cpuset.h) and the --cpus / --proxy-placement grammar with its
 * warnings (compare/placement.h): what the user types, what is pinned, what the report warns
 * about. No processes. Single-threaded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "compare/placement.h"
#include "util/cpuset.h"

#include <string.h>

static void roundtrip(const char *in, const char *want) {
    cpu_set_t s;
    char buf[128];
    assert_int_equal(cp__cpuset_parse(in, &s), 0);
    cp__cpuset_format(&s, buf, sizeof(buf));
    assert_string_equal(buf, want);
}

static void test_lists(void **state) {
    (void)state;
    roundtrip("0", "0");
    roundtrip("3,1,2", "1-3");
    roundtrip("0-2,5,7-8", "0-2,5,7-8");
    cpu_set_t s;
    const char *bad[] = {"", "a", "1-", "3-1", "1,,2", "1,", "-1", "99999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(cp__cpuset_parse(bad[i], &s), -22);
}

static void fmt(const cpu_set_t *s, char *buf) {
    cp__cpuset_format(s, buf, 64);
}

static void test_spec(void **state) {
    (void)state;
    cp__placement p;
    char err[256], buf[64];
    cp__placement_init(&p);
    assert_int_equal(cp__placement_parse(&p, "redis=0,2,client=1,proxy=3-4", err, sizeof(err)), 0);
    fmt(&p.redis, buf);
    assert_string_equal(buf, "0,2");
    fmt(&p.client, buf);
    assert_string_equal(buf, "1");
    fmt(&p.proxy, buf);
    assert_string_equal(buf, "3-4");
    assert_true(p.proxy_explicit);

    /* 2core: the servers on 0, the rest on 1; the side moves the proxies */
    cp__placement_init(&p);
    assert_int_equal(cp__placement_parse(&p, "2core", err, sizeof(err)), 0);
    assert_int_equal(cp__placement_parse_side(&p, "clients", err, sizeof(err)), 0);
    /* what the side decides (resolve also checks the CPUs are usable: 2core needs two) */
    cp__placement q = p;
    if (cp__placement_resolve(&q, err, sizeof(err)) == 0) {
        fmt(&q.proxy, buf);
        assert_string_equal(buf, "1");
    }
    cp__placement_init(&p);
    assert_int_equal(cp__placement_parse(&p, "2core", err, sizeof(err)), 0);
    q = p;
    if (cp__placement_resolve(&q, err, sizeof(err)) == 0) {
        fmt(&q.proxy, buf);
        assert_string_equal(buf, "0");
    }

    const char *bad[] = {"", "redis", "redis=", "redis=x", "cpu=1", "redis=0,redis=1", "0,1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cp__placement_init(&p);
        assert_int_equal(cp__placement_parse(&p, bad[i], err, sizeof(err)), -1);
    }
    assert_int_equal(cp__placement_parse_side(&p, "sidecar", err, sizeof(err)), -1);
}

static int has_line(char (*lines)[256], int n, const char *part) {
    for (int i = 0; i < n; i++)
        if (strstr(lines[i], part) != NULL)
            return 1;
    return 0;
}

static void test_warnings(void **state) {
    (void)state;
    cp__placement p;
    char err[256], lines[8][256];
    cp__placement_init(&p);
    assert_int_equal(cp__placement_parse(&p, "redis=0-3,proxy=2,client=4-7", err, sizeof(err)), 0);
    int n = cp__placement_warnings(&p, 4, 4, 4, lines, 8);
    assert_true(has_line(lines, n, "redis and proxy overlap on CPU 2"));
    assert_true(has_line(lines, n, "4 nutcracker processes (twemproxy only) share 1 CPU"));
    assert_false(has_line(lines, n, "client threads"));
    assert_false(has_line(lines, n, "not pinned"));

    /* the proxies sharing the servers' CPUs because the user said so is not an overlap */
    cp__placement_init(&p);
    assert_int_equal(cp__placement_parse(&p, "redis=0-3,client=4-7", err, sizeof(err)), 0);
    p.proxy = p.redis;
    p.has_proxy = 1;
    n = cp__placement_warnings(&p, 4, 4, 4, lines, 8);
    assert_int_equal(n, 0);

    cp__placement_init(&p);
    assert_int_equal(cp__placement_parse(&p, "client=1", err, sizeof(err)), 0);
    n = cp__placement_warnings(&p, 4, 4, 4, lines, 8);
    assert_true(has_line(lines, n, "redis is not pinned"));
    assert_true(has_line(lines, n, "4 client threads share 1 CPU"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lists),
        cmocka_unit_test(test_spec),
        cmocka_unit_test(test_warnings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
