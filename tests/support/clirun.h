/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Running the `clusterpipe` binary (CP_BINARY) from a test: argv in, exit code, stdout and stderr
 * out. Used by the bench/load integration tests to check exit codes, messages and files as a
 * user sees them. Output goes through scratch files in a directory the runner owns.
 *
 * Ownership: a cp_clirun is caller-allocated; cp_clirun_init makes its scratch directory and
 * cp_clirun_free removes it and frees the captured output. Single-threaded.
 */
#ifndef CLUSTERPIPE_CLIRUN_H
#define CLUSTERPIPE_CLIRUN_H

#include <sys/types.h>

typedef struct cp_clirun {
    char *scratch;  /* directory for the output files (and for tests' own files) */
    char *out;      /* stdout of the last finished run (malloc'd, NUL-terminated) */
    char *err;      /* stderr of the last finished run */
    long maxrss_kb; /* the last finished run's peak resident memory (wait4's ru_maxrss) */
    /* RLIMIT_NOFILE of the runs started from now on (set in the child before exec); 0: the
     * test's own. Lets a test start the command with a low limit without lowering its own. */
    unsigned long nofile_soft, nofile_hard;
} cp_clirun;

void cp_clirun_init(cp_clirun *r);
void cp_clirun_free(cp_clirun *r);

/* Starts `clusterpipe args...` (args NULL-terminated, args[0] is the subcommand). Returns the
 * child's PID; aborts the test process when fork fails. */
pid_t cp_clirun_start(cp_clirun *r, const char *const *args);

/* Waits for the child (at most timeout_s, then SIGKILL and -1), captures its output into r->out
 * and r->err, returns its exit code (128 + signal when killed by a signal). */
int cp_clirun_finish(cp_clirun *r, pid_t pid, int timeout_s);

/* start + finish with a 120 s limit. */
int cp_clirun_run(cp_clirun *r, const char *const *args);

/* cp_clirun_run, and a cmocka failure showing the output when the exit code is not want. */
void cp_clirun_expect(cp_clirun *r, const char *const *args, int want);

/* "<scratch>/<name>" into a static buffer (valid until the next call). */
const char *cp_clirun_path(cp_clirun *r, const char *name);

#endif
