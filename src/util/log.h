/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The progress hook every long-running layer reports through: a function taking one formatted
 * line (no newline) and the caller's pointer. The CLI prints the lines; tests collect them. No
 * state; the hook runs on the thread that logs.
 */
#ifndef CLUSTERPIPE_UTIL_LOG_H
#define CLUSTERPIPE_UTIL_LOG_H

#include <stdarg.h>

typedef void (*cp__log_fn)(void *ud, const char *line);

/* Formats one line (at most 1 KiB, longer lines are cut) and hands it to fn; nothing when fn is
 * NULL. */
void cp__logf(cp__log_fn fn, void *ud, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* cp__logf for a caller that has its own variadic front (a layer's "say"). */
void cp__vlogf(cp__log_fn fn, void *ud, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif /* CLUSTERPIPE_UTIL_LOG_H */
