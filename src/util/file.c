/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Files (see file.h): atomic writes, whole-file reads, tails, mkdir -p and recursive removal.
 * Keeps no state; thread-safe. Buffers returned by cp__read_file are owned by the caller.
 */
#include "util/file.h"

#include "util/errmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cp__mkdir_p(const char *path, mode_t mode) {
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof(buf))
        return -ENAMETOOLONG;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char c = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, mode) != 0 && errno != EEXIST)
            return -errno;
        buf[i] = c;
    }
    struct stat st;
    if (stat(path, &st) != 0)
        return -errno;
    return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* nftw callback: remove each entry after its children (FTW_DEPTH), never following links. */
static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)ftw;
    int rc = (flag == FTW_DP) ? rmdir(path) : unlink(path);
    if (rc != 0 && errno != ENOENT)
        return -errno;
    return 0;
}

int cp__rm_rf(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISDIR(st.st_mode))
        return unlink(path) == 0 ? 0 : -errno;
    int rc = nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return rc < 0 ? (errno ? -errno : -EIO) : -rc;
}

/* Writes all of data to fd, retrying short writes and EINTR. */
static int write_all(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t w = write(fd, data, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        data += w;
        len -= (size_t)w;
    }
    return 0;
}

int cp__write_file(const char *path, const char *data, size_t len, mode_t mode) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    int rc = write_all(fd, data, len);
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    return rc;
}

int cp__write_file_atomic(const char *path, const char *data, size_t len, mode_t mode) {
    char tmp[4200];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
        return -ENAMETOOLONG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    int rc = write_all(fd, data, len);
    if (rc == 0 && fsync(fd) != 0)
        rc = -errno;
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -errno;
    if (rc != 0)
        unlink(tmp);
    return rc;
}

int cp__write_text(const char *path, const char *data, size_t len, char *err, size_t errlen) {
    int rc = cp__write_file_atomic(path, data, len, 0644);
    if (rc != 0)
        cp__seterr(err, errlen, "cannot write %s: %s", path, strerror(-rc));
    return rc;
}

char *cp__read_file(const char *path, size_t max, size_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf != NULL && n < max) {
        if (n == cap) {
            cap *= 2;
            char *nb = realloc(buf, cap + 1);
            if (nb == NULL) {
                free(buf);
                buf = NULL;
                errno = ENOMEM;
                break;
            }
            buf = nb;
        }
        size_t want = cap - n < max - n ? cap - n : max - n;
        ssize_t r = read(fd, buf + n, want);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            buf = NULL;
            errno = e;
            break;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (buf == NULL)
        return NULL;
    buf[n] = '\0';
    if (len != NULL)
        *len = n;
    return buf;
}

/* Reads the last `max` bytes of path (NUL-terminated, malloc'd) or NULL. */
static char *read_last(const char *path, size_t max) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return NULL;
    }
    off_t off = st.st_size > (off_t)max ? st.st_size - (off_t)max : 0;
    size_t want = (size_t)(st.st_size - off);
    char *buf = malloc(want + 1);
    size_t n = 0;
    while (buf != NULL && n < want) {
        ssize_t r = pread(fd, buf + n, want - n, off + (off_t)n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (buf != NULL)
        buf[n] = '\0';
    return buf;
}

size_t cp__file_tail(const char *path, int nlines, char *buf, size_t len) {
    if (len == 0)
        return 0;
    buf[0] = '\0';
    char *all = read_last(path, 65536);
    if (all == NULL)
        return 0;
    size_t n = strlen(all);
    while (n > 0 && (all[n - 1] == '\n' || all[n - 1] == '\r'))
        all[--n] = '\0';
    /* Walk back nlines newlines. */
    size_t start = n;
    int seen = 0;
    while (start > 0) {
        if (all[start - 1] == '\n' && ++seen == nlines)
            break;
        start--;
    }
    size_t out = 0;
    int at_line_start = 1;
    for (size_t i = start; i < n && out + 3 < len; i++) {
        if (at_line_start) {
            buf[out++] = ' ';
            buf[out++] = ' ';
            at_line_start = 0;
        }
        buf[out++] = all[i];
        if (all[i] == '\n')
            at_line_start = 1;
    }
    buf[out] = '\0';
    free(all);
    return out;
}

int cp__file_contains(const char *path, const char *needle) {
    char *all = read_last(path, 65536);
    if (all == NULL)
        return 0;
    int found = strstr(all, needle) != NULL;
    free(all);
    return found;
}
