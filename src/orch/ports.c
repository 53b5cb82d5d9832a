/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Free loopback port selection (see ports.h). The allocator state is a plain struct owned by the
 * caller; probing opens and closes one socket per candidate. Thread-safe for distinct allocators.
 */
#include "orch/ports.h"

#include "clusterpipe/clusterpipe.h"
#include "util/errmsg.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

/* 1 when [::1]:port could be bound now, or the machine has no IPv6 loopback (then no server of
 * ours can listen there either). A topology on ::1 takes its ports from the same search. */
static int v6_free(int port) {
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    struct sockaddr_in6 sa;
    memset(&sa, 0, sizeof(sa));
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons((unsigned short)port);
    sa.sin6_addr = in6addr_loopback;
    int ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ? listen(fd, 1) == 0
                                                               : errno == EADDRNOTAVAIL;
    close(fd);
    return ok;
}

int cp__port_free(int port) {
    if (!v6_free(port))
        return 0;
    int fd = cp__port_listen(port);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

/* ---- claims across processes (ports.h) ---- */

void cp__ports_set_owner(cp__ports *a, const char *dir) {
    a->owner = dir;
}

/* The claim file of port into path; 0, or -1 when its directory cannot be made. */
static int claim_path(int port, char *path, size_t len) {
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || tmp[0] == '\0')
        tmp = "/tmp";
    int n = snprintf(path, len, "%s/clusterpipe-ports-%u", tmp, (unsigned)getuid());
    if (n < 0 || (size_t)n >= len || (mkdir(path, 0700) != 0 && errno != EEXIST))
        return -1;
    n = snprintf(path, len, "%s/clusterpipe-ports-%u/%d", tmp, (unsigned)getuid(), port);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* The directory a claim names, into dir (empty when unreadable). */
static void claim_owner(const char *path, char *dir, size_t len) {
    dir[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, dir, len - 1);
    close(fd);
    dir[n > 0 ? n : 0] = '\0';
}

/* Claims port for a's owner: 1 when it is ours now (also when it was already), 0 when a live
 * topology holds it. A claim whose directory is gone (its topology crashed, or was removed by
 * hand) is taken over; without a usable claims directory nothing is claimed (1). */
static int claim(const cp__ports *a, int port) {
    char path[PATH_MAX], dir[PATH_MAX];
    if (a->owner == NULL || claim_path(port, path, sizeof(path)) != 0)
        return 1;
    for (int tries = 0; tries < 2; tries++) {
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd >= 0) {
            size_t len = strlen(a->owner);
            int ok = write(fd, a->owner, len) == (ssize_t)len;
            close(fd);
            if (!ok)
                unlink(path);
            return 1;
        }
        if (errno != EEXIST)
            return 1;
        claim_owner(path, dir, sizeof(dir));
        if (strcmp(dir, a->owner) == 0)
            return 1;
        struct stat st;
        if (dir[0] != '\0' && stat(dir, &st) == 0)
            return 0; /* a live topology's, its server perhaps down for a while */
        unlink(path); /* stale, or half written: take it over */
    }
    return 0;
}

/* Removes port's claim if it is a's owner's. */
static void unclaim(const cp__ports *a, int port) {
    char path[PATH_MAX], dir[PATH_MAX];
    if (a->owner == NULL || claim_path(port, path, sizeof(path)) != 0)
        return;
    claim_owner(path, dir, sizeof(dir));
    if (strcmp(dir, a->owner) == 0)
        unlink(path);
}

void cp__ports_release(cp__ports *a) {
    for (size_t i = 0; i < a->nused; i++)
        unclaim(a, a->used[i]);
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
        if (!claim(a, p) || (bus && !claim(a, p + CP__BUS_OFFSET))) {
            unclaim(a, p);
            cp__seterr(err, errlen,
                       "port %d belongs to another running topology (its server may be down for "
                       "now); choose another base port",
                       p);
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
        if (!claim(a, p))
            continue;
        if (bus && !claim(a, p + CP__BUS_OFFSET)) {
            unclaim(a, p);
            continue;
        }
        cp__ports_reserve(a, p);
        if (bus)
            cp__ports_reserve(a, p + CP__BUS_OFFSET);
        *port = p;
        return 0;
    }
    cp__seterr(err, errlen, "no free port pair on 127.0.0.1 in %d..%d", AUTO_LOW, AUTO_HIGH);
    return CP_EIO;
}
