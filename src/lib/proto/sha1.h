/* SPDX-License-Identifier: BSD-3-Clause
 *
 * SHA-1 (FIPS 180-4), in house: scripts are run by their SHA1 (EVALSHA), and the library must
 * not need OpenSSL for it when it is built without TLS. Only for naming scripts as Redis does,
 * never for security. No allocation, no state kept between calls: any thread.
 */
#ifndef CLUSTERPIPE_SHA1_H
#define CLUSTERPIPE_SHA1_H

#include <stddef.h>
#include <stdint.h>

#define CP__SHA1_LEN 20
#define CP__SHA1_HEXLEN 40

/* The digest of data[0..len). */
void cp__sha1(const void *data, size_t len, uint8_t out[CP__SHA1_LEN]);

/* The digest in lower-case hex, as Redis names scripts, NUL-terminated (41 bytes). */
void cp__sha1_hex(const void *data, size_t len, char out[CP__SHA1_HEXLEN + 1]);

#endif
