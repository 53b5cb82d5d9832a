/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A topology a test started through the command (`clusterpipe up --dir DIR`). Unlike a fixture it
 * is not ephemeral, so the test records the PIDs state.json lists as it goes, and the teardown
 * stops it for sure: `clusterpipe down`, then SIGKILL by PID (with start time) whatever survived.
 *
 * Ownership: caller-allocated, zero-initialised; cp_clitopo_stop removes the directory.
 * Single-threaded.
 */
#ifndef CLUSTERPIPE_CLITOPO_H
#define CLUSTERPIPE_CLITOPO_H

#include <stddef.h>
#include <sys/types.h>

#include "clirun.h"

typedef struct cp_clitopo {
    char dir[512]; /* "" when none */
    pid_t pids[64];
    unsigned long long starts[64];
    size_t npids;
} cp_clitopo;

/* A fresh directory for `up --dir` (named as cp_test_mkdtemp names them). */
void cp_clitopo_new_dir(cp_clitopo *t, const char *tag);

/* Records the processes state.json in t->dir lists (new ones only). */
void cp_clitopo_note(cp_clitopo *t);

/* How many recorded processes still run (same PID and start time). */
size_t cp_clitopo_alive(const cp_clitopo *t);

/* `clusterpipe down --dir`, SIGKILL by PID whatever survived, removes the directory. Returns 0,
 * or -1 when a process had to be killed (the code under test left it running). */
int cp_clitopo_stop(cp_clitopo *t, cp_clirun *run);

#endif
