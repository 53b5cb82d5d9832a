/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Parsing a compare sweep (sweep.h). No state; any thread.
 */
#include "compare/sweep.h"

#include "util/errmsg.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const param_names[] = {"", "pipeline", "shards", "value-size", "clients"};

const char *cp__sweep_param_name(cp__sweep_param p) {
    return (size_t)p < sizeof(param_names) / sizeof(param_names[0]) ? param_names[p] : "";
}

int cp__sweep_parse(cp__sweep *s, const char *spec, char *err, size_t errlen) {
    memset(s, 0, sizeof(*s));
    const char *eq = strchr(spec, '=');
    size_t nlen = eq ? (size_t)(eq - spec) : 0;
    for (int p = CP__SWEEP_PIPELINE; eq && p <= CP__SWEEP_CLIENTS; p++)
        if (strlen(param_names[p]) == nlen && strncmp(spec, param_names[p], nlen) == 0)
            s->param = (cp__sweep_param)p;
    if (s->param == CP__SWEEP_NONE) {
        cp__seterr(err, errlen,
                   "'%s' is not PARAM=V1,V2,... with PARAM pipeline, shards, value-size or "
                   "clients",
                   spec);
        return -1;
    }
    const char *v = eq + 1;
    for (;;) {
        if (!isdigit((unsigned char)*v)) {
            cp__seterr(err, errlen, "'%s': the values must be positive integers", spec);
            return -1;
        }
        char *end;
        errno = 0;
        unsigned long long x = strtoull(v, &end, 10);
        if (errno != 0 || x == 0 || x > (1ull << 40)) {
            cp__seterr(err, errlen, "'%s': %.*s is out of range", spec, (int)(end - v), v);
            return -1;
        }
        for (int i = 0; i < s->n; i++)
            if (s->values[i] == x) {
                cp__seterr(err, errlen, "'%s': %llu is given twice", spec, x);
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
