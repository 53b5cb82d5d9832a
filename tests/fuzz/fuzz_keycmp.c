/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fuzz target: one key's comparison (src/migrate/keycmp.h) fed whatever a source and a target
 * (or a bug) answer. The input is RESP: each step's replies are read from it in order, the
 * source's then the target's, until it runs out or the key is decided. The comparison must never
 * crash, read out of bounds or leak, and must append at most 3 commands per side per step.
 */
#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "migrate/keycmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count(void *arg, int argc, const char **argv, const size_t *argvlen) {
    (void)argv;
    (void)argvlen;
    if (argc < 2)
        abort(); /* every command names the key */
    (*(int *)arg)++;
    return 0;
}

/* n replies from the reader into r; 0 when it ran out. */
static int replies(redisReader *rd, redisReply **r, int n) {
    for (int i = 0; i < n; i++)
        if (redisReaderGetReply(rd, (void **)&r[i]) != REDIS_OK || r[i] == NULL)
            return 0;
    return 1;
}

/* 1 when some "*N" declares more than 65536 elements: hiredis 0.14's reader allocates a declared
 * array's elements at once (it has no maxelements), an out-of-memory that is not keycmp's. */
static int huge_array(const uint8_t *data, size_t size) {
    for (size_t i = 0; i < size; i++) {
        if (data[i] != '*')
            continue;
        unsigned long long n = 0;
        for (size_t j = i + 1; j < size && data[j] >= '0' && data[j] <= '9' && n <= 65536; j++)
            n = n * 10 + (data[j] - '0');
        if (n > 65536)
            return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (huge_array(data, size))
        return 0;
    redisReader *rd = redisReaderCreate();
    if (rd == NULL)
        return 0;
    redisReaderFeed(rd, (const char *)data, size);
    cp__keycmp *k = cp__kc_new("k", 1, 1000, 100000);
    for (int step = 0; k != NULL && step < 256; step++) {
        int cs = 0, cd = 0, ns, nd;
        cp__kc_side src = {count, &cs}, dst = {count, &cd};
        if (cp__kc_append(k, &src, &dst, &ns, &nd) != 0)
            break;
        if (ns != cs || nd != cd || ns > 3 || nd > 3 || ns + nd == 0)
            abort();
        redisReply *sr[3] = {0}, *dr[3] = {0};
        int rc = 1;
        if (replies(rd, sr, ns) && replies(rd, dr, nd))
            rc = cp__kc_take(k, sr, (const redisReply *const *)dr);
        for (int i = 0; i < 3; i++) {
            freeReplyObject(sr[i]);
            freeReplyObject(dr[i]);
        }
        if (rc != 0)
            break;
    }
    if (k != NULL) {
        const char *detail;
        cp__kc_reason why = cp__kc_result(k, &detail);
        if (why < 0 || why >= CP__KC_NREASONS || strlen(detail) >= 320)
            abort();
    }
    cp__kc_free(k);
    redisReaderFree(rd);
    return 0;
}
