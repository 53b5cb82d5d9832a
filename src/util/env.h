/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The environment probe: what a report must say about the machine that produced its numbers
 * (cores online, CPU model, kernel, date), so any number can be traced and reproduced. Versions of
 * redis and nutcracker are asked of the servers by the bench, not probed here; the results files'
 * "environment" object is built here once for compare and scenario. No state; any thread; reads
 * /proc/cpuinfo.
 */
#ifndef CLUSTERPIPE_UTIL_ENV_H
#define CLUSTERPIPE_UTIL_ENV_H

#include <jansson.h>

typedef struct cp__env {
    int cores;           /* online, 0 when unknown */
    char cpu_model[128]; /* /proc/cpuinfo's first "model name", "" when unknown */
    char kernel[256];    /* "sysname release machine", "unknown" when uname fails */
    char date[32];       /* now, UTC, ISO 8601 ("2026-12-01T09:00:00Z") */
} cp__env;

/* Fills every field of e. Never fails: what cannot be read is left at its "unknown" value. */
void cp__env_probe(cp__env *e);

/* /proc/meminfo's MemAvailable in bytes (what can be allocated without swapping), -1 when
 * unknown. */
long long cp__env_mem_available(void);

/* The "environment" object of a results file: {clusterpipe, redis, nutcracker, cores, cpu_model,
 * kernel, date}. Versions NULL or "" become null; cores <= 0 and a NULL or empty cpu_model are
 * taken from this machine (a run's own reading wins: it is the machine that measured). Kernel and
 * date are probed now. Returns a new reference, NULL on OOM. */
json_t *cp__env_json(const char *clusterpipe, const char *redis, const char *nutcracker, int cores,
                     const char *cpu_model);

#endif /* CLUSTERPIPE_UTIL_ENV_H */
