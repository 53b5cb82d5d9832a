/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Redis's CRC64 (crc64.h), a byte at a time through a table built once.
 */
#include "migrate/crc64.h"

#include <pthread.h>

static uint64_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
    const uint64_t poly = 0x95ac9329ac4bc9b5ULL; /* 0xad93d23594c935a9, bit-reversed */
    for (unsigned i = 0; i < 256; i++) {
        uint64_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
        crc_table[i] = c;
    }
}

uint64_t cp__crc64(uint64_t crc, const void *buf, size_t len) {
    pthread_once(&crc_once, crc_init);
    const unsigned char *p = buf;
    for (size_t i = 0; i < len; i++)
        crc = crc_table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return crc;
}
