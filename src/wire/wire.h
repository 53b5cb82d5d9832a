/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The wire: an emulated network between hosts that share this machine's loopback. A process of
 * its own (`clusterpipe wire`, started and stopped by PID as the servers are) listens on one
 * loopback port per link, in front of the link's target, and forwards every connection's bytes
 * both ways, in order and without loss, each direction held for RTT/2 (with an optional jitter,
 * never reordering). A direction holds at most queue_bytes: past that the wire stops reading its
 * sender, so backpressure reaches it as on a real network.
 *
 * Faults, set through the control socket (wirectl.h) while it runs: a link blocked carries
 * nothing either way, its connections left open and new ones accepted but given no bytes, as
 * in a partition; a link's extra delay is added to each direction, as on a slow link.
 */
#ifndef CLUSTERPIPE_WIRE_WIRE_H
#define CLUSTERPIPE_WIRE_WIRE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#define CP__WIRE_NAME_MAX 64

/* One link: connections to listen_port go to host:port. */
typedef struct cp__wire_link_spec {
    char name[CP__WIRE_NAME_MAX];
    uint16_t listen_port;
    char host[256]; /* numeric: "127.0.0.1", "::1" */
    uint16_t port;
} cp__wire_link_spec;

typedef struct cp__wire_opts {
    const char *bind;    /* the listening address: "127.0.0.1" (default) or "::1" */
    uint64_t delay_ns;   /* one way: RTT/2 */
    uint64_t jitter_ns;  /* one way, spread evenly around delay_ns: 0 none */
    size_t queue_bytes;  /* per direction of a connection */
    const char *control; /* the control socket's path (AF_UNIX), NULL: none */
    const cp__wire_link_spec *links;
    size_t nlinks;
    const volatile sig_atomic_t *stop; /* set by a signal handler: the wire stops */
    void (*ready)(void *arg);          /* called once every link listens (may be NULL) */
    void *ready_arg;
} cp__wire_opts;

/* "NAME=LISTEN_PORT:HOST:PORT" (an IPv6 host in brackets: "b=7002:[::1]:6380") into *l. 0, or
 * -EINVAL with what is wrong in err. */
int cp__wire_link_parse(const char *s, cp__wire_link_spec *l, char *err, size_t errlen);

/* Runs the wire until *o->stop is set. Returns 0 then, or a negative errno with err saying what
 * failed (a port in use, the control socket's path, a target that is not an address). */
int cp__wire_run(const cp__wire_opts *o, char *err, size_t errlen);

#endif
