/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A reader of a replication stream's commands (what a master sends its replica after the RDB)
 * that does no I/O, built as the RDB reader is (rdbread.h): fed bytes in pieces of any size with
 * cp__cmds_feed, it hands out one command at a time with cp__cmds_next, each with its byte offset
 * in the replication stream (the master's replication offset at its first byte, and after its
 * last), which is what a replica acknowledges (REPLCONF ACK) and what "applied up to" means.
 *
 * The stream is RESP arrays of bulk strings. A bare newline between commands ("\n" or "\r\n", a
 * keepalive) is handed out as a command of no arguments: a Redis replica skips it, and counts its
 * bytes in its offset as this reader does. Anything else is an error that names the offset
 * (an inline command, a negative or oversized length, a missing CRLF): the reader then stays in
 * error.
 *
 * Resumable at every byte: a command's arguments already read are not read again when the rest
 * of it arrives, so a command of a million arguments fed byte by byte is read in linear time.
 * Memory held is the command being read plus what was fed and not yet read.
 */
#ifndef CLUSTERPIPE_MIGRATE_CMDSTREAM_H
#define CLUSTERPIPE_MIGRATE_CMDSTREAM_H

#include <stddef.h>
#include <stdint.h>

/* Limits a master's stream stays within: Redis's proto-max-bulk-len may be raised to 4 GiB;
 * a command's arguments are counted as Redis counts them (an int). */
#define CP__CMDS_MAX_BULK (4ULL << 30)
#define CP__CMDS_MAX_ARGS (1LL << 30)

typedef struct cp__cmdstream cp__cmdstream;

/* One command. argv[i] (argvlen[i] bytes, followed by a NUL that is not part of it) and the
 * arrays stay valid until the next cp__cmds_feed or cp__cmds_next on the reader. */
typedef struct cp__cmd {
    int argc;                /* 0: a keepalive newline */
    const char *const *argv; /* NULL when argc is 0 */
    const size_t *argvlen;
    uint64_t offset; /* the stream's offset at the command's first byte */
    uint64_t end;    /* ... and after its last: what to acknowledge once it is applied */
} cp__cmd;

/* cp__cmds_next's answers, as rdbread's. */
#define CP__CMDS_MORE 0
#define CP__CMDS_CMD 1
#define CP__CMDS_ERROR -1

/* A reader whose first byte is at stream offset `offset` (a full resync's, as +FULLRESYNC named
 * it). NULL: out of memory. */
cp__cmdstream *cp__cmds_new(uint64_t offset);
void cp__cmds_free(cp__cmdstream *s);

/* Copies len bytes. 0, or -1 out of memory or after an error (cp__cmds_error says which). */
int cp__cmds_feed(cp__cmdstream *s, const void *buf, size_t len);

/* The next command into *out: CP__CMDS_CMD, CP__CMDS_MORE (feed more) or CP__CMDS_ERROR. */
int cp__cmds_next(cp__cmdstream *s, cp__cmd *out);

const char *cp__cmds_error(const cp__cmdstream *s);

/* The offset after the last command handed out. */
uint64_t cp__cmds_offset(const cp__cmdstream *s);

/* The offset after the last byte fed. */
uint64_t cp__cmds_received(const cp__cmdstream *s);

#endif
