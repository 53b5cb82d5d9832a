/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A sweep of the compare experiment (private to src/compare/; parsed from `compare --sweep`):
 * one parameter (pipeline depth, shards, value size, client connections, or the round trip of
 * the links between hosts) and the values it takes; every value is a point, run on both
 * architectures, so cost can be read against the parameter rather than from one point. A value
 * type, no allocation; any thread.
 */
#ifndef CLUSTERPIPE_COMPARE_SWEEP_H
#define CLUSTERPIPE_COMPARE_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#define CP__SWEEP_MAX_POINTS 16

typedef enum cp__sweep_param {
    CP__SWEEP_NONE = 0,
    CP__SWEEP_PIPELINE,   /* requests in flight per connection */
    CP__SWEEP_SHARDS,     /* redis servers behind twemproxy / cluster masters: a setup per point */
    CP__SWEEP_VALUE_SIZE, /* bytes per value: the dataset is loaded again per point */
    CP__SWEEP_CLIENTS,    /* connections in total: the servers' connections are recorded */
    CP__SWEEP_RTT,        /* round trip of every link between hosts, ns: a setup per point */
} cp__sweep_param;

/* The largest RTT a sweep takes: beyond it a run of any size would be mostly waiting. */
#define CP__SWEEP_RTT_MAX_NS 1000000000ull

typedef struct cp__sweep {
    cp__sweep_param param;
    int n;
    uint64_t values[CP__SWEEP_MAX_POINTS]; /* in the order given, distinct; rtt: ns */
} cp__sweep;

/* Parses "pipeline=1,2,5", "shards=2,4", "value-size=100,1000", "clients=10,100",
 * "rtt=0,100us,1ms". Values are positive decimals (rtt: durations with their unit, util/dur.h,
 * 0 included, at most CP__SWEEP_RTT_MAX_NS), distinct, at most CP__SWEEP_MAX_POINTS; the bounds
 * of the other parameters are the bench's (checked by the caller with the engine's own check).
 * Returns 0, or -1 with err. */
int cp__sweep_parse(cp__sweep *s, const char *spec, char *err, size_t errlen);

/* "pipeline", "shards", "value-size", "clients", "rtt" ("" for none): the flag's word, also used in
 * the document and the run names ("twemproxy pipeline=5"). */
const char *cp__sweep_param_name(cp__sweep_param p);

/* A value of parameter p as the flag spells it: "5", or for rtt a duration ("0", "100us",
 * "1ms"). Always NUL-terminated; returns buf. */
char *cp__sweep_value_format(cp__sweep_param p, uint64_t v, char *buf, size_t len);

#endif /* CLUSTERPIPE_COMPARE_SWEEP_H */
