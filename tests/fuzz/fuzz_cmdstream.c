/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fuzz target: the replication stream's reader (src/migrate/cmdstream.h), which reads what a
 * replication source sends after its snapshot. The first byte picks the size of the pieces the
 * rest is fed in (1 to 256). It may not crash or read out of bounds; fed in pieces it must give
 * what it gives fed in one piece (the same commands at the same offsets, the same answer); each
 * command's offsets follow the last one's, its arguments lie inside what was fed, and the offset
 * after the last command never passes what was received.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "migrate/cmdstream.h"
#include "migrate/crc64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run(const uint8_t *data, size_t size, size_t piece, uint64_t *digest) {
    cp__cmdstream *s = cp__cmds_new(100);
    if (s == NULL)
        abort();
    size_t fed = 0;
    uint64_t at = 100;
    int rc;
    cp__cmd c;
    *digest = 0;
    for (;;) {
        rc = cp__cmds_next(s, &c);
        if (rc == CP__CMDS_CMD) {
            if (c.offset != at || c.end <= c.offset || c.end > cp__cmds_received(s) ||
                cp__cmds_offset(s) != c.end || c.argc < 0 || (c.argc > 0) != (c.argv != NULL))
                abort();
            at = c.end;
            uint64_t h[3] = {c.offset, c.end, (uint64_t)c.argc};
            *digest = cp__crc64(*digest, h, sizeof h);
            for (int i = 0; i < c.argc; i++) {
                if (c.argvlen[i] > c.end - c.offset || c.argv[i][c.argvlen[i]] != '\0')
                    abort();
                *digest = cp__crc64(*digest, c.argv[i], c.argvlen[i]);
            }
            continue;
        }
        if (rc == CP__CMDS_ERROR) {
            if (cp__cmds_error(s) == NULL)
                abort();
            break;
        }
        if (fed == size)
            break;
        size_t n = size - fed < piece ? size - fed : piece;
        if (cp__cmds_feed(s, data + fed, n) != 0)
            abort(); /* only out of memory refuses a feed before an error */
        fed += n;
    }
    cp__cmds_free(s);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    size_t piece = 1 + data[0];
    uint64_t whole, pieces;
    int a = run(data + 1, size - 1, size, &whole);
    int b = run(data + 1, size - 1, piece, &pieces);
    if (a != b || whole != pieces)
        abort();
    return 0;
}
