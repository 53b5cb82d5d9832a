/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Files, for every layer above the library: atomic writes (state, configs, results, reports),
 * whole-file reads, a log file's tail, mkdir -p and recursive removal of directories we created.
 * Errors are 0 or -errno; callers turn them into their CP_E* code and message. No state; every
 * function is safe from any thread. Returned heap buffers are freed by the caller. Blocks on the
 * file system.
 */
#ifndef CLUSTERPIPE_UTIL_FILE_H
#define CLUSTERPIPE_UTIL_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* mkdir -p with mode for every created component. Returns 0 or -errno. */
int cp__mkdir_p(const char *path, mode_t mode);

/* Removes path and everything below it without following symlinks. 0, or -errno of the first
 * failure; a missing path is 0. */
int cp__rm_rf(const char *path);

/* Writes data to path (created with mode, truncated). Returns 0 or -errno. */
int cp__write_file(const char *path, const char *data, size_t len, mode_t mode);

/* Writes data to path.tmp.PID, fsyncs it and renames it over path, so a reader sees the old or the
 * new content, never a mix. Returns 0 or -errno. */
int cp__write_file_atomic(const char *path, const char *data, size_t len, mode_t mode);

/* cp__write_file_atomic with mode 0644 and, on failure, "cannot write PATH: REASON" in err: how
 * results, tables, scripts and reports are written. Returns 0 or -errno. */
int cp__write_text(const char *path, const char *data, size_t len, char *err, size_t errlen);

/* Reads at most max bytes of path into a NUL-terminated malloc'd buffer (caller frees); *len
 * (optional) gets the size. NULL with errno set on failure. */
char *cp__read_file(const char *path, size_t max, size_t *len);

/* Copies the last nlines lines of path (its last 64 KiB at most) into buf, NUL-terminated, each
 * line indented by two spaces. Returns the number of bytes written; 0 when the file is missing
 * or empty. */
size_t cp__file_tail(const char *path, int nlines, char *buf, size_t len);

/* 1 when the file at path contains needle (in its last 64 KiB). */
int cp__file_contains(const char *path, const char *needle);

#endif /* CLUSTERPIPE_UTIL_FILE_H */
