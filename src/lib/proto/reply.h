/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Reply shapes: what the library's own readers of replies (the slot map, the command table,
 * SCAN, fan-out merges, subscribers) accept under both protocols. RESP3 answers with a map where
 * RESP2 gives a flat key/value array (CLUSTER SHARDS, COMMAND's key specs), a set where it gives
 * an array (COMMAND's flags), and a verbatim string where it gives a bulk string (CLUSTER NODES,
 * INFO); a map's elements are the same key, value, key, value as that array's, so a reader that
 * takes a list takes either. Header only; no state.
 */
#ifndef CLUSTERPIPE_REPLY_H
#define CLUSTERPIPE_REPLY_H

#include <hiredis/hiredis.h>

#include "clusterpipe/clusterpipe.h"

/* An attribute (RESP3 "|"): the reader drops it, so no reply handed out has this type. */
#define CP__REPLY_ATTR 11

/* An array, map or set: elements to read in order. */
static inline int cp__reply_is_list(const redisReply *r) {
    return r != NULL &&
           (r->type == CP_REPLY_ARRAY || r->type == CP_REPLY_MAP || r->type == CP_REPLY_SET);
}

/* Text in str/len: a bulk or verbatim string, or a status. */
static inline int cp__reply_is_text(const redisReply *r) {
    return r != NULL &&
           (r->type == CP_REPLY_STRING || r->type == CP_REPLY_STATUS || r->type == CP_REPLY_VERB);
}

/* A verbatim string's three-letter format, kept in its integer field (0.14's struct has no
 * other: docs/api.md, "Replies"). */
static inline long long cp__verbatim_pack(const char *fmt) {
    return (long long)((unsigned char)fmt[0] | (unsigned)(unsigned char)fmt[1] << 8 |
                       (unsigned)(unsigned char)fmt[2] << 16);
}

#endif
