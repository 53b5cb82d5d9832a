/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Data of module types, counted and named (unknowns.h).
 */
#include "migrate/unknowns.h"

#include <stdio.h>
#include <string.h>

/* Adds the module type's name to u->types unless it is there (or no longer fits). */
static void note_type(cp__unknowns *u, const char *name) {
    size_t n = strlen(u->types), len = strlen(name);
    for (const char *at = u->types; (at = strstr(at, name)) != NULL; at += len)
        if ((at == u->types || at[-1] == ',') && (at[len] == ',' || at[len] == '\0'))
            return;
    if (n + 1 + len < sizeof u->types)
        snprintf(u->types + n, sizeof u->types - n, "%s%s", n ? "," : "", name);
}

static void key_text(char *out, const char *key, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len && i < 80; i++) {
        unsigned char c = (unsigned char)key[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
            out[n++] = (char)c;
        else
            n += (size_t)sprintf(out + n, "\\x%02x", c);
    }
    strcpy(out + n, len > 80 ? "..." : "");
}

void cp__unknowns_note(cp__unknowns *u, const cp__rdb_event *ev) {
    note_type(u, ev->module);
    if (ev->type == CP__RDB_EV_MODULE_AUX) {
        u->aux++;
        return;
    }
    u->keys++;
    if (u->listed < CP__UNKNOWNS_LISTED)
        key_text(u->key[u->listed++], ev->name, ev->name_len);
}
