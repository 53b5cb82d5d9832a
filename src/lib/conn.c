/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Connection: non-blocking socket, bounded output buffer, FIFO of requests in flight, reply
 * reader. Owned by the client that made it; one thread. See conn.h for the contract.
 */
#include "lib/conn.h"

#include "lib/replyarena.h"
#include "lib/resp.h"
#include "lib/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

__attribute__((format(printf, 3, 4))) static int set_err(cp__conn *c, int code, const char *fmt,
                                                         ...) {
    va_list ap;
    va_start(ap, fmt);
    c->err = code;
    vsnprintf(c->errstr, sizeof(c->errstr), fmt, ap);
    va_end(ap);
    return code;
}

void cp__conn_init(cp__conn *c) {
    memset(c, 0, sizeof(*c));
    c->fd = -1;
}

/* Non-blocking connect to one resolved address, waiting up to timeout_ms for it to complete. */
static int connect_one(const struct addrinfo *ai, int timeout_ms, int *out_errno) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
        *out_errno = errno;
        return -1;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            *out_errno = errno;
            close(fd);
            return -1;
        }
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int n;
        do
            n = poll(&p, 1, timeout_ms);
        while (n < 0 && errno == EINTR);
        if (n == 0) {
            *out_errno = ETIMEDOUT;
            close(fd);
            return -1;
        }
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr != 0) {
            *out_errno = n < 0 ? errno : soerr;
            close(fd);
            return -1;
        }
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

int cp__conn_open(cp__conn *c, const char *host, int port, const cp__connopts *o) {
    cp__conn_close(c);
    c->err = 0;
    char portstr[8];
    snprintf(portstr, sizeof(portstr), "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, portstr, &hints, &res);
    if (gai != 0)
        return set_err(c, CP_ECONNECT, "cannot resolve %s:%d: %s", host, port, gai_strerror(gai));
    int last = ECONNREFUSED;
    for (struct addrinfo *ai = res; ai != NULL && c->fd < 0; ai = ai->ai_next)
        c->fd = connect_one(ai, o->connect_timeout_ms, &last);
    freeaddrinfo(res);
    if (c->fd < 0) {
        return set_err(c, last == ETIMEDOUT ? CP_ETIMEDOUT : CP_ECONNECT, "connect to %s:%d: %s",
                       host, port, strerror(last));
    }
    if (o->tls != NULL) {
        char why[CP_ERRSTR_LEN];
        c->ssl = cp__tls_handshake(o->tls, c->fd, host, o->connect_timeout_ms, why, sizeof(why));
        if (c->ssl == NULL) {
            cp__conn_close(c);
            return set_err(c, CP_ECONNECT, "%s:%d: %s", host, port, why);
        }
    }
    c->last_io_ns = cp__now_ns();
    if (c->fd_gen != NULL)
        ++*c->fd_gen;
    if (o->password == NULL)
        return 0;

    const char *argv[3] = {"AUTH", o->username, o->password};
    size_t argvlen[3] = {4, o->username ? strlen(o->username) : 0, strlen(o->password)};
    if (o->username == NULL) {
        argv[1] = o->password;
        argvlen[1] = argvlen[2];
    }
    cp__buf b = {0};
    if (cp__format_argv(&b, o->username ? 3 : 2, argv, argvlen) != 0) {
        cp__conn_close(c);
        return set_err(c, CP_ENOMEM, "out of memory (%s:%d)", host, port);
    }
    redisReply *r = cp__conn_roundtrip(c, b.data, b.len, o->io_timeout_ms);
    cp__buf_free(&b);
    if (r == NULL) { /* the connection failed during AUTH: say where, keep why */
        char why[CP_ERRSTR_LEN];
        memcpy(why, c->errstr, sizeof(why));
        cp__conn_close(c);
        return set_err(c, c->err, "AUTH on %s:%d: %.180s", host, port, why);
    }
    int ok = r->type == REDIS_REPLY_STATUS;
    if (!ok)
        set_err(c, CP_EAUTH, "AUTH refused by %s:%d: %.60s", host, port,
                r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
    freeReplyObject(r);
    if (!ok) {
        cp__conn_close(c);
        return CP_EAUTH;
    }
    return 0;
}

void cp__conn_close(cp__conn *c) {
    cp__tls_free(c->ssl);
    c->ssl = NULL;
    if (c->fd >= 0) {
        close(c->fd);
        if (c->fd_gen != NULL)
            ++*c->fd_gen;
    }
    c->fd = -1;
    c->opos = c->olen = 0;
    c->buffered = c->written = 0;
    c->fhead = c->fcount = 0;
    cp__reader_reset(&c->reader); /* drops any half-read reply */
}

void cp__conn_free(cp__conn *c) {
    cp__conn_close(c);
    cp__reader_free(&c->reader);
    free(c->obuf);
    free(c->fifo);
    c->obuf = NULL;
    c->fifo = NULL;
    c->ocap = c->fcap = 0;
}

int cp__conn_push_grow(cp__conn *c, const char *req, size_t len, uint32_t tag) {
    if (c->fcount == c->fcap) {
        size_t ncap = c->fcap ? c->fcap * 2 : 64;
        cp__inflight *f = malloc(ncap * sizeof(*f));
        if (f == NULL)
            return CP_ENOMEM;
        for (size_t i = 0; i < c->fcount; i++)
            f[i] = c->fifo[(c->fhead + i) & (c->fcap - 1)];
        free(c->fifo);
        c->fifo = f;
        c->fhead = 0;
        c->fcap = ncap;
    }
    /* Compact before growing: written bytes at the front are dead. */
    if (c->opos > 0 && c->ocap - c->olen < len) {
        memmove(c->obuf, c->obuf + c->opos, c->olen - c->opos);
        c->olen -= c->opos;
        c->opos = 0;
    }
    if (c->ocap - c->olen < len) {
        size_t ncap = c->ocap ? c->ocap : 16 * 1024;
        while (ncap - c->olen < len)
            ncap *= 2;
        char *b = realloc(c->obuf, ncap);
        if (b == NULL)
            return CP_ENOMEM;
        c->obuf = b;
        c->ocap = ncap;
    }
    return cp__conn_push(c, req, len, tag); /* fits now */
}

int cp__conn_flush(cp__conn *c) {
    while (c->opos < c->olen) {
        if (c->ssl != NULL) {
            char why[CP_ERRSTR_LEN];
            ssize_t n =
                cp__tls_write(c->ssl, c->obuf + c->opos, c->olen - c->opos, why, sizeof(why));
            if (n == -EAGAIN)
                return 1;
            if (n < 0)
                return set_err(c, CP_EIO, "%s", why);
            c->opos += (size_t)n;
            c->written += (uint64_t)n;
            c->last_io_ns = cp__now_ns();
            continue;
        }
        ssize_t n = send(c->fd, c->obuf + c->opos, c->olen - c->opos, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 1;
            return set_err(c, CP_EIO, "write: %s", strerror(errno));
        }
        c->opos += (size_t)n;
        c->written += (uint64_t)n;
        c->last_io_ns = cp__now_ns();
    }
    c->opos = c->olen = 0;
    return 0;
}

/* TLS records may hold more plaintext than one read returns: read until it would block. */
static int fill_tls(cp__conn *c) {
    for (;;) {
        char why[CP_ERRSTR_LEN], *space;
        size_t room = cp__reader_space(&c->reader, &space);
        if (room == 0)
            return set_err(c, CP_ENOMEM, "reader: out of memory");
        ssize_t n = cp__tls_read(c->ssl, space, room, why, sizeof(why));
        if (n == -EAGAIN)
            return 0;
        if (n == 0)
            return set_err(c, CP_ECLOSED, "connection closed by peer");
        if (n < 0)
            return set_err(c, CP_EIO, "%s", why);
        c->last_io_ns = cp__now_ns();
        cp__reader_commit(&c->reader, (size_t)n);
    }
}

int cp__conn_fill(cp__conn *c) {
    if (c->ssl != NULL)
        return fill_tls(c);
    for (;;) {
        char *space;
        size_t room = cp__reader_space(&c->reader, &space);
        if (room == 0)
            return set_err(c, CP_ENOMEM, "reader: out of memory");
        ssize_t n = recv(c->fd, space, room, 0);
        if (n > 0) {
            c->last_io_ns = cp__now_ns();
            cp__reader_commit(&c->reader, (size_t)n);
            if ((size_t)n < room)
                return 0;
            continue;
        }
        if (n == 0)
            return set_err(c, CP_ECLOSED, "connection closed by peer");
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        return set_err(c, CP_EIO, "read: %s", strerror(errno));
    }
}

int cp__conn_reply(cp__conn *c, redisReply **reply, uint32_t *tag) {
    cp__reply_arena *a = c->roundtrip_arena != NULL ? c->roundtrip_arena
                         : c->replies != NULL       ? *c->replies
                                                    : NULL;
    redisReply *r = NULL;
    int rc = cp__reader_next(&c->reader, a, &r);
    if (rc == 0)
        return 0;
    if (rc == CP_EPROTO)
        return set_err(c, CP_EPROTO, "protocol error: %s", c->reader.errstr);
    if (rc < 0)
        return set_err(c, CP_ENOMEM, "reader: out of memory");
    if (c->fcount == 0)
        return set_err(c, CP_EPROTO, "protocol error: reply with no request in flight");
    *tag = c->fifo[c->fhead].tag;
    c->fhead = (c->fhead + 1) & (c->fcap - 1);
    c->fcount--;
    *reply = r;
    return 1;
}

int cp__conn_was_written(const cp__conn *c, size_t i) {
    return c->fifo[(c->fhead + i) & (c->fcap - 1)].start < c->written;
}

uint32_t cp__conn_tag(const cp__conn *c, size_t i) {
    return c->fifo[(c->fhead + i) & (c->fcap - 1)].tag;
}

static redisReply *roundtrip(cp__conn *c, const char *req, size_t len, int timeout_ms) {
    if (cp__conn_push(c, req, len, 0) != 0) {
        set_err(c, CP_ENOMEM, "out of memory");
        return NULL;
    }
    uint64_t deadline = cp__now_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        int rc = cp__conn_flush(c);
        if (rc < 0)
            return NULL;
        redisReply *r = NULL;
        uint32_t tag;
        int got = cp__conn_reply(c, &r, &tag);
        if (got < 0)
            return NULL;
        if (got == 1)
            return r;
        uint64_t now = cp__now_ns();
        if (now >= deadline) {
            set_err(c, CP_ETIMEDOUT, "no reply within %d ms", timeout_ms);
            return NULL;
        }
        struct pollfd p = {.fd = c->fd, .events = (short)(POLLIN | (rc == 1 ? POLLOUT : 0))};
        int n = poll(&p, 1, (int)((deadline - now) / 1000000u) + 1);
        if (n < 0 && errno != EINTR) {
            set_err(c, CP_EIO, "poll: %s", strerror(errno));
            return NULL;
        }
        if (n > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) && cp__conn_fill(c) < 0)
            return NULL;
    }
}

redisReply *cp__conn_roundtrip(cp__conn *c, const char *req, size_t len, int timeout_ms) {
    /* The reply goes to an arena of its own (nothing else is in flight), copied out for the
     * caller; the owner's batch arena is left as it was. */
    cp__reply_arena tmp = {0};
    c->roundtrip_arena = &tmp;
    redisReply *r = roundtrip(c, req, len, timeout_ms);
    c->roundtrip_arena = NULL;
    redisReply *copy = cp__reply_dup(r);
    cp__arena_free(&tmp);
    if (r != NULL && copy == NULL)
        set_err(c, CP_ENOMEM, "out of memory");
    return copy;
}
