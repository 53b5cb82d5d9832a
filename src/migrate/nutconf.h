/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The sources a nutcracker (twemproxy) configuration names: the `servers:` entries of every pool
 * ("- host:port:weight [name]"), in order, duplicates once, and the first pool's `redis_auth`
 * (the servers' password). No I/O: given the YAML's text. Only what nutcracker's own files use
 * is read: one mapping per pool, its keys indented under it, the server list a sequence of plain
 * scalars; anything else in a pool is skipped.
 */
#ifndef CLUSTERPIPE_MIGRATE_NUTCONF_H
#define CLUSTERPIPE_MIGRATE_NUTCONF_H

#include <stddef.h>

#define CP__NUTCONF_MAX_SERVERS 64

typedef struct cp__nutconf {
    int n;
    char host[CP__NUTCONF_MAX_SERVERS][256];
    int port[CP__NUTCONF_MAX_SERVERS];
    int has_password;
    char password[512];
} cp__nutconf;

/* 0, or -1 with err naming the line (a server entry that is not host:port:weight, too many
 * servers, none at all). */
int cp__nutconf_parse(const char *text, cp__nutconf *out, char *err, size_t errlen);

#endif
