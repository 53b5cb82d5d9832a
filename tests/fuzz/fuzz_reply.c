/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fuzz target: the reply reader (RESP2 and RESP3 server bytes, fed in two pieces split where the
 * first byte says), the redirect and error parser (an error reply's text decides where a command
 * goes next), the parser of preformatted commands (cp_append_formatted takes caller bytes), and the
 * host:port parser. None may crash, read out of bounds, or return a slot or port out of range;
 * the reader's replies must be well-formed trees.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/proto/reader.h"
#include "lib/proto/resp.h"
#include "lib/map/topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Walks a reply tree: strings NUL-terminated at their length, aggregates fully filled, a map's
 * elements in pairs, booleans 0 or 1, no attribute handed out. */
static void check_tree(const redisReply *r, int depth) {
    if (r == NULL || depth > CP__READER_DEPTH)
        abort();
    switch (r->type) {
    case CP_REPLY_STRING:
    case CP_REPLY_STATUS:
    case CP_REPLY_ERROR:
    case CP_REPLY_DOUBLE:
    case CP_REPLY_BIGNUM:
    case CP_REPLY_VERB:
        if (r->str == NULL || r->str[r->len] != '\0')
            abort();
        break;
    case CP_REPLY_BOOL:
        if (r->integer != 0 && r->integer != 1)
            abort();
        break;
    case CP_REPLY_MAP:
        if (r->elements % 2 != 0)
            abort();
        /* fall through */
    case CP_REPLY_ARRAY:
    case CP_REPLY_SET:
    case CP_REPLY_PUSH:
        for (size_t i = 0; i < r->elements; i++)
            check_tree(r->element[i], depth + 1);
        break;
    case CP_REPLY_INTEGER:
    case CP_REPLY_NIL:
        break;
    default:
        abort();
    }
}

static void read_replies(const uint8_t *data, size_t size) {
    cp__reader rd = {0};
    cp__reply_arena a = {0};
    size_t cut = size > 0 ? data[0] % (size + 1) : 0;
    const char *p = (const char *)data;
    for (int piece = 0; piece < 2; piece++) {
        size_t from = piece == 0 ? 0 : cut, to = piece == 0 ? cut : size;
        if (cp__reader_feed(&rd, p + from, to - from) != 0)
            break;
        redisReply *r;
        int rc;
        while ((rc = cp__reader_next(&rd, &a, &r)) == 1)
            check_tree(r, 0);
        if (rc < 0)
            break;
    }
    cp__reader_free(&rd);
    cp__arena_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    read_replies(data, size);

    redisReply r;
    memset(&r, 0, sizeof(r));
    r.type = REDIS_REPLY_ERROR;
    r.str = s;
    r.len = strlen(s);
    int slot = -1, port = -1;
    char host[CP__HOSTLEN];
    cp__errkind k = cp__classify(&r, &slot, host, sizeof(host), &port);
    if ((k == CP__ERR_MOVED || k == CP__ERR_ASK) &&
        (slot < 0 || slot >= CP_SLOTS || port <= 0 || port > 65535 || strlen(host) >= sizeof(host)))
        abort();

    const char *argv[8];
    size_t argvlen[8];
    int argc = cp__parse_command((const char *)data, size, argv, argvlen, 8);
    for (int i = 0; i < argc && i < 8; i++)
        if (argv[i] < (const char *)data || argv[i] + argvlen[i] > (const char *)data + size)
            abort();

    if (cp__parse_addr((const char *)data, size, host, sizeof(host), &port) == 0 &&
        (port <= 0 || port > 65535))
        abort();
    free(s);
    return 0;
}
