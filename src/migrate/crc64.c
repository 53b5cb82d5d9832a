/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Redis's CRC64 (crc64.h). Every snapshot key's DUMP payload (about 100 bytes) and the whole RDB
 * file pass through here, so both short and long buffers matter. Two ways, chosen once:
 *
 *  - x86-64 with PCLMULQDQ: the buffer's 16-byte blocks are folded into one with carry-less
 *    multiplications (four accumulators side by side over each 64 bytes, so that the multiplier
 *    is never waited on), that block is reduced to the 64-bit sum by a Barrett reduction, and the
 *    tail of under 16 bytes goes through the tables.
 *  - anywhere else, and for those tails: eight bytes a step ("slicing by 8": table k gives what a
 *    byte does to the sum k bytes before the step's end).
 *
 * The math, in the reflected domain Redis uses: bit i of a 64-bit value is the coefficient of
 * x^(63-i), bit k of a 128-bit block (loaded little-endian) that of x^(127-k), so the first byte's
 * low bit is the highest power. With P = x^64 + POLY, the sum after message M from sum c is
 * (c * x^(8 len) + M * x^64) mod P: c XORed onto the first 8 bytes, then M * x^64 mod P.
 * PCLMULQDQ of two 64-bit values a, b gives the 128-bit block of x * a * b (the bits line up one
 * place short, hence the x), so a constant meant to multiply by x^n is x^(n-1) mod P.
 */
#include "migrate/crc64.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define CRC_HAVE_PCLMUL 1
#endif

/* The Jones polynomial 0xad93d23594c935a9 without its x^64 term, bit-reversed. */
#define CRC_POLY 0x95ac9329ac4bc9b5ULL

static uint64_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static uint64_t (*crc_impl)(uint64_t crc, const unsigned char *p, size_t len);
static const char *crc_impl_name;

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

static uint64_t crc64_by_tables(uint64_t crc, const unsigned char *p, size_t len) {
    for (; len >= 8; p += 8, len -= 8) {
        uint64_t v = crc ^ load_le64(p);
        crc = crc_table[7][v & 0xff] ^ crc_table[6][(v >> 8) & 0xff] ^
              crc_table[5][(v >> 16) & 0xff] ^ crc_table[4][(v >> 24) & 0xff] ^
              crc_table[3][(v >> 32) & 0xff] ^ crc_table[2][(v >> 40) & 0xff] ^
              crc_table[1][(v >> 48) & 0xff] ^ crc_table[0][v >> 56];
    }
    if (len == 0)
        return crc;
    /* The last 1..7 bytes in one step the same way: byte j is followed by len-1-j more, and the
     * sum's bytes past them move down. Their lookups do not wait on one another, as they would a
     * byte at a time. */
    uint64_t v = crc, next = crc >> (8 * len);
    for (size_t j = 0; j < len; j++)
        v ^= (uint64_t)p[j] << (8 * j);
    for (size_t j = 0; j < len; j++)
        next ^= crc_table[len - 1 - j][(v >> (8 * j)) & 0xff];
    return next;
}

static void tables_init(void) {
    for (unsigned i = 0; i < 256; i++) {
        uint64_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ CRC_POLY : c >> 1;
        crc_table[0][i] = c;
    }
    for (unsigned i = 0; i < 256; i++)
        for (int k = 1; k < 8; k++)
            crc_table[k][i] = (crc_table[k - 1][i] >> 8) ^ crc_table[0][crc_table[k - 1][i] & 0xff];
}

#ifdef CRC_HAVE_PCLMUL

/* Multiplying by x in the reflected domain is a shift right; the x^63 coefficient leaving at the
 * bottom becomes x^64, which is POLY modulo P. Returns that carry, the quotient's next bit. */
static unsigned times_x_mod_p(uint64_t *r) {
    unsigned carry = *r & 1;
    *r = (*r >> 1) ^ (carry ? CRC_POLY : 0);
    return carry;
}

/* x^n mod P, one multiplication by x at a time from x^0 (the top bit). */
static uint64_t xpow_mod_p(unsigned n) {
    uint64_t r = 1ULL << 63;
    while (n-- > 0)
        times_x_mod_p(&r);
    return r;
}

/* floor(x^127 / P), for the Barrett reduction. Dividing x^127 by P bit by bit is computing
 * x^127 mod P as above: the carry of step n is the quotient's coefficient of x^(127-n), the first
 * one (x^63) at step 64. */
static uint64_t quotient_x127_by_p(void) {
    uint64_t r = 1ULL << 63, q = 0;
    for (unsigned n = 1; n <= 127; n++) {
        uint64_t carry = times_x_mod_p(&r);
        if (n >= 64)
            q |= carry << (n - 64);
    }
    return q;
}

/* The folding constants: a block's first 64 bits (coefficients x^127..x^64) times x^(d+64) and
 * its last 64 times x^d move it d bits further on, each product again fitting in a block. So
 * fold_by[k], for moving a block k blocks on (d = 128 k), holds x^(d+63) mod P in the low lane
 * and x^(d-1) mod P in the high one, where the selectors 0x00 and 0x11 of _mm_clmulepi64_si128
 * take them with the block's halves. From 1 to 4 blocks on (fold_by[0] is not used). */
static __m128i fold_by[5];
/* reduce's: x^127 mod P and floor(x^127 / P) in the low and high lanes; P without its constant
 * term, divided by x. */
static __m128i reduce_consts, p_div_x;

static void pclmul_init(void) {
    for (unsigned k = 1; k <= 4; k++) {
        unsigned d = 128 * k;
        fold_by[k] = _mm_set_epi64x((long long)xpow_mod_p(d - 1), (long long)xpow_mod_p(d + 63));
    }
    reduce_consts = _mm_set_epi64x((long long)quotient_x127_by_p(), (long long)xpow_mod_p(127));
    /* P = x^64 + POLY, and POLY's constant term is 1 (CRC_POLY's top bit), so P / x is x^63 (bit
     * 0) and POLY's other coefficients, each one power lower, so one bit higher. */
    p_div_x = _mm_cvtsi64_si128((long long)(CRC_POLY << 1 | 1));
}

/* Only the functions that use PCLMULQDQ (and SSE4.1's PEXTRQ) are built for them: the rest of the
 * build keeps its flags, and these run only where crc_init found both. */
#define CRC_PCLMUL_TARGET __attribute__((target("pclmul,sse4.1")))

/* acc moved onto next: acc * x^d + next (mod P, in 128 bits), d being what k was built for. */
CRC_PCLMUL_TARGET static __m128i fold(__m128i acc, __m128i k, __m128i next) {
    __m128i lo = _mm_clmulepi64_si128(acc, k, 0x00);
    __m128i hi = _mm_clmulepi64_si128(acc, k, 0x11);
    return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/* The sum of a message whose blocks folded into b: b * x^64 mod P.
 *
 * With bh b's first 64 bits (coefficients x^127..x^64) and bl its last, b * x^64 is
 * bh * x^128 + bl * x^64: the product of bh and x^127 mod P, 128 bits, with bl added to its first
 * half gives y = yh * x^64 + yl, the same modulo P. Then y mod P = yl + (yh * x^64 mod P), by
 * Barrett: with mu = floor(x^128 / P), q = floor(yh * mu / x^64) is the quotient of yh * x^64 by P
 * (exactly, yh having 64 coefficients). mu's constant term reaches no coefficient of yh * mu from
 * x^64 up, so q = floor(x * yh * floor(x^127 / P) / x^64): the first 64 bits of PCLMULQDQ's
 * product, its x included. The remainder yh * x^64 - q * P has no coefficient from x^64 up, and yh
 * * x^64 none below: it is the last 64 coefficients of q * P = x * q * (P / x) + q, that is of the
 * product of q and P / x (64 coefficients again), plus q. */
CRC_PCLMUL_TARGET static uint64_t reduce(__m128i b) {
    __m128i y = _mm_xor_si128(_mm_clmulepi64_si128(b, reduce_consts, 0x00), _mm_srli_si128(b, 8));
    __m128i q = _mm_clmulepi64_si128(y, reduce_consts, 0x10);
    __m128i qp = _mm_clmulepi64_si128(q, p_div_x, 0x00);
    __m128i sum = _mm_xor_si128(_mm_xor_si128(y, qp), _mm_slli_si128(q, 8));
    return (uint64_t)_mm_extract_epi64(sum, 1);
}

static __m128i load_block(const unsigned char *p) {
    __m128i b;
    memcpy(&b, p, sizeof b);
    return b;
}

CRC_PCLMUL_TARGET static uint64_t crc64_by_pclmul(uint64_t crc, const unsigned char *p,
                                                  size_t len) {
    if (len < 16)
        return crc64_by_tables(crc, p, len);
    /* The whole blocks: a few leading ones (all but the last when there are under four, else
     * what is left over from fours) moved onto the next block at once, then fours. */
    size_t blocks = len / 16, lead = blocks < 4 ? blocks - 1 : blocks % 4;
    /* The running sum joins the first 8 bytes (see the top). */
    __m128i first = _mm_xor_si128(load_block(p), _mm_cvtsi64_si128((long long)crc));
    __m128i acc = lead ? load_block(p + 16 * lead) : first;
    for (size_t i = 0; i < lead; i++)
        acc = fold(i ? load_block(p + 16 * i) : first, fold_by[lead - i], acc);
    p += 16 * (lead + 1);
    len -= 16 * (lead + 1);
    if (blocks >= 4) {
        /* Four accumulators, each moved 64 bytes on onto the next 64: their multiplications do
         * not wait on one another, so a long buffer runs at the multiplier's throughput, not at
         * its latency. At the end each is moved onto the last at once. */
        __m128i acc1 = load_block(p), acc2 = load_block(p + 16), acc3 = load_block(p + 32);
        p += 48;
        len -= 48;
        for (; len >= 64; p += 64, len -= 64) {
            acc = fold(acc, fold_by[4], load_block(p));
            acc1 = fold(acc1, fold_by[4], load_block(p + 16));
            acc2 = fold(acc2, fold_by[4], load_block(p + 32));
            acc3 = fold(acc3, fold_by[4], load_block(p + 48));
        }
        acc = fold(acc, fold_by[3], fold(acc1, fold_by[2], fold(acc2, fold_by[1], acc3)));
    }
    return crc64_by_tables(reduce(acc), p, len);
}

#endif /* CRC_HAVE_PCLMUL */

static void crc_init(void) {
    tables_init();
    crc_impl = crc64_by_tables;
    crc_impl_name = "table";
#ifdef CRC_HAVE_PCLMUL
    __builtin_cpu_init();
    if (__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1")) {
        pclmul_init();
        crc_impl = crc64_by_pclmul;
        crc_impl_name = "pclmul";
    }
#endif
}

uint64_t cp__crc64(uint64_t crc, const void *buf, size_t len) {
    pthread_once(&crc_once, crc_init);
    return crc_impl(crc, buf, len);
}

uint64_t cp__crc64_table(uint64_t crc, const void *buf, size_t len) {
    pthread_once(&crc_once, crc_init);
    return crc64_by_tables(crc, buf, len);
}

const char *cp__crc64_impl(void) {
    pthread_once(&crc_once, crc_init);
    return crc_impl_name;
}
