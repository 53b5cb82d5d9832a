/* SPDX-License-Identifier: BSD-3-Clause
 *
 * SHA-1 (sha1.h): one 64-byte block at a time over the message, then the padded tail (a 1 bit,
 * zeros, the length in bits, big-endian). Everything lives on the caller's stack; any thread.
 */
#include "lib/proto/sha1.h"

#include <string.h>

static inline uint32_t rol(uint32_t x, unsigned n) {
    return (x << n) | (x >> (32 - n));
}

static void block(uint32_t h[5], const uint8_t *b) {
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)b[4 * i] << 24 | (uint32_t)b[4 * i + 1] << 16 |
               (uint32_t)b[4 * i + 2] << 8 | (uint32_t)b[4 * i + 3];
    for (int i = 16; i < 80; i++)
        w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20) {
            f = (bb & c) | (~bb & d);
            k = 0x5A827999u;
        } else if (i < 40) {
            f = bb ^ c ^ d;
            k = 0x6ED9EBA1u;
        } else if (i < 60) {
            f = (bb & c) | (bb & d) | (c & d);
            k = 0x8F1BBCDCu;
        } else {
            f = bb ^ c ^ d;
            k = 0xCA62C1D6u;
        }
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = rol(bb, 30);
        bb = a;
        a = t;
    }
    h[0] += a;
    h[1] += bb;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

void cp__sha1(const void *data, size_t len, uint8_t out[CP__SHA1_LEN]) {
    uint32_t h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
    const uint8_t *p = data;
    size_t left = len;
    for (; left >= 64; p += 64, left -= 64)
        block(h, p);
    /* The tail: what is left, 0x80, zeros, and the 64-bit length in bits; one block or two. */
    uint8_t tail[128] = {0};
    if (left > 0)
        memcpy(tail, p, left);
    tail[left] = 0x80;
    size_t n = left < 56 ? 64 : 128;
    uint64_t bits = (uint64_t)len * 8;
    for (int i = 0; i < 8; i++)
        tail[n - 1 - i] = (uint8_t)(bits >> (8 * i));
    block(h, tail);
    if (n == 128)
        block(h, tail + 64);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++)
            out[4 * i + j] = (uint8_t)(h[i] >> (24 - 8 * j));
}

void cp__sha1_hex(const void *data, size_t len, char out[CP__SHA1_HEXLEN + 1]) {
    static const char hex[] = "0123456789abcdef";
    uint8_t d[CP__SHA1_LEN];
    cp__sha1(data, len, d);
    for (int i = 0; i < CP__SHA1_LEN; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[CP__SHA1_HEXLEN] = '\0';
}
