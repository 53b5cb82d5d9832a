/* SPDX-License-Identifier: BSD-3-Clause
 *
 * CPU accounting (see cpu.h): /proc stat and INFO CPU parsers, getrusage readers, and the
 * before/after bookkeeping of cp__cpu_source. Owns no memory: sources are caller-allocated and
 * files are opened and closed within one call. Any thread may call any function; a given
 * source is touched by one thread at a time.
 */
#include "bench/cpu.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

double cp__cpu_total(const cp__cpu_times *t) {
    return t->user + t->sys;
}

/* ---- /proc/PID/stat ------------------------------------------------------------------------- */

/* Parses an unsigned decimal at *p (skipping leading spaces), advancing *p. -EINVAL if none. */
static int parse_ull(const char **p, const char *end, unsigned long long *out) {
    const char *q = *p;
    while (q < end && *q == ' ')
        q++;
    if (q >= end || *q < '0' || *q > '9')
        return -EINVAL;
    unsigned long long v = 0;
    while (q < end && *q >= '0' && *q <= '9') {
        v = v * 10 + (unsigned long long)(*q - '0');
        q++;
    }
    *p = q;
    *out = v;
    return 0;
}

/* Skips one space-separated field. */
static int skip_field(const char **p, const char *end) {
    const char *q = *p;
    while (q < end && *q == ' ')
        q++;
    if (q >= end)
        return -EINVAL;
    while (q < end && *q != ' ')
        q++;
    *p = q;
    return 0;
}

/* The command name (field 2) is in parentheses and may itself hold ") ", so fields are counted
 * from the LAST ')' (the kernel never escapes it): field 3 follows it. */
int cp__cpu_parse_stat(const char *text, size_t len, long ticks_per_sec, cp__cpu_times *out,
                       unsigned long long *start_time) {
    if (text == NULL || ticks_per_sec <= 0)
        return -EINVAL;
    const char *end = text + len;
    const char *rp = NULL;
    for (const char *q = text; q < end; q++)
        if (*q == ')')
            rp = q;
    if (rp == NULL)
        return -EINVAL;
    const char *p = rp + 1;
    unsigned long long utime, stime, st;
    for (int field = 3; field < 14; field++) /* state .. cmajflt */
        if (skip_field(&p, end) != 0)
            return -EINVAL;
    if (parse_ull(&p, end, &utime) != 0 || parse_ull(&p, end, &stime) != 0)
        return -EINVAL;
    if (start_time != NULL) {
        for (int field = 16; field < 22; field++) /* cutime .. itrealvalue */
            if (skip_field(&p, end) != 0)
                return -EINVAL;
        if (parse_ull(&p, end, &st) != 0)
            return -EINVAL;
        *start_time = st;
    }
    out->user = (double)utime / (double)ticks_per_sec;
    out->sys = (double)stime / (double)ticks_per_sec;
    return 0;
}

/* One read() of a small procfs file; stat files are generated whole on the first read. */
static int read_stat_file(const char *path, cp__cpu_times *out, unsigned long long *start_time) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    char buf[4096]; /* 52 fields of at most 20 digits plus a 16-byte name fit */
    ssize_t n;
    do {
        n = read(fd, buf, sizeof(buf));
    } while (n < 0 && errno == EINTR);
    int err = n < 0 ? -errno : 0;
    close(fd);
    if (err != 0)
        return err == -ESRCH ? -ENOENT : err;
    long tck = sysconf(_SC_CLK_TCK);
    return cp__cpu_parse_stat(buf, (size_t)n, tck > 0 ? tck : 100, out, start_time);
}

int cp__cpu_read_pid(pid_t pid, cp__cpu_times *out, unsigned long long *start_time) {
    if (pid <= 0)
        return -EINVAL;
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    return read_stat_file(path, out, start_time);
}

int cp__cpu_read_task(pid_t tid, cp__cpu_times *out) {
    if (tid <= 0)
        return -EINVAL;
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%ld/stat", (long)tid);
    return read_stat_file(path, out, NULL);
}

/* ---- getrusage ------------------------------------------------------------------------------ */

static double tv_seconds(const struct timeval *tv) {
    return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

static int read_rusage(int who, cp__cpu_times *out) {
    struct rusage ru;
    if (getrusage(who, &ru) != 0)
        return -errno;
    out->user = tv_seconds(&ru.ru_utime);
    out->sys = tv_seconds(&ru.ru_stime);
    return 0;
}

int cp__cpu_read_self(cp__cpu_times *out) {
    return read_rusage(RUSAGE_SELF, out);
}

int cp__cpu_read_thread(cp__cpu_times *out) {
    return read_rusage(RUSAGE_THREAD, out);
}

/* ---- INFO CPU ------------------------------------------------------------------------------- */

/* Parses "<digits>[.<digits>]" ending the line at [p, end) (trailing '\r' allowed). Written by
 * hand rather than with strtod so the result never depends on the process locale. All digits go
 * into one integer divided once by a power of ten, so "0.0174" is the double nearest 0.0174;
 * digits past the 18th significant one are dropped (microsecond counters never get there). */
static int parse_seconds(const char *p, const char *end, double *out) {
    if (end > p && end[-1] == '\r')
        end--;
    uint64_t mant = 0;
    unsigned sig = 0, frac = 0;
    const char *q = p;
    bool dot = false;
    for (; q < end; q++) {
        if (*q == '.' && !dot && q > p) {
            dot = true;
            continue;
        }
        if (*q < '0' || *q > '9')
            return -EINVAL;
        if (sig < 18) {
            mant = mant * 10 + (uint64_t)(*q - '0');
            sig += mant != 0;
            frac += dot;
        } else if (!dot) {
            return -EINVAL; /* more than 10^18 seconds: not a CPU counter */
        }
    }
    if (q == p || end[-1] == '.')
        return -EINVAL;
    double scale = 1;
    for (unsigned i = 0; i < frac; i++)
        scale *= 10; /* exact up to 10^22 */
    *out = (double)mant / scale;
    return 0;
}

/* Walks the reply line by line and matches whole field names, so used_cpu_sys_children and
 * used_cpu_sys_main_thread (redis 7) are not mistaken for used_cpu_sys. */
int cp__cpu_parse_info(const char *text, size_t len, cp__cpu_times *out) {
    static const char sys_key[] = "used_cpu_sys:";
    static const char user_key[] = "used_cpu_user:";
    if (text == NULL)
        return -EINVAL;
    bool have_sys = false, have_user = false;
    double sys = 0, user = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl != NULL ? nl : end;
        size_t n = (size_t)(eol - p);
        if (n > sizeof(sys_key) - 1 && memcmp(p, sys_key, sizeof(sys_key) - 1) == 0) {
            if (parse_seconds(p + sizeof(sys_key) - 1, eol, &sys) != 0)
                return -EINVAL;
            have_sys = true;
        } else if (n > sizeof(user_key) - 1 && memcmp(p, user_key, sizeof(user_key) - 1) == 0) {
            if (parse_seconds(p + sizeof(user_key) - 1, eol, &user) != 0)
                return -EINVAL;
            have_user = true;
        }
        p = nl != NULL ? nl + 1 : end;
    }
    if (!have_sys || !have_user)
        return -ENOENT;
    out->sys = sys;
    out->user = user;
    return 0;
}

/* ---- snapshot / delta ----------------------------------------------------------------------- */

static void source_init(cp__cpu_source *s, cp__cpu_src_kind kind, cp__cpu_comp comp) {
    memset(s, 0, sizeof(*s));
    s->kind = kind;
    s->comp = comp;
}

void cp__cpu_source_pid(cp__cpu_source *s, cp__cpu_comp comp, pid_t pid) {
    source_init(s, CP__CPU_SRC_PID, comp);
    s->pid = pid;
}

void cp__cpu_source_self(cp__cpu_source *s) {
    source_init(s, CP__CPU_SRC_SELF, CP__CPU_CLIENT);
}

void cp__cpu_source_remote(cp__cpu_source *s, cp__cpu_comp comp) {
    source_init(s, CP__CPU_SRC_REMOTE, comp);
}

/* Reads a local source now; for a PID also returns its start time. */
static int read_local(const cp__cpu_source *s, cp__cpu_times *t, unsigned long long *st) {
    switch (s->kind) {
    case CP__CPU_SRC_PID:
        return cp__cpu_read_pid(s->pid, t, st);
    case CP__CPU_SRC_SELF:
        *st = 0;
        return cp__cpu_read_self(t);
    case CP__CPU_SRC_REMOTE:
    default:
        return -EINVAL;
    }
}

/* A later sample below an earlier one means another process (or a restarted server). */
static bool went_backwards(const cp__cpu_times *before, const cp__cpu_times *after) {
    return after->user < before->user || after->sys < before->sys;
}

static void store_before(cp__cpu_source *s, const cp__cpu_times *t) {
    s->before = *t;
    s->has_before = true;
    s->has_after = false;
    s->broken = false;
}

/* Keeps the last good "after": an unreadable or inconsistent sample marks the source broken
 * only if it proves the counters are not the same process's (reused PID, restart). */
static void store_after(cp__cpu_source *s, const cp__cpu_times *t) {
    if (s->has_before && went_backwards(&s->before, t)) {
        s->broken = true;
        return;
    }
    s->after = *t;
    s->has_after = true;
}

int cp__cpu_source_before(cp__cpu_source *s) {
    cp__cpu_times t;
    unsigned long long st = 0;
    int rc = read_local(s, &t, &st);
    if (rc != 0) {
        s->has_before = s->has_after = false;
        return rc;
    }
    s->start_time = st;
    store_before(s, &t);
    return 0;
}

int cp__cpu_source_after(cp__cpu_source *s) {
    cp__cpu_times t;
    unsigned long long st = 0;
    int rc = read_local(s, &t, &st);
    if (rc != 0)
        return rc;
    if (s->kind == CP__CPU_SRC_PID && s->has_before && st != s->start_time) {
        s->broken = true; /* the PID now names another process */
        return 0;
    }
    store_after(s, &t);
    return 0;
}

int cp__cpu_source_set_before(cp__cpu_source *s, const cp__cpu_times *t) {
    if (s->kind != CP__CPU_SRC_REMOTE)
        return -EINVAL;
    store_before(s, t);
    return 0;
}

int cp__cpu_source_set_after(cp__cpu_source *s, const cp__cpu_times *t) {
    if (s->kind != CP__CPU_SRC_REMOTE)
        return -EINVAL;
    store_after(s, t);
    return 0;
}

bool cp__cpu_source_delta(const cp__cpu_source *s, double *seconds) {
    *seconds = 0;
    if (!s->has_before || !s->has_after || s->broken)
        return false;
    *seconds = cp__cpu_total(&s->after) - cp__cpu_total(&s->before);
    return true;
}

void cp__cpu_sum(const cp__cpu_source *src, size_t n, cp__cpu_totals *out) {
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        unsigned c = (unsigned)src[i].comp;
        if (c >= CP__CPU_NCOMP)
            continue;
        double d;
        out->sources[c]++;
        if (cp__cpu_source_delta(&src[i], &d))
            out->seconds[c] += d;
        else
            out->missing[c]++;
    }
}

double cp__cpu_totals_all(const cp__cpu_totals *t) {
    double sum = 0;
    for (int c = 0; c < CP__CPU_NCOMP; c++)
        sum += t->seconds[c];
    return sum;
}

const char *cp__cpu_comp_name(cp__cpu_comp c) {
    switch (c) {
    case CP__CPU_REDIS:
        return "redis";
    case CP__CPU_PROXY:
        return "proxy";
    case CP__CPU_CLIENT:
        return "client";
    case CP__CPU_WIRE:
        return "wire";
    case CP__CPU_NCOMP:
        break;
    }
    return "unknown";
}
