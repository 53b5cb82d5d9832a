/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Starting processes of a topology and waiting until they serve: spawn (topo.h), save the state
 * after every spawn so another process can always find and stop what runs (state.h), probe each
 * through its role's table, and move a process that lost its automatic port to a concurrent
 * starter. Used by `up`, by the operations that add or restart a process, and by twemproxy's
 * proxy restarts. Works on the caller's cp_topo; no state of its own. Blocks; one thread per
 * cp_topo.
 */
#ifndef CLUSTERPIPE_ORCH_LAUNCH_H
#define CLUSTERPIPE_ORCH_LAUNCH_H

#include "orch/topo.h"

/* Starts every process in idx[0..n) (saving the state after each spawn), then waits until all
 * serve. A process that dies meanwhile fails the wait with its log tail (CP_ECONNECT), unless it
 * died because its port was taken by someone else and ports are automatic: then it is moved to a
 * fresh port and started again (only allowed before anything refers to its port: `may_move`).
 * Returns 0, or a CP_E* code with err: CP_EIO with "interrupted" when t->cancel is set,
 * CP_ETIMEDOUT when a process does not serve within CP__START_TIMEOUT_MS. */
int cp__launch(cp_topo *t, const size_t *idx, size_t n, int may_move, char *err, size_t errlen);

/* Stops process i (by PID) and launches it again on its port with its config rewritten. Returns
 * 0, CP_EIO when it could not be stopped, or what cp__launch returns. */
int cp__launch_restart(cp_topo *t, size_t i, char *err, size_t errlen);

#endif /* CLUSTERPIPE_ORCH_LAUNCH_H */
