/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Processes: spawn a server by fork/exec in its own session, recognise it later by PID + start
 * time (/proc/PID/stat field 22) + /proc/PID/cmdline, and stop it by PID (SIGTERM, wait,
 * SIGKILL). Nothing here ever looks a process up by name. Keeps no state; callers own the PIDs
 * and start times they pass in. Any thread may call these, but the die-with-parent option is
 * tied to the calling thread (PR_SET_PDEATHSIG).
 */
#ifndef CLUSTERPIPE_ORCH_PROC_H
#define CLUSTERPIPE_ORCH_PROC_H

#include <signal.h>
#include <stddef.h>
#include <sched.h>
#include <sys/types.h>

/* A process to recognise or stop: its PID, its start time and the basename of the binary that
 * its cmdline must mention ("redis-server", "nutcracker"). */
typedef struct cp__pidref {
    pid_t pid;
    unsigned long long start_time;
    const char *exe; /* basename, or NULL: accept redis-server, nutcracker or clusterpipe */
} cp__pidref;

/* Starts argv[0] (an absolute path) with argv, in workdir, stdin from /dev/null and stdout +
 * stderr appended to outfile, in a new session (setsid, so a terminal's Ctrl-C does not reach
 * it), with default signal dispositions and no inherited descriptors. die_with_parent: the child
 * gets PR_SET_PDEATHSIG SIGKILL. cpus (NULL: inherit ours): the child is pinned to them before
 * exec, so every thread the server ever starts inherits the set (pinning it afterwards from here
 * would miss threads it started in between). Returns once the exec succeeded, filling *pid and
 * *start_time, or failed: then CP_EIO (CP_ENOMEM when the system was out of memory; an affinity
 * the kernel refuses is CP_EIO "sched_setaffinity: ...") with a message in err. */
int cp__spawn(char *const argv[], const char *workdir, const char *outfile, int die_with_parent,
              const cpu_set_t *cpus, pid_t *pid, unsigned long long *start_time, char *err,
              size_t errlen);

/* Runs a short-lived helper (the openssl command) to completion: cp__spawn with die_with_parent,
 * then waits for that PID only, polling cancel (may be NULL) every 20 ms. On timeout or cancel
 * the child is SIGKILLed by PID and reaped. Returns 0 when it exited with status 0, else a CP_E*
 * code with err saying how it ended (the caller adds the output's tail): CP_ETIMEDOUT after
 * timeout_ms, CP_EIO otherwise (non-zero exit, signal, cancel, or as cp__spawn). Blocks up to
 * timeout_ms. */
int cp__run(char *const argv[], const char *workdir, const char *outfile, int timeout_ms,
            const volatile sig_atomic_t *cancel, char *err, size_t errlen);

/* Reads /proc/PID/stat: start time (field 22) and state (field 3). Returns 0, or CP_EIO when
 * there is no such process (or its stat is unreadable). */
int cp__proc_stat(pid_t pid, unsigned long long *start_time, char *state);

/* 1 when ref is alive (not a zombie), started at ref->start_time, and its cmdline mentions
 * ref->exe. 0 otherwise. Never signals. */
int cp__proc_is_ours(const cp__pidref *ref);

/* Sends sig to ref only when cp__proc_is_ours. Returns 0 when sent, CP_EINVAL when it is not
 * ours (or gone), CP_EIO when kill failed. */
int cp__proc_signal(const cp__pidref *ref, int sig);

/* Waits up to timeout_ms for ref to be gone (reaping it when it is our child). Returns 1 when it
 * is gone, 0 on timeout. */
int cp__proc_wait_gone(const cp__pidref *ref, int timeout_ms);

/* Stops every ref that is ours: SIGTERM to all, wait up to term_ms for all, SIGKILL to the rest,
 * wait again. Reaps our children. Returns how many are still alive afterwards (0 normally). */
size_t cp__proc_stop_many(const cp__pidref *refs, size_t n, int term_ms);

/* When pid is our child and has exited (or exits within a second: call it for a process judged
 * dead), reaps it and describes how ("exited with status 1", "killed by signal 9"); otherwise
 * writes "exited". */
void cp__proc_exit_desc(pid_t pid, char *buf, size_t len);

/* Resident set size of pid in bytes from /proc/PID/statm, or -1. */
long long cp__proc_rss(pid_t pid);

/* Finds an executable: `given` when non-NULL (must be executable), else `name` in $PATH, then
 * /usr/sbin, /usr/bin, /usr/local/sbin, /usr/local/bin. Writes its absolute path into out.
 * Returns 0 or CP_EINVAL with a message naming the Debian package `pkg` in err. */
int cp__find_binary(const char *given, const char *name, const char *pkg, char *out, size_t len,
                    char *err, size_t errlen);

#endif /* CLUSTERPIPE_ORCH_PROC_H */
