/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Host names through c-ares (resolve.h): the channel, its sockets, the queries. Owned by the
 * client; one thread.
 */
#include "lib/base/alloc.h"
#include "lib/net/resolve.h"

#include "clusterpipe/clusterpipe.h"
#include "util/clock.h"

#include <ares.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

struct cp__query {
    cp__resolver *r;
    int efd;     /* written once when the query ends; -1 once dropped */
    int done;    /* ended: status and addrs are final */
    int dropped; /* its connection left: free it when it ends */
    int status;  /* ARES_* */
    int prefer_ip;
    cp__addrs *addrs; /* on success */
    char host[256];
};

void cp__addrs_order(cp__addrs *a, int prefer_ip) {
    int first = prefer_ip == CP_PREFER_IPV4 ? AF_INET : prefer_ip == CP_PREFER_IPV6 ? AF_INET6 : 0;
    if (first == 0)
        return;
    cp__addrs sorted = {.n = 0, .next = 0};
    for (int pass = 0; pass < 2; pass++) /* a stable partition: the preferred family first */
        for (int i = 0; i < a->n; i++)
            if ((a->a[i].ss_family == first) == (pass == 0)) {
                sorted.a[sorted.n] = a->a[i];
                sorted.len[sorted.n++] = a->len[i];
            }
    *a = sorted;
}

static void sock_state(void *data, ares_socket_t fd, int readable, int writable) {
    cp__resolver *r = data;
    int i = 0;
    while (i < r->nsocks && r->socks[i].fd != fd)
        i++;
    int want = (readable ? CP_EV_READ : 0) | (writable ? CP_EV_WRITE : 0);
    if (i == r->nsocks) {
        if (want == 0)
            return;
        if (r->nsocks == r->capsocks) {
            int ncap = r->capsocks ? r->capsocks * 2 : 4;
            cp__rsock *s = cp__realloc(r->socks, (size_t)ncap * sizeof(*s));
            if (s == NULL)
                return; /* not watched: its queries end at their timeouts */
            r->socks = s;
            r->capsocks = ncap;
        }
        r->socks[r->nsocks++] = (cp__rsock){.fd = fd};
    }
    cp__rsock *s = &r->socks[i];
    s->want = (uint8_t)want;
    r->hook(r->owner, s, want == 0);
    if (want == 0) /* c-ares closes it next */
        r->socks[i] = r->socks[--r->nsocks];
}

/* The channel, made once: c-ares reads resolv.conf, nsswitch.conf and the hosts file from
 * disk here and per query (local files, as OpenSSL reads its CA bundle). */
static int channel(cp__resolver *r, char *err, size_t errlen) {
    if (r->channel != NULL)
        return 0;
    if (!r->failed_init) {
        struct ares_options o;
        memset(&o, 0, sizeof(o));
        o.sock_state_cb = sock_state;
        o.sock_state_cb_data = r;
        o.timeout = r->try_ms;
        o.tries = 3;
        ares_channel ch = NULL;
        int rc = ares_init_options(&ch, &o,
                                   ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES);
        if (rc == ARES_SUCCESS && r->servers != NULL &&
            (rc = ares_set_servers_ports_csv(ch, r->servers)) != ARES_SUCCESS)
            snprintf(r->why, sizeof(r->why), "dns_servers '%.60s': %s", r->servers,
                     ares_strerror(rc));
        else if (rc != ARES_SUCCESS)
            snprintf(r->why, sizeof(r->why), "the resolver (c-ares): %s", ares_strerror(rc));
        if (rc == ARES_SUCCESS) {
            r->channel = ch;
            return 0;
        }
        if (ch != NULL)
            ares_destroy(ch);
        r->failed_init = 1;
    }
    snprintf(err, errlen, "%s", r->why);
    return -1;
}

static void query_free(cp__query *q) {
    cp__free(q->addrs);
    cp__free(q);
}

static void answered(void *arg, int status, int timeouts, struct ares_addrinfo *res) {
    (void)timeouts;
    cp__query *q = arg;
    q->status = status;
    if (status == ARES_SUCCESS && res != NULL) {
        q->addrs = cp__calloc(1, sizeof(*q->addrs));
        if (q->addrs == NULL) {
            q->status = ARES_ENOMEM;
        } else {
            for (struct ares_addrinfo_node *n = res->nodes; n != NULL; n = n->ai_next) {
                if (q->addrs->n == CP__ADDRS_MAX || n->ai_addrlen > sizeof(q->addrs->a[0]))
                    continue;
                memcpy(&q->addrs->a[q->addrs->n], n->ai_addr, n->ai_addrlen);
                q->addrs->len[q->addrs->n++] = n->ai_addrlen;
            }
            if (q->addrs->n == 0)
                q->status = ARES_ENODATA;
            else
                q->r->resolved++;
            cp__addrs_order(q->addrs, q->prefer_ip);
        }
    }
    if (res != NULL)
        ares_freeaddrinfo(res);
    q->done = 1;
    if (q->dropped) {
        query_free(q);
        return;
    }
    uint64_t one = 1;
    while (write(q->efd, &one, sizeof(one)) < 0 && errno == EINTR)
        ;
}

cp__query *cp__resolve_start(cp__resolver *r, const char *host, int port, int prefer_ip, int efd,
                             char *err, size_t errlen) {
    if (channel(r, err, errlen) != 0)
        return NULL;
    cp__query *q = cp__calloc(1, sizeof(*q));
    if (q == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    q->r = r;
    q->efd = efd;
    q->prefer_ip = prefer_ip;
    snprintf(q->host, sizeof(q->host), "%s", host);
    char service[8];
    snprintf(service, sizeof(service), "%d", port);
    struct ares_addrinfo_hints hints;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    /* ENVHOSTS: the hosts file CARES_HOSTS names, when set, instead of /etc/hosts (c-ares's own
     * switch: a program, or a test, can give names without touching the system's file). */
    hints.ai_flags = ARES_AI_NUMERICSERV | ARES_AI_ENVHOSTS;
    ares_getaddrinfo(r->channel, q->host, service, &hints, answered, q); /* may answer inside */
    return q;
}

int cp__resolve_done(const cp__query *q) {
    return q->done;
}

cp__addrs *cp__resolve_finish(cp__query *q, char *err, size_t errlen) {
    cp__addrs *a = q->addrs;
    q->addrs = NULL;
    if (a == NULL)
        snprintf(err, errlen, "cannot resolve %s: %s", q->host,
                 q->status == ARES_EDESTRUCTION ? "the client was freed"
                 : q->status == ARES_ENOTFOUND  ? "no such host"
                                                : ares_strerror(q->status));
    query_free(q);
    return a;
}

void cp__resolve_drop(cp__query *q) {
    if (q == NULL)
        return;
    if (q->done) {
        query_free(q);
        return;
    }
    q->dropped = 1; /* c-ares holds it: freed by its callback */
    q->efd = -1;
}

cp__rsock *cp__resolve_sock(cp__resolver *r, int fd) {
    for (int i = 0; i < r->nsocks; i++)
        if (r->socks[i].fd == fd)
            return &r->socks[i];
    return NULL;
}

void cp__resolve_ready(cp__resolver *r, int fd, int events) {
    if (r->channel == NULL)
        return;
    ares_process_fd(r->channel, (events & CP_EV_READ) ? fd : ARES_SOCKET_BAD,
                    (events & CP_EV_WRITE) ? fd : ARES_SOCKET_BAD);
}

void cp__resolve_timers(cp__resolver *r) {
    if (r->channel != NULL)
        ares_process_fd(r->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
}

uint64_t cp__resolve_next_wake(const cp__resolver *r) {
    if (r->channel == NULL)
        return 0;
    struct timeval tv;
    if (ares_timeout(r->channel, NULL, &tv) == NULL)
        return 0; /* no query waits */
    return cp__now_ns() + (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000ull;
}

void cp__resolve_free(cp__resolver *r) {
    if (r->channel != NULL)
        ares_destroy(r->channel); /* each query's callback (ARES_EDESTRUCTION), each close */
    r->channel = NULL;
    cp__free(r->socks);
    r->socks = NULL;
    r->nsocks = r->capsocks = 0;
}
