/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Each library call an event loop makes, timed, for the tests that no call blocks the loop
 * (issue 18: none takes longer than 10 ms): its wall time, its thread's CPU time, and whether the
 * thread left the CPU during it (getrusage's context switches).
 *
 * What each figure can tell. A call that blocks sleeps in the kernel (poll, connect, read): the
 * thread switches out voluntarily, and the call's wall time, less the time the thread then
 * waited for a CPU to run on again (its run delay, /proc/thread-self/schedstat), says how long
 * it kept the loop. A call that spins shows in its CPU time (user and kernel). A call the
 * scheduler interrupted (an involuntary switch) and did not sleep measures the scheduler. And a
 * call in which the thread never left the CPU can still take longer on the clock than its CPU
 * time when the machine took the CPU away: a hypervisor's steal (a guest sees no switch for it;
 * seen on CI's VM: a call of 15.8 ms wall time without a switch, while no call had more than
 * 1.27 ms of CPU) or interrupts. And the CPU time is not all the call's own: a kernel without
 * IRQ time accounting (CONFIG_IRQ_TIME_ACCOUNTING unset, as on CI's VM) charges the softirq
 * work that runs in a thread's context, loopback receives of every socket on that CPU, to the
 * thread (seen in CI's make test: one call of 27.8 ms of CPU, preempted, while no call the
 * scheduler left alone took more than 0.58 ms on the clock). A call that spins (the fault the
 * CPU figure catches: a loop on a socket that is not ready) spins until a timeout, a second or
 * more. And a thread also sleeps in a call when the call runs code whose page is not in memory
 * (a major page fault: the page is read from the disk): the kernel drops a program's and its
 * libraries' pages from the page cache on these VMs even with memory free (the cgroup's
 * workingset_refault_file grows), and a worker thread was seen (perf's sched_switch) sleeping in
 * filemap_fault in libev's ev_run and libevent's event_base_loop. On a disk busy with other
 * tests' servers such a read took 7-10 ms, and it stalled three of four loops at once in CI's make
 * test at four tests at a time (the same code page, first run by the three when the slots moved).
 * That wait is the disk's, not the library's: the library maps no file. So a call is within the
 * bounds when its blocked time, if its thread slept in it and took no major fault, is within the
 * blocking bound, and its CPU time within CALLTIME_CPU_BOUND_NS (calltime_within); the calls that
 * took a major fault are counted and their longest wait printed. Every call's wall time is
 * recorded as well, and printed.
 *
 * Ownership: the caller's structs; one calltime per thread (or per client) at a time. Nested calls
 * (a call made from inside a timed one) are part of the outer one.
 */
#ifndef CLUSTERPIPE_CALLTIME_H
#define CLUSTERPIPE_CALLTIME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

typedef struct calltime {
    uint64_t n;
    uint64_t max_ns;         /* wall time, of the calls the scheduler did not interrupt */
    uint64_t max_blocked_ns; /* wall time less run delay, of the calls in which the thread slept
                                (a voluntary switch) and took no major page fault */
    uint64_t max_paged_ns;   /* the same, of the calls that took a major page fault */
    uint64_t max_cpu_ns;     /* the thread's CPU time, of every call */
    uint64_t preempted;      /* calls the scheduler interrupted */
    uint64_t slept;          /* calls in which the thread slept */
    uint64_t paged;          /* calls that took a major page fault (a page read from the disk) */
    long voluntary;          /* voluntary switches inside calls */
    int depth;               /* inside a timed call */
} calltime;

/* Whether a test asserts its bounds (1) or only prints its figures (0): under a sanitizer its
 * allocator's locks, shared by the test's threads, and its shadow memory make calls wait for
 * another thread or the kernel and spend CPU that is not the library's (seen under ASan: 10 ms
 * waits with 1 ms of CPU, a call of 39 ms of CPU). The plain build (CI's make test) asserts. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CALLTIME_ASSERTED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CALLTIME_ASSERTED 0
#endif
#endif
#ifndef CALLTIME_ASSERTED
#define CALLTIME_ASSERTED 1
#endif

/* One call being timed: begin and end it with the same calltime. */
typedef struct calltimer {
    struct rusage ru;
    uint64_t t0, cpu0, delay0;
    int outer;
} calltimer;

void calltime_begin(calltime *k, calltimer *t);
void calltime_end(calltime *k, calltimer *t);

/* 1 when every call that slept was blocked for at most bound_ns and took at most
 * CALLTIME_CPU_BOUND_NS of CPU, as the header says; 0 otherwise. */
int calltime_within(const calltime *k, uint64_t bound_ns);

/* What no call an event loop makes into the library may take (issue 18). */
#define CALLTIME_BOUND_NS 10000000ull

/* The CPU no call may take: far below a spin's (a second or more), above what the softirq work
 * charged to a thread has been seen to add (28 ms; the header says why). */
#define CALLTIME_CPU_BOUND_NS 100000000ull

/* The check of every test that a loop was never blocked: prints who and calltime_str's
 * figures (cmocka's print_message), then fails the test (naming who, with the figures) unless k
 * timed more than more_than calls and, when bounded, every one kept within CALLTIME_BOUND_NS
 * (calltime_within). bounded is CALLTIME_ASSERTED, or a test's own rule (test_async.c's: not
 * under valgrind). */
void calltime_assert_never_blocked(const calltime *k, uint64_t more_than, int bounded,
                                   const char *who);

/* "N calls, longest W ms (S slept, blocked B ms at most; F paged in, D ms at most; P preempted;
 * most CPU in one C ms), V voluntary switches" into buf. */
const char *calltime_str(const calltime *k, char *buf, size_t len);

#endif
