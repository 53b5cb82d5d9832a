/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The progress hook (see log.h). No state; thread-safe.
 */
#include "util/log.h"

#include <stdio.h>

void cp__vlogf(cp__log_fn fn, void *ud, const char *fmt, va_list ap) {
    if (fn == NULL)
        return;
    char line[1024];
    vsnprintf(line, sizeof(line), fmt, ap);
    fn(ud, line);
}

void cp__logf(cp__log_fn fn, void *ud, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cp__vlogf(fn, ud, fmt, ap);
    va_end(ap);
}
