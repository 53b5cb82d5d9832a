/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Redis's CRC64 (Jones polynomial 0xad93d23594c935a9, reflected, no final xor: its src/crc64.c),
 * the checksum of a DUMP payload and of an RDB file. cp__crc64(0, "123456789", 9) is
 * 0xe9c6d914c4b8d9ca. Continue a running sum by passing it as crc.
 */
#ifndef CLUSTERPIPE_MIGRATE_CRC64_H
#define CLUSTERPIPE_MIGRATE_CRC64_H

#include <stddef.h>
#include <stdint.h>

uint64_t cp__crc64(uint64_t crc, const void *buf, size_t len);

/* For tests: the same sum through the tables alone (what cp__crc64 does on a CPU without
 * PCLMULQDQ, and on other architectures), and which way cp__crc64 takes here: "pclmul" or
 * "table". */
uint64_t cp__crc64_table(uint64_t crc, const void *buf, size_t len);
const char *cp__crc64_impl(void);

#endif
