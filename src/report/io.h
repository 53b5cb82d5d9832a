/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Report I/O (private to src/report/): loading a "clusterpipe.compare/1" results.json with its
 * shape checked. The renderers write through src/util/ (string buffer, atomic file writes), which
 * this header brings in for them.
 *
 * Memory: cp__rpt_load returns a new jansson reference (json_decref). Threads: no shared state.
 * Never prints; errors come back as a negative CP_E* code with a message in err.
 */
#ifndef CLUSTERPIPE_REPORT_IO_H
#define CLUSTERPIPE_REPORT_IO_H

#include <stddef.h>

#include <jansson.h>

#include "util/file.h"
#include "util/jsonfile.h"
#include "util/sbuf.h"

#define CP__COMPARE_SCHEMA "clusterpipe.compare/1"

/* Reads path, checks it is a "clusterpipe.compare/1" object whose "runs" is an array of
 * objects, each with a string "name". On success *out is a new reference. Returns 0, CP_EIO
 * (unreadable, not JSON; err says where) or CP_EINVAL (wrong schema or shape). */
int cp__rpt_load(const char *path, json_t **out, char *err, size_t errlen);

#endif /* CLUSTERPIPE_REPORT_IO_H */
