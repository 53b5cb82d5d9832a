/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Push frames (push.h).
 */
#include "lib/pubsub/push.h"

#include "lib/proto/reply.h"

void cp_set_push_callback(cp_client *pc, cp_push_fn *fn, void *data) {
    cp__client *c = cp__client_of(pc);
    c->push_cb = fn;
    c->push_data = fn != NULL ? data : NULL;
}

void cp__push_deliver(cp__client *c, int n, const redisReply *r) {
    c->stats.pushes++;
    if (c->push_cb == NULL)
        return;
    const redisReply *k = r->elements > 0 ? r->element[0] : NULL;
    c->push_cb(&c->pub, n, cp__reply_is_text(k) ? k->str : "", r, c->push_data);
}
