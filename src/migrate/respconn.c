/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A blocking RESP connection, plain or TLS (respconn.h). The socket is non-blocking; each call
 * waits in poll(2) until its deadline.
 */
#include "migrate/respconn.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clusterpipe/tls.h"
#include "migrate/sockio.h"
#include "util/clock.h"

struct cp__respconn {
    int fd;
    cp_tls *tls;
    redisReader *reader;
    char *out;
    size_t out_len, out_cap;
    int timeout_ms;
    cp__rc_failure why;
    char err[256];
};

static int failed(cp__respconn *c, cp__rc_failure why, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    c->why = why;
    return -1;
}

/* Waits until fd is ready for events or the deadline passes. 0, or -1 (timeout, poll failed). */
static int wait_for(cp__respconn *c, short events, int64_t deadline) {
    for (;;) {
        int64_t left = deadline - cp__now_ms();
        if (left <= 0)
            return failed(c, CP__RC_TIMEOUT, "no answer within %d ms", c->timeout_ms);
        struct pollfd p = {c->fd, events, 0};
        int n = poll(&p, 1, (int)left);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return failed(c, CP__RC_IO, "poll: %s", strerror(errno));
    }
}

/* A non-blocking socket connected to one of host:port's addresses. 0, or -1 with c->err. */
static int dial(cp__respconn *c, const char *host, int port, int64_t deadline) {
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    int rc = getaddrinfo(host, ps, &hints, &ai);
    if (rc != 0)
        return failed(c, CP__RC_IO, "cannot resolve: %s", gai_strerror(rc));
    rc = -1;
    for (struct addrinfo *a = ai; a != NULL && rc != 0; a = a->ai_next) {
        if (c->fd >= 0)
            close(c->fd);
        c->fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (c->fd < 0) {
            failed(c, CP__RC_IO, "socket: %s", strerror(errno));
            continue;
        }
        if (connect(c->fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
            failed(c, CP__RC_IO, "%s", strerror(errno));
            continue;
        }
        if (wait_for(c, POLLOUT, deadline) != 0)
            break;
        int e = 0;
        socklen_t el = sizeof e;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &el);
        rc = e == 0 ? 0 : failed(c, CP__RC_IO, "%s", strerror(e));
    }
    freeaddrinfo(ai);
    return rc;
}

static int handshake(cp__respconn *c, const char *host, const cp_options *tls, int64_t deadline) {
    char why[256];
    if ((c->tls = cp_tls_new(tls, c->fd, host, why, sizeof why)) == NULL)
        return failed(c, CP__RC_IO, "TLS: %s", why);
    for (;;) {
        int want_read = 0, rc = cp_tls_handshake(c->tls, &want_read, why, sizeof why);
        if (rc == 1)
            return 0;
        if (rc < 0)
            return failed(c, CP__RC_IO, "%s", why);
        if (wait_for(c, want_read ? POLLIN : POLLOUT, deadline) != 0)
            return -1;
    }
}

cp__respconn *cp__rc_connect(const char *host, int port, const cp_options *tls, int timeout_ms,
                             char *err, size_t errlen) {
    cp__respconn *c = calloc(1, sizeof *c);
    if (c == NULL || (c->reader = redisReaderCreate()) == NULL) {
        snprintf(err, errlen, "out of memory");
        free(c);
        return NULL;
    }
    c->fd = -1;
    c->timeout_ms = timeout_ms;
    int64_t deadline = cp__now_ms() + timeout_ms;
    if (dial(c, host, port, deadline) != 0 ||
        (tls != NULL && tls->tls && handshake(c, host, tls, deadline) != 0)) {
        snprintf(err, errlen, "cannot connect: %s", c->err);
        cp__rc_free(c);
        return NULL;
    }
    return c;
}

void cp__rc_free(cp__respconn *c) {
    if (c == NULL)
        return;
    cp_tls_free(c->tls);
    if (c->fd >= 0)
        close(c->fd);
    if (c->reader != NULL)
        redisReaderFree(c->reader);
    free(c->out);
    free(c);
}

static int queue(cp__respconn *c, char *cmd, int len) {
    if (len < 0)
        return -1;
    if (c->out_len + (size_t)len > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : 1024;
        while (cap < c->out_len + (size_t)len)
            cap *= 2;
        char *o = realloc(c->out, cap);
        if (o == NULL) {
            free(cmd);
            return -1;
        }
        c->out = o;
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, cmd, (size_t)len);
    c->out_len += (size_t)len;
    free(cmd);
    return 0;
}

static int vappend(cp__respconn *c, const char *fmt, va_list ap) {
    char *cmd = NULL;
    int len = redisvFormatCommand(&cmd, fmt, ap);
    return queue(c, cmd, len);
}

int cp__rc_appendf(cp__respconn *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = vappend(c, fmt, ap);
    va_end(ap);
    return rc;
}

int cp__rc_append_argv(cp__respconn *c, int argc, const char **argv, const size_t *argvlen) {
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
    return queue(c, cmd, len);
}

/* Moves bytes (sockio.h): writes out (reading == 0) or reads into buf. -EIO with c->err. */
static ssize_t io(cp__respconn *c, int reading, char *buf, size_t len) {
    char why[200] = "";
    ssize_t n = cp__sock_move(c->fd, c->tls, reading, reading ? buf : c->out,
                              reading ? len : c->out_len, why, sizeof why);
    if (n == -EIO)
        failed(c, CP__RC_IO, "%s", why);
    return n;
}

static int flush_out(cp__respconn *c, int64_t deadline) {
    while (c->out_len > 0) {
        ssize_t n = io(c, 0, NULL, 0);
        if (n == -ECONNRESET)
            return failed(c, CP__RC_EOF, "the server reset the connection");
        if (n == -EIO)
            return -1;
        if (n == -EAGAIN) {
            if (wait_for(c, POLLOUT, deadline) != 0)
                return -1;
            continue;
        }
        memmove(c->out, c->out + n, c->out_len - (size_t)n);
        c->out_len -= (size_t)n;
    }
    return 0;
}

int cp__rc_reply(cp__respconn *c, redisReply **out) {
    *out = NULL;
    if (c->why != CP__RC_OK)
        return -1;
    int64_t deadline = cp__now_ms() + c->timeout_ms;
    if (flush_out(c, deadline) != 0)
        return -1;
    for (;;) {
        void *r = NULL;
        if (redisReaderGetReply(c->reader, &r) != REDIS_OK)
            return failed(c, CP__RC_IO, "not RESP: %s", c->reader->errstr);
        if (r != NULL) {
            *out = r;
            return 0;
        }
        char buf[16384];
        ssize_t n = io(c, 1, buf, sizeof buf);
        if (n == 0)
            return failed(c, CP__RC_EOF, "the server closed the connection");
        if (n == -ECONNRESET)
            return failed(c, CP__RC_EOF, "the server reset the connection");
        if (n == -EIO)
            return -1;
        if (n == -EAGAIN) {
            if (wait_for(c, POLLIN, deadline) != 0)
                return -1;
            continue;
        }
        if (redisReaderFeed(c->reader, buf, (size_t)n) != REDIS_OK)
            return failed(c, CP__RC_IO, "out of memory");
    }
}

redisReply *cp__rc_command(cp__respconn *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = vappend(c, fmt, ap);
    va_end(ap);
    redisReply *r = NULL;
    if (rc != 0)
        return failed(c, CP__RC_IO, "out of memory"), NULL;
    cp__rc_reply(c, &r);
    return r;
}

void cp__rc_tls_into(cp_options *o, const cp_options *tls) {
    if (tls == NULL)
        return;
    o->tls = tls->tls;
    o->tls_ca_file = tls->tls_ca_file;
    o->tls_cert_file = tls->tls_cert_file;
    o->tls_key_file = tls->tls_key_file;
    o->tls_insecure = tls->tls_insecure;
    o->tls_server_name = tls->tls_server_name;
}

cp__rc_failure cp__rc_why(const cp__respconn *c) {
    return c->why;
}

const char *cp__rc_errstr(const cp__respconn *c) {
    return c->err;
}
