/* SPDX-License-Identifier: BSD-3-Clause
 *
 * CPU lists (cpuset.h): the kernel's list format both ways, and Cpus_allowed_list read back from
 * /proc. No state; any thread.
 */
#include "util/cpuset.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A CPU number at *s (decimal, < CPU_SETSIZE); advances *s. Returns 0 or -EINVAL. */
static int parse_cpu(const char **s, int *cpu) {
    if (!isdigit((unsigned char)**s))
        return -EINVAL;
    char *end;
    errno = 0;
    unsigned long v = strtoul(*s, &end, 10);
    if (errno != 0 || v >= CPU_SETSIZE)
        return -EINVAL;
    *s = end;
    *cpu = (int)v;
    return 0;
}

int cp__cpuset_parse(const char *list, cpu_set_t *out) {
    CPU_ZERO(out);
    const char *s = list;
    if (s == NULL || *s == '\0')
        return -EINVAL;
    for (;;) {
        int lo, hi;
        if (parse_cpu(&s, &lo) != 0)
            goto bad;
        hi = lo;
        if (*s == '-') {
            s++;
            if (parse_cpu(&s, &hi) != 0 || hi < lo)
                goto bad;
        }
        for (int c = lo; c <= hi; c++)
            CPU_SET(c, out);
        if (*s == '\0')
            return 0;
        if (*s++ != ',')
            goto bad;
    }
bad:
    CPU_ZERO(out);
    return -EINVAL;
}

void cp__cpuset_format(const cpu_set_t *s, char *buf, size_t len) {
    if (len == 0)
        return;
    buf[0] = '\0';
    size_t used = 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, s))
            continue;
        int hi = c;
        while (hi + 1 < CPU_SETSIZE && CPU_ISSET(hi + 1, s))
            hi++;
        int n = hi == c ? snprintf(buf + used, len - used, "%s%d", used ? "," : "", c)
                        : snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", c, hi);
        if (n < 0 || (size_t)n >= len - used) {
            buf[used] = '\0'; /* cut at the last whole item */
            return;
        }
        used += (size_t)n;
        c = hi;
    }
}

int cp__cpuset_of(pid_t pid, pid_t tid, cpu_set_t *out) {
    char path[96];
    if (tid > 0)
        snprintf(path, sizeof(path), "/proc/%ld/task/%ld/status", (long)pid, (long)tid);
    else
        snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -errno;
    char line[4096];
    int rc = -EINVAL;
    while (fgets(line, sizeof(line), f) != NULL) {
        static const char key[] = "Cpus_allowed_list:";
        if (strncmp(line, key, sizeof(key) - 1) != 0)
            continue;
        char *v = line + sizeof(key) - 1;
        while (*v == ' ' || *v == '\t')
            v++;
        v[strcspn(v, "\n")] = '\0';
        rc = cp__cpuset_parse(v, out);
        break;
    }
    fclose(f);
    return rc;
}

int cp__cpuset_other_threads(cpu_set_t *out, int *nthreads) {
    CPU_ZERO(out);
    *nthreads = 0;
    DIR *d = opendir("/proc/self/task");
    if (d == NULL)
        return -errno;
    pid_t self = getpid(), me = gettid();
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        pid_t tid = (pid_t)atol(e->d_name);
        cpu_set_t one;
        if (tid <= 0 || tid == me || cp__cpuset_of(self, tid, &one) != 0)
            continue; /* a thread that just ended is not one we can say anything about */
        CPU_OR(out, out, &one);
        (*nthreads)++;
    }
    closedir(d);
    return 0;
}

int cp__cpuset_usable(cpu_set_t *out) {
    return sched_getaffinity(0, sizeof(*out), out) == 0 ? 0 : -errno;
}
