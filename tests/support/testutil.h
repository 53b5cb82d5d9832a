/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Small helpers shared by the tests: scratch directories and reading stored fixtures.
 */
#ifndef CLUSTERPIPE_TESTUTIL_H
#define CLUSTERPIPE_TESTUTIL_H

#include <stddef.h>

/* Creates a fresh directory under $TMPDIR (or /tmp) named cp-test-<tag>-XXXXXX and returns it
 * (malloc'd, caller frees). Aborts the test process if it cannot. */
char *cp_test_mkdtemp(const char *tag);

/* Reads tests/data/<name> whole into a malloc'd buffer; *len gets its size. NULL if missing. */
char *cp_test_read_data(const char *name, size_t *len);

#endif
