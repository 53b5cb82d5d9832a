/* SPDX-License-Identifier: BSD-3-Clause
 *
 * What `compare --large` relies on, at a size a test can afford (150,000 keys: above the
 * 100,000-key fit probe, so the probe runs): every load checked (DBSIZE equal to the keys, the
 * first keys read back intact) and costed (the servers' memory per key, the client's peak RSS,
 * the load rate), on both architectures; and a dataset that would not fit refused after the
 * probe, before the full load, with a message saying why (the memory available is set low
 * through the options rather than needing a dataset bigger than the machine).
 *
 * Single-threaded; the engine's threads live inside cp__compare_run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "asserts.h"
#include "compare/compare.h"

#include <stdio.h>
#include <string.h>

typedef struct warnings {
    char text[8192];
} warnings;

static void on_warn(void *ud, const char *line) {
    warnings *w = ud;
    size_t n = strlen(w->text);
    snprintf(w->text + n, sizeof(w->text) - n, "%s\n", line);
}

static json_t *run(long long mem_available, warnings *w, int *rc) {
    cp__compare_opts o;
    cp__compare_opts_init(&o, NULL);
    o.threads = 2;
    o.clients = 2;
    o.requests = 2000;
    o.keys = 150000;
    o.repeat = 1;
    o.mem_available = mem_available;
    o.warn = on_warn;
    o.ud = w;
    json_t *doc = NULL;
    char err[4096] = "";
    *rc = cp__compare_run(&o, &doc, err, sizeof(err));
    assert_non_null(doc);
    return doc;
}

static double num(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        fail_msg("no number '%s'", key);
    return json_number_value(v);
}

static void test_loads_checked_and_costed(void **state) {
    (void)state;
    warnings w = {""};
    int rc;
    json_t *doc = run(0, &w, &rc);
    if (rc != 0)
        fail_msg("compare: %s", w.text);
    const json_t *fit = json_object_get(doc, "fit"), *f, *l;
    assert_int_equal(json_array_size(fit), 2);
    size_t i;
    json_array_foreach(fit, i, f) {
        assert_true(json_is_true(json_object_get(f, "fits")));
        assert_double_eq(num(f, "probe_keys"), 100000);
    }
    const json_t *loads = json_object_get(doc, "load");
    assert_int_equal(json_array_size(loads), 2);
    json_array_foreach(loads, i, l) {
        assert_double_eq(num(l, "keys"), 150000);
        const json_t *db = json_object_get(l, "dbsize");
        assert_double_eq(num(db, "total"), 150000);
        assert_true(json_is_true(json_object_get(db, "equal")));
        const json_t *rb = json_object_get(l, "readback");
        assert_double_eq(num(rb, "keys"), 100000);
        assert_double_eq(num(rb, "ok"), 100000);
        /* a 100-byte value and its key, with redis's own overhead: well above the value, well
         * below a kilobyte */
        double per_key = num(l, "memory_per_key");
        assert_double_gt(per_key, 100);
        assert_double_lt(per_key, 1000);
        assert_double_gt(num(l, "client_peak_rss"), 0);
        assert_double_gt(num(l, "keys_per_sec"), 0);
    }
    json_decref(doc);
}

static void test_refused_when_it_cannot_fit(void **state) {
    (void)state;
    warnings w = {""};
    int rc;
    /* 150,000 keys take tens of MB; say only 10 MB are available */
    json_t *doc = run(10 * 1000 * 1000, &w, &rc);
    assert_int_equal(rc, CP_EPARTIAL);
    assert_non_null(strstr(w.text, "will not fit"));
    assert_non_null(strstr(w.text, "measured on a 100000-key load"));
    const json_t *fit = json_object_get(doc, "fit"), *f, *r;
    size_t i;
    assert_int_equal(json_array_size(fit), 2);
    json_array_foreach(fit, i, f) {
        assert_true(json_is_false(json_object_get(f, "fits")));
    }
    /* no full load ran, and every run says why it did not */
    assert_int_equal(json_array_size(json_object_get(doc, "load")), 0);
    json_array_foreach(json_object_get(doc, "runs"), i, r) {
        assert_string_equal(json_string_value(json_object_get(r, "error")), "load failed");
    }
    json_decref(doc);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loads_checked_and_costed),
        cmocka_unit_test(test_refused_when_it_cannot_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
