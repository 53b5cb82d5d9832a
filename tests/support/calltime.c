/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Library calls timed (calltime.h).
 */
#include "calltime.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/clock.h"

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The calling thread's run delay so far (ns waiting on a run queue), 0 where the kernel does
 * not keep it. The file stays open for the thread's other calls. */
static uint64_t run_delay_ns(void) {
    static __thread int fd = -2;
    if (fd == -2)
        fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    char buf[96];
    ssize_t n = fd >= 0 ? pread(fd, buf, sizeof(buf) - 1, 0) : -1;
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *end; /* "exec_runtime run_delay timeslices" */
    strtoull(buf, &end, 10);
    return strtoull(end, NULL, 10);
}

void calltime_begin(calltime *k, calltimer *t) {
    t->outer = k->depth++ == 0;
    if (t->outer) {
        getrusage(RUSAGE_THREAD, &t->ru);
        t->delay0 = run_delay_ns();
        t->cpu0 = thread_cpu_ns();
        t->t0 = cp__now_ns();
    }
}

void calltime_end(calltime *k, calltimer *t) {
    k->depth--;
    if (!t->outer)
        return;
    uint64_t took = cp__now_ns() - t->t0;
    uint64_t cpu = thread_cpu_ns() - t->cpu0;
    uint64_t delay = run_delay_ns() - t->delay0;
    struct rusage b;
    getrusage(RUSAGE_THREAD, &b);
    long vol = b.ru_nvcsw - t->ru.ru_nvcsw;
    int preempted = b.ru_nivcsw != t->ru.ru_nivcsw;
    k->n++;
    k->voluntary += vol;
    if (cpu > k->max_cpu_ns)
        k->max_cpu_ns = cpu;
    k->preempted += preempted;
    if (!preempted && took > k->max_ns)
        k->max_ns = took;
    if (vol > 0) {
        uint64_t blocked = took > delay ? took - delay : 0;
        int paged = b.ru_majflt != t->ru.ru_majflt; /* calltime.h: the disk's wait */
        uint64_t *max = paged ? &k->max_paged_ns : &k->max_blocked_ns;
        k->slept++;
        k->paged += paged;
        if (blocked > *max)
            *max = blocked;
    }
}

int calltime_within(const calltime *k, uint64_t bound_ns) {
    return k->max_cpu_ns <= CALLTIME_CPU_BOUND_NS && k->max_blocked_ns <= bound_ns;
}

const char *calltime_str(const calltime *k, char *buf, size_t len) {
    snprintf(buf, len,
             "%llu calls, longest %.2f ms (%llu slept, blocked %.2f ms at most; %llu paged in, "
             "%.2f ms at most; %llu preempted; most CPU in one %.2f ms), %ld voluntary switches",
             (unsigned long long)k->n, (double)k->max_ns / 1e6, (unsigned long long)k->slept,
             (double)k->max_blocked_ns / 1e6, (unsigned long long)k->paged,
             (double)k->max_paged_ns / 1e6, (unsigned long long)k->preempted,
             (double)k->max_cpu_ns / 1e6, k->voluntary);
    return buf;
}

void calltime_assert_never_blocked(const calltime *k, uint64_t more_than, int bounded,
                                   const char *who) {
    char ct[256];
    calltime_str(k, ct, sizeof(ct));
    print_message("%-8s %s\n", who, ct);
    if (k->n <= more_than)
        fail_msg("%s: %llu calls timed, not more than %llu: %s", who, (unsigned long long)k->n,
                 (unsigned long long)more_than, ct);
    if (bounded && !calltime_within(k, CALLTIME_BOUND_NS))
        fail_msg("%s: a library call kept the loop more than %.0f ms, or took more than %.0f ms "
                 "of CPU: %s",
                 who, (double)CALLTIME_BOUND_NS / 1e6, (double)CALLTIME_CPU_BOUND_NS / 1e6, ct);
}
