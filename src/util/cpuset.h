/* SPDX-License-Identifier: BSD-3-Clause
 *
 * CPU sets as people write them: the kernel's list format ("0-3,8", what taskset -c and
 * /proc/PID/status Cpus_allowed_list use), parsed into and formatted from a cpu_set_t, and read
 * back from /proc for any process or thread, so placement can be checked as it happened rather
 * than as it was asked. No state; any thread; the /proc readers do file I/O.
 */
#ifndef CLUSTERPIPE_UTIL_CPUSET_H
#define CLUSTERPIPE_UTIL_CPUSET_H

#include <sched.h>
#include <stddef.h>
#include <sys/types.h>

/* Parses "N", "N-M" and comma-separated mixes of them (CPU numbers < CPU_SETSIZE, N <= M) into
 * *out. Returns 0, or -EINVAL (empty, a bad number or range) with *out cleared. */
int cp__cpuset_parse(const char *list, cpu_set_t *out);

/* "0-3,8" into buf (always terminated; "" for an empty set, cut short when buf is too small). */
void cp__cpuset_format(const cpu_set_t *s, char *buf, size_t len);

/* Cpus_allowed_list of process pid (tid 0) or of its thread tid, from /proc. Returns 0, or
 * -errno (-ENOENT: gone) / -EINVAL (no such line). */
int cp__cpuset_of(pid_t pid, pid_t tid, cpu_set_t *out);

/* The union of the Cpus_allowed_list of every thread of this process except the calling one
 * (/proc/self/task/ *), and how many threads that was. Returns 0 or -errno. */
int cp__cpuset_other_threads(cpu_set_t *out, int *nthreads);

/* The CPUs this process may run on (sched_getaffinity). Returns 0 or -errno. */
int cp__cpuset_usable(cpu_set_t *out);

#endif /* CLUSTERPIPE_UTIL_CPUSET_H */
