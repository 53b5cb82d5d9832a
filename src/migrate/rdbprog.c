/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The grammar of each RDB value type (rdbprog.h), as redis src/rdb.c writes them.
 */
#include "migrate/rdbprog.h"

#include <stddef.h>

static const unsigned char PROG_STRING[] = {P_STR, P_DONE};
static const unsigned char PROG_LIST[] = {P_LOOP, P_STR, P_END, P_DONE};
static const unsigned char PROG_HASH[] = {P_LOOP, P_STR, P_STR, P_END, P_DONE};
static const unsigned char PROG_ZSET[] = {P_LOOP, P_STR, P_DBL, P_END, P_DONE};
static const unsigned char PROG_ZSET2[] = {P_LOOP, P_STR, P_F8, P_END, P_DONE};
static const unsigned char PROG_QUICKLIST2[] = {P_LOOP, P_LEN, P_STR, P_END, P_DONE};
/* A stream: its listpacks (node key, listpack); length and last id; then its consumer groups,
 * each with its name, last id, its PEL (id, delivery time, delivery count) and its consumers (name,
 * seen time, their PEL of ids). Version 2 adds the first id, the max deleted id, entries added
 * and a group's entries read; version 3 a consumer's active time. */
static const unsigned char PROG_STREAM1[] = {
    P_LOOP, P_STR, P_STR, P_END,  P_LEN, P_LEN, P_LEN,  P_LOOP, P_STR, P_LEN, P_LEN, P_LOOP, P_F16,
    P_F8,   P_LEN, P_END, P_LOOP, P_STR, P_F8,  P_LOOP, P_F16,  P_END, P_END, P_END, P_DONE};
static const unsigned char PROG_STREAM2[] = {
    P_LOOP, P_STR,  P_STR, P_END,  P_LEN, P_LEN, P_LEN,  P_LEN, P_LEN, P_LEN, P_LEN,
    P_LEN,  P_LOOP, P_STR, P_LEN,  P_LEN, P_LEN, P_LOOP, P_F16, P_F8,  P_LEN, P_END,
    P_LOOP, P_STR,  P_F8,  P_LOOP, P_F16, P_END, P_END,  P_END, P_DONE};
static const unsigned char PROG_STREAM3[] = {
    P_LOOP, P_STR,  P_STR, P_END, P_LEN,  P_LEN, P_LEN,  P_LEN, P_LEN, P_LEN, P_LEN,
    P_LEN,  P_LOOP, P_STR, P_LEN, P_LEN,  P_LEN, P_LOOP, P_F16, P_F8,  P_LEN, P_END,
    P_LOOP, P_STR,  P_F8,  P_F8,  P_LOOP, P_F16, P_END,  P_END, P_END, P_DONE};

/* A module's value (RDB_TYPE_MODULE_2): the module's 64-bit id, then its opcodes. Its aux data
 * (opcode 0xF7): the id, the "when" field's opcode and value, then the same opcodes. */
static const unsigned char PROG_MODULE2[] = {P_LEN, P_MODULE, P_DONE};
const unsigned char CP__RDB_PROG_MODULE_AUX[] = {P_LEN, P_LEN, P_LEN, P_MODULE, P_DONE};

const unsigned char *cp__rdb_program(int type) {
    switch (type) {
    case 0:  /* string */
    case 9:  /* hash as zipmap */
    case 10: /* list as ziplist */
    case 11: /* set as intset */
    case 12: /* sorted set as ziplist */
    case 13: /* hash as ziplist */
    case 16: /* hash as listpack */
    case 17: /* sorted set as listpack */
    case 20: /* set as listpack */
        return PROG_STRING;
    case 1:  /* list of strings */
    case 2:  /* set of strings */
    case 14: /* quicklist of ziplists */
        return PROG_LIST;
    case 3:
        return PROG_ZSET;
    case 4:
        return PROG_HASH;
    case 5:
        return PROG_ZSET2;
    case 18:
        return PROG_QUICKLIST2;
    case 15:
        return PROG_STREAM1;
    case 19:
        return PROG_STREAM2;
    case 21:
        return PROG_STREAM3;
    case 7: /* RDB_TYPE_MODULE_2 */
        return PROG_MODULE2;
    default:
        return NULL;
    }
}
