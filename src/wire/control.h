/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The wire's control socket: a Unix socket in the topology's directory, one request line per
 * connection, the answer's lines ending with "OK" or "ERR why". Requests:
 *
 *   block NAME         the link carries nothing either way (a partition)
 *   unblock NAME       it carries again: what it held goes on, due as it was
 *   delay NAME DUR     DUR more each way (a slow link; "0": none), for bytes read from now
 *   link NAME PORT HOST:PORT
 *                      a new link: listen on PORT, forward to HOST:PORT (an IPv6 host in
 *                      brackets), as `--link NAME=PORT:HOST:PORT` at the start (a shard added
 *                      to a running topology)
 *   stats              a line per link: "link NAME conns N accepted N up BYTES down BYTES
 *                      max_queued BYTES blocked 0|1 extra NS deliveries N late NS" (late: the
 *                      deliveries' summed lateness, signed; cp__wire_link_state)
 *
 * The server side reads without blocking (the wire's loop watches its sockets); the client side,
 * cp__wire_ask, blocks up to a timeout and is what the scenarios and tests call. One thread
 * each.
 */
#ifndef CLUSTERPIPE_WIRE_CONTROL_H
#define CLUSTERPIPE_WIRE_CONTROL_H

#include <stddef.h>
#include <stdint.h>

/* A link's state that the control socket reads and sets. */
typedef struct cp__wire_link_state {
    int blocked;
    uint64_t extra_ns; /* one way, on top of the wire's delay */
    unsigned conns;    /* open now */
    uint64_t accepted; /* since the start */
    uint64_t bytes[2]; /* delivered: [0] client -> target, [1] back */
    size_t max_queued; /* the most one direction held */
    /* Timed deliveries (the first bytes of each send of due bytes), both ways, and the sum of
     * their lateness: when the send returned against when the bytes were due. The mean is what
     * the wire added past its delay (negative: delivered early by the lead), so the round trip
     * the link really had is 2 x (delay + extra + the mean): what a loaded machine adds. */
    uint64_t deliveries;
    int64_t late_ns;
} cp__wire_link_state;

/* The wire as the control socket sees it: its links by name, a call when one changed, and one
 * that adds a link (n grows by one when it returns 0). */
typedef struct cp__wire_links {
    size_t n;
    const char *(*name)(void *arg, size_t i);
    cp__wire_link_state *(*state)(void *arg, size_t i);
    void (*changed)(void *arg, size_t i); /* blocked or extra_ns set */
    /* spec: "NAME=PORT:HOST:PORT". 0, or a negative errno with why in err. */
    int (*add)(void *arg, const char *spec, char *err, size_t errlen);
    void *arg;
} cp__wire_links;

typedef struct cp__wire_control cp__wire_control;

/* Listens on path (an existing file there is replaced). NULL with err on failure. */
cp__wire_control *cp__wire_control_open(const char *path, char *err, size_t errlen);

/* The listening socket, for the loop to watch (readable: call cp__wire_control_accept). */
int cp__wire_control_fd(const cp__wire_control *c);

/* Takes a waiting request connection; returns its fd for the loop to watch (readable: call
 * cp__wire_control_read), or -1 when none was waiting. */
int cp__wire_control_accept(cp__wire_control *c);

/* Reads request connection fd; once its line is whole, answers it and closes fd. Returns 1 when
 * fd is closed (answered, or broken), 0 when its line is still incomplete. */
int cp__wire_control_read(cp__wire_control *c, int fd, cp__wire_links *links);

/* Closes the listener and every request connection, and removes the socket's file. */
void cp__wire_control_close(cp__wire_control *c);

/* The client: sends `request` to the wire at path and reads its answer into out (NUL-terminated,
 * the "OK" line left out), waiting up to timeout_ms. Returns 0 on "OK", -EPROTO on "ERR ..."
 * (the reason in err), or a negative errno when the wire could not be asked (err says why). */
int cp__wire_ask(const char *path, const char *request, char *out, size_t outlen, int timeout_ms,
                 char *err, size_t errlen);

#endif
