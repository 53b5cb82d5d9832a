/* SPDX-License-Identifier: BSD-3-Clause
 *
 * LZF's decompression, the format Redis's lzf_c writes into an RDB's compressed strings: a
 * control byte below 32 is a literal run of that many plus one bytes; above, a back reference of
 * (ctrl >> 5) + 2 bytes (7: plus the next byte), ((ctrl & 31) << 8) + the next byte + 1 bytes
 * back. No I/O, no allocation.
 */
#ifndef CLUSTERPIPE_MIGRATE_LZF_H
#define CLUSTERPIPE_MIGRATE_LZF_H

#include <stddef.h>

/* Unpacks in into out: 1, or 0 when the input does not unpack to exactly out_len bytes. */
int cp__lzf_unpack(const unsigned char *in, size_t in_len, unsigned char *out, size_t out_len);

#endif
