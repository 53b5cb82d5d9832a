/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Loopback ports for a topology. A port is free when a listening socket can be bound to
 * 127.0.0.1:port right now; a cluster node also needs port+10000 (its cluster bus). The allocator
 * remembers what it handed out so two processes of one topology never get the same port before
 * either has bound it. The caller owns the cp__ports value; one thread at a time.
 *
 * Across processes, a topology claims each port it takes: a file named after the port in
 * $TMPDIR/clusterpipe-ports-<uid>/ (O_EXCL), holding the topology's directory. A port claimed by
 * a topology whose directory exists is not handed out, even while its server is down: a killed
 * server is restarted on its port (scenarios, `clusterpipe kill/restart`), and a port that only
 * looked free then was taken by another topology starting meanwhile (CI once: a twemproxy
 * shard could not restart, "Address already in use"). cp__ports_release removes the claims
 * (cp_topo_down); a claim whose directory is gone is stale and taken over.
 */
#ifndef CLUSTERPIPE_ORCH_PORTS_H
#define CLUSTERPIPE_ORCH_PORTS_H

#include <stddef.h>

#define CP__BUS_OFFSET 10000
#define CP__PORTS_MAX 1024

typedef struct cp__ports {
    int next;  /* next candidate */
    int fixed; /* 1: ports are taken in order from the base and a busy one is an error */
    int base;  /* fixed mode: the first port */
    size_t nused;
    int used[CP__PORTS_MAX]; /* handed out (including bus ports) */
    const char *owner;       /* the topology's directory, claims' content; NULL: no claims */
} cp__ports;

/* Claims go with dir from now on (the topology's absolute directory, which outlives a). */
void cp__ports_set_owner(cp__ports *a, const char *dir);

/* Removes every claim of a's ports that names a's owner. */
void cp__ports_release(cp__ports *a);

/* base > 0: fixed mode starting at base. base == 0: auto mode starting at a point in
 * 10000..19999 that depends on our PID, so concurrent starters rarely collide (and bus ports,
 * +10000, stay below the kernel's ephemeral range: see ports.c). */
void cp__ports_init(cp__ports *a, int base);

/* Marks port as taken (an existing process of the topology). */
void cp__ports_reserve(cp__ports *a, int port);

/* 1 when 127.0.0.1:port can be bound and listened on right now (cp__port_listen, then closed). */
int cp__port_free(int port);

/* A listening socket on 127.0.0.1:port, bound with SO_REUSEADDR as every server binds: the fd
 * (the caller closes it), or -1. What cp__port_free checks with, and how a test holds a port. */
int cp__port_listen(int port);

/* Hands out the next port (and reserves port+10000 when bus). Fixed mode: exactly the next port
 * in order, or CP_EINVAL with an error naming the busy (or out of range) port. Auto mode: the
 * next free one, or CP_EIO when none is left. Returns 0 with *port set, or that code with err. */
int cp__ports_take(cp__ports *a, int bus, int *port, char *err, size_t errlen);

#endif /* CLUSTERPIPE_ORCH_PORTS_H */
