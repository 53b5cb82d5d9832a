/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The topology state file, DIR/state.json (mode 0600: it may hold the password), written
 * atomically and read with jansson. Callers save after every change (each spawn, failover, added
 * node); the process core never does. A cp_topo returned by cp__state_load is owned by the
 * caller (cp_topo_free). One thread per cp_topo.
 */
#ifndef CLUSTERPIPE_ORCH_STATE_H
#define CLUSTERPIPE_ORCH_STATE_H

#include "orch/topo.h"

/* Writes DIR/state.json from t (temporary file + rename). Returns 0, CP_ENOMEM or CP_EIO with
 * err (err may be NULL when the caller only tries). */
int cp__state_save(const cp_topo *t, char *err, size_t errlen);

/* Reads dir/state.json into a new cp_topo (*out, caller frees) whose processes are handled
 * through roles (borrowed; may be NULL). Returns 0, CP_EINVAL (no state, not ours, malformed) or
 * CP_ENOMEM with err. */
int cp__state_load(const char *dir, const cp__role_ops *const *roles, cp_topo **out, char *err,
                   size_t errlen);

#endif /* CLUSTERPIPE_ORCH_STATE_H */
