/* SPDX-License-Identifier: BSD-3-Clause
 *
 * nutcracker's configuration, read for its servers (nutconf.h): line by line, a `servers:` key
 * opening a sequence that lasts while lines start with "-" (after their indentation).
 */
#include "migrate/nutconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A YAML scalar as nutcracker writes one: plain, 'single' ('' an apostrophe) or "double". */
static void scalar(const char *v, size_t len, char *out, size_t cap) {
    size_t o = 0;
    if (len >= 2 && (v[0] == '\'' || v[0] == '"') && v[len - 1] == v[0]) {
        char q = v[0];
        for (size_t i = 1; i + 1 < len && o + 1 < cap; i++) {
            out[o++] = v[i];
            i += q == '\'' && v[i] == '\'' && v[i + 1] == '\''; /* '' is one ' */
        }
    } else {
        for (size_t i = 0; i < len && o + 1 < cap; i++)
            out[o++] = v[i];
    }
    out[o] = '\0';
}

/* "host:port:weight [name]" into the list. */
static int server(cp__nutconf *c, const char *v, size_t len, int line, char *err, size_t errlen) {
    size_t end = 0;
    while (end < len && v[end] != ' ' && v[end] != '\t')
        end++;
    const char *last = NULL, *port = NULL;
    for (const char *p = v; p < v + end; p++)
        if (*p == ':')
            port = last, last = p;
    char *stop;
    long n = port ? strtol(port + 1, &stop, 10) : 0;
    if (port == NULL || port == v || stop != last || n < 1 || n > 65535 ||
        (size_t)(port - v) >= sizeof c->host[0])
        return snprintf(err, errlen, "line %d: '%.*s' is not host:port:weight", line, (int)end, v),
               -1;
    for (int i = 0; i < c->n; i++)
        if (c->port[i] == n && strlen(c->host[i]) == (size_t)(port - v) &&
            memcmp(c->host[i], v, (size_t)(port - v)) == 0)
            return 0;
    if (c->n == CP__NUTCONF_MAX_SERVERS)
        return snprintf(err, errlen, "more than %d servers", CP__NUTCONF_MAX_SERVERS), -1;
    snprintf(c->host[c->n], sizeof c->host[0], "%.*s", (int)(port - v), v);
    c->port[c->n++] = (int)n;
    return 0;
}

int cp__nutconf_parse(const char *text, cp__nutconf *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    int in_servers = 0, line = 0;
    for (const char *l = text; *l; line++) {
        size_t len = strcspn(l, "\n");
        const char *next = l[len] ? l + len + 1 : l + len;
        size_t ind = strspn(l, " \t");
        const char *v = l + ind;
        size_t vl = len - ind;
        while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\r' || v[vl - 1] == '\t'))
            vl--;
        if (vl == 0 || v[0] == '#') {
            l = next;
            continue;
        }
        if (in_servers && v[0] == '-') {
            size_t skip = 1 + strspn(v + 1, " \t");
            if (server(out, v + skip, vl - skip, line + 1, err, errlen) != 0)
                return -1;
        } else {
            in_servers = vl == 8 && memcmp(v, "servers:", 8) == 0;
            if (vl > 11 && memcmp(v, "redis_auth:", 11) == 0 && !out->has_password) {
                size_t s = 11 + strspn(v + 11, " \t");
                scalar(v + s, vl - s, out->password, sizeof out->password);
                out->has_password = 1;
            }
        }
        l = next;
    }
    if (out->n == 0)
        return snprintf(err, errlen, "no servers: no pool lists a server"), -1;
    return 0;
}
