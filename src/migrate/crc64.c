/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Redis's CRC64 (crc64.h), eight bytes a step ("slicing by 8": table k gives what a byte does
 * to the sum k bytes before the step's end), through tables built once. Every snapshot key's
 * DUMP payload and the whole RDB file pass through here, so a byte at a time was a third of
 * migrate's CPU.
 */
#include "migrate/crc64.h"

#include <pthread.h>
#include <string.h>

static uint64_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
    const uint64_t poly = 0x95ac9329ac4bc9b5ULL; /* 0xad93d23594c935a9, bit-reversed */
    for (unsigned i = 0; i < 256; i++) {
        uint64_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
        crc_table[0][i] = c;
    }
    for (unsigned i = 0; i < 256; i++)
        for (int k = 1; k < 8; k++)
            crc_table[k][i] = (crc_table[k - 1][i] >> 8) ^ crc_table[0][crc_table[k - 1][i] & 0xff];
}

/* Eight bytes as a little-endian number, whatever the machine's order. */
static uint64_t load_le64(const unsigned char *p) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
#else
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
#endif
}

uint64_t cp__crc64(uint64_t crc, const void *buf, size_t len) {
    pthread_once(&crc_once, crc_init);
    const unsigned char *p = buf;
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t v = crc ^ load_le64(p);
        crc = crc_table[7][v & 0xff] ^ crc_table[6][(v >> 8) & 0xff] ^
              crc_table[5][(v >> 16) & 0xff] ^ crc_table[4][(v >> 24) & 0xff] ^
              crc_table[3][(v >> 32) & 0xff] ^ crc_table[2][(v >> 40) & 0xff] ^
              crc_table[1][(v >> 48) & 0xff] ^ crc_table[0][v >> 56];
    }
    for (; len > 0; p++, len--)
        crc = crc_table[0][(crc ^ *p) & 0xff] ^ (crc >> 8);
    return crc;
}
