/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The helpers both phases of a cluster SCAN call (scanstep.c): errors, commands for one node,
 * what a node says, the batch being gathered. Only the scan's modules use them. One thread,
 * the client's.
 */
#ifndef CLUSTERPIPE_SCANSTEP_H
#define CLUSTERPIPE_SCANSTEP_H

#include "lib/scan/scanstate.h"

/* Sets the client's error to code with "cp_scan: " and the message; returns code. */
int cp__scan_err(cp_scan *s, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* "host:port" of the client's node n, into buf; returns buf. */
const char *cp__scan_node_name(const cp__client *c, int n, char *buf, size_t len);

/* ---- the pipeline of a step ---- */

/* Appends argv for node n: no redirect, no retry. 0 or a CP_E* code. */
int cp__scan_append_node(cp_pipeline *p, int n, int argc, const char **argv, const size_t *len);

/* The same with a format (cp_append's). */
int cp__scan_append_node_fmt(cp_pipeline *p, int n, const char *fmt, ...);

/* Reply i of p (sent to node n) when it is not an error reply; else NULL with the client's
 * error set. The reply stays p's. */
const redisReply *cp__scan_reply(cp_scan *s, cp_pipeline *p, size_t i, int n);

/* ---- what a node says ---- */

/* The MIGRATE count in INFO commandstats text (0 when MIGRATE never ran), -1 when r is not
 * that text (refused, say). */
long long cp__scan_migrate_calls(const redisReply *r);

/* Parses node n's CLUSTER NODES reply into s->view. 0 (the caller frees s->view->map), or -1
 * (view unusable: myself unknown; nothing to free). */
int cp__scan_read_view(cp_scan *s, const redisReply *r, int n);

/* 1 when the view's node is a master that serves the slot without a migration mark. Inline:
 * a walk asks it of every slot. */
static inline int cp__scan_serves(const cp__nodesview *v, int slot) {
    return v->myself >= 0 && v->map.nodes[v->myself].master < 0 &&
           v->map.owner[slot] == v->myself && v->moving[slot] == 0;
}

/* The client's index of the view's node i (added when new), or a negative CP_E*. */
int cp__scan_client_node(cp_scan *s, const cp__nodesview *v, int i);

/* ---- the batch ---- */

/* Adds key k (a reply the step's pipeline owns) to the batch being gathered. 0, or CP_EPROTO
 * (not a string) / CP_ENOMEM with the client's error set. */
int cp__scan_add_key(cp_scan *s, const redisReply *k);

/* The keys gathered, copied out for the caller into s->out (before the step's state moves on,
 * so that running out of memory loses nothing: the step runs again). 0 or CP_ENOMEM. */
int cp__scan_emit(cp_scan *s);

#endif
