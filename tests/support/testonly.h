/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Which of a test program's cases run: those CP_TEST_ONLY=NAME[,NAME...] names, or every case when
 * it is unset. tests/CMakeLists.txt runs a long program's cases as several ctest tests, each
 * naming its cases, so that they run beside each other rather than one after the other.
 */
#ifndef CLUSTERPIPE_TESTONLY_H
#define CLUSTERPIPE_TESTONLY_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* Copies the cases of all[0..n) that CP_TEST_ONLY names (every one when it is unset) to out,
 * which has room for n, in their order, and returns how many. A name that is no case of all
 * ends the program (exit 1, naming it): a ctest entry with a mistyped name would otherwise pass
 * having run nothing. */
size_t cp_test_only(const struct CMUnitTest *all, size_t n, struct CMUnitTest *out);

#endif
