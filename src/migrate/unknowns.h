/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A source's data of types that cannot be moved: the values and aux data of Redis modules
 * (rdbread.h hands them out with their module type's name). A RESTORE of them needs the module on
 * the target, and a cluster of plain redis-servers has none. Counted, with their module types'
 * names and the first keys' names as text, for the refusal that names them or, with
 * --skip-unknown-types, for the list of what was skipped.
 */
#ifndef CLUSTERPIPE_MIGRATE_UNKNOWNS_H
#define CLUSTERPIPE_MIGRATE_UNKNOWNS_H

#include <stdint.h>

#include "migrate/rdbread.h"

#define CP__UNKNOWNS_LISTED 10 /* key names kept */

typedef struct cp__unknowns {
    uint64_t keys;   /* keys of module types */
    uint64_t aux;    /* aux data of modules */
    char types[100]; /* the module types' names seen, comma-separated, each once */
    int listed;      /* key[0 .. listed - 1]: the first keys' names as text */
    /* Printable ASCII as it is, '"' and '\' and other bytes as \xHH; past 80 bytes cut, "...". */
    char key[CP__UNKNOWNS_LISTED][4 * 80 + 4];
} cp__unknowns;

/* Counts ev: a key of a module type (CP__RDB_EV_KEY of CP__RDB_TYPE_MODULE2) or a module's aux
 * data (CP__RDB_EV_MODULE_AUX). */
void cp__unknowns_note(cp__unknowns *u, const cp__rdb_event *ev);

#endif
