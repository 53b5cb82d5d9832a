/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Reading what the command writes as JSON, for assertions: a file loaded whole, a number or a
 * string of an object, each a cmocka failure (naming the file or the field) when it is not
 * there. For the integration tests that drive the binary (clirun.h).
 *
 * Ownership: cp_json_load returns a new reference (json_decref); the others borrow. Single-
 * threaded.
 */
#ifndef CLUSTERPIPE_TEST_JSONCHECK_H
#define CLUSTERPIPE_TEST_JSONCHECK_H

#include <jansson.h>

/* The JSON document in path (fails the test when it cannot be read or parsed). */
json_t *cp_json_load(const char *path);

/* The JSON object on the last line of text: a command's result after its JSON progress lines
 * (fails the test when it is not one). A new reference. */
json_t *cp_json_last_line(const char *text);

/* o[key] as a number (fails the test when it is not one). */
double cp_json_num(const json_t *o, const char *key);

/* Every process a results.json recorded under doc[list][*].processes (pid, start_time) that still
 * runs is SIGKILLed by PID, so that nothing is left behind even when the test fails. Returns how
 * many were alive; *seen (may be NULL) gets how many were recorded. */
int cp_json_kill_recorded(const json_t *doc, const char *list, int *seen);

/* o[key] as a string (fails the test when it is not one; "" then, never NULL). */
const char *cp_json_str(const json_t *o, const char *key);

#endif
