/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The scripted fake Redis node (see fakenode.h). Owns: the listening socket, every accepted
 * connection with its input and output buffers, the rules, the command log and the per-command
 * counters, the replies held back by FAKE_DELAY; the key/value store and the normal answers live
 * in fakenode_redis.c. Threads: one serving thread per node runs serve_loop(); it alone touches
 * sockets, connections and the store. The caller's threads touch only the rules, the
 * configuration (password, cluster replies) and the log/counters, all behind node->mu, which the
 * serving thread also holds while it handles one command, and the release counter (atomic; the
 * wake pipe tells the thread). Freeing: fake_node_stop() wakes the thread through a pipe, joins it,
 * then frees everything from the caller's thread; every string handed in by the caller was
 * copied on the way in.
 */
#include "fakenode.h"
#include "fakenode_redis.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define LOG_MAX 1000000  /* log entries kept; later commands are only counted */
#define LOG_ARG_MAX 64   /* bytes of one argument shown in a log line */
#define LOG_LINE_MAX 512 /* bytes of one log line */
#define READ_CHUNK (64 * 1024)

/* ---- types ---------------------------------------------------------------------------------- */

typedef struct rule {
    char *cmd;
    char *key;
    size_t keylen;
    int skip_left;
    int times_left; /* -1 = forever, 0 = spent */
    int fired;
    fake_action action;
    char *payload;
    size_t payload_len;
    int delay_ms;
} rule;

typedef enum conn_state {
    CONN_OPEN,     /* parsing and answering */
    CONN_STALLED,  /* parsing and logging, never answering; pending output still goes */
    CONN_CLOSING,  /* input ignored; flush output, then shutdown(SHUT_WR) */
    CONN_DRAINING, /* FIN sent; read and discard until the peer closes, so we never send RST */
    CONN_DEAD      /* to be closed and freed at the end of this loop iteration */
} conn_state;

/* A reply held back (FAKE_DELAY): the output from `at` on waits until its time comes. */
typedef struct hold {
    size_t at;         /* offset in the connection's out where the held reply starts */
    uint64_t until_ns; /* CLOCK_MONOTONIC; 0: until fake_node_release() */
    unsigned gen;      /* node->release_gen when it was made: a release after it lets it go */
} hold;

typedef struct conn {
    int fd;
    int id;
    conn_state state;
    bool authed;
    fake_buf in;
    fake_buf out;
    size_t out_off; /* bytes of out already written */
    hold *holds;    /* in output order; only the first one stops the writes */
    size_t nholds, capholds;
} conn;

typedef struct log_entry {
    int conn;
    char *line;
} log_entry;

typedef struct counter {
    char name[32];
    size_t n;
} counter;

struct fake_node {
    int lfd;
    int port;
    int wake[2];
    pthread_t thread;
    atomic_bool stop;

    pthread_mutex_t mu; /* guards everything down to the thread-only block */
    rule *rules;
    size_t nrules, caprules;
    char *user, *pass;
    char *slots, *shards;
    log_entry *log;
    size_t nlog, caplog;
    counter *counts;
    size_t ncounts, capcounts;
    size_t total;
    int accepted;
    atomic_uint release_gen; /* fake_node_release() calls so far */

    /* serving thread only (and fake_node_stop after the join) */
    conn **conns;
    size_t nconns, capconns;
    struct pollfd *pfds;
    size_t cappfds;
    fake_store *store;
    fake_args a;
};

/* ---- helpers -------------------------------------------------------------------------------- */

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static char *xstrdup(const char *s) {
    if (s == NULL)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p != NULL)
        memcpy(p, s, n);
    return p;
}

/* Appends bytes for the client; on OOM the connection is dropped rather than sent a lie. */
static void out_raw(conn *c, const char *s, size_t n) {
    if (fake__buf_append(&c->out, s, n) != 0)
        c->state = CONN_DEAD;
}

/* ---- log and counters (called with node->mu held) ------------------------------------------- */

/* Records one command: counted always, logged as "NAME arg ..." (arguments clipped, control
 * bytes shown as '.') while the log has room, so assertions can read what the client sent. */
static void log_command(fake_node *node, const conn *c, const fake_args *a) {
    node->total++;
    const char *name = a->v[0];
    size_t nlen =
        a->len[0] < sizeof(node->counts[0].name) - 1 ? a->len[0] : sizeof(node->counts[0].name) - 1;
    size_t k = 0;
    while (k < node->ncounts && !(strlen(node->counts[k].name) == nlen &&
                                  strncasecmp(node->counts[k].name, name, nlen) == 0))
        k++;
    if (k == node->ncounts) {
        if (node->ncounts == node->capcounts) {
            size_t cap = node->capcounts ? node->capcounts * 2 : 16;
            counter *cs = realloc(node->counts, cap * sizeof(*cs));
            if (cs != NULL) {
                node->counts = cs;
                node->capcounts = cap;
            }
        }
        if (node->ncounts < node->capcounts) {
            counter *ct = &node->counts[node->ncounts++];
            memcpy(ct->name, name, nlen);
            ct->name[nlen] = '\0';
            ct->n = 0;
        }
    }
    if (k < node->ncounts)
        node->counts[k].n++;

    if (node->nlog >= LOG_MAX)
        return;
    if (node->nlog == node->caplog) {
        size_t cap = node->caplog ? node->caplog * 2 : 256;
        log_entry *l = realloc(node->log, cap * sizeof(*l));
        if (l == NULL)
            return;
        node->log = l;
        node->caplog = cap;
    }
    char line[LOG_LINE_MAX];
    size_t pos = 0;
    for (size_t i = 0; i < a->n && pos + 1 < sizeof(line); i++) {
        if (i > 0)
            line[pos++] = ' ';
        size_t n = a->len[i] > LOG_ARG_MAX ? LOG_ARG_MAX : a->len[i];
        for (size_t j = 0; j < n && pos + 1 < sizeof(line); j++) {
            unsigned char ch = (unsigned char)a->v[i][j];
            line[pos++] = ch < 0x20 || ch == 0x7f ? '.' : (char)ch;
        }
        if (a->len[i] > LOG_ARG_MAX)
            for (int j = 0; j < 3 && pos + 1 < sizeof(line); j++)
                line[pos++] = '.';
    }
    line[pos] = '\0';
    char *copy = xstrdup(line);
    if (copy == NULL)
        return;
    node->log[node->nlog].conn = c->id;
    node->log[node->nlog].line = copy;
    node->nlog++;
}

/* Finds the rule that fires on this command, advancing skip/times counters of every matching
 * rule it passes; NULL means "answer normally". */
static rule *match_rule(fake_node *node, const fake_args *a) {
    for (size_t i = 0; i < node->nrules; i++) {
        rule *r = &node->rules[i];
        if (r->times_left == 0)
            continue;
        if (r->cmd != NULL && !fake__arg_is(a, 0, r->cmd))
            continue;
        if (r->key != NULL &&
            !(a->n >= 2 && a->len[1] == r->keylen && memcmp(a->v[1], r->key, r->keylen) == 0))
            continue;
        if (r->skip_left > 0) {
            r->skip_left--;
            continue;
        }
        if (r->times_left > 0)
            r->times_left--;
        r->fired++;
        return r;
    }
    return NULL;
}

/* The normal answer to the command in node->a (node->mu held). */
static void answer(fake_node *node, conn *c) {
    fake_config cfg = {node->user, node->pass, node->slots, node->shards};
    int rc = fake__handle(node->store, &cfg, &c->authed, &node->a, &c->out);
    if (rc == FAKE__QUIT)
        c->state = CONN_CLOSING;
    else if (rc == FAKE__OOM)
        c->state = CONN_DEAD;
}

/* FAKE_DELAY: the reply goes into the output as usual, marked held from where it starts; the
 * writes stop there until its time comes (sendable). */
static void delay(fake_node *node, conn *c, const rule *r) {
    size_t at = c->out.len;
    if (r->payload != NULL)
        out_raw(c, r->payload, r->payload_len);
    else
        answer(node, c);
    if (c->nholds == c->capholds) {
        size_t cap = c->capholds ? c->capholds * 2 : 4;
        hold *h = realloc(c->holds, cap * sizeof(*h));
        if (h == NULL) { /* out of memory: drop the connection rather than send early */
            c->state = CONN_DEAD;
            return;
        }
        c->holds = h;
        c->capholds = cap;
    }
    c->holds[c->nholds++] =
        (hold){at, r->delay_ms > 0 ? now_ns() + (uint64_t)r->delay_ms * 1000000ull : 0,
               atomic_load(&node->release_gen)};
}

/* Runs every complete command in c->in through log, rules and handler, in order, stopping when
 * a rule or QUIT closes the connection so no reply after the fault is ever sent. */
static void process_input(fake_node *node, conn *c) {
    size_t off = 0;
    while (c->state == CONN_OPEN || c->state == CONN_STALLED) {
        const char *err = NULL;
        long used = fake__parse_command(c->in.p + off, c->in.len - off, &node->a, &err);
        if (used == 0)
            break;
        if (used < 0) {
            if (c->state == CONN_OPEN) {
                char msg[128];
                int n = snprintf(msg, sizeof(msg), "-ERR Protocol error: %s\r\n", err);
                out_raw(c, msg, (size_t)n);
            }
            c->state = CONN_CLOSING;
            break;
        }
        off += (size_t)used;
        if (node->a.n == 0)
            continue;
        pthread_mutex_lock(&node->mu);
        log_command(node, c, &node->a);
        if (c->state == CONN_OPEN) {
            rule *r = match_rule(node, &node->a);
            if (r == NULL) {
                answer(node, c);
            } else {
                switch (r->action) {
                case FAKE_REPLY:
                case FAKE_GARBAGE:
                    out_raw(c, r->payload, r->payload_len);
                    break;
                case FAKE_PARTIAL_CLOSE:
                    out_raw(c, r->payload, r->payload_len);
                    c->state = CONN_CLOSING;
                    break;
                case FAKE_CLOSE:
                    c->state = CONN_CLOSING;
                    break;
                case FAKE_STALL:
                    c->state = CONN_STALLED;
                    break;
                case FAKE_DELAY:
                    delay(node, c, r);
                    break;
                }
            }
        }
        pthread_mutex_unlock(&node->mu);
    }
    if (c->state == CONN_OPEN || c->state == CONN_STALLED)
        fake__buf_consume(&c->in, off);
    else
        c->in.len = 0;
}

/* ---- the serving thread --------------------------------------------------------------------- */

/* Reads everything the socket has. Returns false when the peer closed or the socket failed. */
static bool read_input(conn *c) {
    for (;;) {
        if (fake__buf_reserve(&c->in, READ_CHUNK) != 0)
            return false;
        ssize_t n = recv(c->fd, c->in.p + c->in.len, c->in.cap - c->in.len, 0);
        if (n > 0) {
            if (c->state == CONN_CLOSING || c->state == CONN_DRAINING)
                continue; /* discard: the connection is going away */
            c->in.len += (size_t)n;
            continue;
        }
        if (n == 0)
            return false;
        if (errno == EINTR)
            continue;
        return errno == EAGAIN || errno == EWOULDBLOCK;
    }
}

/* A held reply whose time has come: its delay is over, or a release came after it was made. */
static bool hold_over(fake_node *node, const hold *h, uint64_t now) {
    return h->until_ns != 0 ? now >= h->until_ns : atomic_load(&node->release_gen) != h->gen;
}

/* Where the bytes the connection may send now end: at the first held reply whose time has not
 * come (the holds before it are dropped), else at the end of its output. */
static size_t sendable(fake_node *node, conn *c, uint64_t now) {
    size_t k = 0;
    while (k < c->nholds && hold_over(node, &c->holds[k], now))
        k++;
    if (k > 0) {
        memmove(c->holds, c->holds + k, (c->nholds - k) * sizeof(*c->holds));
        c->nholds -= k;
    }
    return c->nholds > 0 ? c->holds[0].at : c->out.len;
}

/* Writes what it can of c->out, up to the first held reply; false on a socket error (the peer
 * is gone). */
static bool write_output(fake_node *node, conn *c) {
    size_t end = sendable(node, c, now_ns());
    while (c->out_off < end) {
        ssize_t n = send(c->fd, c->out.p + c->out_off, end - c->out_off, MSG_NOSIGNAL);
        if (n > 0) {
            c->out_off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        return false;
    }
    if (c->out_off == c->out.len) { /* all sent: start the buffer over (holds move with it) */
        for (size_t i = 0; i < c->nholds; i++)
            c->holds[i].at -= c->out_off;
        c->out.len = 0;
        c->out_off = 0;
    }
    return true;
}

/* Sends what may go, and closes once a closing connection's output is all out. */
static void flush_conn(fake_node *node, conn *c) {
    if (!write_output(node, c)) {
        c->state = CONN_DEAD;
        return;
    }
    if (c->state == CONN_CLOSING && c->out.len == 0) {
        shutdown(c->fd, SHUT_WR);
        c->state = CONN_DRAINING;
    }
}

/* Closes the socket (FIN, or RST if the peer left unread data) and frees the buffers. */
static void conn_free(conn *c) {
    if (c->fd >= 0)
        close(c->fd);
    free(c->in.p);
    free(c->out.p);
    free(c->holds);
    free(c);
}

/* Accepts every pending connection; a failed allocation just closes that client. */
static void accept_all(fake_node *node) {
    for (;;) {
        int fd = accept4(node->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return;
        }
        if (node->nconns == node->capconns) {
            size_t cap = node->capconns ? node->capconns * 2 : 8;
            conn **cs = realloc(node->conns, cap * sizeof(*cs));
            if (cs == NULL) {
                close(fd);
                continue;
            }
            node->conns = cs;
            node->capconns = cap;
        }
        conn *c = calloc(1, sizeof(*c));
        if (c == NULL) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->state = CONN_OPEN;
        pthread_mutex_lock(&node->mu);
        c->id = ++node->accepted;
        pthread_mutex_unlock(&node->mu);
        node->conns[node->nconns++] = c;
    }
}

/* Services one connection after poll: read, answer, write, and move it along the close path
 * (CLOSING -> FIN -> DRAINING -> DEAD) so clients see a clean EOF after the last reply. */
static void service(fake_node *node, conn *c, short revents) {
    bool alive = true;
    if (revents & (POLLIN | POLLHUP | POLLERR))
        alive = read_input(c);
    if (c->state == CONN_DRAINING) {
        if (!alive)
            c->state = CONN_DEAD;
        return;
    }
    process_input(node, c);
    if (c->state == CONN_DEAD)
        return;
    flush_conn(node, c);
    if (c->state == CONN_DEAD)
        return;
    if (!alive)
        c->state = CONN_DEAD;
}

static void *serve_loop(void *arg) {
    fake_node *node = arg;
    while (!atomic_load(&node->stop)) {
        size_t need = node->nconns + 2;
        if (need > node->cappfds) {
            struct pollfd *p = realloc(node->pfds, need * 2 * sizeof(*p));
            if (p == NULL) {
                poll(NULL, 0, 10); /* out of memory: wait and retry rather than spin */
                continue;
            }
            node->pfds = p;
            node->cappfds = need * 2;
        }
        struct pollfd *pf = node->pfds;
        pf[0] = (struct pollfd){.fd = node->wake[0], .events = POLLIN};
        pf[1] = (struct pollfd){.fd = node->lfd, .events = POLLIN};
        size_t nconns = node->nconns; /* accept_all may add more; they are polled next round */
        uint64_t now = now_ns();
        int timeout = -1; /* until the first timed hold that stops a connection's writes */
        for (size_t i = 0; i < nconns; i++) {
            conn *c = node->conns[i];
            short ev = POLLIN;
            if (c->out_off < sendable(node, c, now))
                ev |= POLLOUT;
            if (c->nholds > 0 && c->holds[0].until_ns != 0) {
                uint64_t ms = (c->holds[0].until_ns - now + 999999) / 1000000;
                if (timeout < 0 || ms < (uint64_t)timeout)
                    timeout = (int)ms;
            }
            pf[i + 2] = (struct pollfd){.fd = c->fd, .events = ev};
        }
        if (poll(pf, nconns + 2, timeout) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (pf[0].revents) { /* a stop, or a release of held replies */
            char b[64];
            while (read(node->wake[0], b, sizeof(b)) > 0)
                ;
            if (atomic_load(&node->stop))
                break;
        }
        for (size_t i = 0; i < nconns; i++) {
            conn *c = node->conns[i];
            if (pf[i + 2].revents)
                service(node, c, pf[i + 2].revents);
            else if (c->nholds > 0 && (c->state == CONN_OPEN || c->state == CONN_STALLED ||
                                       c->state == CONN_CLOSING))
                flush_conn(node, c); /* a held reply's time may have come */
        }
        if (pf[1].revents & POLLIN)
            accept_all(node);
        size_t j = 0;
        for (size_t i = 0; i < node->nconns; i++) {
            if (node->conns[i]->state == CONN_DEAD)
                conn_free(node->conns[i]);
            else
                node->conns[j++] = node->conns[i];
        }
        node->nconns = j;
    }
    return NULL;
}

/* ---- public API ----------------------------------------------------------------------------- */

/* Binds port 0 on loopback so parallel tests never collide and nothing outside the machine
 * can reach the node; the thread starts only once the listener is ready. */
fake_node *fake_node_start(void) {
    fake_node *node = calloc(1, sizeof(*node));
    if (node == NULL)
        return NULL;
    node->lfd = -1;
    node->wake[0] = node->wake[1] = -1;
    atomic_init(&node->stop, false);
    atomic_init(&node->release_gen, 0u);
    pthread_mutex_init(&node->mu, NULL);
    node->store = fake__store_new();
    if (node->store == NULL)
        goto fail;
    if (pipe2(node->wake, O_CLOEXEC | O_NONBLOCK) != 0)
        goto fail;
    node->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (node->lfd < 0)
        goto fail;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof(sa);
    if (bind(node->lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(node->lfd, 128) != 0 ||
        getsockname(node->lfd, (struct sockaddr *)&sa, &sl) != 0)
        goto fail;
    node->port = ntohs(sa.sin_port);
    if (pthread_create(&node->thread, NULL, serve_loop, node) != 0)
        goto fail;
    return node;
fail:
    if (node->lfd >= 0)
        close(node->lfd);
    if (node->wake[0] >= 0) {
        close(node->wake[0]);
        close(node->wake[1]);
    }
    fake__store_free(node->store);
    pthread_mutex_destroy(&node->mu);
    free(node);
    return NULL;
}

int fake_node_port(const fake_node *node) {
    return node->port;
}

/* Frees the copies a rule owns (not the rule itself, which lives in node->rules). */
static void rule_free(rule *r) {
    free(r->cmd);
    free(r->key);
    free(r->payload);
}

/* Wakes the poll loop through the pipe (the flag alone could sleep in poll forever), joins
 * it, then frees from this thread: after the join nothing else touches the node. */
void fake_node_stop(fake_node *node) {
    if (node == NULL)
        return;
    atomic_store(&node->stop, true);
    char b = 1;
    while (write(node->wake[1], &b, 1) < 0 && errno == EINTR)
        ;
    pthread_join(node->thread, NULL);
    close(node->lfd);
    close(node->wake[0]);
    close(node->wake[1]);
    for (size_t i = 0; i < node->nconns; i++)
        conn_free(node->conns[i]);
    free(node->conns);
    free(node->pfds);
    fake__store_free(node->store);
    free(node->a.v);
    free(node->a.len);
    for (size_t i = 0; i < node->nrules; i++)
        rule_free(&node->rules[i]);
    free(node->rules);
    free(node->user);
    free(node->pass);
    free(node->slots);
    free(node->shards);
    for (size_t i = 0; i < node->nlog; i++)
        free(node->log[i].line);
    free(node->log);
    free(node->counts);
    pthread_mutex_destroy(&node->mu);
    free(node);
}

/* Copies everything before taking the lock, so the serving thread never waits on malloc. */
int fake_node_rule(fake_node *node, const fake_rule *r) {
    bool sends =
        r->action == FAKE_REPLY || r->action == FAKE_GARBAGE || r->action == FAKE_PARTIAL_CLOSE;
    if (!sends && r->action != FAKE_CLOSE && r->action != FAKE_STALL && r->action != FAKE_DELAY)
        return -1;
    if (sends && r->payload == NULL)
        return -1;
    if (r->action == FAKE_DELAY && r->delay_ms <= 0 && r->delay_ms != -1)
        return -1;
    rule nr = {.skip_left = r->skip > 0 ? r->skip : 0,
               .times_left = r->times < 0 ? -1 : (r->times == 0 ? 1 : r->times),
               .action = r->action,
               .delay_ms = r->delay_ms};
    nr.cmd = xstrdup(r->cmd);
    nr.key = xstrdup(r->key);
    nr.keylen = r->key != NULL ? strlen(r->key) : 0;
    if (r->payload != NULL) {
        nr.payload_len = r->payload_len != 0 ? r->payload_len : strlen(r->payload);
        nr.payload = malloc(nr.payload_len + 1);
        if (nr.payload != NULL) {
            memcpy(nr.payload, r->payload, nr.payload_len);
            nr.payload[nr.payload_len] = '\0';
        }
    }
    if ((r->cmd != NULL && nr.cmd == NULL) || (r->key != NULL && nr.key == NULL) ||
        (r->payload != NULL && nr.payload == NULL)) {
        rule_free(&nr);
        return -1;
    }
    pthread_mutex_lock(&node->mu);
    int id = -1;
    if (node->nrules == node->caprules) {
        size_t cap = node->caprules ? node->caprules * 2 : 8;
        rule *rs = realloc(node->rules, cap * sizeof(*rs));
        if (rs != NULL) {
            node->rules = rs;
            node->caprules = cap;
        }
    }
    if (node->nrules < node->caprules) {
        id = (int)node->nrules;
        node->rules[node->nrules++] = nr;
    }
    pthread_mutex_unlock(&node->mu);
    if (id < 0)
        rule_free(&nr);
    return id;
}

int fake_node_rule_fired(fake_node *node, int id) {
    pthread_mutex_lock(&node->mu);
    int n = id >= 0 && (size_t)id < node->nrules ? node->rules[id].fired : -1;
    pthread_mutex_unlock(&node->mu);
    return n;
}

/* The serving thread compares each manual hold's generation with this counter; the pipe wakes
 * it from its poll to look. */
void fake_node_release(fake_node *node) {
    atomic_fetch_add(&node->release_gen, 1u);
    char b = 1;
    while (write(node->wake[1], &b, 1) < 0 && errno == EINTR)
        ;
}

void fake_node_clear_rules(fake_node *node) {
    pthread_mutex_lock(&node->mu);
    for (size_t i = 0; i < node->nrules; i++)
        rule_free(&node->rules[i]);
    node->nrules = 0;
    pthread_mutex_unlock(&node->mu);
}

int fake_node_require_password(fake_node *node, const char *user, const char *pass) {
    char *u = xstrdup(user);
    char *p = xstrdup(pass);
    if ((user != NULL && u == NULL) || (pass != NULL && p == NULL)) {
        free(u);
        free(p);
        return -1;
    }
    pthread_mutex_lock(&node->mu);
    free(node->user);
    free(node->pass);
    node->user = u;
    node->pass = p;
    pthread_mutex_unlock(&node->mu);
    return 0;
}

int fake_node_set_cluster_reply(fake_node *node, const char *which, const char *raw) {
    bool slots = which != NULL && strcasecmp(which, "SLOTS") == 0;
    if (!slots && (which == NULL || strcasecmp(which, "SHARDS") != 0))
        return -1;
    char *copy = xstrdup(raw);
    if (raw != NULL && copy == NULL)
        return -1;
    pthread_mutex_lock(&node->mu);
    char **dst = slots ? &node->slots : &node->shards;
    free(*dst);
    *dst = copy;
    pthread_mutex_unlock(&node->mu);
    return 0;
}

size_t fake_node_count(fake_node *node, const char *cmd) {
    pthread_mutex_lock(&node->mu);
    size_t n = 0;
    if (cmd == NULL) {
        n = node->total;
    } else {
        for (size_t i = 0; i < node->ncounts; i++)
            if (strcasecmp(node->counts[i].name, cmd) == 0)
                n = node->counts[i].n;
    }
    pthread_mutex_unlock(&node->mu);
    return n;
}

int fake_node_connections(fake_node *node) {
    pthread_mutex_lock(&node->mu);
    int n = node->accepted;
    pthread_mutex_unlock(&node->mu);
    return n;
}

size_t fake_node_log_len(fake_node *node) {
    pthread_mutex_lock(&node->mu);
    size_t n = node->nlog;
    pthread_mutex_unlock(&node->mu);
    return n;
}

int fake_node_log(fake_node *node, size_t i, char *buf, size_t len) {
    pthread_mutex_lock(&node->mu);
    int id = -1;
    if (i < node->nlog) {
        id = node->log[i].conn;
        if (len > 0)
            snprintf(buf, len, "%s", node->log[i].line);
    }
    pthread_mutex_unlock(&node->mu);
    return id;
}

long fake_node_log_find(fake_node *node, size_t from, const char *line) {
    pthread_mutex_lock(&node->mu);
    long found = -1;
    for (size_t i = from; i < node->nlog; i++) {
        if (strcmp(node->log[i].line, line) == 0) {
            found = (long)i;
            break;
        }
    }
    pthread_mutex_unlock(&node->mu);
    return found;
}

/* Walks back from each `second` to the previous entry of the same connection, because entries
 * from other connections may sit in between in the shared log. */
int fake_node_log_follows(fake_node *node, const char *first, const char *second) {
    pthread_mutex_lock(&node->mu);
    int n = 0;
    for (size_t i = 1; i < node->nlog; i++) {
        if (strcmp(node->log[i].line, second) != 0)
            continue;
        for (size_t k = i; k-- > 0;) {
            if (node->log[k].conn != node->log[i].conn)
                continue;
            if (strcmp(node->log[k].line, first) == 0)
                n++;
            break;
        }
    }
    pthread_mutex_unlock(&node->mu);
    return n;
}
