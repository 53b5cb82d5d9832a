/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The topology directory: making DIR ready for a new topology and removing what a topology wrote
 * there, never touching foreign files. Works on the caller's cp_topo; no state of its own. One
 * thread per cp_topo.
 */
#ifndef CLUSTERPIPE_ORCH_TOPODIR_H
#define CLUSTERPIPE_ORCH_TOPODIR_H

#include "orch/topo.h"

/* Makes t->dir usable for a new topology (a fresh mkdtemp under $TMPDIR when dir is NULL, an
 * empty directory, or one whose recorded topology is entirely down, whose files are then
 * removed; the recorded one is read with t->roles); *created says whether we made it. Returns 0
 * or a CP_E* code with err. */
int cp__topo_prepare_dir(cp_topo *t, const char *dir, int *created, char *err, size_t errlen);

/* Removes what a topology wrote in dir, then dir itself when that leaves it empty. */
void cp__topo_remove_files(const char *dir);

#endif /* CLUSTERPIPE_ORCH_TOPODIR_H */
