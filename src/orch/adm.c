/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Admin commands over libclusterpipe single-endpoint clients (see adm.h). A cp__adm owns its
 * client and its one reusable pipeline; replies handed out by cp__adm_cmd belong to the caller.
 * Commands are formatted with hiredis's printf-like formatter and appended preformatted, so the
 * familiar "%s %b %d" formats keep working. No retries: the client's retry budget is CP_RETRY_NONE,
 * so a failure surfaces at once and the orchestration's own polling loops decide what to do.
 */
#include "orch/adm.h"

#include "clusterpipe/clusterpipe.h"
#include "util/errmsg.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CLEAN, QUEUED, DONE };

struct cp__adm {
    cp_client *c;
    cp_pipeline *p;
    int state; /* CLEAN, QUEUED (appended, not executed) or DONE (executed: reset before reuse) */
    int last;  /* CP_E* code of the last single command (0: it got a non-error reply) */
    char host[64];
    int port;
};

cp__adm *cp__adm_connect(const char *host, int port, const cp__adm_sec *sec, int timeout_ms,
                         char *err, size_t errlen) {
    cp__adm *a = calloc(1, sizeof(*a));
    if (a == NULL) {
        cp__seterr(err, errlen, "%s:%d: out of memory", host, port);
        return NULL;
    }
    snprintf(a->host, sizeof(a->host), "%s", host);
    a->port = port;
    char ep[96];
    snprintf(ep, sizeof(ep), "%s:%d", host, port);
    cp_options o = CP_OPTIONS_INIT;
    o.endpoint = ep;
    o.connect_timeout_ms = timeout_ms;
    o.io_timeout_ms = timeout_ms;
    o.retry_budget_ms = CP_RETRY_NONE;
    if (sec != NULL) {
        o.password = sec->password;
        if (sec->tls_ca != NULL) {
            o.tls = 1;
            o.tls_ca_file = sec->tls_ca;
            o.tls_cert_file = sec->tls_cert;
            o.tls_key_file = sec->tls_key;
        }
    }
    a->c = cp_connect(&o);
    if (a->c == NULL) {
        cp__seterr(err, errlen, "%s:%d: out of memory", host, port);
        free(a);
        return NULL;
    }
    if (a->c->err != 0) {
        /* The library's messages name the address already ("connect to 127.0.0.1:p: ..."). */
        cp__seterr(err, errlen, "%s", a->c->errstr);
        cp__adm_free(a);
        return NULL;
    }
    if ((a->p = cp_pipeline_new(a->c)) == NULL) {
        cp__seterr(err, errlen, "%s:%d: out of memory", host, port);
        cp__adm_free(a);
        return NULL;
    }
    return a;
}

void cp__adm_free(cp__adm *a) {
    if (a == NULL)
        return;
    cp_pipeline_free(a->p);
    cp_free(a->c);
    free(a);
}

/* Makes the pipeline ready for a single command: whatever an earlier batch left is dropped. */
static void fresh(cp__adm *a) {
    if (a->state != CLEAN)
        cp_pipeline_reset(a->p);
    a->state = QUEUED;
}

/* Why command k has no usable reply: its error reply (CP_ESERVER), or how the transport failed
 * (the pipeline's code, CP_EIO when it has none). Returns 0 when reply k is a non-error answer. */
static int reply_problem(cp__adm *a, size_t k, char *err, size_t errlen) {
    const redisReply *r = cp_reply(a->p, k);
    if (cp_get_outcome(a->p, k) != CP_DONE || r == NULL) {
        const char *why = cp_pipeline_errstr(a->p);
        int code = cp_pipeline_err(a->p);
        if (why != NULL && *why) /* the library's message names the address */
            cp__seterr(err, errlen, "%s", why);
        else
            cp__seterr(err, errlen, "%s:%d: no answer", a->host, a->port);
        return code < 0 && code != CP_EPARTIAL ? code : CP_EIO;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        cp__seterr(err, errlen, "%.*s", (int)r->len, r->str);
        return CP_ESERVER;
    }
    return 0;
}

/* Executes the single queued command; its outcome goes to a->last (0, or a CP_E* code with err). */
static void exec_single(cp__adm *a, char *err, size_t errlen) {
    cp_exec(a->p);
    a->state = DONE;
    a->last = reply_problem(a, 0, err, errlen);
}

/* Executes the single queued command and hands its reply to the caller (NULL + err on an error
 * reply or a transport failure). */
static redisReply *run_single(cp__adm *a, char *err, size_t errlen) {
    exec_single(a, err, errlen);
    return a->last == 0 ? cp_take_reply(a->p, 0) : NULL;
}

/* Formats with hiredis's printf-like formatter and appends the result. 0, CP_EINVAL (hiredis
 * could not format it) or the library's code (CP_ENOMEM). */
static int append_v(cp__adm *a, const char *fmt, va_list ap) {
    char *cmd = NULL;
    int len = redisvFormatCommand(&cmd, fmt, ap);
    if (len < 0)
        return CP_EINVAL;
    int rc = cp_append_formatted(a->p, cmd, (size_t)len);
    redisFreeCommand(cmd);
    return rc;
}

/* Starts a single command on a fresh pipeline; on failure a->last and err say why. */
static int queue_single(cp__adm *a, char *err, size_t errlen, const char *fmt, va_list ap) {
    fresh(a);
    a->last = append_v(a, fmt, ap);
    if (a->last != 0)
        cp__seterr(err, errlen, "cannot format command '%s'", fmt);
    return a->last;
}

redisReply *cp__adm_cmd(cp__adm *a, char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = queue_single(a, err, errlen, fmt, ap);
    va_end(ap);
    return rc != 0 ? NULL : run_single(a, err, errlen);
}

redisReply *cp__adm_argv(cp__adm *a, int argc, const char **argv, const size_t *lens, char *err,
                         size_t errlen) {
    fresh(a);
    a->last = cp_append_argv(a->p, argc, argv, lens);
    if (a->last != 0) {
        cp__seterr(err, errlen, "cannot append %s", argc > 0 ? argv[0] : "an empty command");
        return NULL;
    }
    return run_single(a, err, errlen);
}

int cp__adm_ok(cp__adm *a, char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int rc = queue_single(a, err, errlen, fmt, ap);
    va_end(ap);
    if (rc == 0)
        exec_single(a, err, errlen);
    return a->last;
}

int cp__adm_last(const cp__adm *a) {
    return a->last;
}

int cp__adm_append(cp__adm *a, const char *fmt, ...) {
    /* A batch that was executed is over: the first append after it starts a new one. */
    if (a->state == DONE)
        cp_pipeline_reset(a->p);
    a->state = QUEUED;
    va_list ap;
    va_start(ap, fmt);
    int rc = append_v(a, fmt, ap);
    va_end(ap);
    return rc;
}

int cp__adm_flush(cp__adm *a, char *err, size_t errlen) {
    cp_exec(a->p);
    a->state = DONE;
    int rc = 0;
    char first[512] = "";
    for (size_t k = 0; k < cp_count(a->p); k++) {
        int e = reply_problem(a, k, rc == 0 ? first : NULL, rc == 0 ? sizeof(first) : 0);
        if (rc == 0)
            rc = e;
    }
    if (rc != 0)
        cp__seterr(err, errlen, "%s", first);
    return rc;
}

const redisReply *cp__adm_reply(const cp__adm *a, size_t k) {
    if (k >= cp_count(a->p) || cp_get_outcome(a->p, k) != CP_DONE)
        return NULL;
    return cp_reply(a->p, k);
}

int cp__info_field(const char *info, const char *field, char *out, size_t len) {
    size_t fl = strlen(field);
    for (const char *p = info; p != NULL && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, field, fl) == 0 && p[fl] == ':') {
            const char *v = p + fl + 1;
            size_t n = strcspn(v, "\r\n");
            if (n >= len)
                n = len - 1;
            memcpy(out, v, n);
            out[n] = '\0';
            return 0;
        }
    }
    return CP_EPROTO;
}

int cp__adm_info(cp__adm *a, const char *section, const char *field, char *out, size_t len,
                 char *err, size_t errlen) {
    redisReply *r = cp__adm_cmd(a, err, errlen, "INFO %s", section);
    if (r == NULL)
        return a->last;
    int rc = CP_EPROTO;
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
        rc = cp__info_field(r->str, field, out, len);
    if (rc != 0)
        cp__seterr(err, errlen, "INFO %s has no %s", section, field);
    cp_reply_free(r);
    return rc;
}
