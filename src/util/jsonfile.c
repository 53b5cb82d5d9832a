/* SPDX-License-Identifier: BSD-3-Clause
 *
 * JSON documents to files (see jsonfile.h). No state; thread-safe.
 */
#include "util/jsonfile.h"

#include "util/errmsg.h"
#include "util/file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int cp__json_write_file(const char *path, const json_t *obj, char *err, size_t errlen) {
    char *text = json_dumps(obj, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    char *withnl = NULL;
    size_t n = text ? strlen(text) : 0;
    if (text != NULL)
        withnl = realloc(text, n + 2);
    if (withnl == NULL) {
        free(text);
        cp__seterr(err, errlen, "out of memory serialising %s", path);
        return -ENOMEM;
    }
    withnl[n] = '\n';
    withnl[n + 1] = '\0';
    int rc = cp__write_text(path, withnl, n + 1, err, errlen);
    free(withnl);
    return rc;
}
