/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Error messages into caller buffers (see errmsg.h). No state; thread-safe.
 */
#include "util/errmsg.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void cp__seterr(char *err, size_t errlen, const char *fmt, ...) {
    if (err == NULL || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

void cp__adderr(char *err, size_t errlen, const char *fmt, ...) {
    if (err == NULL || errlen == 0)
        return;
    size_t used = strnlen(err, errlen);
    if (used + 1 >= errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + used, errlen - used, fmt, ap);
    va_end(ap);
}
