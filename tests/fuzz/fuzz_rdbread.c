/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fuzz target: the RDB reader (src/migrate/rdbread.h) and the full sync's framing (syncframe.h),
 * which read what a replication source sends. The first byte picks the size of the pieces the
 * rest is fed in (1 to 128) and, with its top bit, whether it goes through the framing. Neither
 * may crash or read out of bounds; fed in pieces, the reader must give what it gives fed in one
 * piece (same events, same answer); every payload must be framed as DUMP frames it (its type
 * byte first, its CRC64 last); after the end, read and rest add up to what was fed.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "migrate/crc64.h"
#include "migrate/rdbread.h"
#include "migrate/syncframe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_event(const cp__rdb_event *ev) {
    if (ev->name_len > 0 && ev->name == NULL)
        abort();
    if (ev->type != CP__RDB_EV_KEY)
        return;
    if (ev->value_len < 11 || ev->value[0] != ev->value_type)
        abort();
    if (cp__crc64(0, ev->value, ev->value_len) !=
        0) /* a payload closed by its own CRC64 sums to 0 */
        abort();
}

/* Feeds data in pieces; returns the final answer, with a checksum of the events in *digest. */
static int run(const uint8_t *data, size_t size, size_t piece, int framed, uint64_t *digest) {
    cp__rdb_reader *r = framed ? NULL : cp__rdb_new();
    cp__syncframe *s = framed ? cp__sync_new() : NULL;
    if (r == NULL && s == NULL)
        abort();
    size_t fed = 0;
    int rc, ends = 0;
    cp__rdb_event ev;
    *digest = 0;
    for (;;) {
        rc = framed ? cp__sync_next(s, &ev) : cp__rdb_next(r, &ev);
        if (rc == CP__RDB_EVENT) {
            check_event(&ev);
            ends += ev.type == CP__RDB_EV_END;
            uint64_t h[4] = {(uint64_t)ev.type, ev.db, (uint64_t)ev.expire_ms, ev.name_len};
            *digest = cp__crc64(*digest, h, sizeof h);
            *digest = cp__crc64(*digest, ev.value, ev.value_len);
            continue;
        }
        if (rc == CP__RDB_ERROR) {
            if ((framed ? cp__sync_error(s) : cp__rdb_error(r)) == NULL)
                abort();
            break;
        }
        if (fed == size)
            break;
        size_t n = size - fed < piece ? size - fed : piece;
        if ((framed ? cp__sync_feed(s, data + fed, n) : cp__rdb_feed(r, data + fed, n)) != 0) {
            rc = CP__RDB_ERROR;
            break;
        }
        fed += n;
    }
    if (ends > 1)
        abort();
    if (!framed && ends == 1) {
        size_t rest;
        cp__rdb_rest(r, &rest);
        if (cp__rdb_consumed(r) + rest != size)
            abort();
    }
    cp__rdb_free(r);
    cp__sync_free(s);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    size_t piece = 1 + (data[0] & 127);
    int framed = data[0] >> 7;
    uint64_t whole, pieces;
    int a = run(data + 1, size - 1, size, framed, &whole);
    int b = run(data + 1, size - 1, piece, framed, &pieces);
    /* An error may come earlier fed in pieces (a feed refused) only if both end in error. */
    if (a != b || (a != CP__RDB_ERROR && whole != pieces))
        abort();
    return 0;
}
