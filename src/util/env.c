/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The environment probe (see env.h). No state; thread-safe (gmtime_r, uname).
 */
#include "util/env.h"

#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* /proc/cpuinfo's first "model name" into model ("" when there is none). */
static void cpu_model(char *model, size_t cap) {
    model[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        const char *v = strchr(line, ':');
        if (v == NULL)
            continue;
        v++;
        while (*v == ' ' || *v == '\t')
            v++;
        snprintf(model, cap, "%.*s", (int)strcspn(v, "\n"), v);
        break;
    }
    fclose(f);
}

void cp__env_probe(cp__env *e) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    e->cores = n > 0 ? (int)n : 0;
    cpu_model(e->cpu_model, sizeof(e->cpu_model));
    struct utsname u;
    snprintf(e->kernel, sizeof(e->kernel), "unknown");
    if (uname(&u) == 0)
        snprintf(e->kernel, sizeof(e->kernel), "%s %s %s", u.sysname, u.release, u.machine);
    time_t now = time(NULL);
    struct tm tm;
    e->date[0] = '\0';
    if (gmtime_r(&now, &tm) != NULL)
        strftime(e->date, sizeof(e->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A string, or JSON null for a missing one. */
static json_t *str_or_null(const char *v) {
    return v != NULL && v[0] != '\0' ? json_string(v) : json_null();
}

json_t *cp__env_json(const char *clusterpipe, const char *redis, const char *nutcracker, int cores,
                     const char *cpu_model) {
    cp__env e;
    cp__env_probe(&e);
    if (cores <= 0)
        cores = e.cores;
    if (cpu_model == NULL || cpu_model[0] == '\0')
        cpu_model = e.cpu_model;
    json_t *o = json_object();
    if (o == NULL)
        return NULL;
    int bad = json_object_set_new(o, "clusterpipe", str_or_null(clusterpipe));
    bad |= json_object_set_new(o, "redis", str_or_null(redis));
    bad |= json_object_set_new(o, "nutcracker", str_or_null(nutcracker));
    bad |= json_object_set_new(o, "cores", json_integer(cores));
    bad |= json_object_set_new(o, "cpu_model", str_or_null(cpu_model));
    bad |= json_object_set_new(o, "kernel", json_string(e.kernel));
    bad |= json_object_set_new(o, "date", json_string(e.date));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

long long cp__env_mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (f == NULL)
        return -1;
    char line[256];
    long long kb = -1;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1)
            break;
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}
