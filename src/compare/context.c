/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The context of one compare run (context.h): its failures and the document's command list.
 * Borrows the context; the calling thread.
 */
#include "compare/context.h"

#include <stdarg.h>
#include <stdio.h>

void cp__cmp_warn(cp__cmp *r, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (r->first_err[0] == '\0')
        snprintf(r->first_err, sizeof(r->first_err), "%.500s", line);
    r->failed = 1;
    if (r->o->warn != NULL)
        r->o->warn(r->o->ud, line);
}

void cp__cmp_add_command(cp__cmp *r, const char *text) {
    json_array_append_new(json_object_get(r->doc, "commands"), json_string(text));
}
