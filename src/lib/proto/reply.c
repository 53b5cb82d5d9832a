/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The public calls on replies: a copy the caller owns, and the values of RESP3's types that
 * hiredis 0.14's struct has no field for (reply.h).
 */
#include "lib/proto/reply.h"

#include <math.h>
#include <stdlib.h>

#include "lib/proto/replyarena.h"

redisReply *cp_reply_dup(const redisReply *r) {
    return cp__reply_dup(r);
}

double cp_reply_double(const redisReply *r) {
    if (r == NULL)
        return NAN;
    if (r->type == CP_REPLY_INTEGER || r->type == CP_REPLY_BOOL)
        return (double)r->integer;
    if ((r->type != CP_REPLY_DOUBLE && r->type != CP_REPLY_STRING && r->type != CP_REPLY_STATUS &&
         r->type != CP_REPLY_BIGNUM) ||
        r->str == NULL || r->len == 0)
        return NAN;
    char *end;
    double v = strtod(r->str, &end); /* str ends with a NUL: the reader and cp_reply_dup add it */
    return end == r->str + r->len ? v : NAN;
}

int cp_reply_verbatim_format(const redisReply *r, char out[4]) {
    if (r == NULL || r->type != CP_REPLY_VERB)
        return CP_EINVAL;
    unsigned long long v = (unsigned long long)r->integer;
    out[0] = (char)(v & 0xff);
    out[1] = (char)(v >> 8 & 0xff);
    out[2] = (char)(v >> 16 & 0xff);
    out[3] = '\0';
    return 0;
}
