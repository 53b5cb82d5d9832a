/* SPDX-License-Identifier: BSD-3-Clause
 *
 * twemproxy (nutcracker) specifics of the orchestration layer: its YAML config and the SET/GET
 * probe that says a proxy serves. One thread per cp_topo.
 */
#ifndef CLUSTERPIPE_ORCH_TWEMPROXY_H
#define CLUSTERPIPE_ORCH_TWEMPROXY_H

#include "orch/topo.h"

/* Writes DIR/nutcracker-PORT/nutcracker.yml for proxy i, listing every shard of t in index
 * order. Returns 0 or -1 with err. */
int cp__twemproxy_write_yaml(const cp_topo *t, size_t i, char *err, size_t errlen);

/* SET, GET and DEL of a probe key through proxy i. Returns 0 when the value came back. */
int cp__twemproxy_probe(const cp_topo *t, size_t i, char *err, size_t errlen);

#endif /* CLUSTERPIPE_ORCH_TWEMPROXY_H */
