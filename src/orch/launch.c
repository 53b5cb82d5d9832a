/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Start and wait (see launch.h). The readiness probes open and close their own admin
 * connections; the process records belong to the caller's cp_topo, which is saved to state.json
 * after every spawn. One thread per cp_topo.
 */
#include "orch/launch.h"

#include "clusterpipe/clusterpipe.h"
#include "orch/state.h"
#include "util/clock.h"
#include "util/errmsg.h"
#include "util/file.h"

#include <stdio.h>
#include <string.h>

#define MAX_MOVES 5 /* port replacements per process during one wait */

/* Spawns process i and records it in state.json at once. */
static int spawn_saved(cp_topo *t, size_t i, char *err, size_t errlen) {
    int rc = cp__topo_spawn(t, i, err, errlen);
    return rc != 0 ? rc : cp__state_save(t, err, errlen);
}

/* A process that lost its port to someone else gets a fresh port (and stats port) and is
 * started again. Only before anything refers to the port (cluster not formed, proxies not
 * configured with it). */
static int move_and_respawn(cp_topo *t, size_t i, char *err, size_t errlen) {
    cp_proc *p = &t->procs[i];
    const cp__role_ops *o = cp__topo_ops(t, i);
    char pdir[PATH_MAX], label[128], how[96];
    cp__topo_proc_label(t, i, label, sizeof(label));
    cp__proc_exit_desc(p->pid, how, sizeof(how)); /* reap it */
    cp__topo_proc_dir(t, i, pdir, sizeof(pdir));
    cp__rm_rf(pdir);
    int port;
    int rc = cp__ports_take(&t->ports, o->bus_port, &port, err, errlen);
    if (rc == 0 && o->stats_port)
        rc = cp__ports_take(&t->ports, 0, &p->stats_port, err, errlen);
    if (rc != 0)
        return rc;
    cp__topo_log(t, "%s lost its port to another program; moving it to port %d", label, port);
    p->port = port;
    p->pid = 0;
    p->start_time = 0;
    return spawn_saved(t, i, err, errlen);
}

/* 1 when dead process i says in its logs that its port was taken. */
static int lost_port(const cp_topo *t, size_t i) {
    char logf[PATH_MAX + 32], outf[PATH_MAX + 32];
    cp__topo_proc_file(t, i, cp__topo_ops(t, i)->log_file, logf, sizeof(logf));
    cp__topo_proc_file(t, i, "stdout.log", outf, sizeof(outf));
    return cp__file_contains(logf, "Address already in use") ||
           cp__file_contains(outf, "Address already in use");
}

static int wait_serving(cp_topo *t, const size_t *idx, size_t n, int may_move, char *err,
                        size_t errlen) {
    unsigned char done[CP__MAX_PROCS] = {0}, moves[CP__MAX_PROCS] = {0};
    char last[512] = "";
    int64_t deadline = cp__now_ms() + CP__START_TIMEOUT_MS;
    int nap = 5;
    for (;;) {
        size_t left = 0;
        for (size_t k = 0; k < n; k++) {
            size_t i = idx[k];
            if (done[k])
                continue;
            if (cp__topo_cancelled(t)) {
                cp__seterr(err, errlen, "interrupted");
                return CP_EIO;
            }
            cp__pidref r = cp__topo_ref(t, i);
            if (!cp__proc_is_ours(&r)) {
                /* Not the wire (port 0): its ports are its links', named in configs already. */
                if (may_move && t->auto_ports && t->procs[i].port > 0 && moves[k] < MAX_MOVES &&
                    lost_port(t, i)) {
                    moves[k]++;
                    int rc = move_and_respawn(t, i, err, errlen);
                    if (rc != 0)
                        return rc;
                    deadline = cp__now_ms() + CP__START_TIMEOUT_MS;
                    left++;
                    continue;
                }
                cp__topo_dead_error(t, i, "during startup", err, errlen);
                return CP_ECONNECT;
            }
            const cp__role_ops *o = cp__topo_ops(t, i);
            if (o->probe == NULL || o->probe(t, i, last, sizeof(last)) == 0)
                done[k] = 1;
            else
                left++;
        }
        if (left == 0)
            return 0;
        if (cp__now_ms() >= deadline) {
            for (size_t k = 0; k < n; k++) {
                if (done[k])
                    continue;
                char label[128];
                cp__topo_proc_label(t, idx[k], label, sizeof(label));
                cp__seterr(err, errlen, "%s did not serve within %d s: %s", label,
                           CP__START_TIMEOUT_MS / 1000, last);
                break;
            }
            return CP_ETIMEDOUT;
        }
        cp__sleep_ms(nap);
        if (nap < 100)
            nap *= 2;
    }
}

int cp__launch(cp_topo *t, const size_t *idx, size_t n, int may_move, char *err, size_t errlen) {
    if (n > CP__MAX_PROCS) {
        cp__seterr(err, errlen, "too many processes to start at once: %zu", n);
        return CP_EINVAL;
    }
    for (size_t k = 0; k < n; k++) {
        if (cp__topo_cancelled(t)) {
            cp__seterr(err, errlen, "interrupted");
            return CP_EIO;
        }
        int rc = spawn_saved(t, idx[k], err, errlen);
        if (rc != 0)
            return rc;
    }
    return wait_serving(t, idx, n, may_move, err, errlen);
}

int cp__launch_restart(cp_topo *t, size_t i, char *err, size_t errlen) {
    if (cp__topo_stop(t, &i, 1) != 0) {
        char label[128];
        cp__topo_proc_label(t, i, label, sizeof(label));
        cp__seterr(err, errlen, "%s could not be stopped", label);
        return CP_EIO;
    }
    return cp__launch(t, &i, 1, 0, err, errlen);
}
