/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Zero means the default, for every option: a client built with cp_client_new (no I/O) from a
 * zeroed cp_options has every documented default in effect (read from the private client,
 * lib/client/client.h), CP_OPTIONS_INIT is the same thing, the "none" constants give none, a
 * negative value where a field has no "none" is refused. Then the meaning that changed, end to end
 * against a scripted fake node (tests/support/fakeset.h): a zero retry budget retries TRYAGAIN,
 * CP_RETRY_NONE does not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "asserts.h"
#include "clusterpipe/clusterpipe.h"
#include "fakeset.h"
#include "lib/client/client.h"

static cp__client *new_client(const cp_options *o) {
    cp_client *c = cp_client_new(o);
    assert_non_null(c);
    return cp__client_of(c);
}

/* Every effective value of a client built from options with nothing set but the address. */
static void assert_defaults(const cp__client *c, int cluster) {
    assert_int_equal(c->pub.err, 0);
    assert_string_equal(c->pub.errstr, "");
    assert_int_equal(c->cluster, cluster);
    assert_int_equal(c->copts.connect_timeout_ms, 2000);
    assert_int_equal(c->copts.io_timeout_ms, 5000);
    assert_int_equal(c->max_redirects, 16);
    assert_int_equal(c->retry_budget_ms, 3000); /* 0 used to mean none */
    assert_int_equal(c->max_pending, 65536);
    assert_int_equal(c->pool_per_node, CP_DEFAULT_BLOCKING_CONNS);
    assert_int_equal(c->flags, 0);
    assert_null(c->username);
    assert_null(c->password);
    assert_null(c->copts.username);
    assert_null(c->copts.password);
    assert_null(c->copts.tls); /* plain TCP */
    assert_int_equal(c->read_from, CP_READ_MASTER);
    assert_int_equal(c->copts.readonly, 0);
    assert_null(c->cmdtab); /* commands_from NULL: the client reads its own table */
    assert_int_equal(c->cmdtab_state, 0);
    assert_int_equal(c->nseeds, 1);
    assert_int_equal(c->need_refresh, cluster); /* a cluster client reads its map once on a loop */
}

/* The header's defaults are the numbers it documents. */
static void defaults_are_documented_numbers(void **state) {
    (void)state;
    assert_int_equal(CP_DEFAULT_CONNECT_TIMEOUT_MS, 2000);
    assert_int_equal(CP_DEFAULT_IO_TIMEOUT_MS, 5000);
    assert_int_equal(CP_DEFAULT_MAX_REDIRECTS, 16);
    assert_int_equal(CP_DEFAULT_RETRY_BUDGET_MS, 3000);
    assert_int_equal(CP_DEFAULT_MAX_PENDING, 65536);
    assert_int_equal(CP_MAX_REDIRECTS, 255);
    assert_int_lt(CP_TIMEOUT_NONE, 0);
    assert_int_lt(CP_RETRY_NONE, 0);
    assert_int_lt(CP_PENDING_UNLIMITED, 0);
}

static void zeroed_options_give_every_default(void **state) {
    (void)state;
    cp_options o = {0};
    o.endpoint = "127.0.0.1:1";
    cp__client *c = new_client(&o);
    assert_defaults(c, 0);
    cp_free(&c->pub);

    cp_options z = {0};
    z.seeds = "127.0.0.1:1";
    c = new_client(&z);
    assert_defaults(c, 1);
    cp_free(&c->pub);
}

/* CP_OPTIONS_INIT is every field zero: the same options, the same client. */
static void options_init_is_zeroed_options(void **state) {
    (void)state;
    cp_options init = CP_OPTIONS_INIT, zero = {0};
    assert_null(init.seeds);
    assert_null(init.endpoint);
    assert_null(init.username);
    assert_null(init.password);
    assert_int_equal(init.connect_timeout_ms, zero.connect_timeout_ms);
    assert_int_equal(init.io_timeout_ms, zero.io_timeout_ms);
    assert_int_equal(init.max_redirects, zero.max_redirects);
    assert_int_equal(init.retry_budget_ms, zero.retry_budget_ms);
    assert_int_equal(init.flags, zero.flags);
    assert_int_equal(init.tls, zero.tls);
    assert_null(init.tls_ca_file);
    assert_null(init.tls_cert_file);
    assert_null(init.tls_key_file);
    assert_int_equal(init.tls_insecure, zero.tls_insecure);
    assert_int_equal(init.max_pending, zero.max_pending);
    assert_int_equal(init.blocking_conns, zero.blocking_conns);
    assert_null(init.commands_from);
    assert_int_equal(init.read_from, zero.read_from);
    init.endpoint = "127.0.0.1:1";
    cp__client *c = new_client(&init);
    assert_defaults(c, 0);
    cp_free(&c->pub);
}

/* NULL options: the defaults too (and CP_EINVAL, as no address is given). */
static void null_options_are_defaults(void **state) {
    (void)state;
    cp__client *c = new_client(NULL);
    assert_int_equal(c->pub.err, CP_EINVAL);
    assert_int_equal(c->copts.connect_timeout_ms, 2000);
    assert_int_equal(c->copts.io_timeout_ms, 5000);
    assert_int_equal(c->max_redirects, 16);
    assert_int_equal(c->retry_budget_ms, 3000);
    assert_int_equal(c->max_pending, 65536);
    cp_free(&c->pub);
}

/* The "none" constants, and any other negative value in those fields, mean none. */
static void none_values_mean_none(void **state) {
    (void)state;
    const int nones[] = {-1, -5, -2147483647 - 1};
    for (size_t i = 0; i < sizeof(nones) / sizeof(nones[0]); i++) {
        cp_options o = {0};
        o.endpoint = "127.0.0.1:1";
        o.connect_timeout_ms = i == 0 ? CP_TIMEOUT_NONE : nones[i];
        o.io_timeout_ms = i == 0 ? CP_TIMEOUT_NONE : nones[i];
        o.retry_budget_ms = i == 0 ? CP_RETRY_NONE : nones[i];
        o.max_pending = i == 0 ? CP_PENDING_UNLIMITED : nones[i];
        cp__client *c = new_client(&o);
        assert_int_equal(c->pub.err, 0);
        assert_int_equal(c->copts.connect_timeout_ms, CP__TIMEOUT_NONE_MS);
        assert_int_equal(c->copts.io_timeout_ms, CP__TIMEOUT_NONE_MS);
        assert_int_equal(CP__TIMEOUT_NONE_MS, 2147483647); /* 24.8 days, as the header says */
        assert_int_equal(c->retry_budget_ms, 0);
        assert_int_equal(c->max_pending, SIZE_MAX);
        assert_int_equal(c->max_redirects, 16); /* untouched: it has no none */
        cp_free(&c->pub);
    }
}

/* Positive values are taken as given. */
static void set_values_are_kept(void **state) {
    (void)state;
    cp_options o = {0};
    o.seeds = "127.0.0.1:1,127.0.0.1:2";
    o.connect_timeout_ms = 1;
    o.io_timeout_ms = 2;
    o.max_redirects = CP_MAX_REDIRECTS;
    o.retry_budget_ms = 3;
    o.max_pending = 4;
    o.blocking_conns = 5;
    o.flags = CP_OPT_SPLIT_MULTIKEY;
    o.read_from = CP_READ_REPLICA;
    cp__client *c = new_client(&o);
    assert_int_equal(c->pub.err, 0);
    assert_int_equal(c->copts.connect_timeout_ms, 1);
    assert_int_equal(c->copts.io_timeout_ms, 2);
    assert_int_equal(c->max_redirects, CP_MAX_REDIRECTS);
    assert_int_equal(c->retry_budget_ms, 3);
    assert_int_equal(c->max_pending, 4);
    assert_int_equal(c->pool_per_node, 5);
    assert_int_equal(c->pool_opts.readonly, 0); /* blocking commands run on masters */
    assert_int_equal(c->flags, CP_OPT_SPLIT_MULTIKEY);
    assert_int_equal(c->read_from, CP_READ_REPLICA);
    assert_int_equal(c->copts.readonly, 1);
    assert_int_equal(c->nseeds, 2);
    cp_free(&c->pub);
}

/* max_redirects has no "none" (the first hop is always followed): negative is refused, as is a
 * limit above CP_MAX_REDIRECTS. */
static void negative_max_redirects_is_refused(void **state) {
    (void)state;
    const int bad[] = {-1, CP_MAX_REDIRECTS + 1};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        cp_options o = {0};
        o.endpoint = "127.0.0.1:1";
        o.max_redirects = bad[i];
        cp_client *c = cp_client_new(&o);
        assert_non_null(c);
        assert_int_equal(c->err, CP_EINVAL);
        assert_non_null(strstr(c->errstr, "max_redirects"));
        cp_free(c);
    }
}

/* blocking_conns has no "none" either: a blocking command needs a connection. */
static void negative_blocking_conns_is_refused(void **state) {
    (void)state;
    cp_options o = {0};
    o.endpoint = "127.0.0.1:1";
    o.blocking_conns = -1;
    cp_client *c = cp_client_new(&o);
    assert_non_null(c);
    assert_int_equal(c->err, CP_EINVAL);
    assert_non_null(strstr(c->errstr, "blocking_conns"));
    cp_free(c);
}

/* The changed meaning, end to end: a key answers TRYAGAIN twice, then its value. */
static void zero_budget_retries(void **state) {
    fakeset *f = *state;
    fakeset_put(f, 0, "k1", "v1");
    fakeset_rule(f->node[0], "GET", "k1", 0, 2, FAKE_REPLY, "-TRYAGAIN Multiple keys request\r\n");
    fakeset_connect(f, 0, 0, 0); /* the defaults: a 3000 ms budget */
    fakeset_append_gets(f->p, 3);
    assert_int_equal(cp_exec(f->p), 0);
    fakeset_assert_str(f->p, 1, "v1");
    cp_stats st;
    cp_get_stats(f->c, &st);
    assert_int_equal(st.tryagain, 2);
    assert_int_equal(fake_node_count(f->node[0], "GET"), 5); /* k0, k2, and k1 three times */
}

static void retry_none_surfaces_at_once(void **state) {
    fakeset *f = *state;
    fakeset_put(f, 0, "k1", "v1");
    fakeset_rule(f->node[0], "GET", "k1", 0, 2, FAKE_REPLY, "-TRYAGAIN Multiple keys request\r\n");
    fakeset_connect(f, 0, CP_RETRY_NONE, 0);
    fakeset_append_gets(f->p, 3);
    assert_int_equal(cp_exec(f->p), CP_EPARTIAL);
    assert_int_equal(cp_get_outcome(f->p, 1), CP_NOT_EXECUTED);
    assert_non_null(cp_reply(f->p, 1));
    assert_non_null(strstr(cp_reply(f->p, 1)->str, "TRYAGAIN"));
    assert_int_equal(cp_get_outcome(f->p, 0), CP_DONE);
    assert_int_equal(cp_get_outcome(f->p, 2), CP_DONE);
    assert_int_equal(fake_node_count(f->node[0], "GET"), 3); /* each once */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults_are_documented_numbers),
        cmocka_unit_test(zeroed_options_give_every_default),
        cmocka_unit_test(options_init_is_zeroed_options),
        cmocka_unit_test(null_options_are_defaults),
        cmocka_unit_test(none_values_mean_none),
        cmocka_unit_test(set_values_are_kept),
        cmocka_unit_test(negative_max_redirects_is_refused),
        cmocka_unit_test(negative_blocking_conns_is_refused),
        cmocka_unit_test_setup_teardown(zero_budget_retries, fakeset_setup, fakeset_teardown),
        cmocka_unit_test_setup_teardown(retry_none_surfaces_at_once, fakeset_setup,
                                        fakeset_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
