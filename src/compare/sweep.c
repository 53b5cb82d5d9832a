/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Parsing a compare sweep (sweep.h). No state; any thread.
 */
#include "compare/sweep.h"

#include "util/dur.h"
#include "util/errmsg.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const param_names[] = {"", "pipeline", "shards", "value-size", "clients", "rtt"};

const char *cp__sweep_param_name(cp__sweep_param p) {
    return (size_t)p < sizeof(param_names) / sizeof(param_names[0]) ? param_names[p] : "";
}

char *cp__sweep_value_format(cp__sweep_param p, uint64_t v, char *buf, size_t len) {
    if (p == CP__SWEEP_RTT)
        return cp__dur_format(v, buf, len);
    snprintf(buf, len, "%" PRIu64, v);
    return buf;
}

/* One value of a count parameter at v: into *x, *end past it. 0, or -1 with err. */
static int parse_count(const char *spec, const char *v, uint64_t *x, const char **end, char *err,
                       size_t errlen) {
    if (!isdigit((unsigned char)*v)) {
        cp__seterr(err, errlen, "'%s': the values must be positive integers", spec);
        return -1;
    }
    char *e;
    errno = 0;
    unsigned long long n = strtoull(v, &e, 10);
    *end = e;
    if (errno != 0 || n == 0 || n > (1ull << 40)) {
        cp__seterr(err, errlen, "'%s': %.*s is out of range", spec, (int)(e - v), v);
        return -1;
    }
    *x = n;
    return 0;
}

/* One round trip at v (up to the next comma): into *x in ns, *end past it. 0, or -1 with err. */
static int parse_rtt(const char *spec, const char *v, uint64_t *x, const char **end, char *err,
                     size_t errlen) {
    size_t n = strcspn(v, ",");
    char one[64];
    *end = v + n;
    if (n == 0 || n >= sizeof(one)) {
        cp__seterr(err, errlen,
                   "'%s': an empty or overlong value (rtt: durations such as 0, "
                   "100us, 1ms)",
                   spec);
        return -1;
    }
    memcpy(one, v, n);
    one[n] = '\0';
    if (cp__dur_parse(one, x) != 0) {
        cp__seterr(err, errlen,
                   "'%s': %s is not a round trip: a duration with its unit (0, 100us, 0.5ms, "
                   "1ms), not negative",
                   spec, one);
        return -1;
    }
    if (*x > CP__SWEEP_RTT_MAX_NS) {
        cp__seterr(err, errlen, "'%s': %s is more than the largest round trip a sweep takes, 1s",
                   spec, one);
        return -1;
    }
    return 0;
}

int cp__sweep_parse(cp__sweep *s, const char *spec, char *err, size_t errlen) {
    memset(s, 0, sizeof(*s));
    const char *eq = strchr(spec, '=');
    size_t nlen = eq ? (size_t)(eq - spec) : 0;
    for (int p = CP__SWEEP_PIPELINE; eq && p <= CP__SWEEP_RTT; p++)
        if (strlen(param_names[p]) == nlen && strncmp(spec, param_names[p], nlen) == 0)
            s->param = (cp__sweep_param)p;
    if (s->param == CP__SWEEP_NONE) {
        cp__seterr(err, errlen,
                   "'%s' is not PARAM=V1,V2,... with PARAM pipeline, shards, value-size, "
                   "clients or rtt",
                   spec);
        return -1;
    }
    const char *v = eq + 1;
    for (;;) {
        uint64_t x;
        const char *end;
        int rc = s->param == CP__SWEEP_RTT ? parse_rtt(spec, v, &x, &end, err, errlen)
                                           : parse_count(spec, v, &x, &end, err, errlen);
        if (rc != 0)
            return -1;
        for (int i = 0; i < s->n; i++)
            if (s->values[i] == x) {
                char shown[32];
                cp__seterr(err, errlen, "'%s': %s is given twice", spec,
                           cp__sweep_value_format(s->param, x, shown, sizeof(shown)));
                return -1;
            }
        if (s->n == CP__SWEEP_MAX_POINTS) {
            cp__seterr(err, errlen, "'%s': at most %d points", spec, CP__SWEEP_MAX_POINTS);
            return -1;
        }
        s->values[s->n++] = x;
        if (*end == '\0')
            break;
        if (*end != ',') {
            cp__seterr(err, errlen, "'%s': values are separated by commas", spec);
            return -1;
        }
        v = end + 1;
    }
    return 0;
}
