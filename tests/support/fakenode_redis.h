/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Private to the fake node: the "tiny Redis" that answers commands no rule fired on. Owns the
 * request parser (RESP arrays of bulk strings and inline commands), the in-memory key/value
 * store and the normal command handler; fakenode.c owns sockets, rules and the log and calls in
 * here. No I/O, no locks: everything here runs on the node's serving thread, except the store's
 * free at stop (after the join). Parsed arguments point into the caller's input buffer; the
 * store copies what it keeps and frees it in fake__store_free().
 */
#ifndef CLUSTERPIPE_FAKENODE_REDIS_H
#define CLUSTERPIPE_FAKENODE_REDIS_H

#include <stdbool.h>
#include <stddef.h>

/* A growable byte buffer (connection input and output). Zero-initialised is empty. */
typedef struct fake_buf {
    char *p;
    size_t len, cap;
} fake_buf;

/* Make room for `extra` more bytes; 0, or -1 on OOM (the buffer is unchanged). */
int fake__buf_reserve(fake_buf *b, size_t extra);
/* Append bytes; 0, or -1 on OOM (nothing appended). */
int fake__buf_append(fake_buf *b, const void *data, size_t len);
/* Drop the first n bytes (all of them if n >= len). */
void fake__buf_consume(fake_buf *b, size_t n);

/* One command's arguments, pointing into the parsed buffer (not NUL-terminated). The vectors
 * are reused from command to command; free v and len when done. */
typedef struct fake_args {
    const char **v;
    size_t *len;
    size_t n, cap;
} fake_args;

/* True if argument i exists and equals word, ASCII case-insensitively. */
bool fake__arg_is(const fake_args *a, size_t i, const char *word);

/* Parses one command at the head of p[0..len) into a. Returns the bytes it used (a->n may be 0:
 * an empty line or "*0" is skipped, as Redis does), 0 when the command is not complete yet, or
 * -1 with *err set (a static string) on a protocol error. */
long fake__parse_command(const char *p, size_t len, fake_args *a, const char **err);

typedef struct fake_store fake_store;

/* An empty store; NULL on OOM. */
fake_store *fake__store_new(void);
/* Frees the store and every key and value in it. NULL is a no-op. */
void fake__store_free(fake_store *st);

/* The node's configuration as the handler needs it; strings owned by the caller. */
typedef struct fake_config {
    const char *user;   /* ACL user for AUTH, NULL = "default" */
    const char *pass;   /* NULL = no password required */
    const char *slots;  /* raw CLUSTER SLOTS reply, NULL = default error */
    const char *shards; /* raw CLUSTER SHARDS reply, NULL = default error */
} fake_config;

enum { FAKE__OK = 0, FAKE__QUIT = 1, FAKE__OOM = -1 };

/* Answers one command (a->n >= 1) the way Redis 7 would, appending the reply to out. *authed is
 * the connection's AUTH state, read and updated. Returns FAKE__OK, FAKE__QUIT (the reply is
 * +OK and the connection should now close), or FAKE__OOM (out is left as it was). */
int fake__handle(fake_store *st, const fake_config *cfg, bool *authed, const fake_args *a,
                 fake_buf *out);

#endif
