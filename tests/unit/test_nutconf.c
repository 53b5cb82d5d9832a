/* SPDX-License-Identifier: BSD-3-Clause
 *
 * nutcracker's configuration read for its servers (src/migrate/nutconf.h): the file clusterpipe
 * writes (named servers, a quoted redis_auth with an apostrophe), two pools with a server in
 * both, comments and blank lines, and what is refused: an entry that is not host:port:weight, a
 * port out of range, a file without servers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "asserts.h"

#include "migrate/nutconf.h"

static void reads_every_pools_servers(void **state) {
    (void)state;
    static const char yml[] = "# Written by clusterpipe\n"
                              "clusterpipe:\n"
                              "  listen: 127.0.0.1:22121\n"
                              "  hash: fnv1a_64\n"
                              "  redis: true\n"
                              "  redis_auth: 'it''s secret'\n"
                              "  servers:\n"
                              "   - 127.0.0.1:7001:1 shard0\n"
                              "   - 127.0.0.1:7002:1 shard1\n"
                              "\n"
                              "other:\n"
                              "  listen: 127.0.0.1:22122\n"
                              "  redis_auth: \"not this one\"\n"
                              "  servers:\n"
                              "  # a comment inside the list\n"
                              "  - 10.0.0.5:6379:2\n"
                              "  - 127.0.0.1:7002:1 shard1\n"
                              "  timeout: 400\n"
                              "  - 127.0.0.1:9999:1 after-the-list-ended\n";
    static cp__nutconf c;
    char err[256] = "";
    assert_int_equal(cp__nutconf_parse(yml, &c, err, sizeof err), 0);
    assert_int_equal(c.n, 3);
    assert_string_equal(c.host[0], "127.0.0.1");
    assert_int_equal(c.port[0], 7001);
    assert_int_equal(c.port[1], 7002);
    assert_string_equal(c.host[2], "10.0.0.5");
    assert_int_equal(c.port[2], 6379);
    assert_int_equal(c.has_password, 1);
    assert_string_equal(c.password, "it's secret");
}

static void refuses_what_is_not_a_server_list(void **state) {
    (void)state;
    static const struct {
        const char *yml, *says;
    } cases[] = {
        {"p:\n  servers:\n   - 127.0.0.1:7001\n",
         "line 3: '127.0.0.1:7001' is not host:port:weight"},
        {"p:\n  servers:\n   - 127.0.0.1:0:1\n", "is not host:port:weight"},
        {"p:\n  servers:\n   - 127.0.0.1:70000:1\n", "is not host:port:weight"},
        {"p:\n  servers:\n   - :7001:1\n", "is not host:port:weight"},
        {"p:\n  listen: 127.0.0.1:22121\n", "no servers"},
        {"", "no servers"},
    };
    static cp__nutconf c;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[256] = "";
        assert_int_equal(cp__nutconf_parse(cases[i].yml, &c, err, sizeof err), -1);
        assert_contains(err, cases[i].says);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_every_pools_servers),
        cmocka_unit_test(refuses_what_is_not_a_server_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
