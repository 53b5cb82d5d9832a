/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The framing of a full sync's payload, as a master sends it to a replica after "+FULLRESYNC":
 * newlines while it prepares the snapshot, then either `$<len>\r\n` and len bytes of RDB (the
 * snapshot written to disk first), or `$EOF:<40 bytes>\r\n`, the RDB, and the same 40 bytes
 * (diskless). What follows is the replication stream of commands.
 *
 * No I/O, like the RDB reader it wraps (rdbread.h): fed the connection's bytes from the first
 * after the +FULLRESYNC line, it hands out the RDB's events; after CP__RDB_EV_END and the frame's
 * end, cp__sync_rest holds the bytes of the command stream fed so far, and later feeds add to it.
 */
#ifndef CLUSTERPIPE_MIGRATE_SYNCFRAME_H
#define CLUSTERPIPE_MIGRATE_SYNCFRAME_H

#include <stddef.h>
#include <stdint.h>

#include "migrate/rdbread.h"

#define CP__SYNC_EOF_MARK_LEN 40

typedef struct cp__syncframe cp__syncframe;

cp__syncframe *cp__sync_new(void); /* NULL: out of memory */
void cp__sync_free(cp__syncframe *s);

/* Copies len bytes: 0, or -1 on a framing error or out of memory (cp__sync_error says which). */
int cp__sync_feed(cp__syncframe *s, const void *buf, size_t len);

/* As cp__rdb_next: CP__RDB_MORE, CP__RDB_EVENT or CP__RDB_ERROR. The END event is handed out only
 * once the frame has ended too (the EOF mark checked, or the length matched exactly). */
int cp__sync_next(cp__syncframe *s, cp__rdb_event *ev);

const char *cp__sync_error(const cp__syncframe *s);

/* 1 when the payload is diskless ($EOF: framing), 0 when it has a length, -1 before its line. */
int cp__sync_diskless(const cp__syncframe *s);

/* After the END event: the command stream's bytes fed so far (NULL, 0 before). */
const unsigned char *cp__sync_rest(const cp__syncframe *s, size_t *len);

/* Drops the first n bytes of cp__sync_rest. */
void cp__sync_drop(cp__syncframe *s, size_t n);

/* The RDB's bytes read so far (cp__rdb_consumed): a snapshot's progress. */
uint64_t cp__sync_consumed(const cp__syncframe *s);

/* The RDB's bytes parsed so far (cp__rdb_parsed). */
uint64_t cp__sync_parsed(const cp__syncframe *s);

/* cp__rdb_wants_string. */
int cp__sync_wants_string(const cp__syncframe *s);

#endif
