/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Connection: non-blocking socket, bounded output buffer, FIFO of requests in flight, reply
 * reader. Owned by the client that made it; one thread. See conn.h for the contract.
 */
#include "lib/base/alloc.h"
#include "lib/net/conn.h"

#include "lib/proto/replyarena.h"
#include "lib/proto/resp.h"
#include "lib/net/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
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

/* Starts a non-blocking connect(2) to the next untried address. 1 when it completed at once, 0
 * when it is in progress, -1 when no address is left (errno of the last attempt in *last). */
static int connect_next(cp__conn *c, int *last) {
    while (c->addrs != NULL && c->addrs->next < c->addrs->n) {
        int i = c->addrs->next++;
        const struct sockaddr *sa = (const struct sockaddr *)&c->addrs->a[i];
        int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
        if (fd < 0) {
            *last = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(fd, sa, c->addrs->len[i]) == 0 || errno == EINPROGRESS) {
            int done = errno != EINPROGRESS;
            c->fd = fd;
            return done;
        }
        *last = errno;
        close(fd);
    }
    return -1;
}

/* The first request on a new connection: HELLO 3 (with AUTH in it when there is a password)
 * for RESP3, else AUTH. 0 or CP_ENOMEM. */
static int push_hello_or_auth(cp__conn *c) {
    const cp__connopts *o = c->opts;
    const char *argv[5];
    size_t argvlen[5];
    int argc = 0;
    if (o->resp3) {
        argv[argc++] = "HELLO";
        argv[argc++] = "3";
    }
    if (o->password != NULL) {
        argv[argc++] = "AUTH";
        if (o->username != NULL || o->resp3) /* HELLO's AUTH always names the user */
            argv[argc++] = o->username != NULL ? o->username : "default";
        argv[argc++] = o->password;
    }
    for (int i = 0; i < argc; i++)
        argvlen[i] = strlen(argv[i]);
    cp__buf b = {0};
    int rc = cp__format_argv(&b, argc, argv, argvlen);
    if (rc == 0)
        rc = cp__conn_push(c, b.data, b.len, o->resp3 ? CP__TAG_HELLO : CP__TAG_AUTH, NULL);
    cp__buf_free(&b);
    return rc == 0 ? 0 : set_err(c, CP_ENOMEM, "out of memory (%s:%d)", c->host, c->port);
}

static const char readonly_cmd[] = "*1\r\n$8\r\nREADONLY\r\n";
static const char tracking_on_cmd[] = "*3\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$2\r\nON\r\n";
static const char tracking_off_cmd[] = "*3\r\n$6\r\nCLIENT\r\n$8\r\nTRACKING\r\n$3\r\nOFF\r\n";

/* The socket (and TLS) is up: HELLO or AUTH, CLIENT TRACKING and READONLY go first when the
 * options ask for them, and the connection is ready once they are answered; else it is ready
 * now. Under RESP3 tracking is on before the first read it must see invalidations for. Under
 * RESP2 it goes on later, redirected to the node's tracking link (tracklink.h); CLIENT TRACKING
 * OFF here asks, in the handshake, whether the server allows tracking at all (Redis 6, the ACL),
 * so that a refusal fails the connection as RESP3's does, not a REDIRECT in the middle of its
 * commands. 0 or CP_ENOMEM. */
static int handshake(cp__conn *c) {
    if (c->opts->password == NULL && !c->opts->readonly && !c->opts->resp3 && !c->opts->tracking) {
        c->state = CP__CONN_READY;
        return 0;
    }
    c->state = CP__CONN_AUTH;
    if ((c->opts->password != NULL || c->opts->resp3) && push_hello_or_auth(c) != 0)
        return CP_ENOMEM;
    const char *tracking = c->opts->resp3 ? tracking_on_cmd : tracking_off_cmd;
    if (c->opts->tracking &&
        cp__conn_push(c, tracking, strlen(tracking), CP__TAG_TRACKING, NULL) != 0)
        return set_err(c, CP_ENOMEM, "out of memory (%s:%d)", c->host, c->port);
    if (c->opts->readonly &&
        cp__conn_push(c, readonly_cmd, sizeof(readonly_cmd) - 1, CP__TAG_READONLY, NULL) != 0)
        return set_err(c, CP_ENOMEM, "out of memory (%s:%d)", c->host, c->port);
    return 0;
}

/* The name the server's certificate must carry. */
static const char *tls_name(const cp__conn *c) {
    return c->opts->tls_server_name != NULL ? c->opts->tls_server_name : c->host;
}

/* The socket is connected: TLS next, else the handshake. */
static int connected(cp__conn *c) {
    cp__free(c->addrs);
    c->addrs = NULL;
    c->last_io_ns = cp__now_ns();
    if (c->opts->tls != NULL && c->ssl == NULL) {
        char why[CP_ERRSTR_LEN];
        if ((c->ssl = cp__tls_start(c->opts->tls, c->fd, tls_name(c), why, sizeof(why))) == NULL)
            return set_err(c, CP_ECONNECT, "%s:%d: %s", c->host, c->port, why);
        c->state = CP__CONN_TLS;
        return cp__conn_progress(c, CP__EV_WRITE);
    }
    return handshake(c);
}

/* A numeric address (IPv4, IPv6, with a scope): its one address in c->addrs. 1 when host is
 * one (getaddrinfo with AI_NUMERICHOST never asks a resolver), 0 when it is a host name, or
 * CP_ENOMEM. */
static int numeric(cp__conn *c, const char *host, int port) {
    char portstr[8];
    snprintf(portstr, sizeof(portstr), "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    if (getaddrinfo(host, portstr, &hints, &ai) != 0)
        return 0;
    if ((c->addrs = cp__calloc(1, sizeof(*c->addrs))) == NULL) {
        freeaddrinfo(ai);
        return set_err(c, CP_ENOMEM, "out of memory (%s:%d)", host, port);
    }
    for (const struct addrinfo *a = ai; a != NULL && c->addrs->n < CP__ADDRS_MAX; a = a->ai_next)
        if (a->ai_addrlen <= sizeof(c->addrs->a[0])) {
            memcpy(&c->addrs->a[c->addrs->n], a->ai_addr, a->ai_addrlen);
            c->addrs->len[c->addrs->n++] = a->ai_addrlen;
        }
    freeaddrinfo(ai);
    return 1;
}

/* A host name: its addresses asked of the resolver, the answer told through an eventfd that
 * stands for the connection's fd until then. 0 or a CP_E* code with errstr set. */
static int resolve(cp__conn *c) {
    if (c->opts->resolver == NULL)
        return set_err(c, CP_ECONNECT, "cannot resolve %s: no resolver", c->host);
    int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (efd < 0)
        return set_err(c, CP_ECONNECT, "cannot resolve %s: eventfd: %s", c->host, strerror(errno));
    char why[CP_ERRSTR_LEN];
    c->dns = cp__resolve_start(c->opts->resolver, c->host, c->port, c->opts->prefer_ip, efd, why,
                               sizeof(why));
    if (c->dns == NULL) {
        close(efd);
        return set_err(c, CP_ECONNECT, "cannot resolve %s: %s", c->host, why);
    }
    c->fd = efd;
    c->state = CP__CONN_RESOLVING;
    return 0;
}

int cp__conn_start(cp__conn *c, const char *host, int port, const cp__connopts *o) {
    cp__conn_close(c);
    c->err = 0;
    c->opts = o;
    c->resp3 = (uint8_t)(o->resp3 != 0);
    snprintf(c->host, sizeof(c->host), "%s", host);
    c->port = port;
    c->connect_deadline = cp__now_ns() + (uint64_t)o->connect_timeout_ms * 1000000ull;
    int num = numeric(c, host, port);
    if (num < 0)
        return num;
    if (num == 0) { /* a host name: connecting starts when its addresses come */
        int rc = resolve(c);
        if (rc != 0)
            cp__conn_close(c);
        return rc;
    }
    int last = ECONNREFUSED;
    int rc = connect_next(c, &last);
    if (rc < 0) {
        cp__conn_close(c);
        return set_err(c, CP_ECONNECT, "connect to %s:%d: %s", host, port, strerror(last));
    }
    c->state = CP__CONN_CONNECTING;
    int err = rc == 1 ? connected(c) : 0;
    if (err != 0) {
        cp__conn_close(c);
        return c->err;
    }
    return 0;
}

int cp__conn_next(cp__conn *c) {
    int last = c->err;
    cp__tls_free(c->ssl);
    c->ssl = NULL;
    close(c->fd);
    c->fd = -1;
    c->err = 0;
    c->state = CP__CONN_CONNECTING; /* also after RESOLVING */
    int rc = connect_next(c, &last);
    if (rc < 0) {
        set_err(c, CP_ECONNECT, "connect to %s:%d: %s", c->host, c->port, strerror(last));
        cp__conn_close(c);
        return c->err;
    }
    return rc == 1 ? connected(c) : 0;
}

/* RESOLVING: the eventfd was readable. The addresses go to the owner's cp__conn_next (the
 * eventfd leaves the loop first), or the name has none. */
static int resolved(cp__conn *c, int events) {
    if (!(events & CP__EV_READ) || !cp__resolve_done(c->dns))
        return 0;
    char why[CP_ERRSTR_LEN];
    c->addrs = cp__resolve_finish(c->dns, why, sizeof(why));
    c->dns = NULL;
    if (c->addrs == NULL)
        return set_err(c, CP_ECONNECT, "%s", why);
    c->err = ECONNREFUSED; /* cp__conn_next's errno when no address can be tried */
    return CP__CONN_NEXT;
}

const char *cp__conn_timed_out(cp__conn *c) {
    if (c->state == CP__CONN_RESOLVING)
        set_err(c, CP_ETIMEDOUT, "resolving %s timed out", c->host);
    else
        set_err(c, CP_ETIMEDOUT, "connect timed out");
    return c->errstr;
}

int cp__conn_progress(cp__conn *c, int events) {
    if (c->state == CP__CONN_RESOLVING)
        return resolved(c, events);
    if (c->state == CP__CONN_CONNECTING) {
        if (!(events & (CP__EV_WRITE | CP__EV_READ)))
            return 0;
        /* A loop may hand over readiness of an fd number closed and reused since it polled:
         * ask the socket itself (once per connect) before believing it. */
        struct pollfd pf = {.fd = c->fd, .events = POLLOUT};
        if (poll(&pf, 1, 0) == 0)
            return 0;
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
            soerr = errno;
        if (soerr == 0)
            return connected(c);
        /* This address refused: the next one (localhost may be ::1 and 127.0.0.1), once the
         * owner has told its loop that this fd goes (cp__conn_next). */
        if (c->addrs != NULL && c->addrs->next < c->addrs->n) {
            c->err = soerr;
            return CP__CONN_NEXT;
        }
        return set_err(c, CP_ECONNECT, "connect to %s:%d: %s", c->host, c->port, strerror(soerr));
    }
    if (c->state == CP__CONN_TLS) {
        char why[CP_ERRSTR_LEN];
        int want_read = 0;
        int rc = cp__tls_step(c->ssl, tls_name(c), &want_read, why, sizeof(why));
        if (rc < 0)
            return set_err(c, CP_ECONNECT, "%s:%d: %s", c->host, c->port, why);
        if (rc == 0) {
            c->tls_want = want_read ? CP__EV_READ : CP__EV_WRITE;
            return 0;
        }
        c->last_io_ns = cp__now_ns();
        return handshake(c);
    }
    return 0;
}

void cp__conn_close(cp__conn *c) {
    cp__tls_free(c->ssl);
    c->ssl = NULL;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->state = CP__CONN_CLOSED;
    cp__resolve_drop(c->dns);
    c->dns = NULL;
    cp__free(c->addrs);
    c->addrs = NULL;
    c->opos = c->olen = 0;
    c->buffered = c->written = 0;
    c->fhead = c->fcount = 0;
    cp__reader_reset(&c->reader); /* drops any half-read reply */
}

void cp__conn_free(cp__conn *c) {
    cp__conn_close(c);
    cp__reader_free(&c->reader);
    cp__arena_free(&c->own);
    cp__free(c->obuf);
    cp__free(c->fifo);
    c->obuf = NULL;
    c->fifo = NULL;
    c->ocap = c->fcap = 0;
}

void cp__conn_trim(cp__conn *c) {
    if (c->fcount > 0 || c->opos < c->olen || c->reader.pos < c->reader.len || c->reader.depth > 0)
        return;
    cp__reader_free(&c->reader);
    cp__free(c->obuf);
    cp__free(c->fifo);
    c->obuf = NULL;
    c->fifo = NULL;
    c->opos = c->olen = c->ocap = 0;
    c->fhead = c->fcap = 0;
}

/* Room for len more bytes of output. 0 or CP_ENOMEM. */
static int reserve(cp__conn *c, size_t len) {
    /* Compact before growing: written bytes at the front are dead. */
    if (c->opos > 0 && c->ocap - c->olen < len) {
        memmove(c->obuf, c->obuf + c->opos, c->olen - c->opos);
        c->olen -= c->opos;
        c->opos = 0;
    }
    if (c->ocap - c->olen < len) {
        /* 4 KiB first, doubling: an output buffer holds what its batches need (reader.c says
         * why a bigger one than that costs the process memory). */
        size_t ncap = c->ocap ? c->ocap : 4 * 1024;
        while (ncap - c->olen < len)
            ncap *= 2;
        char *b = cp__realloc(c->obuf, ncap);
        if (b == NULL)
            return CP_ENOMEM;
        c->obuf = b;
        c->ocap = ncap;
    }
    return 0;
}

int cp__conn_push_grow(cp__conn *c, const char *req, size_t len, uint32_t tag,
                       cp__reply_arena *arena) {
    if (c->fcount == c->fcap) {
        size_t ncap = c->fcap ? c->fcap * 2 : 64;
        cp__inflight *f = cp__malloc(ncap * sizeof(*f));
        if (f == NULL)
            return CP_ENOMEM;
        for (size_t i = 0; i < c->fcount; i++)
            f[i] = c->fifo[(c->fhead + i) & (c->fcap - 1)];
        cp__free(c->fifo);
        c->fifo = f;
        c->fhead = 0;
        c->fcap = ncap;
    }
    if (reserve(c, len) != 0)
        return CP_ENOMEM;
    return cp__conn_push(c, req, len, tag, arena); /* fits now */
}

int cp__conn_send(cp__conn *c, const char *bytes, size_t len) {
    if (reserve(c, len) != 0)
        return CP_ENOMEM;
    memcpy(c->obuf + c->olen, bytes, len);
    c->olen += len;
    c->buffered += len;
    return 0;
}

int cp__conn_flush(cp__conn *c, uint64_t now) {
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
            c->bytes_out += (uint64_t)n;
            c->last_io_ns = now;
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
        c->bytes_out += (uint64_t)n;
        c->last_io_ns = now;
    }
    c->opos = c->olen = 0;
    return 0;
}

/* The peer closed the connection. While HELLO 3 waits for its answer, that is the refusal of a
 * server that does not speak RESP3 (twemproxy closes on a command it does not know): said as the
 * refusal, not as a plain close. */
static int closed(cp__conn *c) {
    if (c->state == CP__CONN_AUTH && c->fcount > 0 && c->fifo[c->fhead].tag == CP__TAG_HELLO)
        return set_err(c, CP_EPROTO,
                       "HELLO 3 refused by %s:%d: it closed the connection (cp_options.protocol 3 "
                       "needs a server that speaks RESP3, Redis 6 or later; twemproxy does not)",
                       c->host, c->port);
    return set_err(c, CP_ECLOSED, "connection closed by peer");
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
            return closed(c);
        if (n < 0)
            return set_err(c, CP_EIO, "%s", why);
        c->last_io_ns = c->last_read_ns = cp__now_ns();
        c->bytes_in += (uint64_t)n;
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
            c->last_io_ns = c->last_read_ns = cp__now_ns();
            c->bytes_in += (uint64_t)n;
            cp__reader_commit(&c->reader, (size_t)n);
            if ((size_t)n < room)
                return 0;
            continue;
        }
        if (n == 0)
            return closed(c);
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        return set_err(c, CP_EIO, "read: %s", strerror(errno));
    }
}

/* An error that says the password (or user) was refused, not HELLO itself. */
static int is_auth_error(const redisReply *r) {
    return r->type == CP_REPLY_ERROR &&
           (strncmp(r->str, "WRONGPASS", 9) == 0 || strncmp(r->str, "NOAUTH", 6) == 0);
}

/* A handshake reply (HELLO, AUTH or READONLY): the connection is ready after the last one, or
 * refused. HELLO answers a map of the server's facts; a server that does not speak RESP3 (before
 * Redis 6, twemproxy) answers an error, and so does a wrong password inside HELLO. */
static int handshake_answered(cp__conn *c, uint32_t tag, const redisReply *r) {
    int ok = tag == CP__TAG_HELLO ? r->type == CP_REPLY_MAP : r->type == CP_REPLY_STATUS;
    if (!ok) {
        const char *why = r->type == CP_REPLY_ERROR ? r->str : "unexpected reply";
        if (tag == CP__TAG_HELLO && !is_auth_error(r))
            set_err(c, CP_EPROTO,
                    "HELLO 3 refused by %s:%d (cp_options.protocol 3 needs a server "
                    "that speaks RESP3, Redis 6 or later): %.60s",
                    c->host, c->port, why);
        else if (tag == CP__TAG_TRACKING)
            set_err(c, CP_EPROTO,
                    "CLIENT TRACKING %s refused by %s:%d (the client-side cache needs Redis 6 "
                    "or later, and an ACL that allows CLIENT TRACKING): %.60s",
                    c->opts->resp3 ? "ON" : "OFF", c->host, c->port, why);
        else
            set_err(c, tag == CP__TAG_READONLY ? CP_ECONNECT : CP_EAUTH,
                    "%s refused by %s:%d: %.60s", tag == CP__TAG_READONLY ? "READONLY" : "AUTH",
                    c->host, c->port, why);
    }
    cp__arena_reset(&c->own);
    if (!ok)
        return c->err;
    int more = c->fcount > 0 && cp__conn_is_handshake(c->fifo[c->fhead].tag);
    if (!more) {
        c->state = CP__CONN_READY;
        /* Its chunk held the handshake's few short answers, kept by every connection
         * otherwise (issue 45); what comes later without an owner arena (ASKING) is rare. */
        cp__arena_free(&c->own);
    }
    return 1;
}

/* Flattened: the reader is inlined here, whoever calls (the command path, a blocking command's
 * connection, a subscriber's). With three callers the compiler put the reader in a call of its
 * own per reply: 23 more instructions per GET, and 29 with this function inlined into its
 * callers instead (callgrind, bench/callgrind-get.sh). */
__attribute__((flatten)) int cp__conn_reply(cp__conn *c, redisReply **reply, uint32_t *tag,
                                            cp__reply_arena **arena) {
    const cp__inflight *head = NULL;
    cp__reply_arena *a = &c->own;
    int at_push = c->resp3 && cp__reader_at_push(&c->reader); /* RESP2 has no pushes */
    if (c->fcount > 0 && !at_push) {
        head = &c->fifo[c->fhead];
        if (head->arena != NULL)
            a = head->arena;
        else if (c->reader.depth == 0) /* the reply before is the owner's no longer */
            cp__arena_reset(a);
    } else if (c->push || at_push) { /* a subscriber's frames, or a RESP3 push: the server's own */
        if (c->reader.depth == 0)    /* the frame before is the owner's no longer; a frame half */
            cp__arena_reset(a);      /* read keeps its finished elements there */
    } else {
        if (c->reader.pos == c->reader.len)
            return 0;
        return set_err(c, CP_EPROTO, "protocol error: reply with no request in flight");
    }
    /* One call of the reader, so that the compiler keeps it inlined on the command path. */
    redisReply *r = NULL;
    int rc = cp__reader_next(&c->reader, a, &r);
    if (rc == 0)
        return 0;
    if (rc == CP_EPROTO)
        return set_err(c, CP_EPROTO, "protocol error: %s", c->reader.errstr);
    if (rc < 0)
        return set_err(c, CP_ENOMEM, "reader: out of memory");
    *reply = r;
    if (head == NULL) {
        *tag = CP__TAG_PUSH;
        *arena = NULL;
        return 1;
    }
    *tag = head->tag;
    *arena = head->arena;
    c->fhead = (c->fhead + 1) & (c->fcap - 1);
    c->fcount--;
    if (cp__conn_is_handshake(*tag)) {
        *reply = NULL;
        return handshake_answered(c, *tag, r);
    }
    return 1;
}

int cp__conn_was_written(const cp__conn *c, size_t i) {
    return c->fifo[(c->fhead + i) & (c->fcap - 1)].start < c->written;
}

uint32_t cp__conn_tag(const cp__conn *c, size_t i) {
    return c->fifo[(c->fhead + i) & (c->fcap - 1)].tag;
}
