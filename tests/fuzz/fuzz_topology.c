/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fuzz target: bytes from a (possibly hostile) node, parsed as RESP by hiredis's reader, then
 * given to both topology parsers. Neither may crash, leak or accept a map with an out-of-range
 * slot or node index.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "lib/topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const cp__slotmap *m) {
    for (int s = 0; s < CP_SLOTS; s++)
        if (m->owner[s] < -1 || m->owner[s] >= m->nnodes)
            abort();
    for (int i = 0; i < m->nnodes; i++)
        if (m->nodes[i].port <= 0 || m->nodes[i].port > 65535 || m->nodes[i].master >= m->nnodes)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    redisReader *rd = redisReaderCreate();
    if (rd == NULL || redisReaderFeed(rd, (const char *)data, size) != REDIS_OK) {
        redisReaderFree(rd);
        return 0;
    }
    void *reply = NULL;
    while (redisReaderGetReply(rd, &reply) == REDIS_OK && reply != NULL) {
        cp__slotmap m;
        char err[128];
        if (cp__topo_parse_shards(reply, "asked", 1, &m, err, sizeof(err)) == 0) {
            check(&m);
            cp__slotmap_free(&m);
        }
        if (cp__topo_parse_slots(reply, "asked", &m, err, sizeof(err)) == 0) {
            check(&m);
            cp__slotmap_free(&m);
        }
        freeReplyObject(reply);
        reply = NULL;
    }
    redisReaderFree(rd);
    return 0;
}
