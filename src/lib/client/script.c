/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Scripts (clusterpipe/script.h, lib/client/script.h): the cp_script object, its append as EVALSHA
 * with the EVAL form beside it, and the swap to EVAL. Who sends what when (the NOSCRIPT answer, the
 * slot held until the EVALSHA is answered) is recv.c's and send.c's; this file only builds and
 * swaps bytes. A cp_script is the caller's (made and freed by the calls here) and never changes
 * after cp_script_new; the forms appended are the pipeline's. One thread, the client's, for the
 * appends; cp_script_new, cp_script_sha and cp_script_free on any.
 */
#include "lib/base/alloc.h"
#include "lib/client/script.h"

#include "lib/proto/sha1.h"

#include <stdio.h>
#include <string.h>

struct cp_script {
    char sha[CP__SHA1_HEXLEN + 1];
    size_t len;
    char body[]; /* len bytes and a NUL */
};

cp_script *cp_script_new(const char *body, size_t len) {
    if (body == NULL && len > 0)
        return NULL;
    cp_script *s = cp__malloc(sizeof(*s) + len + 1);
    if (s == NULL)
        return NULL;
    s->len = len;
    if (len > 0)
        memcpy(s->body, body, len);
    s->body[len] = '\0';
    cp__sha1_hex(s->body, len, s->sha);
    return s;
}

void cp_script_free(cp_script *s) {
    cp__free(s);
}

const char *cp_script_sha(const cp_script *s) {
    return s->sha;
}

void cp_get_script_stats(const cp_client *pc, cp_script_stats *out) {
    *out = cp__client_of((cp_client *)pc)->script_stats;
}

/* The scratch argv of p as `name first numkeys argv...` (first: the SHA1 or the body). */
static int fill(cp_pipeline *p, const char *name, const char *first, size_t firstlen,
                const char *numkeys, int argc, const char **argv, const size_t *argvlen) {
    if (cp__pipeline_argv_reserve(p, (size_t)argc + 3) != 0)
        return CP_ENOMEM;
    p->argv[0] = name;
    p->argvlen[0] = strlen(name);
    p->argv[1] = first;
    p->argvlen[1] = firstlen;
    p->argv[2] = numkeys;
    p->argvlen[2] = strlen(numkeys);
    for (int i = 0; i < argc; i++) {
        p->argv[3 + i] = argv[i];
        p->argvlen[3 + i] = argvlen != NULL ? argvlen[i] : strlen(argv[i]);
    }
    return 0;
}

/* Records the EVAL form of user command tag, at arena[off..) (len bytes). Entries stay in tag
 * order: one left by a command taken back after its append (an async refusal) goes. */
static int add_eval(cp_pipeline *p, uint32_t tag, uint64_t off, uint32_t len) {
    while (p->nevals > 0 && p->evals[p->nevals - 1].tag >= tag)
        p->nevals--;
    if (p->nevals == p->capevals) {
        size_t ncap = p->capevals ? p->capevals * 2 : 8;
        cp__script_eval *v = cp__realloc(p->evals, ncap * sizeof(*v));
        if (v == NULL)
            return CP_ENOMEM;
        p->evals = v;
        p->capevals = ncap;
    }
    p->evals[p->nevals++] = (cp__script_eval){tag, len, off};
    return 0;
}

/* Refuses an append: the reason on the pipeline and the client, as pipeline.c's refusals. */
static int refuse(cp_pipeline *p, const char *why) {
    cp__pipeline_set_err(p, CP_EINVAL, "script: %s", why);
    return cp__client_err(p->c, CP_EINVAL, "script: %s", why);
}

int cp__script_append(cp_pipeline *p, const cp_script *s, int numkeys, int argc, const char **argv,
                      const size_t *argvlen) {
    if (s == NULL)
        return refuse(p, "no script");
    if (argc < 0 || numkeys < 0 || numkeys > argc || (argc > 0 && argv == NULL))
        return refuse(p, "numkeys must be within 0..argc, argc at least 0");
    char nk[16];
    snprintf(nk, sizeof(nk), "%d", numkeys);
    /* Inside MULTI the server queues the EVALSHA and a NOSCRIPT shows only in EXEC's reply,
     * after the rest of the unit ran: the body goes from the start. */
    int in_unit = p->c->cluster ? p->txn_open : p->multi_open;
    if (in_unit) {
        int rc = fill(p, "EVAL", s->body, s->len, nk, argc, argv, argvlen);
        return rc != 0 ? rc : cp__pipeline_append_argv(p, argc + 3, p->argv, p->argvlen, -1);
    }
    size_t off = p->arena.len, n = p->cmds.n;
    int rc = fill(p, "EVALSHA", s->sha, CP__SHA1_HEXLEN, nk, argc, argv, argvlen);
    if (rc == 0)
        rc = cp__pipeline_append_argv(p, argc + 3, p->argv, p->argvlen, -1);
    if (rc != 0)
        return rc;
    /* Recorded as user command n; its EVAL form follows its bytes in the arena, never sent
     * unless a NOSCRIPT asks for it (filled again: the append may have grown the scratch). */
    size_t eval_off = p->arena.len;
    if (fill(p, "EVAL", s->body, s->len, nk, argc, argv, argvlen) != 0 ||
        cp__format_argv(&p->arena, argc + 3, p->argv, p->argvlen) != 0 ||
        p->arena.len - eval_off > UINT32_MAX ||
        add_eval(p, (uint32_t)n, eval_off, (uint32_t)(p->arena.len - eval_off)) != 0) {
        p->cmds.n = n; /* taken back whole: an EVALSHA without its EVAL could not be retried */
        p->arena.len = off;
        return CP_ENOMEM;
    }
    p->cmds.v[n].flags |= CP__F_SCRIPT;
    return 0;
}

int cp_append_script(cp_pipeline *p, const cp_script *s, int numkeys, int argc, const char **argv,
                     const size_t *argvlen) {
    return p->executed ? CP_EINVAL : cp__script_append(p, s, numkeys, argc, argv, argvlen);
}

int cp__script_use_eval(cp_pipeline *p, uint32_t tag) {
    size_t lo = 0, hi = p->nevals;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->evals[mid].tag < tag)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == p->nevals || p->evals[lo].tag != tag || (tag & CP__PART_TAG))
        return -1;
    cp__cmd *cmd = cp__get(p, tag);
    cmd->off = p->evals[lo].off;
    cmd->len = p->evals[lo].len;
    cmd->flags &= (uint16_t)~CP__F_SCRIPT;
    return 0;
}
