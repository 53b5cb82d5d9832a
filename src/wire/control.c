/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The wire's control socket (control.h). Request connections are kept in a small array with
 * their partial lines; requests are rare (a scenario sends a handful), so it is searched
 * linearly.
 */
#include "wire/control.h"

#include "util/clock.h"
#include "util/dur.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define LINE_MAX_ 256
#define MAX_REQUESTS 16
#define ANSWER_MAX 65536

typedef struct pending {
    int fd; /* -1: free */
    size_t len;
    char line[LINE_MAX_];
} pending;

struct cp__wire_control {
    int fd;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    pending req[MAX_REQUESTS];
};

static int unix_addr(const char *path, struct sockaddr_un *a, char *err, size_t errlen) {
    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(a->sun_path)) {
        snprintf(err, errlen, "control socket path too long (%zu bytes, at most %zu): %s",
                 strlen(path), sizeof(a->sun_path) - 1, path);
        return -ENAMETOOLONG;
    }
    strcpy(a->sun_path, path);
    return 0;
}

cp__wire_control *cp__wire_control_open(const char *path, char *err, size_t errlen) {
    struct sockaddr_un a;
    if (unix_addr(path, &a, err, errlen) != 0)
        return NULL;
    cp__wire_control *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (int i = 0; i < MAX_REQUESTS; i++)
        c->req[i].fd = -1;
    strcpy(c->path, path);
    unlink(path);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0 || bind(c->fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(c->fd, 8) != 0) {
        snprintf(err, errlen, "control socket %s: %s", path, strerror(errno));
        if (c->fd >= 0)
            close(c->fd);
        free(c);
        return NULL;
    }
    return c;
}

int cp__wire_control_fd(const cp__wire_control *c) {
    return c->fd;
}

int cp__wire_control_accept(cp__wire_control *c) {
    int fd = accept4(c->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return -1;
    for (int i = 0; i < MAX_REQUESTS; i++)
        if (c->req[i].fd < 0) {
            c->req[i] = (pending){.fd = fd};
            return fd;
        }
    close(fd); /* more requests at once than any user of the wire makes */
    return -1;
}

/* An answer being written: the lines, then "OK" or "ERR ...". */
typedef struct answer {
    char buf[ANSWER_MAX];
    size_t len;
} answer;

static void say(answer *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(answer *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(a->buf + a->len, sizeof(a->buf) - a->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        a->len += (size_t)n < sizeof(a->buf) - a->len ? (size_t)n : sizeof(a->buf) - a->len - 1;
}

static long find(const cp__wire_links *l, const char *name) {
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->name(l->arg, i), name) == 0)
            return (long)i;
    return -1;
}

/* "link NAME PORT HOST:PORT": a new link, unless its name is taken. */
static void add_link(const cp__wire_links *l, const char *name, const char *port,
                     const char *target, answer *a) {
    if (find(l, name) >= 0) {
        say(a, "ERR a link named %s exists\n", name);
        return;
    }
    char spec[LINE_MAX_], e[256] = "";
    snprintf(spec, sizeof(spec), "%s=%s:%s", name, port, target);
    if (l->add(l->arg, spec, e, sizeof(e)) != 0)
        say(a, "ERR %s\n", e);
    else
        say(a, "OK\n");
}

static void serve(char *line, cp__wire_links *l, answer *a) {
    char *save = NULL;
    const char *verb = strtok_r(line, " \t\r", &save);
    const char *name = strtok_r(NULL, " \t\r", &save);
    const char *arg = strtok_r(NULL, " \t\r", &save);
    const char *target = strtok_r(NULL, " \t\r", &save);
    const char *rest = strtok_r(NULL, " \t\r", &save);
    if (verb != NULL && strcmp(verb, "link") == 0) {
        if (target == NULL || rest != NULL)
            say(a, "ERR usage: link NAME PORT HOST:PORT\n");
        else
            add_link(l, name, arg, target, a);
        return;
    }
    if (verb != NULL && strcmp(verb, "stats") == 0 && name == NULL) {
        for (size_t i = 0; i < l->n; i++) {
            const cp__wire_link_state *s = l->state(l->arg, i);
            say(a,
                "link %s conns %u accepted %llu up %llu down %llu max_queued %zu blocked %d "
                "extra %llu deliveries %llu late %lld\n",
                l->name(l->arg, i), s->conns, (unsigned long long)s->accepted,
                (unsigned long long)s->bytes[0], (unsigned long long)s->bytes[1], s->max_queued,
                s->blocked, (unsigned long long)s->extra_ns, (unsigned long long)s->deliveries,
                (long long)s->late_ns);
        }
        say(a, "OK\n");
        return;
    }
    int blocking = verb != NULL && (strcmp(verb, "block") == 0 || strcmp(verb, "unblock") == 0);
    int delay = verb != NULL && strcmp(verb, "delay") == 0;
    if (!(blocking && name != NULL && arg == NULL) && !(delay && arg != NULL && target == NULL)) {
        say(a, "ERR usage: block NAME | unblock NAME | delay NAME DUR | link NAME PORT "
               "HOST:PORT | stats\n");
        return;
    }
    long i = find(l, name);
    if (i < 0) {
        say(a, "ERR no link named %s\n", name);
        return;
    }
    cp__wire_link_state *s = l->state(l->arg, (size_t)i);
    if (blocking) {
        s->blocked = strcmp(verb, "block") == 0;
    } else {
        uint64_t ns;
        if (cp__dur_parse(arg, &ns) != 0) {
            say(a, "ERR delay %s: not a duration (250us, 50ms, 0)\n", arg);
            return;
        }
        s->extra_ns = ns;
    }
    l->changed(l->arg, (size_t)i);
    say(a, "OK\n");
}

static void drop(pending *r) {
    close(r->fd);
    r->fd = -1;
}

int cp__wire_control_read(cp__wire_control *c, int fd, cp__wire_links *links) {
    pending *r = NULL;
    for (int i = 0; i < MAX_REQUESTS && r == NULL; i++)
        if (c->req[i].fd == fd)
            r = &c->req[i];
    if (r == NULL)
        return 1;
    ssize_t k = read(fd, r->line + r->len, sizeof(r->line) - 1 - r->len);
    if (k < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (k <= 0) {
        drop(r);
        return 1;
    }
    r->len += (size_t)k;
    r->line[r->len] = '\0';
    char *nl = strchr(r->line, '\n');
    if (nl == NULL && r->len < sizeof(r->line) - 1)
        return 0;
    if (nl != NULL)
        *nl = '\0';
    static answer a; /* one thread; too large for the stack of a small loop */
    a.len = 0;
    if (nl == NULL)
        say(&a, "ERR request longer than %d bytes\n", LINE_MAX_ - 2);
    else
        serve(r->line, links, &a);
    /* A short answer to a fresh local socket: it fits its buffer, so one write. */
    ssize_t w = send(fd, a.buf, a.len, MSG_NOSIGNAL);
    (void)w;
    drop(r);
    return 1;
}

void cp__wire_control_close(cp__wire_control *c) {
    if (c == NULL)
        return;
    for (int i = 0; i < MAX_REQUESTS; i++)
        if (c->req[i].fd >= 0)
            drop(&c->req[i]);
    close(c->fd);
    unlink(c->path);
    free(c);
}

int cp__wire_ask(const char *path, const char *request, char *out, size_t outlen, int timeout_ms,
                 char *err, size_t errlen) {
    struct sockaddr_un a;
    int rc = unix_addr(path, &a, err, errlen);
    if (rc != 0)
        return rc;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        rc = -errno;
        snprintf(err, errlen, "wire control %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return rc;
    }
    char line[LINE_MAX_];
    int n = snprintf(line, sizeof(line), "%s\n", request);
    if (n < 0 || (size_t)n >= sizeof(line) || send(fd, line, (size_t)n, MSG_NOSIGNAL) != n) {
        snprintf(err, errlen, "wire control %s: cannot send \"%s\"", path, request);
        close(fd);
        return -EIO;
    }
    static char buf[ANSWER_MAX];
    size_t len = 0;
    uint64_t deadline = cp__now_ns() + (uint64_t)timeout_ms * 1000000ull;
    for (;;) {
        uint64_t now = cp__now_ns();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (now >= deadline || poll(&p, 1, (int)((deadline - now) / 1000000ull) + 1) == 0) {
            snprintf(err, errlen, "wire control %s: no answer to \"%s\" within %d ms", path,
                     request, timeout_ms);
            close(fd);
            return -ETIMEDOUT;
        }
        ssize_t k = read(fd, buf + len, sizeof(buf) - 1 - len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        len += (size_t)k;
    }
    close(fd);
    buf[len] = '\0';
    /* The last line is the verdict. */
    char *end = len > 0 && buf[len - 1] == '\n' ? buf + len - 1 : buf + len;
    *end = '\0';
    char *last = strrchr(buf, '\n');
    const char *verdict = last != NULL ? last + 1 : buf;
    size_t body = last != NULL ? (size_t)(last - buf) + 1 : 0;
    if (out != NULL && outlen > 0) {
        size_t m = body < outlen - 1 ? body : outlen - 1;
        memcpy(out, buf, m);
        out[m] = '\0';
    }
    if (strcmp(verdict, "OK") == 0)
        return 0;
    if (strncmp(verdict, "ERR ", 4) == 0) {
        snprintf(err, errlen, "wire: %s", verdict + 4);
        return -EPROTO;
    }
    snprintf(err, errlen, "wire control %s: no answer to \"%s\" (closed)", path, request);
    return -EIO;
}
