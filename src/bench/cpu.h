/* SPDX-License-Identifier: BSD-3-Clause
 *
 * CPU accounting for the bench engine (private to src/bench/), per the measurement rules:
 * CPU is the delta of user+system time over the measured interval only, per component.
 *
 * Sources: a local process (redis-server, nutcracker) through /proc/PID/stat, the client itself
 * through getrusage(RUSAGE_SELF) (all its threads), one client thread through RUSAGE_THREAD or
 * /proc/self/task/TID/stat, and a remote redis through the used_cpu_sys / used_cpu_user lines
 * of its INFO CPU reply, which the caller fetches (this module does no network I/O) and hands
 * over as text. All times are seconds as doubles.
 *
 * Snapshot/delta: a cp__cpu_source holds one process's "before" and "after" samples; the engine
 * samples every source right before and right after the measured interval and sums deltas per
 * component with cp__cpu_sum(). A source that cannot be read (process gone, PID reused, server
 * restarted) is reported as missing rather than as a wrong number.
 *
 * Memory: nothing allocates; sources are caller-allocated. Threads: the functions are
 * thread-safe (no shared state); a source is used by one thread at a time. Errors: 0 or a
 * negative errno value (-ENOENT: no such process or field, -EINVAL: malformed text).
 */
#ifndef CLUSTERPIPE_CPU_H
#define CLUSTERPIPE_CPU_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct cp__cpu_times {
    double user; /* seconds */
    double sys;  /* seconds */
} cp__cpu_times;

/* user + sys. */
double cp__cpu_total(const cp__cpu_times *t);

/* ---- raw readers ---------------------------------------------------------------------------- */

/* Parses the text of a /proc/PID/stat (or /proc/PID/task/TID/stat) file: utime and stime
 * (fields 14 and 15, in clock ticks, divided by ticks_per_sec) and, if start_time is not NULL,
 * the start time (field 22, ticks since boot) that tells a reused PID apart. Handles a command
 * name holding spaces or parentheses. Pure function, for tests and fuzzing. */
int cp__cpu_parse_stat(const char *text, size_t len, long ticks_per_sec, cp__cpu_times *out,
                       unsigned long long *start_time);

/* Reads /proc/PID/stat of a local process (any user's, /proc permitting). Blocks only on the
 * procfs read. start_time may be NULL. */
int cp__cpu_read_pid(pid_t pid, cp__cpu_times *out, unsigned long long *start_time);

/* Reads /proc/self/task/TID/stat: one thread of this process (TID from gettid()). */
int cp__cpu_read_task(pid_t tid, cp__cpu_times *out);

/* getrusage(RUSAGE_SELF): every thread of this process, microsecond resolution. */
int cp__cpu_read_self(cp__cpu_times *out);

/* getrusage(RUSAGE_THREAD): the calling thread only. */
int cp__cpu_read_thread(cp__cpu_times *out);

/* Parses an INFO (or INFO CPU) reply: used_cpu_sys and used_cpu_user, seconds since the server
 * started. Accepts \r\n or \n line ends; other lines (used_cpu_sys_children, other sections)
 * are ignored. -ENOENT if either field is missing, -EINVAL if a value is not a decimal. */
int cp__cpu_parse_info(const char *text, size_t len, cp__cpu_times *out);

/* ---- snapshot / delta ----------------------------------------------------------------------- */

typedef enum cp__cpu_comp {
    CP__CPU_REDIS = 0,
    CP__CPU_PROXY,
    CP__CPU_CLIENT,
    CP__CPU_WIRE, /* the emulated network (`up --rtt`): its own, never in redis/proxy/client */
    CP__CPU_NCOMP,
} cp__cpu_comp;

typedef enum cp__cpu_src_kind {
    CP__CPU_SRC_PID = 0, /* local process, /proc/PID/stat */
    CP__CPU_SRC_SELF,    /* this process, getrusage(RUSAGE_SELF) */
    CP__CPU_SRC_REMOTE,  /* the caller feeds parsed INFO CPU samples */
} cp__cpu_src_kind;

typedef struct cp__cpu_source {
    cp__cpu_src_kind kind;
    cp__cpu_comp comp;
    pid_t pid;                     /* CP__CPU_SRC_PID only */
    unsigned long long start_time; /* CP__CPU_SRC_PID: identity taken with "before" */
    cp__cpu_times before, after;
    bool has_before, has_after;
    bool broken; /* PID reused or counters went backwards (restart): no valid delta */
} cp__cpu_source;

/* Set up a source; no reading yet. */
void cp__cpu_source_pid(cp__cpu_source *s, cp__cpu_comp comp, pid_t pid);
void cp__cpu_source_self(cp__cpu_source *s); /* component CP__CPU_CLIENT */
void cp__cpu_source_remote(cp__cpu_source *s, cp__cpu_comp comp);

/* Local sources (PID, SELF): take the "before" sample now (clears any previous samples) or the
 * "after" sample now. "after" may be taken repeatedly (e.g. every second): a failed read keeps
 * the last good one, so a process that dies mid-run still counts up to its last sample.
 * Returns 0, a negative errno from the read, or -EINVAL on a REMOTE source. */
int cp__cpu_source_before(cp__cpu_source *s);
int cp__cpu_source_after(cp__cpu_source *s);

/* REMOTE sources: store a sample the caller parsed with cp__cpu_parse_info(). Same "before"
 * clears / "after" replaces rules as above. -EINVAL on a local source. */
int cp__cpu_source_set_before(cp__cpu_source *s, const cp__cpu_times *t);
int cp__cpu_source_set_after(cp__cpu_source *s, const cp__cpu_times *t);

/* The source's CPU seconds over the interval (after - before, user + sys). false when a sample
 * is missing or the source is broken; *seconds is then 0. */
bool cp__cpu_source_delta(const cp__cpu_source *s, double *seconds);

typedef struct cp__cpu_totals {
    double seconds[CP__CPU_NCOMP];   /* summed deltas of the sources with a valid delta */
    unsigned sources[CP__CPU_NCOMP]; /* sources of that component */
    unsigned missing[CP__CPU_NCOMP]; /* of which had no valid delta (not in seconds) */
} cp__cpu_totals;

/* Sums n sources per component into *out (overwritten). */
void cp__cpu_sum(const cp__cpu_source *src, size_t n, cp__cpu_totals *out);

/* Sum over all components. */
double cp__cpu_totals_all(const cp__cpu_totals *t);

/* "redis", "proxy", "client" (the JSON field names). */
const char *cp__cpu_comp_name(cp__cpu_comp c);

#endif /* CLUSTERPIPE_CPU_H */
