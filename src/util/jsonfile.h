/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Writing a JSON document to a file the way every results file of clusterpipe is written:
 * 2-space indent, keys in insertion order, a trailing newline, atomically (cp__write_file_atomic),
 * so a reader or a crash never sees half a file. No state; any thread; blocks on the file system.
 */
#ifndef CLUSTERPIPE_UTIL_JSONFILE_H
#define CLUSTERPIPE_UTIL_JSONFILE_H

#include <stddef.h>

#include <jansson.h>

/* Returns 0, -ENOMEM (serialising failed) or -errno of the write, with a message in err naming
 * the path. The caller keeps its reference to obj. */
int cp__json_write_file(const char *path, const json_t *obj, char *err, size_t errlen);

#endif /* CLUSTERPIPE_UTIL_JSONFILE_H */
