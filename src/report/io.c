/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Report I/O: results.json loading declared in report/io.h. Buffers belong to their caller; nothing
 * here keeps state between calls, so any thread may call it. Never prints.
 */
#include "report/io.h"

#include "clusterpipe/clusterpipe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Loading checks only what the renderers rely on (schema, runs[], names); every number inside a
 * run is optional and rendered "n/a" when absent, so results from older or external runs still
 * render. */
int cp__rpt_load(const char *path, json_t **out, char *err, size_t errlen) {
    json_error_t je;
    *out = NULL;
    json_t *root = json_load_file(path, 0, &je);
    if (root == NULL) {
        if (je.line <= 0)
            snprintf(err, errlen, "cannot read %s: %s", path, je.text);
        else
            snprintf(err, errlen, "%s:%d:%d: not valid JSON: %s", path, je.line, je.column,
                     je.text);
        return CP_EIO;
    }
    const char *schema = json_string_value(json_object_get(root, "schema"));
    json_t *runs = json_object_get(root, "runs");
    if (!json_is_object(root) || schema == NULL || strcmp(schema, CP__COMPARE_SCHEMA) != 0) {
        snprintf(err, errlen, "%s: not a %s file (schema is %s)", path, CP__COMPARE_SCHEMA,
                 schema ? schema : "missing");
        json_decref(root);
        return CP_EINVAL;
    }
    if (!json_is_array(runs)) {
        snprintf(err, errlen, "%s: \"runs\" is missing or not an array", path);
        json_decref(root);
        return CP_EINVAL;
    }
    size_t i;
    json_t *run;
    json_array_foreach(runs, i, run) {
        if (!json_is_object(run) || !json_is_string(json_object_get(run, "name"))) {
            snprintf(err, errlen, "%s: runs[%zu] is not an object with a \"name\"", path, i);
            json_decref(root);
            return CP_EINVAL;
        }
    }
    *out = root;
    return 0;
}
