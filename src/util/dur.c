/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Durations (dur.h).
 */
#include "util/dur.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOUR_NS 3600000000000ull

static const struct {
    const char *unit;
    uint64_t ns;
} units[] = {{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}};

int cp__dur_parse(const char *s, uint64_t *ns) {
    if (s == NULL || *s == '\0' || *s == '-' || *s == '+' || *s == ' ')
        return -EINVAL;
    if (strcmp(s, "0") == 0) {
        *ns = 0;
        return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno != 0 || !isfinite(v) || v < 0)
        return -EINVAL;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcmp(end, units[i].unit) == 0) {
            double total = v * (double)units[i].ns;
            if (total > (double)HOUR_NS)
                return -EINVAL;
            *ns = (uint64_t)(total + 0.5);
            return 0;
        }
    return -EINVAL;
}

int cp__dur_parse_jitter(const char *s, uint64_t *ns, uint64_t *jitter_ns) {
    const char *tilde = s != NULL ? strchr(s, '~') : NULL;
    *jitter_ns = 0;
    if (tilde == NULL)
        return cp__dur_parse(s, ns);
    char head[64];
    size_t n = (size_t)(tilde - s);
    if (n == 0 || n >= sizeof(head))
        return -EINVAL;
    memcpy(head, s, n);
    head[n] = '\0';
    if (cp__dur_parse(head, ns) != 0 || cp__dur_parse(tilde + 1, jitter_ns) != 0 ||
        *jitter_ns > *ns)
        return -EINVAL;
    return 0;
}

char *cp__dur_format(uint64_t ns, char *buf, size_t len) {
    if (len == 0)
        return buf;
    if (ns == 0) {
        snprintf(buf, len, "0");
        return buf;
    }
    size_t i = sizeof(units) / sizeof(units[0]);
    while (--i > 0 && ns < units[i].ns)
        ;
    /* The largest unit the value reaches; three decimals at most, trailing zeros dropped. */
    char num[32];
    snprintf(num, sizeof(num), "%.3f", (double)ns / (double)units[i].ns);
    char *dot = strchr(num, '.');
    if (dot != NULL) {
        char *e = num + strlen(num) - 1;
        while (e > dot && *e == '0')
            *e-- = '\0';
        if (e == dot)
            *e = '\0';
    }
    snprintf(buf, len, "%s%s", num, units[i].unit);
    return buf;
}
