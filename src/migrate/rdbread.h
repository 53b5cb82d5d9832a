/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A reader of an RDB stream (Redis's snapshot format) that does no I/O, built the way hiredis's
 * reply reader is: fed bytes in pieces of any size with cp__rdb_feed, it hands out events one at
 * a time with cp__rdb_next: the header's RDB version, aux fields, SELECT db, RESIZEDB, each key
 * (its db, its expiry, its value framed exactly as DUMP frames it), a function library, and the
 * end (the file's checksum, checked when non-zero).
 *
 * Nothing is decoded beyond what finding a value's end requires: lengths, string encodings,
 * blob lengths, the nested structure of a stream (nodes, consumer groups, their PELs and
 * consumers). A key's value is handed out as a DUMP payload: type byte, the value's bytes as the
 * RDB holds them, the RDB version (2 bytes, little endian) and the CRC64 of all that (8 bytes,
 * little endian), ready for RESTORE. A module's value (RDB_TYPE_MODULE_2, Redis 4.0 on) is read as
 * the module API wrote it (opcodes, each with its operand, up to an EOF opcode) and handed out as a
 * key like any other, with its module type's name; a module's aux data is read the same way and
 * handed out without its bytes. A module value of Redis 4.0's release candidates (type 6), whose
 * end only its module knows, is refused, naming the module type. RDB versions 1 to
 * CP__RDB_VERSION_MAX are read.
 *
 * Resumable at every length, string or fixed field: a value of a million elements fed byte by
 * byte is read in linear time. Memory held is the largest element (one key with its value, or
 * one aux field) plus what was fed and not yet read.
 */
#ifndef CLUSTERPIPE_MIGRATE_RDBREAD_H
#define CLUSTERPIPE_MIGRATE_RDBREAD_H

#include <stddef.h>
#include <stdint.h>

/* Redis 7.2's (10 is 7.0's; 12, 7.4's, adds hash field expiry and slot info, not read here). */
#define CP__RDB_VERSION_MAX 11

/* The value type of a module's value: the payload is the module's, RESTORE needs the module. */
#define CP__RDB_TYPE_MODULE2 7

typedef struct cp__rdb_reader cp__rdb_reader;

typedef enum cp__rdb_event_type {
    CP__RDB_EV_VERSION,    /* version */
    CP__RDB_EV_AUX,        /* name = the field, value = its value (integers as decimal text) */
    CP__RDB_EV_SELECTDB,   /* db */
    CP__RDB_EV_RESIZEDB,   /* db_size, expires_size: hints, as the RDB says */
    CP__RDB_EV_KEY,        /* db, name = the key, expire_ms, value_type, value = DUMP payload */
    CP__RDB_EV_FUNCTION,   /* value = a function library's code (Redis 7's FUNCTION2 opcode) */
    CP__RDB_EV_MODULE_AUX, /* module = the module type whose global data this is */
    CP__RDB_EV_END,        /* checksum: as the file holds it (0: none was computed) */
} cp__rdb_event_type;

/* The pointers stay valid until the next cp__rdb_feed or cp__rdb_next on the reader. */
typedef struct cp__rdb_event {
    cp__rdb_event_type type;
    int version;
    uint64_t db;
    uint64_t db_size, expires_size;
    const char *name;
    size_t name_len;
    const unsigned char *value;
    size_t value_len;
    int64_t expire_ms; /* absolute, Unix ms; -1: none */
    int value_type;    /* the RDB's type byte (0 string, 1 list, ...; the payload's first byte) */
    char module[10];   /* a module's value or aux data: its module type's name (9 characters) */
    uint64_t checksum;
} cp__rdb_event;

/* cp__rdb_next's answers. */
#define CP__RDB_MORE 0   /* feed more bytes */
#define CP__RDB_EVENT 1  /* *ev is filled */
#define CP__RDB_ERROR -1 /* cp__rdb_error says why; the reader stays in error */

cp__rdb_reader *cp__rdb_new(void); /* NULL: out of memory */
void cp__rdb_free(cp__rdb_reader *r);

/* Copies len bytes. 0, or -1 when out of memory (the reader is then in error). Bytes fed after the
 * end are kept for cp__rdb_rest. */
int cp__rdb_feed(cp__rdb_reader *r, const void *buf, size_t len);

/* The next event. After CP__RDB_EV_END it answers CP__RDB_MORE forever. */
int cp__rdb_next(cp__rdb_reader *r, cp__rdb_event *ev);

const char *cp__rdb_error(const cp__rdb_reader *r);

/* Bytes fed and not read: after the end, what followed the RDB (in a replication stream, the
 * command stream). */
const unsigned char *cp__rdb_rest(const cp__rdb_reader *r, size_t *len);

/* After the end, drops the first n bytes of cp__rdb_rest (n <= its length); before, nothing. */
void cp__rdb_drop(cp__rdb_reader *r, size_t n);

/* Bytes read so far, from the header's first. */
uint64_t cp__rdb_consumed(const cp__rdb_reader *r);

/* Bytes parsed: those handed out, and those of the key being read as far as its value was read
 * (a key larger than what has arrived is read in parts). */
uint64_t cp__rdb_parsed(const cp__rdb_reader *r);

/* 1 while a string the reader began (a string is read whole) has not all arrived. */
int cp__rdb_wants_string(const cp__rdb_reader *r);

#endif
