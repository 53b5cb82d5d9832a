/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Hosts, links and the wire process of a topology (see links.h). The wire's config is its
 * command line (one --link per crossing link); it is asked through its control socket
 * (wire/control.h) to add a link at runtime and, as its readiness probe, for its stats. The
 * link records belong to the caller's cp_topo. One thread per cp_topo.
 */
#include "orch/links.h"

#include "clusterpipe/clusterpipe.h"
#include "util/dur.h"
#include "util/errmsg.h"
#include "wire/control.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#define CONTROL_FILE "control.sock"
#define ASK_TIMEOUT_MS 2000

int cp__links_paths(cp_topo *t, char *err, size_t errlen) {
    char path[sizeof(t->wire_control)];
    snprintf(path, sizeof(path), "%s/%s/%s", t->dir, cp__wire_ops.dir_prefix, CONTROL_FILE);
    if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        cp__seterr(err, errlen,
                   "the wire's control socket %s is longer than a Unix socket path may be (%zu "
                   "bytes); use a shorter --dir",
                   path, sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
        return CP_EINVAL;
    }
    snprintf(t->wire_control, sizeof(t->wire_control), "%s", path);
    return 0;
}

/* The index of the wire process, or -1. */
static int wire_index(const cp_topo *t) {
    for (size_t i = 0; i < t->nprocs; i++)
        if (t->procs[i].role == CP_ROLE_WIRE)
            return (int)i;
    return -1;
}

/* Records the link from -> to; a crossing one takes a port of the wire. Its index in *at. */
static int add_link(cp_topo *t, int from, size_t to, int crosses, size_t *at, char *err,
                    size_t errlen) {
    if (t->nlinks >= CP__MAX_LINKS) {
        cp__seterr(err, errlen, "too many links for the wire: at most %d", CP__MAX_LINKS);
        return CP_EINVAL;
    }
    if (t->nlinks == t->caplinks) {
        size_t cap = t->caplinks ? t->caplinks * 2 : 16;
        cp_link *nl = realloc(t->links, cap * sizeof(*nl));
        if (nl == NULL) {
            cp__seterr(err, errlen, "out of memory");
            return CP_ENOMEM;
        }
        t->links = nl;
        t->caplinks = cap;
    }
    cp_link l = {.from = from, .to = (int)to, .crosses = crosses};
    if (crosses) {
        int rc = cp__ports_take(&t->ports, 0, &l.port, err, errlen);
        if (rc != 0)
            return rc;
        l.rtt_ns = t->rtt_ns;
    }
    if (from == CP_LINK_CLIENT)
        snprintf(l.name, sizeof(l.name), "client-%d", t->procs[to].port);
    else
        snprintf(l.name, sizeof(l.name), "%d-%d", t->procs[from].port, t->procs[to].port);
    t->links[t->nlinks] = l;
    *at = t->nlinks++;
    return 0;
}

/* The ordinal of process i among the processes of its role. */
static size_t ordinal(const cp_topo *t, size_t i) {
    size_t n = 0;
    for (size_t k = 0; k < i; k++)
        n += t->procs[k].role == t->procs[i].role;
    return n;
}

static size_t count_role(const cp_topo *t, cp_proc_role role) {
    size_t n = 0;
    for (size_t k = 0; k < t->nprocs; k++)
        n += t->procs[k].role == role;
    return n;
}

/* 1 when proxy p shares the host of shard s: placement "servers", and s is the shard whose host
 * p was put on (proxy k on shard k mod the shards `up` started with). */
static int same_host(const cp_topo *t, size_t p, size_t s, size_t shards) {
    return t->placement == CP_PROXIES_WITH_SERVERS && shards > 0 &&
           ordinal(t, p) % shards == ordinal(t, s);
}

/* The links that end at process i (from the client, or from each proxy to a shard), recorded
 * from index *first on. shards: how many shards `up` placed proxies on (0: none, for a shard
 * added later, whose host holds no proxy). */
static int links_to(cp_topo *t, size_t i, size_t shards, char *err, size_t errlen) {
    size_t at;
    cp_proc_role role = t->procs[i].role;
    if (role == CP_ROLE_MASTER || role == CP_ROLE_REPLICA)
        return add_link(t, CP_LINK_CLIENT, i, 1, &at, err, errlen);
    if (role == CP_ROLE_PROXY)
        return add_link(t, CP_LINK_CLIENT, i, t->placement != CP_PROXIES_WITH_CLIENTS, &at, err,
                        errlen);
    if (role != CP_ROLE_SHARD)
        return 0;
    for (size_t p = 0; p < t->nprocs; p++) {
        if (t->procs[p].role != CP_ROLE_PROXY)
            continue;
        int rc = add_link(t, (int)p, i, !same_host(t, p, i, shards), &at, err, errlen);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int cp__links_plan(cp_topo *t, char *err, size_t errlen) {
    size_t nservers = t->nprocs, w;
    int rc = cp__links_paths(t, err, errlen);
    if (rc == 0)
        rc = cp__topo_add_proc(t, CP_ROLE_WIRE, 0, -1, &w, err, errlen);
    size_t shards = count_role(t, CP_ROLE_SHARD);
    /* Proxies first: a shard's links come from the proxies, which must be known by then. */
    for (size_t i = 0; i < nservers && rc == 0; i++)
        if (t->procs[i].role != CP_ROLE_SHARD)
            rc = links_to(t, i, shards, err, errlen);
    for (size_t i = 0; i < nservers && rc == 0; i++)
        if (t->procs[i].role == CP_ROLE_SHARD)
            rc = links_to(t, i, shards, err, errlen);
    return rc;
}

/* "NAME=PORT:HOST:PORT", the form of `clusterpipe wire --link`. */
static void link_spec(const cp_topo *t, const cp_link *l, char *buf, size_t len) {
    const cp_proc *to = &t->procs[l->to];
    snprintf(buf, len, strchr(to->host, ':') ? "%s=%d:[%s]:%d" : "%s=%d:%s:%d", l->name, l->port,
             to->host, to->port);
}

int cp__links_add_for(cp_topo *t, size_t i, char *err, size_t errlen) {
    int w = wire_index(t);
    if (w < 0)
        return 0;
    size_t first = t->nlinks;
    int rc = links_to(t, i, 0, err, errlen);
    for (size_t k = first; k < t->nlinks && rc == 0 && !cp_topo_alive(t, (size_t)w); k++)
        if (t->links[k].crosses) { /* its config would name a port nobody listens on */
            cp__seterr(err, errlen,
                       "the wire (pid %d) is not running: a process added now would be "
                       "unreachable through link %s",
                       (int)t->procs[w].pid, t->links[k].name);
            rc = CP_ECONNECT;
        }
    for (size_t k = first; k < t->nlinks && rc == 0; k++) {
        const cp_link *l = &t->links[k];
        if (!l->crosses)
            continue;
        const cp_proc *to = &t->procs[l->to];
        char req[256];
        snprintf(req, sizeof(req),
                 strchr(to->host, ':') ? "link %s %d [%s]:%d" : "link %s %d %s:%d", l->name,
                 l->port, to->host, to->port);
        char e[256];
        if (cp__wire_ask(t->wire_control, req, NULL, 0, ASK_TIMEOUT_MS, e, sizeof(e)) != 0) {
            cp__seterr(err, errlen, "the wire did not add link %s: %s", l->name, e);
            rc = CP_EIO;
        }
    }
    if (rc != 0)
        t->nlinks = first;
    return rc;
}

void cp__links_drop_for(cp_topo *t, size_t i) {
    size_t n = 0;
    for (size_t k = 0; k < t->nlinks; k++)
        if (t->links[k].to != (int)i && t->links[k].from != (int)i)
            t->links[n++] = t->links[k];
    t->nlinks = n;
}

/* ---- the wire's role table ------------------------------------------------------------------- */

static const char *wire_binary(const cp_topo *t) {
    return t->clusterpipe_bin;
}

/* The wire's config is its command line: nothing to write. */
static int wire_config(const cp_topo *t, size_t i, char *err, size_t errlen) {
    (void)t;
    (void)i;
    (void)err;
    (void)errlen;
    return 0;
}

/* wire --rtt RTT[~JITTER] --bind HOST --control DIR/wire/control.sock --link SPEC ... */
static int wire_args(const cp_topo *t, size_t i, cp__argv *a) {
    char rtt[96], d[32], j[32];
    cp__dur_format(t->rtt_ns, d, sizeof(d));
    if (t->jitter_ns > 0)
        snprintf(rtt, sizeof(rtt), "%s~%s", d, cp__dur_format(t->jitter_ns, j, sizeof(j)));
    else
        snprintf(rtt, sizeof(rtt), "%s", d);
    int rc = cp__argv_add(a, "wire");
    if (rc == 0)
        rc = cp__argv_add(a, "--rtt");
    if (rc == 0)
        rc = cp__argv_add(a, "%s", rtt);
    if (rc == 0)
        rc = cp__argv_add(a, "--bind");
    if (rc == 0)
        rc = cp__argv_add(a, "%s", t->procs[i].host);
    if (rc == 0)
        rc = cp__argv_add(a, "--control");
    if (rc == 0)
        rc = cp__argv_add(a, "%s", t->wire_control);
    for (size_t k = 0; k < t->nlinks && rc == 0; k++) {
        char spec[256];
        if (!t->links[k].crosses)
            continue;
        link_spec(t, &t->links[k], spec, sizeof(spec));
        rc = cp__argv_add(a, "--link");
        if (rc == 0)
            rc = cp__argv_add(a, "%s", spec);
    }
    return rc;
}

/* Ready once its control socket answers "stats" (it listens on every link before that). */
static int wire_probe(const cp_topo *t, size_t i, char *err, size_t errlen) {
    (void)i;
    return cp__wire_ask(t->wire_control, "stats", NULL, 0, 500, err, errlen) == 0 ? 0 : CP_ECONNECT;
}

const cp__role_ops cp__wire_ops = {"clusterpipe wire", "wire",      "stdout.log", 0,         0, 0,
                                   wire_binary,        wire_config, wire_args,    wire_probe};
