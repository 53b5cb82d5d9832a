/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The pure helpers of a run's plan (see plan.h): the --ratio parser and the SET:GET spread, lanes
 * per client, clients per thread and requests per client. Unit-tested, used by engine.c, load.c
 * and the workers.
 *
 * No allocation, no state: every function is pure and callable from any thread.
 */
#include "bench/plan.h"

int cp__ratio_parse(const char *s, unsigned *set, unsigned *get) {
    if (s == NULL)
        return CP_EINVAL;
    unsigned long v[2];
    const char *p = s;
    for (int i = 0; i < 2; i++) {
        if (*p < '0' || *p > '9')
            return CP_EINVAL;
        unsigned long x = 0;
        while (*p >= '0' && *p <= '9') {
            x = x * 10 + (unsigned long)(*p - '0');
            if (x > 1000000)
                return CP_EINVAL;
            p++;
        }
        v[i] = x;
        if (i == 0 && *p++ != ':')
            return CP_EINVAL;
    }
    if (*p != '\0' || (v[0] == 0 && v[1] == 0))
        return CP_EINVAL;
    *set = (unsigned)v[0];
    *get = (unsigned)v[1];
    return 0;
}

/* Bresenham over one period of set + get requests: request m of the period is a SET when
 * floor((m + 1) * set / period) steps past floor(m * set / period). */
bool cp__ratio_is_set(uint64_t n, unsigned ratio_set, unsigned ratio_get) {
    uint64_t period = (uint64_t)ratio_set + ratio_get;
    if (ratio_set == 0 || period == 0)
        return false;
    if (ratio_get == 0)
        return true;
    uint64_t m = n % period;
    return (m + 1) * ratio_set / period != m * ratio_set / period;
}

int cp__lane_count(cp__target_mode mode, int masters) {
    return mode == CP__TARGET_CLUSTER && masters > 1 ? masters : 1;
}

int cp__clients_of_thread(int clients, int threads, int thread) {
    if (threads <= 0 || thread < 0 || thread >= threads)
        return 0;
    return clients / threads + (thread < clients % threads ? 1 : 0);
}

uint64_t cp__client_quota(uint64_t total, int clients, int client) {
    /* total * i / clients without overflow for any realistic total */
    unsigned __int128 a = (unsigned __int128)total * (unsigned)client / (unsigned)clients;
    unsigned __int128 b = (unsigned __int128)total * (unsigned)(client + 1) / (unsigned)clients;
    return (uint64_t)(b - a);
}
