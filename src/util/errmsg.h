/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Error messages into caller buffers (`char *err, size_t errlen`, the convention of every layer
 * above the library). No state; any thread.
 */
#ifndef CLUSTERPIPE_UTIL_ERRMSG_H
#define CLUSTERPIPE_UTIL_ERRMSG_H

#include <stddef.h>

/* snprintf into err (when err != NULL and errlen > 0). */
void cp__seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Appends to the message already in err, space permitting. */
void cp__adderr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* CLUSTERPIPE_UTIL_ERRMSG_H */
