/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A recorder of a client's lifecycle events (clusterpipe/event.h) for tests: evlog_attach sets
 * the client's event callback to copy every event into the log (strings copied, truncated to
 * 200 bytes), and the helpers print a log and check the events in it. The log is the test's,
 * zeroed before use; it holds EVLOG_MAX events (more fail the test at the next check). One
 * thread, the client's.
 */
#ifndef CLUSTERPIPE_EVLOG_H
#define CLUSTERPIPE_EVLOG_H

#include "clusterpipe/clusterpipe.h"

#define EVLOG_MAX 256

typedef struct evlog_entry {
    cp_event ev; /* host and text point into the entry's own copies */
    char host[64];
    char text[200];
} evlog_entry;

typedef struct evlog {
    evlog_entry e[EVLOG_MAX];
    int n;
    int overflow; /* events that did not fit */
} evlog;

/* The client's events go to log from now on. */
void evlog_attach(cp_client *c, evlog *log);

/* The event type's name ("CONNECTED", "MAP_CHANGED", ...). */
const char *evlog_type_name(cp_event_type t);

/* The log as one line per event, into buf (for failure messages). */
void evlog_format(const evlog *log, char *buf, size_t len);

/* The index of the first event of type t about node (-1: any node) at or after from, or -1. */
int evlog_find(const evlog *log, int from, cp_event_type t, int node);

/* How many events of type t about node (-1: any node) the log has. */
int evlog_count(const evlog *log, cp_event_type t, int node);

/* Fails the test, printing the log, unless the log's events are exactly `want` (n types, each
 * with its node; node -2: any). */
void evlog_assert_seq(const evlog *log, const cp_event_type *types, const int *nodes, int n);

#endif
