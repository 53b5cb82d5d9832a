/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The plan of a new topology, made before anything starts: the options checked, then every
 * process recorded in the cp_topo with its ports, so a busy fixed port or an impossible request
 * fails the run while nothing is running yet. Works on the caller's cp_topo (which owns the
 * records); no state of its own. One thread per cp_topo.
 */
#ifndef CLUSTERPIPE_ORCH_PLAN_H
#define CLUSTERPIPE_ORCH_PLAN_H

#include "orch/topo.h"

/* Rejects option combinations cp_topo_up cannot start, with a message naming the option.
 * Returns 0 or CP_EINVAL. */
int cp__plan_check(const cp_up_opts *o, char *err, size_t errlen);

/* Records every process of o's topology in t (cluster: masters, then replicas; twemproxy:
 * shards, proxies, then the proxies' stats ports; with a wire, t->rtt_ns > 0, then the wire
 * and its links' ports: links.h), taking each port from t->ports. Does not trust
 * cp__plan_check: a plan that does not fit (more than CP__MAX_PROCS processes) fails here too.
 * Returns 0, or a CP_E* code with err: CP_EINVAL (too many processes, a busy or out-of-range
 * fixed port), CP_EIO (no free port left), CP_ENOMEM. t may then hold part of the plan. */
int cp__plan_make(cp_topo *t, const cp_up_opts *o, char *err, size_t errlen);

#endif /* CLUSTERPIPE_ORCH_PLAN_H */
