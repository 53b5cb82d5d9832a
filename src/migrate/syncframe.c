/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The full sync's framing (syncframe.h). The bytes of the RDB go to the RDB reader: with a
 * length, exactly that many (the rest is kept aside as the command stream); diskless, all of them,
 * and the 40-byte mark is found where the RDB reader says its RDB ended.
 */
#include "migrate/syncframe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* F_MARK: the RDB has ended, its END event is held until the frame has ended too. */
enum { F_LINE, F_RDB, F_MARK, F_DONE, F_ERROR };

/* The longest first line: "$EOF:" and the mark, or "$" and a length. */
#define LINE_MAX_LEN (5 + CP__SYNC_EOF_MARK_LEN + 2)

struct cp__syncframe {
    int state;
    int diskless; /* -1: not known yet */
    char line[LINE_MAX_LEN + 1];
    size_t line_len;
    unsigned char mark[CP__SYNC_EOF_MARK_LEN];
    uint64_t left; /* with a length: RDB bytes not yet fed to the reader */
    cp__rdb_reader *rdb;
    unsigned char *after; /* the command stream */
    size_t after_len, after_cap, after_off;
    cp__rdb_event end;
    char err[256];
};

static int fail(cp__syncframe *s, const char *why) {
    snprintf(s->err, sizeof s->err, "full sync payload: %s", why);
    s->state = F_ERROR;
    return -1;
}

cp__syncframe *cp__sync_new(void) {
    cp__syncframe *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->diskless = -1;
    s->rdb = cp__rdb_new();
    if (s->rdb == NULL) {
        free(s);
        return NULL;
    }
    return s;
}

void cp__sync_free(cp__syncframe *s) {
    if (s == NULL)
        return;
    cp__rdb_free(s->rdb);
    free(s->after);
    free(s);
}

static int keep_after(cp__syncframe *s, const unsigned char *p, size_t n) {
    if (n == 0)
        return 0;
    if (s->after_off > 0 && s->after_off == s->after_len)
        s->after_off = s->after_len = 0;
    if (s->after_len + n > s->after_cap) {
        size_t cap = s->after_cap ? s->after_cap : 4096;
        while (cap < s->after_len + n)
            cap *= 2;
        unsigned char *a = realloc(s->after, cap);
        if (a == NULL)
            return fail(s, "out of memory");
        s->after = a;
        s->after_cap = cap;
    }
    memcpy(s->after + s->after_len, p, n);
    s->after_len += n;
    return 0;
}

/* The first line, complete in s->line (without its CRLF). */
static int parse_line(cp__syncframe *s) {
    if (s->line_len == 5 + CP__SYNC_EOF_MARK_LEN && memcmp(s->line, "$EOF:", 5) == 0) {
        s->diskless = 1;
        memcpy(s->mark, s->line + 5, CP__SYNC_EOF_MARK_LEN);
        return 0;
    }
    if (s->line_len < 2 || s->line[0] != '$')
        return fail(s, "it starts with neither \"$<length>\" nor \"$EOF:<mark>\"");
    uint64_t n = 0;
    for (size_t i = 1; i < s->line_len; i++) {
        if (s->line[i] < '0' || s->line[i] > '9' || n > UINT64_MAX / 10 - 1)
            return fail(s, "its length is not a number");
        n = n * 10 + (uint64_t)(s->line[i] - '0');
    }
    s->diskless = 0;
    s->left = n;
    return 0;
}

int cp__sync_feed(cp__syncframe *s, const void *buf, size_t len) {
    const unsigned char *p = buf;
    while (len > 0) {
        switch (s->state) {
        case F_ERROR:
            return -1;
        case F_LINE:
            if (s->line_len == 0 && *p == '\n') { /* the master's keepalive while it saves */
                p++, len--;
                continue;
            }
            if (*p == '\n') {
                if (s->line[s->line_len - 1] != '\r')
                    return fail(s, "its first line does not end with CRLF");
                s->line_len--;
                if (parse_line(s) != 0)
                    return -1;
                s->state = F_RDB;
            } else if (s->line_len == LINE_MAX_LEN) {
                return fail(s, "its first line is too long");
            } else {
                s->line[s->line_len++] = (char)*p;
            }
            p++, len--;
            continue;
        case F_RDB:
        case F_MARK: {
            size_t n = len;
            if (!s->diskless && n > s->left)
                n = (size_t)s->left;
            if (cp__rdb_feed(s->rdb, p, n) != 0)
                return fail(s, cp__rdb_error(s->rdb));
            if (!s->diskless) {
                s->left -= n;
                if (keep_after(s, p + n, len - n) != 0)
                    return -1;
            }
            return 0;
        }
        case F_DONE:
            return keep_after(s, p, len);
        }
    }
    return 0;
}

/* The RDB ended: the frame must end there too. */
static int end_frame(cp__syncframe *s) {
    size_t n;
    const unsigned char *rest = cp__rdb_rest(s->rdb, &n);
    if (!s->diskless) {
        if (n != 0 || s->left != 0)
            return fail(s, "the RDB ends before the length its line announced");
        s->state = F_DONE;
        return 0;
    }
    if (n < CP__SYNC_EOF_MARK_LEN)
        return 1; /* the mark is still coming */
    if (memcmp(rest, s->mark, CP__SYNC_EOF_MARK_LEN) != 0)
        return fail(s, "the RDB is not followed by the $EOF: line's mark");
    s->state = F_DONE;
    return keep_after(s, rest + CP__SYNC_EOF_MARK_LEN, n - CP__SYNC_EOF_MARK_LEN);
}

int cp__sync_next(cp__syncframe *s, cp__rdb_event *ev) {
    if (s->state == F_MARK) { /* the RDB ended: is its mark all there now? */
        int e = end_frame(s);
        if (e != 0)
            return e < 0 ? CP__RDB_ERROR : CP__RDB_MORE;
        *ev = s->end;
        return CP__RDB_EVENT;
    }
    if (s->state == F_ERROR)
        return CP__RDB_ERROR;
    if (s->state != F_RDB)
        return CP__RDB_MORE;
    int rc = cp__rdb_next(s->rdb, ev);
    if (rc == CP__RDB_ERROR) {
        snprintf(s->err, sizeof s->err, "%s", cp__rdb_error(s->rdb));
        s->state = F_ERROR;
        return rc;
    }
    if (rc == CP__RDB_MORE) {
        if (!s->diskless && s->left == 0) {
            fail(s, "the payload ended before its RDB did");
            return CP__RDB_ERROR;
        }
        return rc;
    }
    if (ev->type != CP__RDB_EV_END)
        return rc;
    s->end = *ev;
    s->state = F_MARK;
    return cp__sync_next(s, ev);
}

const char *cp__sync_error(const cp__syncframe *s) {
    return s->state == F_ERROR ? s->err : NULL;
}

int cp__sync_diskless(const cp__syncframe *s) {
    return s->diskless;
}

const unsigned char *cp__sync_rest(const cp__syncframe *s, size_t *len) {
    if (s->state != F_DONE) {
        *len = 0;
        return NULL;
    }
    *len = s->after_len - s->after_off;
    return s->after + s->after_off;
}

void cp__sync_drop(cp__syncframe *s, size_t n) {
    if (s->state == F_DONE && n <= s->after_len - s->after_off)
        s->after_off += n;
}

uint64_t cp__sync_consumed(const cp__syncframe *s) {
    return cp__rdb_consumed(s->rdb);
}

uint64_t cp__sync_parsed(const cp__syncframe *s) {
    return cp__rdb_parsed(s->rdb);
}

int cp__sync_wants_string(const cp__syncframe *s) {
    return cp__rdb_wants_string(s->rdb);
}
