/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The `up` / `open` / `down` flow of orch.h, on top of everything else in src/orch: it puts the
 * per-role tables of cluster.c and twemproxy.c together (one static table, borrowed by every
 * cp_topo made or opened here), checks and plans a topology (plan.h), writes its secrets
 * (secure.h), starts it (launch.h, cluster.h), saves it (state.h) and takes it down again
 * (topodir.h). cp_topo_up hands the caller a cp_topo it owns (cp_topo_free; the processes keep
 * running); on failure it frees everything it made and stops every process it started. Blocks;
 * one thread at a time per handle; no globals beyond the constant role table.
 */
#include "clusterpipe/clusterpipe.h"
#include "orch/cluster.h"
#include "orch/launch.h"
#include "orch/links.h"
#include "orch/plan.h"
#include "orch/secure.h"
#include "orch/state.h"
#include "orch/topo.h"
#include "orch/topodir.h"
#include "orch/twemproxy.h"
#include "util/errmsg.h"
#include "util/file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cp__role_table roles = {
    [CP_ROLE_MASTER] = &cp__cluster_master_ops,
    [CP_ROLE_REPLICA] = &cp__cluster_replica_ops,
    [CP_ROLE_SHARD] = &cp__twemproxy_shard_ops,
    [CP_ROLE_PROXY] = &cp__twemproxy_proxy_ops,
    [CP_ROLE_WIRE] = &cp__wire_ops,
};

/* Starts the processes of role(s) selected by `proxies` and waits until they serve. */
static int start_group(cp_topo *t, int proxies, char *err, size_t errlen) {
    size_t idx[CP__MAX_PROCS], n = 0;
    for (size_t i = 0; i < t->nprocs; i++)
        if ((t->procs[i].role == CP_ROLE_PROXY) == proxies)
            idx[n++] = i;
    return cp__launch(t, idx, n, 1, err, errlen);
}

/* The settings of o copied into a new handle, its password chosen and its binaries found (no
 * file written yet). Returns 0 with *out, or a CP_E* code with err. */
static int settings(const cp_up_opts *opt, cp_topo **out, char *err, size_t errlen) {
    cp_topo *t = cp__topo_new(roles);
    if (t == NULL) {
        cp__seterr(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    t->kind = opt->kind;
    t->persistence = opt->persistence;
    t->auto_eject = opt->auto_eject;
    t->server_timeout_ms = opt->server_timeout_ms;
    t->ephemeral = opt->ephemeral;
    if (opt->redis_cpus != NULL) {
        t->redis_cpus = *opt->redis_cpus;
        t->pin_redis = 1;
    }
    if (opt->proxy_cpus != NULL) {
        t->proxy_cpus = *opt->proxy_cpus;
        t->pin_proxy = 1;
    }
    t->log = opt->log;
    t->on_spawn = opt->on_spawn;
    t->hook_ud = opt->hook_ud;
    t->quiet = opt->quiet;
    t->cancel = opt->cancel;
    t->rtt_ns = opt->rtt_ns;
    t->jitter_ns = opt->rtt_ns > 0 ? opt->jitter_ns : 0;
    t->placement = opt->proxy_placement;
    if (opt->hash)
        snprintf(t->hash, sizeof(t->hash), "%s", opt->hash);
    if (opt->distribution)
        snprintf(t->distribution, sizeof(t->distribution), "%s", opt->distribution);
    int rc = 0;
    if (opt->password && *opt->password && (t->password = strdup(opt->password)) == NULL)
        rc = CP_ENOMEM;
    if (rc == 0 && t->password == NULL && !opt->no_password) {
        char pw[CP__PASSWORD_HEX + 1];
        rc = cp__secure_gen_password(pw, sizeof(pw), err, errlen);
        if (rc == 0 && (t->password = strdup(pw)) == NULL)
            rc = CP_ENOMEM;
    }
    if (rc == CP_ENOMEM)
        cp__seterr(err, errlen, "out of memory");
    t->tls = opt->tls;
    t->tls_auth_clients = opt->tls_auth_clients;
    if (rc == 0 && opt->host != NULL) { /* loopback only: no server of ours is anywhere else */
        int v4 = strcmp(opt->host, "127.0.0.1") == 0;
        if (!v4 && strcmp(opt->host, "::1") != 0) {
            cp__seterr(err, errlen, "host must be 127.0.0.1 or ::1, not '%.64s'", opt->host);
            rc = CP_EINVAL;
        } else if (!v4 && opt->kind != CP_TOPO_CLUSTER) {
            cp__seterr(err, errlen, "host ::1 is for a cluster only");
            rc = CP_EINVAL;
        } else {
            snprintf(t->host, sizeof(t->host), "%s", opt->host);
        }
    }
    if (rc == 0)
        rc = cp__find_binary(opt->redis_server, "redis-server", "redis-server", t->redis_bin,
                             sizeof(t->redis_bin), err, errlen);
    if (rc == 0 && opt->kind == CP_TOPO_TWEMPROXY)
        rc = cp__find_binary(opt->nutcracker, "nutcracker", "nutcracker", t->nutcracker_bin,
                             sizeof(t->nutcracker_bin), err, errlen);
    if (rc == 0 && opt->rtt_ns > 0)
        rc = cp__find_binary(opt->clusterpipe, "clusterpipe", "clusterpipe", t->clusterpipe_bin,
                             sizeof(t->clusterpipe_bin), err, errlen);
    if (rc == 0 && opt->tls)
        rc = cp__find_binary(opt->openssl, "openssl", "openssl", t->openssl_bin,
                             sizeof(t->openssl_bin), err, errlen);
    if (rc != 0) {
        cp_topo_free(t);
        return rc;
    }
    cp__ports_init(&t->ports, opt->base_port);
    t->auto_ports = opt->base_port == 0;
    *out = t;
    return 0;
}

/* A failed start or form: stops what was started and keeps or removes the directory (see
 * cp_topo_up in orch.h). Returns rc. */
static int up_failed(cp_topo *t, int rc, char *err, size_t errlen) {
    size_t left = cp__topo_stop(t, NULL, 0);
    if (left > 0)
        cp__adderr(err, errlen, "\n%zu process(es) could not be stopped; see %s/state.json", left,
                   t->dir);
    else
        cp__ports_release(&t->ports);
    if (cp__topo_cancelled(t) && t->dir_created && left == 0) {
        cp__rm_rf(t->dir);
    } else {
        cp__state_save(t, NULL, 0);
        cp__adderr(err, errlen, "\n(logs kept in %s; 'clusterpipe down --dir %s' removes them)",
                   t->dir, t->dir);
    }
    return rc;
}

int cp_topo_start(const cp_up_opts *opt, cp_topo **out, char *err, size_t errlen) {
    if (out != NULL)
        *out = NULL;
    if (opt == NULL || out == NULL) {
        cp__seterr(err, errlen, "cp_topo_up: NULL argument");
        return CP_EINVAL;
    }
    cp_topo *t = NULL;
    int rc = cp__plan_check(opt, err, errlen);
    if (rc == 0)
        rc = settings(opt, &t, err, errlen);
    if (rc != 0)
        return rc;
    rc = cp__topo_prepare_dir(t, opt->dir, &t->dir_created, err, errlen);
    if (rc != 0) {
        cp_topo_free(t);
        return rc;
    }
    cp__secure_paths(t);
    cp__ports_set_owner(&t->ports, t->dir); /* its ports are claimed for it from here on */
    /* Secrets before any server: a failure here leaves nothing running and no files. */
    rc = cp__plan_make(t, opt, err, errlen);
    if (rc == 0)
        rc = cp__secure_write_password(t, err, errlen);
    if (rc == 0 && t->tls)
        rc = cp__secure_gen_tls(t, err, errlen);
    if (rc != 0) {
        cp__ports_release(&t->ports);
        cp__secure_remove(t->dir);
        if (t->dir_created)
            cp__rm_rf(t->dir);
        cp_topo_free(t);
        return rc;
    }
    if (opt->kind == CP_TOPO_CLUSTER)
        cp__topo_log(t, "starting a Redis Cluster: %d masters x %d replicas in %s%s", opt->shards,
                     opt->replicas, t->dir, t->tls ? " (TLS only)" : "");
    else
        cp__topo_log(t, "starting twemproxy: %d nutcracker in front of %d redis-server in %s",
                     opt->proxies, opt->shards, t->dir);
    if (t->rtt_ns > 0) {
        size_t crossing = 0;
        for (size_t k = 0; k < t->nlinks; k++)
            crossing += (size_t)t->links[k].crosses;
        cp__topo_log(t,
                     "with a wire: %zu of %zu links cross hosts, each adding %llu us of round trip",
                     crossing, t->nlinks, t->rtt_ns / 1000);
    }
    rc = cp__state_save(t, err, errlen);
    if (rc == 0)
        rc = start_group(t, 0, err, errlen);
    if (rc == 0 && t->kind == CP_TOPO_CLUSTER)
        rc = cp__cluster_prepare(t, err, errlen);
    if (rc != 0) {
        up_failed(t, rc, err, errlen);
        cp_topo_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

int cp_topo_form(cp_topo *t, char *err, size_t errlen) {
    int rc = 0;
    if (t->kind == CP_TOPO_CLUSTER)
        rc = cp__cluster_create(t, err, errlen);
    if (rc == 0 && t->kind == CP_TOPO_TWEMPROXY)
        rc = start_group(t, 1, err, errlen);
    if (rc == 0)
        rc = cp__state_save(t, err, errlen);
    if (rc != 0)
        return up_failed(t, rc, err, errlen);
    /* Later ports (add_node, add_shard) come from the free pool, not the fixed sequence. */
    t->ports.fixed = 0;
    return 0;
}

int cp_topo_up(const cp_up_opts *opt, cp_topo **out, char *err, size_t errlen) {
    int rc = cp_topo_start(opt, out, err, errlen);
    if (rc == 0 && (rc = cp_topo_form(*out, err, errlen)) != 0) {
        cp_topo_free(*out);
        *out = NULL;
    }
    return rc;
}

int cp_topo_open(const char *dir, cp_topo **out, char *err, size_t errlen) {
    if (out != NULL)
        *out = NULL;
    if (dir == NULL || out == NULL) {
        cp__seterr(err, errlen, "cp_topo_open: NULL argument");
        return CP_EINVAL;
    }
    return cp__state_load(dir, roles, out, err, errlen);
}

int cp_topo_down(cp_topo *t, int keep_dir, char *err, size_t errlen) {
    if (t == NULL) {
        cp__seterr(err, errlen, "cp_topo_down: NULL topology");
        return CP_EINVAL;
    }
    size_t left = cp__topo_stop(t, NULL, 0);
    if (left > 0) {
        cp__seterr(err, errlen, "%zu process(es) survived SIGKILL; %s kept", left, t->dir);
        return CP_EIO; /* and its ports stay claimed */
    }
    cp__ports_release(&t->ports);
    if (!keep_dir)
        cp__topo_remove_files(t->dir);
    return 0;
}
