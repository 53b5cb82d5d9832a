/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The lifecycle-event recorder (evlog.h).
 */
#include "evlog.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void record(cp_client *c, const cp_event *ev, void *data) {
    (void)c;
    evlog *log = data;
    if (log->n == EVLOG_MAX) {
        log->overflow++;
        return;
    }
    evlog_entry *e = &log->e[log->n++];
    e->ev = *ev;
    snprintf(e->host, sizeof(e->host), "%s", ev->host);
    size_t len = ev->text_len < sizeof(e->text) - 1 ? ev->text_len : sizeof(e->text) - 1;
    memcpy(e->text, ev->text, len);
    e->text[len] = '\0';
    e->ev.host = e->host;
    e->ev.text = e->text;
}

void evlog_attach(cp_client *c, evlog *log) {
    cp_set_event_callback(c, record, log);
}

const char *evlog_type_name(cp_event_type t) {
    switch (t) {
    case CP_EVENT_NODE_CONNECTED:
        return "CONNECTED";
    case CP_EVENT_NODE_DISCONNECTED:
        return "DISCONNECTED";
    case CP_EVENT_MAP_CHANGED:
        return "MAP_CHANGED";
    case CP_EVENT_NODE_ADDED:
        return "NODE_ADDED";
    case CP_EVENT_NODE_REMOVED:
        return "NODE_REMOVED";
    case CP_EVENT_FAILOVER:
        return "FAILOVER";
    case CP_EVENT_RESUBSCRIBED:
        return "RESUBSCRIBED";
    case CP_EVENT_READY:
        return "READY";
    }
    return "?";
}

void evlog_format(const evlog *log, char *buf, size_t len) {
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < log->n && off < len; i++) {
        const cp_event *ev = &log->e[i].ev;
        int w = snprintf(buf + off, len - off,
                         "  %d %s node %d (%s:%d) code %d '%s' version %llu slots %d old %d\n", i,
                         evlog_type_name(ev->type), ev->node, ev->host, ev->port, ev->code,
                         ev->text, (unsigned long long)ev->version, ev->slots, ev->old_node);
        if (w < 0)
            break;
        off += (size_t)w;
    }
}

int evlog_find(const evlog *log, int from, cp_event_type t, int node) {
    for (int i = from < 0 ? 0 : from; i < log->n; i++)
        if (log->e[i].ev.type == t && (node == -1 || log->e[i].ev.node == node))
            return i;
    return -1;
}

int evlog_count(const evlog *log, cp_event_type t, int node) {
    int n = 0;
    for (int i = 0; i < log->n; i++)
        n += log->e[i].ev.type == t && (node == -1 || log->e[i].ev.node == node);
    return n;
}

void evlog_assert_seq(const evlog *log, const cp_event_type *types, const int *nodes, int n) {
    int ok = log->overflow == 0 && log->n == n;
    for (int i = 0; ok && i < n; i++)
        ok = log->e[i].ev.type == types[i] && (nodes[i] == -2 || log->e[i].ev.node == nodes[i]);
    if (ok)
        return;
    static char buf[16384];
    evlog_format(log, buf, sizeof(buf));
    char want[2048];
    size_t off = 0;
    want[0] = '\0';
    for (int i = 0; i < n && off < sizeof(want); i++)
        off += (size_t)snprintf(want + off, sizeof(want) - off, "  %s node %d\n",
                                evlog_type_name(types[i]), nodes[i]);
    fail_msg("events (%d, %d lost):\n%swanted (%d):\n%s", log->n, log->overflow, buf, n, want);
}
