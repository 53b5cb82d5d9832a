/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The topology directory (see topodir.h): making DIR ready for a new topology (created, empty, or
 * holding a topology that is entirely down) and removing what a topology wrote there (process
 * directories, secrets, state.json) without touching foreign files. Works on the caller's
 * cp_topo; the old topology read to check that it is down is freed before returning. No state of
 * its own; one thread per cp_topo.
 */
#include "orch/topodir.h"

#include "orch/state.h"

#include "clusterpipe/clusterpipe.h"
#include "util/clock.h"
#include "util/errmsg.h"
#include "util/file.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 1 when name is one of the per-process directories or secret files we create. */
static int our_entry(const char *name) {
    return strncmp(name, "redis-", 6) == 0 || strncmp(name, "nutcracker-", 11) == 0 ||
           strcmp(name, "password") == 0 || strcmp(name, "tls") == 0 || strcmp(name, "wire") == 0;
}

/* Removes what a topology wrote in dir (process directories, the password file, the TLS
 * material, state.json), then dir itself when that leaves it empty. Foreign files are never
 * touched. */
void cp__topo_remove_files(const char *dir) {
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *e;
    char path[PATH_MAX + 300];
    while ((e = readdir(d)) != NULL) {
        if (our_entry(e->d_name) || strcmp(e->d_name, "state.json") == 0 ||
            strncmp(e->d_name, "state.json.tmp.", 15) == 0) {
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            cp__rm_rf(path);
        }
    }
    closedir(d);
    rmdir(dir);
}

/* Makes t->dir usable for a new topology: create it (a fresh mkdtemp under $TMPDIR when no dir is
 * given), or accept an empty one, or one whose recorded topology is entirely down (its files are
 * removed first, or stale nodes.conf files would resurrect the old cluster). */
int cp__topo_prepare_dir(cp_topo *t, const char *dir, int *created, char *err, size_t errlen) {
    char path[PATH_MAX];
    *created = 0;
    if (dir == NULL || *dir == '\0') {
        const char *tmp = getenv("TMPDIR");
        snprintf(path, sizeof(path), "%s/clusterpipe-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (mkdtemp(path) == NULL) {
            cp__seterr(err, errlen, "%s: %s", path, strerror(errno));
            return CP_EIO;
        }
        *created = 1;
    } else {
        snprintf(path, sizeof(path), "%s", dir);
        struct stat st;
        if (stat(path, &st) != 0)
            *created = 1;
        int rc = cp__mkdir_p(path, 0700);
        if (rc != 0) {
            cp__seterr(err, errlen, "%s: %s", path, strerror(-rc));
            return CP_EIO;
        }
    }
    if (realpath(path, t->dir) == NULL) {
        cp__seterr(err, errlen, "%s: %s", path, strerror(errno));
        return CP_EIO;
    }
    if (strlen(t->dir) > CP__DIR_MAX) {
        cp__seterr(err, errlen, "%s: path longer than %d bytes", path, CP__DIR_MAX);
        return CP_EINVAL;
    }
    if (*created)
        return 0;
    char sp[PATH_MAX + 300];
    snprintf(sp, sizeof(sp), "%s/state.json", t->dir);
    if (access(sp, F_OK) == 0) {
        cp_topo *old = NULL;
        char e2[256];
        if (cp__state_load(t->dir, t->roles, &old, e2, sizeof(e2)) != 0) {
            cp__seterr(err, errlen, "%s holds an unreadable state.json (%s)", t->dir, e2);
            return CP_EINVAL;
        }
        for (size_t i = 0; i < old->nprocs; i++) {
            if (cp_topo_alive(old, i)) {
                cp__seterr(err, errlen,
                           "%s already holds a running topology (pid %ld on port %d); stop it "
                           "with: clusterpipe down --dir %s",
                           t->dir, (long)old->procs[i].pid, old->procs[i].port, t->dir);
                cp_topo_free(old);
                return CP_EINVAL;
            }
        }
        cp_topo_free(old);
        DIR *d = opendir(t->dir);
        struct dirent *e;
        while (d != NULL && (e = readdir(d)) != NULL) {
            if (our_entry(e->d_name)) {
                snprintf(sp, sizeof(sp), "%s/%s", t->dir, e->d_name);
                cp__rm_rf(sp);
            }
        }
        if (d != NULL)
            closedir(d);
        return 0;
    }
    DIR *d = opendir(t->dir);
    if (d == NULL) {
        cp__seterr(err, errlen, "%s: %s", t->dir, strerror(errno));
        return CP_EIO;
    }
    struct dirent *e;
    int empty = 1;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            empty = 0;
    closedir(d);
    if (!empty) {
        cp__seterr(err, errlen, "%s is not empty and holds no clusterpipe topology", t->dir);
        return CP_EINVAL;
    }
    return 0;
}
