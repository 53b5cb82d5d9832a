/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A link's spec as `clusterpipe wire --link` and the control socket's `link` request give it:
 * "NAME=LISTEN_PORT:HOST:PORT" (wire.h). Pure; any thread.
 */
#include "wire/wire.h"

#include "util/errmsg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int cp__wire_link_parse(const char *s, cp__wire_link_spec *l, char *err, size_t errlen) {
    memset(l, 0, sizeof(*l));
    const char *eq = strchr(s, '=');
    const char *colon = eq != NULL ? strchr(eq + 1, ':') : NULL;
    const char *host = colon != NULL ? colon + 1 : NULL;
    const char *hend = NULL, *port = NULL;
    if (host != NULL && *host == '[') {
        hend = strchr(host, ']');
        host++;
        port = hend != NULL && hend[1] == ':' ? hend + 2 : NULL;
    } else if (host != NULL) {
        hend = strrchr(host, ':');
        port = hend != NULL ? hend + 1 : NULL;
    }
    char *end;
    unsigned long lp = 0, tp = 0;
    if (eq != NULL && colon != NULL)
        lp = strtoul(eq + 1, &end, 10);
    if (eq == NULL || eq == s || (size_t)(eq - s) >= sizeof(l->name) || colon == NULL ||
        end != colon || lp == 0 || lp > 65535 || port == NULL || hend == host ||
        (size_t)(hend - host) >= sizeof(l->host) || (tp = strtoul(port, &end, 10)) == 0 ||
        *end != '\0' || tp > 65535) {
        cp__seterr(err, errlen,
                   "link \"%s\": expected NAME=LISTEN_PORT:HOST:PORT (an IPv6 host in brackets)",
                   s);
        return -EINVAL;
    }
    memcpy(l->name, s, (size_t)(eq - s));
    memcpy(l->host, host, (size_t)(hend - host));
    l->listen_port = (uint16_t)lp;
    l->port = (uint16_t)tp;
    return 0;
}
