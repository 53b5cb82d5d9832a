/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Splitting multi-key commands (MGET, MSET, DEL, EXISTS, UNLINK, TOUCH) whose keys span slots
 * into one part per slot, and merging the parts' replies back into the one reply the caller
 * expects, in the caller's key order. Only with CP_OPT_SPLIT_MULTIKEY: the result is not atomic,
 * since parts run on different nodes at different times. Parts live in the pipeline's parts
 * vector; their replies stay owned by the pipeline. One thread.
 */
#include "lib/base/alloc.h"
#include "lib/client/pipeline.h"

#include <stdlib.h>
#include <string.h>

int cp__split(cp_pipeline *p, size_t i, int first, int step, int nkeys) {
    cp__cmd cmd = p->cmds.v[i];
    int argc =
        cp__parse_command(p->arena.data + cmd.off, cmd.len, p->argv, p->argvlen, (int)p->capargv);
    if (argc > (int)p->capargv) {
        if (cp__pipeline_argv_reserve(p, (size_t)argc) != 0)
            return CP_ENOMEM;
    }
    /* Reserve the parts' bytes up front, so pointers into the arena stay valid below. Each part
     * repeats the command name and headers, and together they hold the original arguments. */
    if (cp__buf_reserve(&p->arena, (size_t)cmd.len * 2 + (size_t)argc * 64) != 0)
        return CP_ENOMEM;
    argc =
        cp__parse_command(p->arena.data + cmd.off, cmd.len, p->argv, p->argvlen, (int)p->capargv);
    int16_t *part_of = cp__malloc(CP_SLOTS * sizeof(int16_t));
    const char **pargv = cp__malloc((size_t)argc * sizeof(*pargv));
    size_t *plen = cp__malloc((size_t)argc * sizeof(*plen));
    int rc = CP_ENOMEM;
    if (part_of == NULL || pargv == NULL || plen == NULL)
        goto out;
    memset(part_of, 0xff, CP_SLOTS * sizeof(int16_t));
    uint32_t part0 = (uint32_t)p->parts.n, nparts = 0;
    for (int k = 0; k < nkeys; k++) {
        int a = first + k * step;
        unsigned s = cp_keyslot(p->argv[a], p->argvlen[a]);
        if (part_of[s] >= 0)
            continue;
        part_of[s] = (int16_t)nparts++;
        /* This part: the command name, then every key group (key, or key value) of slot s. */
        int pargc = 0;
        pargv[pargc] = p->argv[0];
        plen[pargc++] = p->argvlen[0];
        for (int k2 = k; k2 < nkeys; k2++) {
            int a2 = first + k2 * step;
            if (cp_keyslot(p->argv[a2], p->argvlen[a2]) != s)
                continue;
            for (int g = 0; g < step && a2 + g < argc; g++) {
                pargv[pargc] = p->argv[a2 + g];
                plen[pargc++] = p->argvlen[a2 + g];
            }
        }
        size_t off = p->arena.len;
        if (cp__format_argv(&p->arena, pargc, pargv, plen) != 0)
            goto undo;
        cp__cmd *part = cp__cmdvec_add(&p->parts);
        if (part == NULL)
            goto undo;
        part->off = off;
        part->len = (uint32_t)(p->arena.len - off);
        part->slot = (int32_t)s;
        part->parent = (int32_t)i;
        part->flags = cmd.flags & (CP__F_READONLY | CP__F_DROPS);
    }
    p->cmds.v[i].flags |= CP__F_SPLIT;
    p->cmds.v[i].part0 = part0;
    p->cmds.v[i].nparts = nparts;
    rc = 0;
    goto out;
undo:
    p->parts.n = part0;
out:
    cp__free(part_of);
    cp__free(pargv);
    cp__free(plen);
    return rc;
}

int cp__fan_out(cp_pipeline *p, size_t i) {
    cp__client *c = p->c;
    uint32_t part0 = (uint32_t)p->parts.n, nparts = 0;
    for (int n = 0; n < c->nnodes; n++) {
        if (!c->nodes[n].is_master || c->nodes[n].role_unsure) /* a replica, likely: refresh.c */
            continue;
        cp__cmd *part = cp__cmdvec_add(&p->parts);
        if (part == NULL) {
            p->parts.n = part0;
            return CP_ENOMEM;
        }
        const cp__cmd *cmd = &p->cmds.v[i];
        part->off = cmd->off; /* the same bytes, to each master */
        part->len = cmd->len;
        part->slot = CP__SLOT_NODE;
        part->node = n;
        part->parent = (int32_t)i;
        /* WATCH: UNWATCH's. WAIT: each master's connection holds its I/O deadline for it. */
        part->flags = cmd->flags & (CP__F_READONLY | CP__F_WATCH | CP__F_DROPS | CP__F_WAIT);
        if (cmd->flags & CP__F_WAIT)
            part->block_ms = cmd->block_ms;
        nparts++;
    }
    if (nparts == 0)
        return CP_ETOPOLOGY;
    p->cmds.v[i].flags |= CP__F_SPLIT;
    p->cmds.v[i].part0 = part0;
    p->cmds.v[i].nparts = nparts;
    return 0;
}

/* KEYS: every part's elements, one part after another (shared, not copied). NODES: an array of
 * the parts' replies, in node order. */
static redisReply *merge_concat(cp_pipeline *p, const cp__cmd *cmd, cp__cmd *parts, int nodes) {
    size_t n = 0;
    for (uint32_t j = 0; j < cmd->nparts; j++)
        n += nodes ? 1 : parts[j].reply->elements;
    redisReply *out = cp__arena_array(&p->replies, n);
    if (out == NULL)
        return NULL;
    n = 0;
    for (uint32_t j = 0; j < cmd->nparts; j++)
        if (nodes)
            out->element[n++] = parts[j].reply;
        else
            for (size_t k = 0; k < parts[j].reply->elements; k++)
                out->element[n++] = parts[j].reply->element[k];
    return out;
}

/* SCRIPT LOAD, FUNCTION LOAD: the answer, when every master gave the same one. */
static int same_reply(const redisReply *a, const redisReply *b) {
    return a->type == b->type && a->len == b->len && a->integer == b->integer &&
           (a->len == 0 || memcmp(a->str, b->str, a->len) == 0);
}

/* MGET: element k of the merged array is the next unread element of the part that holds key k's
 * slot; within a part, keys keep the caller's order. */
static redisReply *merge_array(cp_pipeline *p, const cp__cmd *cmd, cp__cmd *parts) {
    int argc =
        cp__parse_command(p->arena.data + cmd->off, cmd->len, p->argv, p->argvlen, (int)p->capargv);
    size_t *cursor = cp__calloc(cmd->nparts, sizeof(size_t));
    redisReply *out = cursor ? cp__arena_array(&p->replies, (size_t)(argc - 1)) : NULL;
    if (out == NULL) {
        cp__free(cursor);
        return NULL;
    }
    for (int k = 1; k < argc; k++) {
        unsigned s = cp_keyslot(p->argv[k], p->argvlen[k]);
        for (uint32_t j = 0; j < cmd->nparts; j++) {
            redisReply *pr = parts[j].reply;
            if ((unsigned)parts[j].slot != s || cursor[j] >= pr->elements)
                continue;
            out->element[k - 1] = pr->element[cursor[j]];
            cursor[j]++;
            break;
        }
    }
    cp__free(cursor);
    return out;
}

void cp__merge_parts(cp_pipeline *p, size_t i) {
    cp__cmd *cmd = &p->cmds.v[i];
    cp__cmd *parts = &p->parts.v[cmd->part0];
    int done = 0, unknown = 0;
    redisReply *error = NULL;
    for (uint32_t j = 0; j < cmd->nparts; j++) {
        done += parts[j].outcome == CP_DONE;
        unknown += parts[j].outcome == CP_UNKNOWN;
        if (error == NULL && parts[j].reply && parts[j].reply->type == REDIS_REPLY_ERROR)
            error = parts[j].reply;
    }
    if ((uint32_t)done < cmd->nparts) {
        /* Part ran and part did not (or may have): as a whole, the effect is unknown. */
        cmd->outcome = (done > 0 || unknown > 0) ? CP_UNKNOWN : CP_NOT_EXECUTED;
        cmd->reply = error; /* NULL or a part's error, in the same arena */
        return;
    }
    cmd->outcome = CP_DONE;
    if (error != NULL && cmd->merge != CP__MERGE_NODES) {
        cmd->reply = error;
        return;
    }
    long long sum = 0;
    int shape_ok = 1;
    for (uint32_t j = 0; j < cmd->nparts; j++) {
        int t = parts[j].reply->type;
        if (cmd->merge == CP__MERGE_SUM && t == REDIS_REPLY_INTEGER)
            sum += parts[j].reply->integer;
        else if ((cmd->merge == CP__MERGE_SUM) ||
                 ((cmd->merge == CP__MERGE_ARRAY || cmd->merge == CP__MERGE_CONCAT) &&
                  t != REDIS_REPLY_ARRAY) ||
                 (cmd->merge == CP__MERGE_OK && t != REDIS_REPLY_STATUS) ||
                 (cmd->merge == CP__MERGE_SAME && !same_reply(parts[j].reply, parts[0].reply)))
            shape_ok = 0;
    }
    if (!shape_ok)
        cmd->reply =
            cp__arena_error(&p->replies, cmd->merge == CP__MERGE_SAME
                                             ? "ERR the masters gave different answers"
                                             : "ERR unexpected reply to a part of a split command");
    else if (cmd->merge == CP__MERGE_CONCAT || cmd->merge == CP__MERGE_NODES)
        cmd->reply = merge_concat(p, cmd, parts, cmd->merge == CP__MERGE_NODES);
    else if (cmd->merge == CP__MERGE_SAME)
        cmd->reply = parts[0].reply;
    else if (cmd->merge == CP__MERGE_SUM)
        cmd->reply = cp__arena_integer(&p->replies, sum);
    else if (cmd->merge == CP__MERGE_OK)
        cmd->reply = cp__arena_status(&p->replies, "OK");
    else
        cmd->reply = merge_array(p, cmd, parts);
    if (cmd->reply == NULL)
        cp__pipeline_set_err(p, CP_ENOMEM, "out of memory merging the replies of command %zu", i);
}
