/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The grammar of each RDB value type, as a small program that the RDB reader (rdbread.h) runs to
 * find a value's end: strings, lengths, fixed fields and counted loops. Nothing is decoded.
 */
#ifndef CLUSTERPIPE_MIGRATE_RDBPROG_H
#define CLUSTERPIPE_MIGRATE_RDBPROG_H

/* The instructions. STR reads a string, LEN a length, DBL a double as text (a length byte, then
 * that many bytes; 253 to 255 stand for NaN and the infinities alone), F8 and F16 fixed fields
 * of 8 and 16 bytes. LOOP reads a length and runs the body up to its END that many times (none:
 * skips it); loops nest at most CP__RDB_LOOP_DEPTH deep. MODULE reads a module's value as the
 * module API wrote it: an opcode (a length) and its operand, up to the EOF opcode (0). */
enum { P_DONE, P_STR, P_LEN, P_DBL, P_F8, P_F16, P_LOOP, P_END, P_MODULE };
#define CP__RDB_LOOP_DEPTH 4

/* The program of value type `type` (redis src/rdb.h's RDB_TYPE_*), or NULL: not a type read
 * here. */
const unsigned char *cp__rdb_program(int type);

/* A module's aux data (opcode 0xF7): the module's id, the "when" field's opcode and value, then
 * the module's opcodes. */
extern const unsigned char CP__RDB_PROG_MODULE_AUX[];

#endif
