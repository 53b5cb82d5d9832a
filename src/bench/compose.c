/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Composing a batch (compose.h): a lane's next requests, taken from its queue (lanes.c), become
 * commands appended to its flight's pipeline with cp_append_argv_slot (the key's slot is
 * known): GET and SET with values made for their keys (keyspace.c), MSETs of the adjacent keys
 * that share a slot (load), or each request's template expanded (template.c; with
 * cp_append_argv when the library must find the keys itself).
 *
 * Ownership: the scratch the commands are built in (x->comp) is allocated and freed here; the
 * pipeline copies the arguments as they are appended. One thread, the worker's.
 */
#include "bench/compose.h"

#include <stdlib.h>
#include <string.h>

/* A --command run's scratch (x->comp). Returns 0 or CP_ENOMEM. */
static int setup_templates(cp__wctx *x) {
    const cp__cmdset *set = x->spec->cmds;
    size_t scratch = 1, nother = 1, ks = x->ls.keystride;
    for (int k = 0; k < set->n; k++) {
        size_t n = cp__template_scratch(&set->t[k], ks, x->spec->vf->value_size);
        scratch = n > scratch ? n : scratch;
        nother = set->t[k].nother > nother ? set->t[k].nother : nother;
    }
    x->comp.scratch = malloc(scratch);
    x->comp.tagbuf = malloc(ks + 2);
    x->comp.otherbuf = malloc(nother * ks);
    x->comp.other = malloc(nother * sizeof(*x->comp.other));
    x->comp.otherlen = malloc(nother * sizeof(*x->comp.otherlen));
    if (x->comp.scratch == NULL || x->comp.tagbuf == NULL || x->comp.otherbuf == NULL ||
        x->comp.other == NULL || x->comp.otherlen == NULL)
        return CP_ENOMEM;
    for (size_t j = 0; j < nother; j++) { /* only the digits change */
        memcpy(x->comp.otherbuf + j * ks, x->spec->kf->prefix, x->spec->kf->prefix_len);
        x->comp.other[j] = x->comp.otherbuf + j * ks;
    }
    return 0;
}

int cp__compose_init(cp__wctx *x) {
    const cp__run_spec *s = x->spec;
    size_t per_cmd = s->mset_keys > 1 ? (size_t)s->mset_keys : 1; /* keys per command, at most */
    size_t nargs = 1 + 2 * per_cmd;
    if (s->cmds != NULL)
        nargs = CP__TEMPLATE_ARGS_MAX;
    x->comp.valbuf = malloc(s->vf->value_size * per_cmd + 1);
    x->comp.argv = malloc(nargs * sizeof(*x->comp.argv));
    x->comp.argvlen = malloc(nargs * sizeof(*x->comp.argvlen));
    if (x->comp.valbuf == NULL || x->comp.argv == NULL || x->comp.argvlen == NULL)
        return CP_ENOMEM;
    return s->cmds != NULL ? setup_templates(x) : 0;
}

void cp__compose_destroy(cp__wctx *x) {
    free(x->comp.valbuf);
    free(x->comp.argv);
    free(x->comp.argvlen);
    free(x->comp.scratch);
    free(x->comp.tagbuf);
    free(x->comp.otherbuf);
    free(x->comp.other);
    free(x->comp.otherlen);
    memset(&x->comp, 0, sizeof(x->comp));
}

/* ---- --command runs: each request of a batch is its template (batch.op) expanded for its key */

/* The request's placeholders, the __otherkey__ keys drawn now from its client's own stream. */
static void subst_of(cp__wctx *x, const cp__template *t, cp__group *g, const char *key, size_t klen,
                     cp__tmpl_subst *sub) {
    const cp__run_spec *s = x->spec;
    *sub = (cp__tmpl_subst){key, klen, NULL, 0, NULL, 0, x->comp.other, x->comp.otherlen};
    if (t->ndata > 0) {
        cp__value_fill(s->vf, key, klen, s->version, x->comp.valbuf);
        sub->data = x->comp.valbuf;
        sub->datalen = cp__value_len(s->vf, key, klen);
    }
    if (t->ntag > 0) {
        sub->taglen = cp__key_tag(key, klen, x->comp.tagbuf);
        sub->tag = x->comp.tagbuf;
    }
    for (unsigned j = 0; j < t->nother; j++)
        x->comp.otherlen[j] = cp__key_format_digits(s->kf, cp__keygen_next(&g->okg),
                                                    x->comp.otherbuf + j * x->ls.keystride);
}

static size_t compose_templates(cp__wctx *x, cp__flight *fl) {
    const cp__cmdset *set = x->spec->cmds;
    const cp__reqbuf b = fl->batch;
    for (size_t i = 0; i < b.n; i++) {
        const cp__template *t = &set->t[b.op[i]];
        cp__tmpl_subst sub;
        subst_of(x, t, fl->cs->g, b.keys + i * x->ls.keystride, b.keylen[i], &sub);
        int argc = cp__template_expand(t, &sub, x->comp.scratch, x->comp.argv, x->comp.argvlen);
        int rc = t->by_slot
                     ? cp_append_argv_slot(fl->p, argc, x->comp.argv, x->comp.argvlen, b.slot[i])
                     : cp_append_argv(fl->p, argc, x->comp.argv, x->comp.argvlen);
        if (rc != 0) { /* out of memory: run what is appended */
            cp__acct_note_error(&x->w->acct, "%s", "out of memory composing a batch");
            fl->batch.n = i;
            return i;
        }
    }
    return b.n;
}
/* load: the batch as MSETs, each of the adjacent keys that share a slot (up to mset_keys). A
 * server then parses, looks up, executes and answers one command per group instead of one per
 * key. Returns the keys appended. */
static size_t compose_mset(cp__wctx *x, cp__flight *fl) {
    const cp__run_spec *s = x->spec;
    const cp__reqbuf b = fl->batch;
    size_t vs = s->vf->value_size, ncmd = 0;
    for (size_t i = 0; i < b.n;) {
        int argc = 1;
        size_t j = i;
        x->comp.argv[0] = "MSET";
        x->comp.argvlen[0] = 4;
        while (j < b.n && b.slot[j] == b.slot[i] && j - i < (size_t)s->mset_keys) {
            const char *key = b.keys + j * x->ls.keystride;
            char *val = x->comp.valbuf + (j - i) * vs;
            cp__value_fill(s->vf, key, b.keylen[j], s->version, val);
            x->comp.argv[argc] = key;
            x->comp.argvlen[argc++] = b.keylen[j];
            x->comp.argv[argc] = val;
            x->comp.argvlen[argc++] = cp__value_len(s->vf, key, b.keylen[j]);
            j++;
        }
        if (cp_append_argv_slot(fl->p, argc, x->comp.argv, x->comp.argvlen, b.slot[i]) !=
            0) { /* OOM */
            cp__acct_note_error(&x->w->acct, "%s", "out of memory composing a batch");
            fl->batch.n = i;
            return i;
        }
        fl->cmdkeys[ncmd++] = (uint16_t)(j - i);
        i = j;
    }
    return b.n;
}

size_t cp__compose_batch(cp__wctx *x, cp__client_state *cs, cp__flight *fl) {
    const cp__run_spec *s = x->spec;
    if (fl->owned) { /* open loop: the batch outlives the lane's next take */
        cp__reqbuf view;
        cp__lanes_take(&x->ls, cs->queue, &view);
        cp__reqbuf_copy(&x->ls, &fl->batch, &view);
    } else {
        cp__lanes_take(&x->ls, cs->queue, &fl->batch);
    }
    if (fl->cmdkeys != NULL)
        return compose_mset(x, fl);
    if (s->cmds != NULL)
        return compose_templates(x, fl);
    cp__reqbuf b = fl->batch;
    for (size_t i = 0; i < b.n; i++) {
        const char *key = b.keys + i * x->ls.keystride;
        size_t klen = b.keylen[i];
        int rc;
        if (b.op[i]) {
            cp__value_fill(s->vf, key, klen, b.kver != NULL ? b.kver[i] : s->version,
                           x->comp.valbuf);
            const char *argv[3] = {"SET", key, x->comp.valbuf};
            size_t lens[3] = {3, klen, cp__value_len(s->vf, key, klen)};
            rc = cp_append_argv_slot(fl->p, 3, argv, lens, b.slot[i]);
        } else {
            const char *argv[2] = {"GET", key};
            size_t lens[2] = {3, klen};
            rc = cp_append_argv_slot(fl->p, 2, argv, lens, b.slot[i]);
        }
        if (rc != 0) { /* out of memory: run what is appended */
            cp__acct_note_error(&x->w->acct, "%s", "out of memory composing a batch");
            fl->batch.n = i;
            return i;
        }
    }
    return b.n;
}
