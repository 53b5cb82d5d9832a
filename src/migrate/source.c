/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A replica connection to one source (source.h). The handshake's replies are lines, read here;
 * everything after the PSYNC's answer goes to the framing and the RDB reader, then, from the
 * snapshot's end, to the stream's reader: this file only moves bytes and names errors.
 */
#include "migrate/source.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clusterpipe/tls.h"
#include "migrate/sockio.h"
#include "migrate/syncframe.h"
#include "util/clock.h"

#define READ_CHUNK 65536
/* Snapshot bytes read and not yet handed out, at most: past it the source is not read until the
 * writer catches up, and waits on its socket (a diskless fork's child, or the file sent from
 * disk) instead of filling this process's memory, so a snapshot larger than the RAM here moves
 * in its stride. The price: the source's writes meanwhile wait in its output buffer for this
 * replica, which has a limit (client-output-buffer-limit replica, 256 MB by default; passing it
 * ends the run, the source named, and a message that says so). The stream is read as fast as it
 * comes, for the same limit. Kept small: a backlog that outgrows the caches is parsed from cold
 * memory, and at 64 MB (a reader's buffer of up to 128 MB, every page of it faulted in fresh)
 * the tool spent 30% more CPU moving a snapshot than at 8 MB (bench/migrate-speed.sh, the
 * tool on one core with the target). */
#define READ_AHEAD (8u << 20)
#define LINE_MAX_LEN 512

struct cp__src {
    char name[300];
    char host[256];
    int port;
    char *password;
    char *user; /* ACL user, or NULL */
    int silence_ms;
    int fd;
    int connecting;
    const cp_options *tls_opts; /* TLS wanted (tls_opts->tls), or NULL */
    cp_tls *tls;                /* the session, from when the socket is connected */
    int tls_handshaking, tls_want_read;
    cp__src_phase phase;
    char *out;
    size_t out_len, out_off, out_cap;
    char line[LINE_MAX_LEN];
    size_t line_len;
    int oks_left; /* +OK answers before the PSYNC's: AUTH's, REPLCONF's */
    int sent_sync;
    cp__syncframe *frame;
    cp__cmdstream *cmds;
    uint64_t snap_offset;
    uint64_t snap_fed; /* bytes given to the framing: the snapshot's, its header line's */
    int64_t last_rx_ms;
    char err[512];
};

static int fail(cp__src *s, const char *fmt, ...) {
    int n = snprintf(s->err, sizeof s->err, "source %s: ", s->name);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err + n, sizeof s->err - (size_t)n, fmt, ap);
    va_end(ap);
    s->phase = CP__SRC_FAILED;
    return -1;
}

cp__src *cp__src_new(const char *host, int port, const char *user, const char *password,
                     const cp_options *tls, int silence_ms) {
    cp__src *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    snprintf(s->host, sizeof s->host, "%s", host);
    snprintf(s->name, sizeof s->name, "%s:%d", host, port);
    s->port = port;
    s->fd = -1;
    s->silence_ms = silence_ms;
    s->tls_opts = tls != NULL && tls->tls ? tls : NULL;
    s->password = password ? strdup(password) : NULL;
    s->user = user ? strdup(user) : NULL;
    s->frame = cp__sync_new();
    if ((password != NULL && s->password == NULL) || (user != NULL && s->user == NULL) ||
        s->frame == NULL) {
        cp__src_free(s);
        return NULL;
    }
    return s;
}

void cp__src_free(cp__src *s) {
    if (s == NULL)
        return;
    cp_tls_free(s->tls);
    if (s->fd >= 0)
        close(s->fd);
    free(s->password);
    free(s->user);
    free(s->out);
    cp__sync_free(s->frame);
    cp__cmds_free(s->cmds);
    free(s);
}

static int queue(cp__src *s, const char *p, size_t n) {
    if (s->out_off > 0 && s->out_off == s->out_len)
        s->out_off = s->out_len = 0;
    if (s->out_len + n > s->out_cap) {
        size_t cap = s->out_cap ? s->out_cap * 2 : 1024;
        while (cap < s->out_len + n)
            cap *= 2;
        char *o = realloc(s->out, cap);
        if (o == NULL)
            return fail(s, "out of memory");
        s->out = o;
        s->out_cap = cap;
    }
    memcpy(s->out + s->out_len, p, n);
    s->out_len += n;
    return 0;
}

/* A command of bulk strings, as RESP. */
static int queue_command(cp__src *s, int argc, const char **argv) {
    for (int i = -1; i < argc; i++) {
        char head[32];
        size_t len = i < 0 ? (size_t)argc : strlen(argv[i]);
        int n = snprintf(head, sizeof head, "%c%zu\r\n", i < 0 ? '*' : '$', len);
        if (queue(s, head, (size_t)n) != 0 || (i >= 0 && queue(s, argv[i], len) != 0) ||
            (i >= 0 && queue(s, "\r\n", 2) != 0))
            return -1;
    }
    return 0;
}

int cp__src_start(cp__src *s) {
    char port[16];
    snprintf(port, sizeof port, "%d", s->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    int rc = getaddrinfo(s->host, port, &hints, &ai);
    if (rc != 0)
        return fail(s, "cannot resolve: %s", gai_strerror(rc));
    s->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->fd < 0) {
        freeaddrinfo(ai);
        return fail(s, "socket: %s", strerror(errno));
    }
    rc = connect(s->fd, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);
    if (rc != 0 && errno != EINPROGRESS)
        return fail(s, "connect: %s", strerror(errno));
    s->connecting = rc != 0;
    s->last_rx_ms = cp__now_ms();
    if (s->password != NULL) {
        const char *auth[] = {"AUTH", s->user ? s->user : s->password, s->password};
        if (queue_command(s, s->user ? 3 : 2, auth) != 0)
            return -1;
        s->oks_left++;
    }
    const char *capa[] = {"REPLCONF", "capa", "eof", "capa", "psync2"};
    if (queue_command(s, 5, capa) != 0)
        return -1;
    s->oks_left++;
    s->phase = CP__SRC_HANDSHAKE;
    return 0;
}

int cp__src_fd(const cp__src *s) {
    return s->fd;
}

/* The snapshot has READ_AHEAD bytes read and not yet parsed, and the reader does not wait for
 * the rest of a string. Parsed, not handed out: a key larger than the read-ahead is parsed as its
 * elements come, and a string is read whole, so a source is never held with the reader waiting
 * for it (memory: the read-ahead plus the largest key). */
static int held(const cp__src *s) {
    return s->phase == CP__SRC_SNAPSHOT && s->cmds == NULL &&
           s->snap_fed - cp__sync_parsed(s->frame) >= READ_AHEAD &&
           !cp__sync_wants_string(s->frame);
}

short cp__src_events(const cp__src *s) {
    if (s->connecting)
        return POLLOUT;
    if (s->tls_handshaking)
        return s->tls_want_read ? POLLIN : POLLOUT;
    return (short)((held(s) ? 0 : POLLIN) | (s->out_off < s->out_len ? POLLOUT : 0));
}

/* Moves bytes (sockio.h): > 0, 0 (closed, reading only), -EAGAIN, or -1 with s->err. */
static ssize_t move(cp__src *s, int reading, void *buf, size_t len) {
    char why[200] = "";
    ssize_t n = cp__sock_move(s->fd, s->tls, reading, buf, len, why, sizeof why);
    if (reading && n == -ECONNRESET)
        return 0; /* closed, with our ACK unread: the kernel resets instead of ending */
    if (n < 0 && n != -EAGAIN)
        return fail(s, "%s: %s", reading ? "read" : "write", why);
    return n;
}

static int flush(cp__src *s) {
    while (s->out_off < s->out_len) {
        ssize_t n = move(s, 0, s->out + s->out_off, s->out_len - s->out_off);
        if (n == -EAGAIN)
            return 0;
        if (n < 0)
            return -1;
        s->out_off += (size_t)n;
    }
    return 0;
}

/* The TLS handshake's next step, once connected. 1 done, 0 waiting, -1 failed. */
static int tls_step(cp__src *s) {
    char why[256];
    if (s->tls == NULL &&
        (s->tls = cp_tls_new(s->tls_opts, s->fd, s->host, why, sizeof why)) == NULL)
        return fail(s, "TLS: %s", why);
    int rc = cp_tls_handshake(s->tls, &s->tls_want_read, why, sizeof why);
    if (rc < 0)
        return fail(s, "%s", why);
    s->tls_handshaking = rc == 0;
    return rc;
}

/* One line of the handshake (without its CRLF); *rest: the bytes after it belong to the payload
 * (the PSYNC's answer was this line). */
static int handshake_line(cp__src *s) {
    const char *l = s->line;
    if (s->line_len == 0)
        return 0; /* a keepalive */
    if (s->oks_left > 0) {
        if (l[0] == '-') {
            int auth = s->password != NULL && s->oks_left == 2;
            return fail(s, "%s refused: %s", auth ? "AUTH" : "REPLCONF capa", l + 1);
        }
        if (--s->oks_left > 0)
            return 0;
        /* Only now: a master refuses PSYNC while an answer to the replica is still unsent. */
        const char *psync[] = {"PSYNC", "?", "-1"};
        return queue_command(s, 3, psync);
    }
    if (strncmp(l, "+FULLRESYNC ", 12) == 0) {
        const char *off = strrchr(l, ' ') + 1;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(off, &end, 10);
        if (errno != 0 || *end != '\0' || end == off)
            return fail(s, "a +FULLRESYNC line without an offset: %s", l);
        s->snap_offset = v;
        s->phase = CP__SRC_SNAPSHOT;
        return 0;
    }
    if (l[0] == '-' && !s->sent_sync && strstr(l, "unknown command") != NULL) {
        const char *sync[] = {"SYNC"}; /* a server from before PSYNC (2.8) */
        s->sent_sync = 1;
        s->phase = CP__SRC_SNAPSHOT;
        return queue_command(s, 1, sync);
    }
    if (l[0] == '-')
        return fail(s, "refused to replicate to this tool (PSYNC%s): %s",
                    s->sent_sync ? ", SYNC" : "", l + 1);
    return fail(s, "answered PSYNC with '%s', not +FULLRESYNC", l);
}

/* Bytes read: handshake lines first, the rest to the payload's reader or the stream's. */
static int take(cp__src *s, const unsigned char *p, size_t n) {
    while (n > 0 && s->phase == CP__SRC_HANDSHAKE) {
        if (*p == '\n') {
            if (s->line_len > 0 && s->line[s->line_len - 1] == '\r')
                s->line_len--;
            s->line[s->line_len] = '\0';
            p++, n--;
            if (handshake_line(s) != 0)
                return -1;
            s->line_len = 0;
            continue;
        }
        if (s->line_len == LINE_MAX_LEN - 1)
            return fail(s, "a handshake answer longer than %d bytes: is this a redis-server?",
                        LINE_MAX_LEN);
        s->line[s->line_len++] = (char)*p++;
        n--;
    }
    if (n == 0)
        return 0;
    if (s->cmds != NULL) {
        if (cp__cmds_feed(s->cmds, p, n) != 0)
            return fail(s, "%s", cp__cmds_error(s->cmds));
        return 0;
    }
    if (cp__sync_feed(s->frame, p, n) != 0)
        return fail(s, "%s", cp__sync_error(s->frame));
    s->snap_fed += n;
    return 0;
}

/* The source closed the replication connection. -1. */
static int closed(cp__src *s) {
    return fail(s, "closed the replication connection (%s)%s",
                s->phase == CP__SRC_HANDSHAKE  ? "during the handshake"
                : s->phase == CP__SRC_SNAPSHOT ? "during the snapshot"
                                               : "during the stream",
                s->phase == CP__SRC_SNAPSHOT
                    ? ": the source's log says why; a source drops a replica whose output buffer "
                      "(its writes during the snapshot) passes client-output-buffer-limit replica"
                    : "");
}

int cp__src_gone(cp__src *s) {
    static unsigned char buf[READ_CHUNK];
    if (s->phase == CP__SRC_FAILED || s->connecting || s->tls_handshaking)
        return s->phase == CP__SRC_FAILED;
    for (int chunks = 0; chunks < 64; chunks++) { /* a live source may send without end */
        ssize_t n = move(s, 1, buf, sizeof buf);
        if (n == -EAGAIN)
            return 0;
        if (n == 0)
            closed(s);
        if (n <= 0)
            return 1;
    }
    return 0;
}

int cp__src_io(cp__src *s, short revents, size_t max_read) {
    if (s->phase == CP__SRC_FAILED)
        return -1;
    if (s->connecting) {
        if (revents == 0)
            goto silence;
        int e = 0;
        socklen_t el = sizeof e;
        getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &e, &el);
        if (e != 0)
            return fail(s, "connect: %s", strerror(e));
        s->connecting = 0;
        s->tls_handshaking = s->tls_opts != NULL;
    }
    if (s->tls_handshaking) {
        int rc = revents != 0 ? tls_step(s) : 0;
        if (rc < 0)
            return -1;
        if (rc == 0)
            goto silence;
        revents |= POLLIN; /* the session may hold bytes already */
    }
    if (flush(s) != 0)
        return -1;
    if (revents & (POLLIN | POLLHUP | POLLERR)) {
        static unsigned char buf[READ_CHUNK];
        size_t total = 0;
        /* A hang-up or an error is read even while held (poll reports them whatever was asked):
         * the read names it, instead of the loop waking on it at every turn. */
        int broken = (revents & (POLLHUP | POLLERR)) != 0;
        /* Past max_read, a TLS session's decrypted bytes are read too: poll does not see them
         * (while held, they wait in the session; the next call looks again). */
        while ((broken || !held(s)) &&
               (total < max_read || (s->tls != NULL && cp_tls_pending(s->tls) > 0))) {
            ssize_t n = move(s, 1, buf, sizeof buf);
            if (n == -EAGAIN)
                break;
            if (n < 0)
                return -1;
            if (n == 0)
                return closed(s);
            s->last_rx_ms = cp__now_ms();
            total += (size_t)n;
            if (take(s, buf, (size_t)n) != 0)
                return -1;
        }
    }
silence:
    if (held(s))
        s->last_rx_ms = cp__now_ms(); /* not read by choice: the source is not silent */
    if (cp__now_ms() - s->last_rx_ms > s->silence_ms)
        return fail(s, "nothing received for %d ms (%s)", s->silence_ms,
                    s->connecting        ? "connecting"
                    : s->tls_handshaking ? "the TLS handshake"
                                         : "a source that froze, or a network that did");
    return 0;
}

int cp__src_next(cp__src *s, cp__src_item *it) {
    if (s->phase == CP__SRC_FAILED)
        return -1;
    if (s->phase == CP__SRC_HANDSHAKE)
        return 0;
    if (s->phase == CP__SRC_STREAM) {
        int rc = cp__cmds_next(s->cmds, &it->cmd);
        if (rc == CP__CMDS_ERROR)
            return fail(s, "%s", cp__cmds_error(s->cmds));
        if (rc == CP__CMDS_MORE)
            return 0;
        it->type = CP__SRC_COMMAND;
        it->offset = it->cmd.offset;
        return 1;
    }
    for (;;) {
        int rc = cp__sync_next(s->frame, &it->rdb);
        if (rc == CP__RDB_ERROR)
            return fail(s, "%s", cp__sync_error(s->frame));
        if (rc == CP__RDB_MORE)
            return 0;
        if (it->rdb.type == CP__RDB_EV_KEY || it->rdb.type == CP__RDB_EV_MODULE_AUX) {
            it->type = it->rdb.type == CP__RDB_EV_KEY ? CP__SRC_KEY : CP__SRC_MODULE_AUX;
            return 1;
        }
        if (it->rdb.type != CP__RDB_EV_END)
            continue; /* aux fields, SELECT, RESIZEDB, functions: nothing to write */
        s->cmds = cp__cmds_new(s->snap_offset);
        if (s->cmds == NULL)
            return fail(s, "out of memory");
        size_t n;
        const unsigned char *rest = cp__sync_rest(s->frame, &n);
        if (n > 0 && cp__cmds_feed(s->cmds, rest, n) != 0)
            return fail(s, "out of memory");
        cp__sync_drop(s->frame, n);
        s->phase = CP__SRC_STREAM;
        it->type = CP__SRC_SNAPSHOT_END;
        it->offset = s->snap_offset;
        return 1;
    }
}

int cp__src_ack(cp__src *s, uint64_t offset) {
    char off[24];
    snprintf(off, sizeof off, "%llu", (unsigned long long)offset);
    const char *ack[] = {"REPLCONF", "ACK", off};
    return queue_command(s, 3, ack);
}

cp__src_phase cp__src_phase_of(const cp__src *s) {
    return s->phase;
}

const char *cp__src_error(const cp__src *s) {
    return s->err;
}

const char *cp__src_name(const cp__src *s) {
    return s->name;
}

uint64_t cp__src_snapshot_offset(const cp__src *s) {
    return s->snap_offset;
}

uint64_t cp__src_received(const cp__src *s) {
    return s->cmds != NULL ? cp__cmds_received(s->cmds) : s->snap_offset;
}

uint64_t cp__src_snapshot_bytes(const cp__src *s) {
    return cp__sync_consumed(s->frame);
}
