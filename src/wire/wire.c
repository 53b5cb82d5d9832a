/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The wire (wire.h): one epoll loop over the links' listeners, every connection's two sockets,
 * a timerfd armed for the earliest due delivery, and the control socket (control.h). Each
 * direction of a connection keeps its bytes in a delay queue (delayq.h); the directions with
 * something due are kept in a binary heap by their next due time. Timer slack is set to 1 ns so
 * that the kernel wakes the wire when asked, not up to 50 us later. One thread.
 */
#include "wire/wire.h"

#include "util/clock.h"
#include "util/errmsg.h"
#include "wire/control.h"
#include "wire/delayq.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define READ_MAX 65536 /* one read */
#define IOV_MAX_DUE 64 /* chunks written by one sendmsg */

typedef struct wire wire;
typedef struct wlink wlink;
typedef struct wconn wconn;

/* What an epoll event names: a listener, one side of a connection, the timer, control. */
typedef enum { EV_LISTEN, EV_SIDE, EV_TIMER, EV_CONTROL } ev_kind;
typedef struct ev_ref {
    ev_kind kind;
    int side; /* EV_SIDE: 0 the client's socket, 1 the target's */
    void *obj;
} ev_ref;

/* One direction: read from fd[from], delivered to fd[1 - from]. */
typedef struct dir {
    cp__delayq q;
    wconn *p;
    int from;
    int heap_at; /* index in the due heap, -1 when not in it */
    unsigned reading : 1, wblocked : 1, shut : 1;
} dir;

struct wconn {
    wlink *l;
    int fd[2];
    dir d[2]; /* d[0]: client -> target, d[1]: target -> client */
    ev_ref ref[2];
    uint32_t mask[2]; /* what epoll watches on fd[i] now */
    unsigned connecting : 1, closed : 1;
    wconn *prev, *next;
};

struct wlink {
    cp__wire_link_spec spec;
    int lfd;
    ev_ref ref;
    wire *w;
    wconn *pipes;
    cp__wire_link_state st;
};

struct wire {
    const cp__wire_opts *o;
    int ep, tfd;
    ev_ref tref;
    uint64_t armed; /* when the timer fires, CP__DQ_NEVER: disarmed */
    /* How much earlier than due the wire wakes and delivers, so that bytes reach the receiver's
     * socket on time on average: learnt from each timed delivery's error (when its send
     * returned, against its due; on loopback the send returns once the bytes are queued at the
     * receiver), which takes in the timer's late wake-ups and the wire's own work. Never more
     * than half the delay. */
    uint64_t lead_ns;
    wlink **links; /* each allocated on its own: connections and epoll point at them */
    size_t nlinks, caplinks;
    cp__wire_links view; /* what the control socket sees */
    dir **heap;          /* directions with something queued and not blocked, by next due */
    size_t nheap, capheap;
    cp__wire_control *ctl;
    unsigned long long rnd;
    /* Connections closed while handling one epoll_wait's events, freed after all of them: a
     * later event of the same batch may name one (its other socket's hang-up, say). */
    wconn *dead;
};

/* ---- the due heap ---- */

static uint64_t due_of(const dir *d) {
    return cp__delayq_next_due(&d->q);
}

static void heap_swap(wire *w, size_t a, size_t b) {
    dir *t = w->heap[a];
    w->heap[a] = w->heap[b];
    w->heap[b] = t;
    w->heap[a]->heap_at = (int)a;
    w->heap[b]->heap_at = (int)b;
}

static void heap_fix(wire *w, size_t i) {
    while (i > 0 && due_of(w->heap[(i - 1) / 2]) > due_of(w->heap[i])) {
        heap_swap(w, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < w->nheap && due_of(w->heap[l]) < due_of(w->heap[m]))
            m = l;
        if (l + 1 < w->nheap && due_of(w->heap[l + 1]) < due_of(w->heap[m]))
            m = l + 1;
        if (m == i)
            return;
        heap_swap(w, i, m);
        i = m;
    }
}

static void heap_remove(wire *w, dir *d) {
    if (d->heap_at < 0)
        return;
    size_t i = (size_t)d->heap_at;
    d->heap_at = -1;
    if (i != --w->nheap) {
        w->heap[i] = w->heap[w->nheap];
        w->heap[i]->heap_at = (int)i;
        heap_fix(w, i);
    }
}

/* Puts d where its next due time says: in the heap, or out of it when it has nothing to deliver
 * or cannot now (its link blocked, its receiver full, its target still connecting: what ends
 * the wait delivers it). */
static int heap_update(wire *w, dir *d) {
    if (d->p->l->st.blocked || d->wblocked || d->shut || d->p->connecting ||
        due_of(d) == CP__DQ_NEVER) {
        heap_remove(w, d);
        return 0;
    }
    if (d->heap_at < 0) {
        if (w->nheap == w->capheap) {
            size_t n = w->capheap ? w->capheap * 2 : 64;
            dir **h = realloc(w->heap, n * sizeof(*h));
            if (h == NULL)
                return -ENOMEM;
            w->heap = h;
            w->capheap = n;
        }
        d->heap_at = (int)w->nheap;
        w->heap[w->nheap++] = d;
    }
    heap_fix(w, (size_t)d->heap_at);
    return 0;
}

/* ---- sockets ---- */

static int watch(wire *w, wconn *p, int side) {
    uint32_t m = 0;
    if (p->connecting && side == 1)
        m = EPOLLOUT;
    else {
        if (p->d[side].reading)
            m |= EPOLLIN;
        if (p->d[1 - side].wblocked)
            m |= EPOLLOUT;
    }
    if (m == p->mask[side])
        return 0;
    struct epoll_event ev = {.events = m, .data.ptr = &p->ref[side]};
    if (epoll_ctl(w->ep, EPOLL_CTL_MOD, p->fd[side], &ev) != 0)
        return -errno;
    p->mask[side] = m;
    return 0;
}

static void pipe_close(wire *w, wconn *p) {
    for (int s = 0; s < 2; s++) {
        heap_remove(w, &p->d[s]);
        cp__delayq_clear(&p->d[s].q);
        if (p->fd[s] >= 0)
            close(p->fd[s]);
    }
    if (p->prev != NULL)
        p->prev->next = p->next;
    else
        p->l->pipes = p->next;
    if (p->next != NULL)
        p->next->prev = p->prev;
    p->l->st.conns--;
    p->closed = 1;
    p->next = w->dead;
    w->dead = p;
}

static void free_dead(wire *w) {
    while (w->dead != NULL) {
        wconn *p = w->dead;
        w->dead = p->next;
        free(p);
    }
}

/* No Nagle (the wire decides when bytes leave), and receive times stamped (read_stamped). */
static void tune(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
}

/* The address of host:port (numeric), into ss. */
static int sockaddr_of(const char *host, uint16_t port, struct sockaddr_storage *ss,
                       socklen_t *len) {
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons(port);
        *len = sizeof(*a4);
        return 0;
    }
    if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons(port);
        *len = sizeof(*a6);
        return 0;
    }
    return -EINVAL;
}

/* A connection accepted on l: its target connected without blocking, both sides watched. */
static void pipe_open(wire *w, wlink *l, int cfd) {
    struct sockaddr_storage ss;
    socklen_t len;
    wconn *p = calloc(1, sizeof(*p));
    if (p == NULL || sockaddr_of(l->spec.host, l->spec.port, &ss, &len) != 0) {
        free(p);
        close(cfd);
        return;
    }
    p->l = l;
    p->fd[0] = cfd;
    p->fd[1] = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (p->fd[1] < 0 ||
        (connect(p->fd[1], (struct sockaddr *)&ss, len) != 0 && errno != EINPROGRESS)) {
        if (p->fd[1] >= 0)
            close(p->fd[1]);
        close(cfd);
        free(p);
        return; /* the target refuses: so does the link, by closing at once */
    }
    tune(cfd);
    tune(p->fd[1]);
    p->connecting = 1;
    for (int s = 0; s < 2; s++) {
        p->d[s].p = p;
        p->d[s].from = s;
        p->d[s].heap_at = -1;
        p->d[s].reading = 1;
        p->ref[s] = (ev_ref){EV_SIDE, s, p};
        struct epoll_event ev = {.events = 0, .data.ptr = &p->ref[s]};
        epoll_ctl(w->ep, EPOLL_CTL_ADD, p->fd[s], &ev);
    }
    p->next = l->pipes;
    if (l->pipes != NULL)
        l->pipes->prev = p;
    l->pipes = p;
    l->st.conns++;
    l->st.accepted++;
    watch(w, p, 0);
    watch(w, p, 1);
}

/* This direction's one-way delay for bytes read now. */
static uint64_t delay_now(wire *w, const wlink *l) {
    uint64_t d = w->o->delay_ns + l->st.extra_ns;
    uint64_t j = w->o->jitter_ns;
    if (j > 0) {
        w->rnd = w->rnd * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t r = (w->rnd >> 11) % (j + 1); /* 0..j, around delay: delay - j/2 .. + j/2 */
        d = d + r >= j / 2 ? d + r - j / 2 : 0;
    }
    return d;
}

/* A delivery of bytes due at `due` completed at `done`: the lead moves by a sixteenth of the
 * error (an average over about 16 deliveries), within 0 .. half the delay. An error past half
 * the delay is not learnt from: those bytes waited on something else (a full receiver, a
 * blocked link, a stalled machine), which no lead would fix. */
static void learn_lead(wire *w, uint64_t due, uint64_t done) {
    int64_t cap = (int64_t)(w->o->delay_ns / 2), err = (int64_t)done - (int64_t)due;
    if (err > cap || err < -cap)
        return;
    int64_t lead = (int64_t)w->lead_ns + err / 16;
    w->lead_ns = lead < 0 ? 0 : lead > cap ? (uint64_t)cap : (uint64_t)lead;
}

/* The clock deliveries go by: now, plus the lead the wire wakes early by. */
static uint64_t due_now(const wire *w) {
    return cp__now_ns() + w->lead_ns;
}

/* Moves what is due at now (due_now's) in d (read from fd[from]) to fd[1 - from]. Returns 0, or
 * -1 when the connection broke and was closed. */
static int deliver(wire *w, wconn *p, int from, uint64_t now) {
    dir *d = &p->d[from];
    int to = 1 - from;
    if (p->connecting || p->l->st.blocked || d->wblocked)
        return 0;
    uint64_t first_due = cp__delayq_next_due(&d->q);
    struct iovec iov[IOV_MAX_DUE];
    int n;
    while ((n = cp__delayq_due(&d->q, now, iov, IOV_MAX_DUE)) > 0) {
        struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t k = sendmsg(p->fd[to], &m, MSG_NOSIGNAL); /* a closed peer is an error here */
        if (k < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                d->wblocked = 1;
                break;
            }
            if (errno == EINTR)
                continue;
            pipe_close(w, p);
            return -1;
        }
        cp__delayq_consume(&d->q, (size_t)k);
        p->l->st.bytes[from] += (uint64_t)k;
        if (first_due != CP__DQ_NEVER) {
            uint64_t done = cp__now_ns();
            learn_lead(w, first_due, done);
            p->l->st.deliveries++;
            p->l->st.late_ns += (int64_t)done - (int64_t)first_due;
            first_due = CP__DQ_NEVER; /* one sample per delivery: its first bytes */
        }
    }
    if (!d->wblocked && !d->shut && cp__delayq_eof_due(&d->q, now)) {
        shutdown(p->fd[to], SHUT_WR);
        d->shut = 1;
        if (p->d[to].shut) {
            pipe_close(w, p);
            return -1;
        }
    }
    if (!d->reading && !d->q.eof && d->q.bytes < w->o->queue_bytes)
        d->reading = 1;
    heap_update(w, d);
    watch(w, p, from);
    watch(w, p, to);
    return 0;
}

/* A read that also gives when its first bytes reached the socket (the kernel's receive time,
 * SO_TIMESTAMPNS, on the monotonic clock): bytes are due a delay after they arrived, not after
 * the wire got round to reading them. *rx_ns falls back to now. */
static ssize_t read_stamped(int fd, void *buf, size_t cap, uint64_t *rx_ns) {
    struct iovec iov = {buf, cap};
    union {
        char buf[CMSG_SPACE(sizeof(struct timespec))];
        struct cmsghdr align;
    } ctl;
    struct msghdr m = {.msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = ctl.buf,
                       .msg_controllen = sizeof(ctl.buf)};
    ssize_t k = recvmsg(fd, &m, 0);
    uint64_t now = cp__now_ns();
    *rx_ns = now;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); k > 0 && c != NULL; c = CMSG_NXTHDR(&m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec rx, real;
            memcpy(&rx, CMSG_DATA(c), sizeof(rx));
            clock_gettime(CLOCK_REALTIME, &real);
            int64_t ago =
                ((int64_t)real.tv_sec - rx.tv_sec) * 1000000000ll + (real.tv_nsec - rx.tv_nsec);
            if (ago > 0 && (uint64_t)ago < now)
                *rx_ns = now - (uint64_t)ago;
        }
    return k;
}

/* Reads what fd[from] has, queued with its delay, until the queue is full. */
static int take(wire *w, wconn *p, int from) {
    dir *d = &p->d[from];
    unsigned char buf[READ_MAX];
    while (d->reading) {
        uint64_t rx;
        ssize_t k = read_stamped(p->fd[from], buf, sizeof(buf), &rx);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (k < 0) { /* reset: the connection is gone both ways, at once */
            pipe_close(w, p);
            return -1;
        }
        uint64_t due = rx + delay_now(w, p->l);
        if (k == 0) { /* the sender's end of the stream, delivered behind its bytes */
            cp__delayq_push_eof(&d->q, due);
            d->reading = 0;
            break;
        }
        if (cp__delayq_push(&d->q, buf, (size_t)k, due) != 0) {
            pipe_close(w, p);
            return -1;
        }
        if (d->q.bytes > p->l->st.max_queued)
            p->l->st.max_queued = d->q.bytes;
        if (d->q.bytes >= w->o->queue_bytes)
            d->reading = 0; /* full: the sender waits, as behind a full window */
    }
    heap_update(w, d);
    return watch(w, p, from);
}

static void on_side(wire *w, wconn *p, int side, uint32_t events) {
    if (p->closed) /* by an earlier event of this batch */
        return;
    if (p->connecting && side == 1) {
        int e = 0;
        socklen_t len = sizeof(e);
        getsockopt(p->fd[1], SOL_SOCKET, SO_ERROR, &e, &len);
        if (e != 0 || (events & (EPOLLERR | EPOLLHUP))) {
            pipe_close(w, p);
            return;
        }
        p->connecting = 0;
        watch(w, p, 1);
        if (deliver(w, p, 0, due_now(w)) != 0) /* what the client sent while it connected */
            return;
    }
    if (events & EPOLLOUT) {
        p->d[1 - side].wblocked = 0;
        if (deliver(w, p, 1 - side, due_now(w)) != 0)
            return;
    }
    if ((events & EPOLLERR) || ((events & EPOLLHUP) && !p->d[side].reading)) {
        pipe_close(w, p); /* reset, or shut both ways: nothing more can pass */
        return;
    }
    if (events & (EPOLLIN | EPOLLHUP))
        take(w, p, side);
}

/* ---- the timer ---- */

static void arm(wire *w) {
    uint64_t due = w->nheap > 0 ? due_of(w->heap[0]) : CP__DQ_NEVER;
    uint64_t at = due == CP__DQ_NEVER ? due : due > w->lead_ns ? due - w->lead_ns : 1;
    if (at == w->armed)
        return;
    struct itimerspec its = {0};
    if (at != CP__DQ_NEVER) {
        its.it_value.tv_sec = (time_t)(at / 1000000000ull);
        its.it_value.tv_nsec = (long)(at % 1000000000ull);
    }
    timerfd_settime(w->tfd, TFD_TIMER_ABSTIME, &its, NULL);
    w->armed = at;
}

/* The timer fired: it is armed again for the next due. */
static void fired(wire *w) {
    w->armed = CP__DQ_NEVER;
}

/* Delivers every direction whose first run is due, all by the same clock: a delivery that lowers
 * the lead (learn_lead) must not leave a direction due here and not due in deliver, picked again
 * and again until the clock catches up. */
static void run_due(wire *w) {
    uint64_t now = due_now(w);
    while (w->nheap > 0 && due_of(w->heap[0]) <= now) {
        dir *d = w->heap[0];
        heap_remove(w, d);
        deliver(w, d->p, d->from, now);
    }
}

/* ---- links ---- */

static const char *link_name(void *arg, size_t i) {
    return ((wire *)arg)->links[i]->spec.name;
}

static cp__wire_link_state *link_state(void *arg, size_t i) {
    return &((wire *)arg)->links[i]->st;
}

/* A link blocked, unblocked or slowed: its directions are due again, or no more. */
static void link_changed(void *arg, size_t i) {
    wire *w = arg;
    wlink *l = w->links[i];
    for (wconn *p = l->pipes, *next; p != NULL; p = next) {
        next = p->next;
        heap_update(w, &p->d[0]);
        heap_update(w, &p->d[1]);
    }
}

static int listen_on(wire *w, wlink *l, char *err, size_t errlen) {
    struct sockaddr_storage ss;
    socklen_t len;
    const char *bind_to = w->o->bind != NULL ? w->o->bind : "127.0.0.1";
    if (sockaddr_of(bind_to, l->spec.listen_port, &ss, &len) != 0) {
        cp__seterr(err, errlen, "--bind %s: not a numeric address", bind_to);
        return -EINVAL;
    }
    struct sockaddr_storage ts;
    socklen_t tlen;
    if (sockaddr_of(l->spec.host, l->spec.port, &ts, &tlen) != 0) {
        cp__seterr(err, errlen, "link %s: target %s is not a numeric address", l->spec.name,
                   l->spec.host);
        return -EINVAL;
    }
    int one = 1;
    l->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (l->lfd < 0 || setsockopt(l->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
        bind(l->lfd, (struct sockaddr *)&ss, len) != 0 || listen(l->lfd, 511) != 0) {
        int e = errno;
        cp__seterr(err, errlen, "link %s: listen on %s port %u: %s", l->spec.name, bind_to,
                   l->spec.listen_port, strerror(e));
        return -e;
    }
    l->ref = (ev_ref){EV_LISTEN, 0, l};
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &l->ref};
    return epoll_ctl(w->ep, EPOLL_CTL_ADD, l->lfd, &ev) == 0 ? 0 : -errno;
}

static void on_listen(wire *w, wlink *l) {
    for (;;) {
        int fd = accept4(l->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        pipe_open(w, l, fd);
    }
}

/* ---- the loop ---- */

/* A link from its spec, listening: at the start (--link) or through the control socket. */
static int link_open(wire *w, const cp__wire_link_spec *spec, char *err, size_t errlen) {
    if (w->nlinks == w->caplinks) {
        size_t n = w->caplinks ? w->caplinks * 2 : 16;
        wlink **nl = realloc(w->links, n * sizeof(*nl));
        if (nl == NULL) {
            cp__seterr(err, errlen, "out of memory");
            return -ENOMEM;
        }
        w->links = nl;
        w->caplinks = n;
    }
    wlink *l = calloc(1, sizeof(*l));
    if (l == NULL) {
        cp__seterr(err, errlen, "out of memory");
        return -ENOMEM;
    }
    l->spec = *spec;
    l->w = w;
    l->lfd = -1;
    int rc = listen_on(w, l, err, errlen);
    if (rc != 0) {
        if (l->lfd >= 0)
            close(l->lfd);
        free(l);
        return rc;
    }
    w->links[w->nlinks++] = l;
    w->view.n = w->nlinks;
    return 0;
}

static int link_add(void *arg, const char *spec, char *err, size_t errlen) {
    cp__wire_link_spec s;
    int rc = cp__wire_link_parse(spec, &s, err, errlen);
    return rc != 0 ? rc : link_open(arg, &s, err, errlen);
}

static void on_event(wire *w, cp__wire_links *links, ev_ref *r, uint32_t events) {
    switch (r->kind) {
    case EV_LISTEN:
        on_listen(w, r->obj);
        break;
    case EV_SIDE:
        on_side(w, r->obj, r->side, events);
        break;
    case EV_TIMER: {
        uint64_t n;
        ssize_t k = read(w->tfd, &n, sizeof(n));
        (void)k;
        fired(w);
        break;
    }
    case EV_CONTROL:
        if (r->obj == NULL) { /* the listener */
            int fd;
            while ((fd = cp__wire_control_accept(w->ctl)) >= 0) {
                ev_ref *cr = malloc(sizeof(*cr));
                if (cr == NULL) {
                    close(fd);
                    continue;
                }
                *cr = (ev_ref){EV_CONTROL, fd, cr};
                struct epoll_event ev = {.events = EPOLLIN, .data.ptr = cr};
                epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev);
            }
        } else if (cp__wire_control_read(w->ctl, r->side, links)) {
            free(r); /* its fd is closed, which takes it out of epoll */
        }
        break;
    }
}

static void wire_free(wire *w) {
    for (size_t i = 0; i < w->nlinks; i++) {
        while (w->links[i]->pipes != NULL)
            pipe_close(w, w->links[i]->pipes);
        if (w->links[i]->lfd >= 0)
            close(w->links[i]->lfd);
        free(w->links[i]);
    }
    free_dead(w);
    cp__wire_control_close(w->ctl);
    if (w->tfd >= 0)
        close(w->tfd);
    if (w->ep >= 0)
        close(w->ep);
    free(w->links);
    free(w->heap);
}

int cp__wire_run(const cp__wire_opts *o, char *err, size_t errlen) {
    wire w = {.o = o, .ep = -1, .tfd = -1, .armed = CP__DQ_NEVER, .rnd = cp__now_ns()};
    int rc = 0;
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    w.view = (cp__wire_links){0, link_name, link_state, link_changed, link_add, &w};
    w.ep = epoll_create1(EPOLL_CLOEXEC);
    w.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (w.ep < 0 || w.tfd < 0) {
        rc = -errno;
        cp__seterr(err, errlen, "wire: cannot start: %s", strerror(errno));
        goto out;
    }
    w.tref = (ev_ref){EV_TIMER, 0, NULL};
    struct epoll_event tev = {.events = EPOLLIN, .data.ptr = &w.tref};
    epoll_ctl(w.ep, EPOLL_CTL_ADD, w.tfd, &tev);
    for (size_t i = 0; i < o->nlinks; i++)
        if ((rc = link_open(&w, &o->links[i], err, errlen)) != 0)
            goto out;
    ev_ref ctlref = {EV_CONTROL, -1, NULL};
    if (o->control != NULL) {
        if ((w.ctl = cp__wire_control_open(o->control, err, errlen)) == NULL) {
            rc = -EINVAL;
            goto out;
        }
        struct epoll_event cev = {.events = EPOLLIN, .data.ptr = &ctlref};
        epoll_ctl(w.ep, EPOLL_CTL_ADD, cp__wire_control_fd(w.ctl), &cev);
    }
    if (o->ready != NULL)
        o->ready(o->ready_arg);
    struct epoll_event evs[256];
    while (!*o->stop) {
        arm(&w);
        int n = epoll_wait(w.ep, evs, 256, -1);
        if (n < 0 && errno != EINTR) {
            rc = -errno;
            cp__seterr(err, errlen, "wire: epoll_wait: %s", strerror(errno));
            break;
        }
        for (int i = 0; i < n; i++)
            on_event(&w, &w.view, evs[i].data.ptr, evs[i].events);
        run_due(&w);
        free_dead(&w);
    }
out:
    wire_free(&w);
    return rc;
}
