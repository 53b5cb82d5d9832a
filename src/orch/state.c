/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The topology state file, DIR/state.json (see state.h). Written by the callers after every
 * change (each spawn, failover, added node) through a temporary file and rename, so another
 * process (`status`, `down`, `bench --dir`) always reads a whole file. Read with jansson. The
 * cp_topo returned by cp__state_load is owned by the caller (cp_topo_free); the jansson objects
 * built or read here are freed before returning. One thread per cp_topo.
 * The secret paths (password_file, tls_ca) are written for other tools to read; on load they are
 * derived again from where the file was found, like the directory itself.
 *
 * Schema "clusterpipe.topo/1":
 *   {"schema", "kind": "cluster"|"twemproxy", "dir", "password" (null when none), "persistence",
 *    "password_file" (null when none), "tls", "tls_auth_clients", "tls_ca" (null without TLS),
 *    "hash", "distribution", "auto_eject", "server_timeout_ms" (twemproxy, only when
 *    set), "ephemeral", "redis_server", "nutcracker", "openssl",
 *    "procs": [{"role": "master"|"replica"|"shard"|"proxy"|"wire", "host", "port", "pid",
 *               "start_time", "id", "master", "stats_port"}]}
 * and, with a wire only (links.h; the wire's "port" is 0):
 *    "rtt_ns", "jitter_ns", "proxy_placement": "servers"|"clients"|"tier", "clusterpipe" (its
 *    binary), "links": [{"name", "from" (a procs index, or -1: the client), "to", "crosses",
 *                        "port" (the wire's; 0 when direct), "rtt_ns" (0 when direct)}]
 */
#include "orch/state.h"

#include "orch/links.h"
#include "orch/secure.h"
#include "util/clock.h"
#include "util/errmsg.h"
#include "util/file.h"

#include "clusterpipe/clusterpipe.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SCHEMA "clusterpipe.topo/1"

static int role_from_key(const char *s, cp_proc_role *r) {
    static const struct {
        const char *k;
        cp_proc_role r;
    } map[] = {{"master", CP_ROLE_MASTER},
               {"replica", CP_ROLE_REPLICA},
               {"shard", CP_ROLE_SHARD},
               {"proxy", CP_ROLE_PROXY},
               {"wire", CP_ROLE_WIRE}};
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (s != NULL && strcmp(s, map[i].k) == 0) {
            *r = map[i].r;
            return 0;
        }
    return CP_EINVAL;
}

/* The wire's settings and every link (only for a topology with a wire). 0, or -1 out of memory. */
static int save_links(const cp_topo *t, json_t *root) {
    json_t *links = json_array();
    if (links == NULL)
        return -1;
    json_object_set_new(root, "rtt_ns", json_integer((json_int_t)t->rtt_ns));
    json_object_set_new(root, "jitter_ns", json_integer((json_int_t)t->jitter_ns));
    json_object_set_new(root, "proxy_placement",
                        json_string(cp_proxy_placement_name(t->placement)));
    json_object_set_new(root, "clusterpipe", json_string(t->clusterpipe_bin));
    for (size_t i = 0; i < t->nlinks; i++) {
        const cp_link *l = &t->links[i];
        json_t *o = json_pack("{s:s, s:i, s:i, s:b, s:i, s:I}", "name", l->name, "from", l->from,
                              "to", l->to, "crosses", l->crosses, "port", l->port, "rtt_ns",
                              (json_int_t)l->rtt_ns);
        if (o == NULL || json_array_append_new(links, o) != 0) {
            json_decref(links);
            return -1;
        }
    }
    json_object_set_new(root, "links", links);
    return 0;
}

int cp__state_save(const cp_topo *t, char *err, size_t errlen) {
    json_t *root = json_object();
    json_t *procs = json_array();
    if (root == NULL || procs == NULL)
        goto oom;
    json_object_set_new(root, "schema", json_string(SCHEMA));
    json_object_set_new(root, "kind",
                        json_string(t->kind == CP_TOPO_CLUSTER ? "cluster" : "twemproxy"));
    json_object_set_new(root, "dir", json_string(t->dir));
    json_object_set_new(root, "password", t->password ? json_string(t->password) : json_null());
    json_object_set_new(root, "password_file",
                        t->password ? json_string(t->password_file) : json_null());
    json_object_set_new(root, "tls", json_boolean(t->tls));
    json_object_set_new(root, "tls_auth_clients", json_boolean(t->tls_auth_clients));
    json_object_set_new(root, "tls_ca", t->tls ? json_string(t->tls_ca) : json_null());
    json_object_set_new(root, "persistence", json_boolean(t->persistence));
    json_object_set_new(root, "hash", json_string(t->hash));
    json_object_set_new(root, "distribution", json_string(t->distribution));
    json_object_set_new(root, "auto_eject", json_boolean(t->auto_eject));
    if (t->server_timeout_ms > 0) /* only then: other topologies' files stay as they were */
        json_object_set_new(root, "server_timeout_ms", json_integer(t->server_timeout_ms));
    json_object_set_new(root, "ephemeral", json_boolean(t->ephemeral));
    json_object_set_new(root, "redis_server", json_string(t->redis_bin));
    json_object_set_new(root, "nutcracker", json_string(t->nutcracker_bin));
    json_object_set_new(root, "openssl", json_string(t->openssl_bin));
    for (size_t i = 0; i < t->nprocs; i++) {
        const cp_proc *p = &t->procs[i];
        json_t *o = json_object();
        if (o == NULL)
            goto oom;
        json_object_set_new(o, "role", json_string(cp_proc_role_name(p->role)));
        json_object_set_new(o, "host", json_string(p->host));
        json_object_set_new(o, "port", json_integer(p->port));
        json_object_set_new(o, "pid", json_integer(p->pid));
        json_object_set_new(o, "start_time", json_integer((json_int_t)p->start_time));
        json_object_set_new(o, "id", json_string(p->id));
        json_object_set_new(o, "master", json_integer(p->master));
        json_object_set_new(o, "stats_port", json_integer(p->stats_port));
        json_array_append_new(procs, o);
    }
    json_object_set(root, "procs", procs);
    if (t->nlinks > 0 && save_links(t, root) != 0) {
        json_decref(procs);
        goto oom;
    }
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(procs);
    json_decref(root);
    if (text == NULL) {
        cp__seterr(err, errlen, "state.json: out of memory");
        return CP_ENOMEM;
    }
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/state.json", t->dir);
    size_t len = strlen(text);
    int rc = cp__write_file_atomic(path, text, len, 0600);
    free(text);
    if (rc != 0) {
        cp__seterr(err, errlen, "%s: %s", path, strerror(-rc));
        return CP_EIO;
    }
    return 0;
oom:
    json_decref(procs);
    json_decref(root);
    cp__seterr(err, errlen, "state.json: out of memory");
    return CP_ENOMEM;
}

/* Copies a string member (or "" when missing / not a string) into out. */
static void get_str(json_t *o, const char *key, char *out, size_t len) {
    const char *s = json_string_value(json_object_get(o, key));
    snprintf(out, len, "%s", s ? s : "");
}

static long long get_int(json_t *o, const char *key, long long dflt) {
    json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (long long)json_integer_value(v) : dflt;
}

/* Reads what save_links wrote. 0, or CP_EINVAL / CP_ENOMEM with err. */
static int load_links(cp_topo *t, json_t *root, const char *path, char *err, size_t errlen) {
    json_t *links = json_object_get(root, "links");
    if (links == NULL)
        return 0;
    t->rtt_ns = (unsigned long long)get_int(root, "rtt_ns", 0);
    t->jitter_ns = (unsigned long long)get_int(root, "jitter_ns", 0);
    const char *pl = json_string_value(json_object_get(root, "proxy_placement"));
    t->placement = pl != NULL && strcmp(pl, "clients") == 0 ? CP_PROXIES_WITH_CLIENTS
                   : pl != NULL && strcmp(pl, "tier") == 0  ? CP_PROXIES_TIER
                                                            : CP_PROXIES_WITH_SERVERS;
    get_str(root, "clusterpipe", t->clusterpipe_bin, sizeof(t->clusterpipe_bin));
    size_t n = json_array_size(links);
    if (n > CP__MAX_LINKS) {
        cp__seterr(err, errlen, "%s: %zu links, at most %d", path, n, CP__MAX_LINKS);
        return CP_EINVAL;
    }
    t->links = calloc(n > 0 ? n : 1, sizeof(*t->links));
    if (t->links == NULL) {
        cp__seterr(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    t->caplinks = n > 0 ? n : 1;
    size_t i;
    json_t *o;
    json_array_foreach(links, i, o) {
        cp_link *l = &t->links[i];
        get_str(o, "name", l->name, sizeof(l->name));
        l->from = (int)get_int(o, "from", -2);
        l->to = (int)get_int(o, "to", -1);
        l->crosses = json_is_true(json_object_get(o, "crosses"));
        l->port = (int)get_int(o, "port", 0);
        l->rtt_ns = (unsigned long long)get_int(o, "rtt_ns", 0);
        if (l->to < 0 || (size_t)l->to >= t->nprocs || l->from < CP_LINK_CLIENT ||
            l->from >= (int)t->nprocs) {
            cp__seterr(err, errlen, "%s: links[%zu] names no process", path, i);
            return CP_EINVAL;
        }
        cp__ports_reserve(&t->ports, l->port);
        t->nlinks++;
    }
    for (size_t k = 0; k < t->nprocs; k++)
        if (t->procs[k].role == CP_ROLE_WIRE)
            return cp__links_paths(t, err, errlen);
    return 0;
}

int cp__state_load(const char *dir, const cp__role_ops *const *roles, cp_topo **out, char *err,
                   size_t errlen) {
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s/state.json", dir);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (root == NULL) {
        if (access(path, F_OK) != 0)
            cp__seterr(err, errlen, "%s: no topology here (%s)", dir, strerror(errno));
        else
            cp__seterr(err, errlen, "%s: line %d: %s", path, jerr.line, jerr.text);
        return CP_EINVAL;
    }
    int rc = CP_EINVAL;
    cp_topo *t = NULL;
    const char *schema = json_string_value(json_object_get(root, "schema"));
    if (schema == NULL || strcmp(schema, SCHEMA) != 0) {
        cp__seterr(err, errlen, "%s: not a clusterpipe state file (schema %s)", path,
                   schema ? schema : "missing");
        goto out;
    }
    t = cp__topo_new(roles);
    if (t == NULL) {
        rc = CP_ENOMEM;
        cp__seterr(err, errlen, "out of memory");
        goto out;
    }
    const char *kind = json_string_value(json_object_get(root, "kind"));
    if (kind != NULL && strcmp(kind, "cluster") == 0)
        t->kind = CP_TOPO_CLUSTER;
    else if (kind != NULL && strcmp(kind, "twemproxy") == 0)
        t->kind = CP_TOPO_TWEMPROXY;
    else {
        cp__seterr(err, errlen, "%s: unknown kind", path);
        goto out;
    }
    /* The directory may have been moved: trust where we found the file. */
    if (realpath(dir, t->dir) == NULL)
        snprintf(t->dir, sizeof(t->dir), "%s", dir);
    if (strlen(t->dir) > CP__DIR_MAX) {
        cp__seterr(err, errlen, "%s: path longer than %d bytes", dir, CP__DIR_MAX);
        goto out;
    }
    cp__ports_set_owner(&t->ports, t->dir); /* the claims its `up` made, and any new port's */
    const char *pw = json_string_value(json_object_get(root, "password"));
    if (pw != NULL && (t->password = strdup(pw)) == NULL) {
        rc = CP_ENOMEM;
        cp__seterr(err, errlen, "out of memory");
        goto out;
    }
    t->persistence = json_is_true(json_object_get(root, "persistence"));
    get_str(root, "hash", t->hash, sizeof(t->hash));
    get_str(root, "distribution", t->distribution, sizeof(t->distribution));
    t->auto_eject = json_is_true(json_object_get(root, "auto_eject"));
    t->server_timeout_ms = (int)json_integer_value(json_object_get(root, "server_timeout_ms"));
    t->ephemeral = json_is_true(json_object_get(root, "ephemeral"));
    t->tls = json_is_true(json_object_get(root, "tls"));
    t->tls_auth_clients = t->tls && json_is_true(json_object_get(root, "tls_auth_clients"));
    cp__secure_paths(t);
    if (t->password_file[0] && access(t->password_file, F_OK) != 0)
        t->password_file[0] = '\0'; /* written by a version that kept no password file */
    get_str(root, "redis_server", t->redis_bin, sizeof(t->redis_bin));
    get_str(root, "nutcracker", t->nutcracker_bin, sizeof(t->nutcracker_bin));
    get_str(root, "openssl", t->openssl_bin, sizeof(t->openssl_bin));
    json_t *procs = json_object_get(root, "procs");
    size_t i;
    json_t *o;
    json_array_foreach(procs, i, o) {
        cp_proc_role role;
        char rk[16];
        get_str(o, "role", rk, sizeof(rk));
        if (role_from_key(rk, &role) != 0) {
            cp__seterr(err, errlen, "%s: procs[%zu]: unknown role '%s'", path, i, rk);
            goto out;
        }
        size_t idx;
        char e[128];
        rc = cp__topo_add_proc(t, role, (int)get_int(o, "port", 0), (int)get_int(o, "master", -1),
                               &idx, e, sizeof(e));
        if (rc != 0) {
            cp__seterr(err, errlen, "%s: %s", path, e);
            goto out;
        }
        rc = CP_EINVAL;
        cp_proc *p = &t->procs[idx];
        get_str(o, "host", p->host, sizeof(p->host));
        snprintf(t->host, sizeof(t->host), "%s", p->host); /* one for all: later ones alike */
        p->pid = (pid_t)get_int(o, "pid", 0);
        p->start_time = (unsigned long long)get_int(o, "start_time", 0);
        get_str(o, "id", p->id, sizeof(p->id));
        p->stats_port = (int)get_int(o, "stats_port", 0);
        cp__ports_reserve(&t->ports, p->stats_port);
        if (p->master >= (int)json_array_size(procs))
            p->master = -1;
    }
    rc = load_links(t, root, path, err, errlen);
    if (rc != 0)
        goto out;
    *out = t;
    t = NULL;
    rc = 0;
out:
    cp_topo_free(t);
    json_decref(root);
    return rc;
}
