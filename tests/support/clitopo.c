/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Tracking and stopping a topology a test started through the command (clitopo.h).
 */
#include "clitopo.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "orch/orch.h"
#include "util/clock.h"
#include "util/errmsg.h"
#include "util/file.h"
#include "testutil.h"

void cp_clitopo_new_dir(cp_clitopo *t, const char *tag) {
    char *d = cp_test_mkdtemp(tag);
    snprintf(t->dir, sizeof(t->dir), "%s", d);
    free(d);
}

void cp_clitopo_note(cp_clitopo *t) {
    cp_topo *topo = NULL;
    char e[256];
    if (t->dir[0] == '\0' || cp_topo_open(t->dir, &topo, e, sizeof(e)) != 0)
        return;
    for (size_t i = 0; i < cp_topo_nprocs(topo); i++) {
        const cp_proc *p = cp_topo_proc(topo, i);
        int seen = p->pid <= 0;
        for (size_t k = 0; k < t->npids && !seen; k++)
            seen = t->pids[k] == p->pid && t->starts[k] == p->start_time;
        if (!seen && t->npids < 64) {
            t->pids[t->npids] = p->pid;
            t->starts[t->npids++] = p->start_time;
        }
    }
    cp_topo_free(topo);
}

size_t cp_clitopo_alive(const cp_clitopo *t) {
    size_t n = 0;
    for (size_t k = 0; k < t->npids; k++)
        n += cp_orch_pid_alive(t->pids[k], t->starts[k]) ? 1 : 0;
    return n;
}

int cp_clitopo_stop(cp_clitopo *t, cp_clirun *run) {
    int rc = 0;
    if (t->dir[0]) {
        cp_clitopo_note(t);
        const char *down[] = {"down", "--dir", t->dir, NULL};
        cp_clirun_run(run, down);
    }
    for (size_t k = 0; k < t->npids; k++)
        if (cp_orch_pid_alive(t->pids[k], t->starts[k])) {
            kill(t->pids[k], SIGKILL);
            rc = -1;
        }
    if (t->dir[0])
        cp__rm_rf(t->dir);
    t->dir[0] = '\0';
    t->npids = 0;
    return rc;
}
