/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fuzz target: the bench's reply verifier, which reads whatever a server (or a bug) sends as a
 * GET reply. The first byte picks the key length; the rest is the key then the reply. The
 * verifier must never crash or read out of bounds, and must accept exactly what cp__value_fill
 * makes for that key.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/keyspace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    size_t keylen = data[0] % 40;
    if (size - 1 < keylen)
        return 0;
    const char *key = (const char *)data + 1;
    const char *reply = key + keylen;
    size_t len = size - 1 - keylen;
    cp__valuefmt v;
    if (cp__valuefmt_init(&v, 64, 40, true) != 0)
        return 0;
    /* The reply in its own allocation, so ASan sees any over-read. */
    char *copy = malloc(len ? len : 1);
    memcpy(copy, reply, len);
    uint32_t version = 0;
    cp__value_verify(&v, copy, len, key, keylen, &version);
    free(copy);
    /* Round trip: what fill writes for this key must verify, with its version. */
    char buf[64];
    if (cp__value_fill(&v, key, keylen, 12345, buf) > 0 &&
        (cp__value_verify(&v, buf, v.value_size, key, keylen, &version) != CP__VERIFY_OK ||
         version != 12345))
        abort();
    cp__valuefmt_free(&v);
    return 0;
}
