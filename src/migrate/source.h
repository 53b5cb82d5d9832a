/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A replica connection to one source: a redis-server taken as the master of a replica that is
 * this process. Non-blocking, driven by the caller's poll loop: cp__src_fd and cp__src_events say
 * what to wait for, cp__src_io does what the socket allows. The handshake (AUTH, REPLCONF capa
 * eof capa psync2, then PSYNC ? -1 once those are answered; SYNC when PSYNC is unknown); the
 * +FULLRESYNC line names the snapshot's offset; then the payload goes through the full sync's
 * framing and the RDB reader (syncframe.h), and what follows the snapshot through the stream's
 * reader (cmdstream.h). cp__src_next hands out the snapshot's keys, the snapshot's end, then the
 * stream's commands, one at a time. cp__src_ack queues a REPLCONF ACK, as a replica sends one every
 * second.
 *
 * A source that closes, sends what is not the protocol, or sends nothing for silence_ms (its
 * keepalives, a newline every second while it saves and a PING every 10 s after, keep a live one
 * under it) is an error naming it: never a hang.
 */
#ifndef CLUSTERPIPE_MIGRATE_SOURCE_H
#define CLUSTERPIPE_MIGRATE_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "clusterpipe/clusterpipe.h"
#include "migrate/cmdstream.h"
#include "migrate/rdbread.h"

typedef struct cp__src cp__src;

typedef enum cp__src_phase {
    CP__SRC_HANDSHAKE, /* connecting, AUTH, REPLCONF, PSYNC */
    CP__SRC_SNAPSHOT,  /* reading the RDB */
    CP__SRC_STREAM,    /* reading the commands that follow it */
    CP__SRC_FAILED,
} cp__src_phase;

typedef enum cp__src_item_type {
    CP__SRC_KEY,          /* rdb: a key of the snapshot (CP__RDB_EV_KEY) */
    CP__SRC_MODULE_AUX,   /* rdb: a module's aux data in the snapshot (CP__RDB_EV_MODULE_AUX) */
    CP__SRC_SNAPSHOT_END, /* the snapshot ended; the stream starts at `offset` */
    CP__SRC_COMMAND,      /* cmd: a command of the stream */
} cp__src_item_type;

typedef struct cp__src_item {
    cp__src_item_type type;
    cp__rdb_event rdb;
    cp__cmd cmd;
    uint64_t offset;
} cp__src_item;

/* host, user and password are copied; password NULL: no AUTH (user NULL: AUTH password alone).
 * tls: TLS when tls->tls (its tls_* fields, clusterpipe/tls.h; borrowed: it must outlive the
 * source), NULL: plain TCP. silence_ms: how long the source may send nothing. */
cp__src *cp__src_new(const char *host, int port, const char *user, const char *password,
                     const cp_options *tls, int silence_ms);
void cp__src_free(cp__src *s);

/* Starts connecting (non-blocking) and queues the handshake. 0, or -1 (cp__src_error). */
int cp__src_start(cp__src *s);

int cp__src_fd(const cp__src *s);
short cp__src_events(const cp__src *s); /* POLLIN, and POLLOUT while output waits */

/* After poll said revents on the fd (0: only the silence is checked): writes what waits, reads
 * what arrived (at most max_read bytes, so one source cannot starve the others; during the
 * snapshot, nothing while 8 MB read wait to be handed out: events then asks no POLLIN). 0, or
 * -1. */
int cp__src_io(cp__src *s, short revents, size_t max_read);

/* For a run that stops on another connection's failure: whether the source has closed the
 * replication connection (or it failed). Reads it to its end (at most 4 MB), dropping what
 * comes. 1 (and cp__src_error says what happened to it), or 0 while it is open. */
int cp__src_gone(cp__src *s);

/* The next item: 1 (*it filled, valid until the next cp__src_io or cp__src_next), 0 (none until
 * more arrives), -1 (cp__src_error). */
int cp__src_next(cp__src *s, cp__src_item *it);

/* Queues "REPLCONF ACK offset" (written at the next cp__src_io with POLLOUT). */
int cp__src_ack(cp__src *s, uint64_t offset);

cp__src_phase cp__src_phase_of(const cp__src *s);
const char *cp__src_error(const cp__src *s);
const char *cp__src_name(const cp__src *s); /* "host:port" */

/* The stream's offset at the snapshot (from +FULLRESYNC; 0 after SYNC), and received so far. */
uint64_t cp__src_snapshot_offset(const cp__src *s);
uint64_t cp__src_received(const cp__src *s);

/* Snapshot bytes read (the RDB's, from its header). */
uint64_t cp__src_snapshot_bytes(const cp__src *s);

#endif
