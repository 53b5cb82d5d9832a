/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Free loopback port selection (see ports.h). The allocator state is a plain struct owned by the
 * caller; probing opens and closes one socket per candidate. Thread-safe for distinct allocators.
 */
#include "orch/ports.h"

#include "clusterpipe/clusterpipe.h"
#include "util/errmsg.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Below Linux's ephemeral range (32768..60999 by default), bus ports (+10000) included: a port in
 * that range can be taken, while its server is down, by a client socket that the kernel bound to
 * it for an outgoing connect. Worse, a client reconnecting to 127.0.0.1:P can be given source
 * port P and connect to itself (TCP simultaneous open), so a killed server could not be
 * restarted on its port. */
#define AUTO_LOW 10000
#define AUTO_HIGH 22767 /* + bus offset stays below 32768 */

void cp__ports_init(cp__ports *a, int base) {
    memset(a, 0, sizeof(*a));
    if (base > 0) {
        a->fixed = 1;
        a->base = base;
        a->next = base;
    } else {
        /* 500 blocks of 20 ports in 10000..19999, picked by PID: parallel test processes start
         * apart, and a collision that still happens is handled by the caller's retry. */
        a->next = AUTO_LOW + (int)(getpid() % 500) * 20;
    }
}

static int is_used(const cp__ports *a, int port) {
    for (size_t i = 0; i < a->nused; i++)
        if (a->used[i] == port)
            return 1;
    return 0;
}

void cp__ports_reserve(cp__ports *a, int port) {
    if (port > 0 && !is_used(a, port) && a->nused < CP__PORTS_MAX)
        a->used[a->nused++] = port;
}

int cp__port_listen(int port) {
    if (port <= 0 || port > 65535)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    /* Redis and nutcracker set SO_REUSEADDR, so sockets in TIME_WAIT do not stop them: do not
     * let them stop us either. A listener on the port still makes bind fail. */
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 1) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int cp__port_free(int port) {
    int fd = cp__port_listen(port);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

int cp__ports_take(cp__ports *a, int bus, int *port, char *err, size_t errlen) {
    if (a->fixed) {
        int p = a->next;
        while (is_used(a, p) || (bus && is_used(a, p + CP__BUS_OFFSET)))
            p++;
        int limit = bus ? 65535 - CP__BUS_OFFSET : 65535;
        if (p > limit) {
            cp__seterr(err, errlen, "port %d is out of range (the highest usable is %d%s)", p,
                       limit, bus ? ": the cluster bus port is port+10000" : "");
            return CP_EINVAL;
        }
        if (!cp__port_free(p)) {
            cp__seterr(err, errlen,
                       "port %d on 127.0.0.1 is already in use (ports are taken in order from "
                       "base port %d)",
                       p, a->base);
            return CP_EINVAL;
        }
        if (bus && !cp__port_free(p + CP__BUS_OFFSET)) {
            cp__seterr(err, errlen,
                       "port %d on 127.0.0.1 (the cluster bus port of %d) is already in use",
                       p + CP__BUS_OFFSET, p);
            return CP_EINVAL;
        }
        a->next = p + 1;
        cp__ports_reserve(a, p);
        if (bus)
            cp__ports_reserve(a, p + CP__BUS_OFFSET);
        *port = p;
        return 0;
    }
    for (int tries = 0; tries < AUTO_HIGH - AUTO_LOW; tries++) {
        int p = a->next++;
        if (a->next > AUTO_HIGH)
            a->next = AUTO_LOW;
        if (p < AUTO_LOW || p > AUTO_HIGH)
            continue;
        if (is_used(a, p) || (bus && is_used(a, p + CP__BUS_OFFSET)))
            continue;
        /* A node's port must not be some other node's future bus port either. */
        if (p >= CP__BUS_OFFSET && is_used(a, p - CP__BUS_OFFSET))
            continue;
        if (!cp__port_free(p) || (bus && !cp__port_free(p + CP__BUS_OFFSET)))
            continue;
        cp__ports_reserve(a, p);
        if (bus)
            cp__ports_reserve(a, p + CP__BUS_OFFSET);
        *port = p;
        return 0;
    }
    cp__seterr(err, errlen, "no free port pair on 127.0.0.1 in %d..%d", AUTO_LOW, AUTO_HIGH);
    return CP_EIO;
}
