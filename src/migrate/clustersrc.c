/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A cluster named as a source (clustersrc.h).
 */
#include "migrate/clustersrc.h"

#include <stdio.h>
#include <string.h>

#include "clusterpipe/clusterpipe.h"
#include "migrate/respconn.h"
#include "migrate/srcconn.h"

/* The masters serving slots in the map read from the seeds. */
static int masters(const char *seeds, const char *user, const char *password, const cp_options *tls,
                   int timeout_ms, cp__sources *out, char *err, size_t errlen) {
    cp_options co = {0};
    co.seeds = seeds;
    co.password = password;
    co.username = user;
    co.io_timeout_ms = timeout_ms;
    cp__rc_tls_into(&co, tls);
    cp_client *c = cp_connect(&co);
    if (c == NULL)
        return snprintf(err, errlen, "out of memory"), -1;
    int rc = 0;
    if (c->err) {
        snprintf(err, errlen, "source cluster %s: %s", seeds, c->errstr);
        rc = -1;
    }
    out->n = 0;
    for (int i = 0; rc == 0 && i < cp_node_count(c); i++) {
        cp_node_info n;
        if (cp_node_get(c, i, &n) != 0 || n.role != CP_NODE_MASTER || n.nslots == 0)
            continue;
        if (out->n == CP__MIGRATE_MAX_SOURCES) {
            snprintf(err, errlen, "source cluster %s: more than %d masters", seeds,
                     CP__MIGRATE_MAX_SOURCES);
            rc = -1;
            break;
        }
        snprintf(out->host[out->n], sizeof out->host[out->n], "%s", n.host);
        out->port[out->n++] = n.port;
    }
    cp_free(c);
    return rc;
}

int cp__sources_resolve(const char *const *hosts, const int *ports, int n, const char *user,
                        const char *password, const cp_options *tls, int timeout_ms,
                        cp__sources *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (n < 1 || n > CP__MIGRATE_MAX_SOURCES)
        return snprintf(err, errlen, "1 to %d sources", CP__MIGRATE_MAX_SOURCES), -1;
    char seeds[CP__MIGRATE_MAX_SOURCES * 64] = "";
    size_t used = 0;
    int clustered = 0;
    for (int i = 0; i < n; i++) {
        cp__srcconn *c =
            cp__sc_connect(hosts[i], ports[i], user, password, tls, timeout_ms, err, errlen);
        if (c == NULL)
            return -1;
        int yes = 0;
        int rc = cp__sc_is_cluster(c, &yes, err, errlen);
        cp__sc_free(c);
        if (rc != 0)
            return -1;
        if (i > 0 && yes != clustered) {
            int node = yes ? i : 0, server = yes ? 0 : i;
            return snprintf(err, errlen,
                            "source %s:%d is a cluster node, %s:%d is not: give a cluster's "
                            "nodes or standalone servers, not both",
                            hosts[node], ports[node], hosts[server], ports[server]),
                   -1;
        }
        clustered = yes;
        snprintf(out->host[i], sizeof out->host[i], "%s", hosts[i]);
        out->port[i] = ports[i];
        if (used < sizeof seeds)
            used += (size_t)snprintf(seeds + used, sizeof seeds - used, "%s%s:%d", i ? "," : "",
                                     hosts[i], ports[i]);
    }
    out->n = n;
    if (!clustered)
        return 0;
    out->cluster = 1;
    return masters(seeds, user, password, tls, timeout_ms, out, err, errlen);
}
