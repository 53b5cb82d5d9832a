/* SPDX-License-Identifier: BSD-3-Clause
 *
 * RESP glue over hiredis (0.14 and 1.x): formatting commands into a caller's byte buffer,
 * finding the arguments of an already formatted command, classifying the cluster errors the
 * router acts on. No I/O.
 */
#ifndef CLUSTERPIPE_RESP_H
#define CLUSTERPIPE_RESP_H

#include <stdarg.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

/* A growable byte buffer. Zero-initialise; free with cp__buf_free. */
typedef struct cp__buf {
    char *data;
    size_t len, cap;
} cp__buf;

int cp__buf_grow(cp__buf *b, size_t extra); /* the slow path of cp__buf_reserve */

/* Makes room for `extra` more bytes. 0 or CP_ENOMEM. */
static inline int cp__buf_reserve(cp__buf *b, size_t extra) {
    return b->cap - b->len >= extra ? 0 : cp__buf_grow(b, extra);
}
int cp__buf_append(cp__buf *b, const void *p, size_t n);
void cp__buf_free(cp__buf *b);

/* Appends the RESP encoding of argv to b. Returns 0 or CP_ENOMEM. Written here rather than with
 * redisFormatCommandArgv so the hot path does not malloc and free a buffer per command. */
int cp__format_argv(cp__buf *b, int argc, const char *const *argv, const size_t *argvlen);

/* Appends a printf-style command, with hiredis's format rules (arguments split at spaces; %s a C
 * string, %b a pointer and a size_t, %% a percent sign, integer and double conversions as in
 * printf), formatted here without an allocation of its own. Returns the argument count, and when
 * it is at most max, argv/argvlen point at each argument in b (until b next grows); or CP_ENOMEM,
 * CP_EINVAL (bad format), leaving b as it was. */
int cp__format_va(cp__buf *b, const char *fmt, va_list ap, const char **argv, size_t *argvlen,
                  int max);

/* Arguments of a formatted command (an array of bulk strings). Fills argv/argvlen with pointers
 * into cmd, at most max of them, and returns the total argument count, or -1 when cmd is not
 * exactly one well-formed command of that shape. */
int cp__parse_command(const char *cmd, size_t len, const char **argv, size_t *argvlen, int max);

/* The error replies the router acts on. */
typedef enum cp__errkind {
    CP__ERR_NONE = 0, /* not an error reply */
    CP__ERR_OTHER,    /* an error for the caller */
    CP__ERR_MOVED,
    CP__ERR_ASK,
    CP__ERR_TRYAGAIN,
    CP__ERR_CLUSTERDOWN,
    CP__ERR_LOADING,
    CP__ERR_UNBLOCKED /* a blocked command let go because its master became a replica */
} cp__errkind;

/* Classifies reply r. For MOVED/ASK also returns the slot and target ("host", port): an empty
 * host in the redirect (Redis may send ":port") is left empty for the caller to replace with the
 * address it asked. Malformed MOVED/ASK is CP__ERR_OTHER. */
cp__errkind cp__classify(const redisReply *r, int *slot, char *host, size_t hostlen, int *port);

/* Whether r is the NOSCRIPT error (EVALSHA of a script the server does not have: it ran
 * nothing). Not one of cp__classify's kinds: only a script's command acts on it (script.h). */
int cp__is_noscript(const redisReply *r);

/* "host:port" -> parts. Returns 0, or -1 when malformed (no colon, bad port). IPv6 addresses in
 * brackets are accepted ("[::1]:7000"). */
int cp__parse_addr(const char *s, size_t len, char *host, size_t hostlen, int *port);

#endif
