/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Scratch directories and stored fixtures for the tests. Single-threaded use.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *cp_test_mkdtemp(const char *tag) {
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || *tmp == '\0')
        tmp = "/tmp";
    size_t n = strlen(tmp) + strlen(tag) + 32;
    char *path = malloc(n);
    if (path == NULL)
        abort();
    snprintf(path, n, "%s/cp-test-%s-XXXXXX", tmp, tag);
    if (mkdtemp(path) == NULL) {
        perror("mkdtemp");
        abort();
    }
    return path;
}

char *cp_test_read_data(const char *name, size_t *len) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", CP_TEST_DATA, name);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return NULL;
    }
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}
