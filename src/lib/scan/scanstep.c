/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The helpers both phases of a cluster SCAN call (scanstep.h): its errors, its commands for one
 * node, what a node's answers say (a MIGRATE count, a CLUSTER NODES view), and the batch of
 * keys being gathered and copied out for the caller. They write only the scan they are given
 * (its view scratch, its keys, s->out: the caller's once handed out) and the client's errstr.
 * One thread, the client's.
 */
#include "lib/base/alloc.h"
#include "lib/proto/reply.h"
#include "lib/scan/scanstep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cp__scan_err(cp_scan *s, int code, const char *fmt, ...) {
    char msg[CP_ERRSTR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return cp__client_err(s->c, code, "cp_scan: %s", msg);
}

const char *cp__scan_node_name(const cp__client *c, int n, char *buf, size_t len) {
    snprintf(buf, len, "%s:%d", c->nodes[n].host, c->nodes[n].port);
    return buf;
}

/* ---- the pipeline of a step ---- */

int cp__scan_append_node(cp_pipeline *p, int n, int argc, const char **argv, const size_t *len) {
    p->next_node = n;
    int rc = cp__pipeline_append_argv(p, argc, argv, len, -1);
    p->next_node = CP__TO_KEYS;
    return rc;
}

int cp__scan_append_node_fmt(cp_pipeline *p, int n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = cp__pipeline_append_to(p, n, fmt, ap);
    va_end(ap);
    return rc;
}

const redisReply *cp__scan_reply(cp_scan *s, cp_pipeline *p, size_t i, int n) {
    const redisReply *r = cp_reply(p, i);
    char name[CP__HOSTLEN + 8];
    if (r != NULL && r->type != REDIS_REPLY_ERROR)
        return r;
    cp__scan_err(s, CP_ESERVER, "%s: %.160s", cp__scan_node_name(s->c, n, name, sizeof(name)),
                 r != NULL ? r->str : "no reply");
    return NULL;
}

/* ---- what a node says ---- */

long long cp__scan_migrate_calls(const redisReply *r) {
    static const char tag[] = "cmdstat_migrate:calls=";
    if (!cp__reply_is_text(r)) /* INFO: a verbatim string under RESP3 */
        return -1;
    for (const char *at = r->str; (at = strstr(at, tag)) != NULL; at++)
        if (at == r->str || at[-1] == '\n')
            return strtoll(at + sizeof(tag) - 1, NULL, 10);
    return 0;
}

int cp__scan_read_view(cp_scan *s, const redisReply *r, int n) {
    char err[CP_ERRSTR_LEN];
    if (!cp__reply_is_text(r)) /* CLUSTER NODES: verbatim under RESP3 */
        return -1;
    if (cp__topo_parse_nodes(r->str, r->len, s->c->nodes[n].host, s->view, err, sizeof(err)))
        return -1;
    if (s->view->myself < 0) {
        cp__slotmap_free(&s->view->map);
        return -1;
    }
    return 0;
}

int cp__scan_client_node(cp_scan *s, const cp__nodesview *v, int i) {
    return cp__client_node(s->c, v->map.nodes[i].host, v->map.nodes[i].port);
}

/* ---- the batch ---- */

int cp__scan_add_key(cp_scan *s, const redisReply *k) {
    if (k->type != REDIS_REPLY_STRING)
        return cp__scan_err(s, CP_EPROTO, "a key that is not a string (type %d)", k->type);
    if (s->nkeys == s->capkeys) {
        size_t ncap = s->capkeys ? s->capkeys * 2 : 256;
        const redisReply **v = cp__realloc(s->keys, ncap * sizeof(*v));
        if (v == NULL)
            return cp__scan_err(s, CP_ENOMEM, "out of memory");
        s->keys = v;
        s->capkeys = ncap;
    }
    s->keys[s->nkeys++] = k;
    return 0;
}

int cp__scan_emit(cp_scan *s) {
    if (s->nkeys == 0)
        return 0;
    redisReply batch;
    memset(&batch, 0, sizeof(batch));
    batch.type = REDIS_REPLY_ARRAY;
    batch.elements = s->nkeys;
    batch.element = (redisReply **)(void *)s->keys;
    s->out = cp__reply_dup(&batch);
    s->nkeys = 0;
    if (s->out == NULL)
        return cp__scan_err(s, CP_ENOMEM, "out of memory");
    s->st.keys += s->out->elements;
    if (s->phase == CP__SCAN_PH_REREAD)
        s->st.keys_reread += s->out->elements;
    return 0;
}
