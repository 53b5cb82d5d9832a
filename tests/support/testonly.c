/* SPDX-License-Identifier: BSD-3-Clause */
#include "testonly.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether the comma-separated list names name whole. */
static int names(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p != NULL; p = strchr(p, ','), p = p != NULL ? p + 1 : NULL)
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

size_t cp_test_only(const struct CMUnitTest *all, size_t n, struct CMUnitTest *out) {
    const char *only = getenv("CP_TEST_ONLY");
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (only == NULL || names(only, all[i].name))
            out[kept++] = all[i];
    /* Every name in the list is a case. */
    for (const char *p = only; p != NULL; p = strchr(p, ','), p = p != NULL ? p + 1 : NULL) {
        size_t len = strcspn(p, ",");
        size_t i = 0;
        while (i < n && !(strlen(all[i].name) == len && strncmp(all[i].name, p, len) == 0))
            i++;
        if (i == n) {
            fprintf(stderr, "CP_TEST_ONLY names %.*s, which is no case of this program\n", (int)len,
                    p);
            exit(1);
        }
    }
    return kept;
}
