/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The commands the library refuses because they would change what a shared connection answers
 * (docs/commands.md, "Commands that change a connection"), for the tests that send each of them:
 * unit/test_refusals against the scripted fake node, integration/test_client_real against a
 * real cluster.
 */
#ifndef CP_TEST_REFUSED_H
#define CP_TEST_REFUSED_H

#include <stddef.h>

/* Each refused command, and a word its message must contain. */
static const struct refused_cmd {
    const char *cmd, *word;
} refused[] = {
    {"SUBSCRIBE chan", "cp_subscribe"},
    {"PSUBSCRIBE ch*", "cp_subscribe"},
    {"SSUBSCRIBE chan", "cp_subscribe"},
    {"UNSUBSCRIBE chan", "cp_unsubscribe"},
    {"PUNSUBSCRIBE", "cp_unsubscribe"},
    {"SUNSUBSCRIBE chan", "cp_unsubscribe"},
    {"MONITOR", "MONITOR"},
    {"CLIENT REPLY OFF", "CLIENT REPLY"},
    {"client reply skip", "CLIENT REPLY"},
    {"CLIENT TRACKING ON", "TRACKING"},
    {"CLIENT CACHING yes", "CACHING"},
    {"SELECT 1", "SELECT"},
    {"select 15", "SELECT"},
    {"HELLO 3", "HELLO"},
    {"RESET", "RESET"},
    {"QUIT", "QUIT"},
    {"READONLY", "READONLY"},
    {"READWRITE", "READWRITE"},
    {"AUTH someone secret", "AUTH"},
};
#define NREFUSED (sizeof(refused) / sizeof(refused[0]))

#endif
