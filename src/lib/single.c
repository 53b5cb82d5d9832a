/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The blocking one-command calls, cp_command and cp_command_argv: a pipeline of one, run on the
 * pipeline the client caches for them (c->single, made on first use, freed by cp_free). The
 * reply is handed to the caller (freeReplyObject). Sits above both the client and the pipeline,
 * so neither includes the other. One thread at a time, as the client.
 */
#include "lib/pipeline.h"

#include <stdarg.h>

/* A pipeline of one command, reusing the client's cached pipeline. */
static redisReply *run_single(cp__client *c) {
    cp_pipeline *p = c->single;
    int rc = cp_exec(p);
    redisReply *r = NULL;
    if (cp_get_outcome(p, 0) == CP_DONE)
        r = cp_take_reply(p, 0);
    else
        cp__client_err(c, rc ? cp_pipeline_err(p) : CP_EPARTIAL, "%s", cp_pipeline_errstr(p));
    cp_pipeline_reset(p);
    return r;
}

static int ensure_single(cp__client *c) {
    if (c->single == NULL && (c->single = cp_pipeline_new(&c->pub)) == NULL)
        return cp__client_err(c, CP_ENOMEM, "out of memory");
    cp_pipeline_reset(c->single);
    return 0;
}

redisReply *cp_command(cp_client *pc, const char *fmt, ...) {
    cp__client *c = cp__client_of(pc);
    if (ensure_single(c) != 0)
        return NULL;
    va_list ap;
    va_start(ap, fmt);
    int rc = cp__pipeline_appendv(c->single, fmt, ap);
    va_end(ap);
    if (rc != 0) {
        cp__client_err(c, rc, "cannot format command: %s", cp_strerror(rc));
        return NULL;
    }
    return run_single(c);
}

redisReply *cp_command_argv(cp_client *pc, int argc, const char **argv, const size_t *argvlen) {
    cp__client *c = cp__client_of(pc);
    if (ensure_single(c) != 0)
        return NULL;
    int rc = cp_append_argv(c->single, argc, argv, argvlen);
    if (rc != 0) {
        cp__client_err(c, rc, "cannot append command: %s", cp_strerror(rc));
        return NULL;
    }
    return run_single(c);
}
