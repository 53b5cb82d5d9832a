/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fuzz target: bytes from a (possibly hostile) node, parsed as RESP by the library's own reader
 * (the one that reads CLUSTER SHARDS / SLOTS replies off the wire), then given to both topology
 * parsers. Neither may crash, leak or accept a map with an out-of-range slot or node index.
 * (Not hiredis's reader: Debian's 0.14 allocates an array header's element count up front, so
 * "*1111111112" alone is an 8.9 GB allocation, which the library never makes: its reader grows
 * an array with the elements that actually arrive.)
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "lib/proto/reader.h"
#include "lib/map/topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const cp__slotmap *m) {
    for (int s = 0; s < CP_SLOTS; s++)
        if (m->owner[s] < -1 || m->owner[s] >= m->nnodes)
            abort();
    for (int i = 0; i < m->nnodes; i++)
        if (m->nodes[i].port <= 0 || m->nodes[i].port > 65535 || m->nodes[i].master >= m->nnodes)
            abort();
}

static cp__nodesview view; /* 80 KB: not on the fuzzer's stack */

static void check_view(const cp__nodesview *v) {
    check(&v->map);
    if (v->myself < -1 || v->myself >= v->map.nnodes)
        abort();
    for (int s = 0; s < CP_SLOTS; s++)
        if (v->moving[s] > CP__SLOT_IMPORTING || v->peer[s] < -1 || v->peer[s] >= v->map.nnodes)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cp__reader rd = {0};
    cp__reply_arena a = {0};
    if (cp__reader_feed(&rd, (const char *)data, size) == 0) {
        redisReply *reply;
        while (cp__reader_next(&rd, &a, &reply) == 1) {
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
            if (reply->type == REDIS_REPLY_STRING &&
                cp__topo_parse_nodes(reply->str, (size_t)reply->len, "asked", &view, err,
                                     sizeof(err)) == 0) {
                check_view(&view);
                cp__slotmap_free(&view.map);
            }
        }
    }
    cp__reader_free(&rd);
    cp__arena_free(&a);
    return 0;
}
