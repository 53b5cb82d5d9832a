/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Synchronous admin commands over hiredis (see adm.h). Contexts and replies belong to the
 * caller; nothing is cached. One thread per context.
 */
#include "orch/adm.h"

#include "orch/util.h"

#include <stdarg.h>
#include <string.h>
#include <sys/time.h>

redisContext *cp__adm_connect(const char *host, int port, const char *password, int timeout_ms,
                              char *err, size_t errlen) {
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (c == NULL) {
        cp__seterr(err, errlen, "%s:%d: out of memory", host, port);
        return NULL;
    }
    if (c->err) {
        cp__seterr(err, errlen, "%s:%d: %s", host, port, c->errstr);
        redisFree(c);
        return NULL;
    }
    if (redisSetTimeout(c, tv) != REDIS_OK) {
        cp__seterr(err, errlen, "%s:%d: cannot set timeout", host, port);
        redisFree(c);
        return NULL;
    }
    if (password != NULL && *password != '\0') {
        char e[256];
        redisReply *r = cp__adm_cmd(c, e, sizeof(e), "AUTH %s", password);
        if (r == NULL) {
            cp__seterr(err, errlen, "%s:%d: AUTH: %s", host, port, e);
            redisFree(c);
            return NULL;
        }
        freeReplyObject(r);
    }
    return c;
}

/* Turns a hiredis result into our convention: NULL + err for transport errors and error
 * replies, the reply otherwise. */
static redisReply *check_reply(redisContext *c, redisReply *r, char *err, size_t errlen) {
    if (r == NULL) {
        cp__seterr(err, errlen, "%s", c->errstr[0] ? c->errstr : "connection lost");
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        cp__seterr(err, errlen, "%.*s", (int)r->len, r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

redisReply *cp__adm_cmd(redisContext *c, char *err, size_t errlen, const char *fmt, ...) {
    if (c->err) {
        cp__seterr(err, errlen, "%s", c->errstr);
        return NULL;
    }
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    return check_reply(c, r, err, errlen);
}

redisReply *cp__adm_argv(redisContext *c, int argc, const char **argv, const size_t *lens,
                         char *err, size_t errlen) {
    if (c->err) {
        cp__seterr(err, errlen, "%s", c->errstr);
        return NULL;
    }
    redisReply *r = redisCommandArgv(c, argc, argv, lens);
    return check_reply(c, r, err, errlen);
}

int cp__adm_ok(redisContext *c, char *err, size_t errlen, const char *fmt, ...) {
    if (c->err) {
        cp__seterr(err, errlen, "%s", c->errstr);
        return -1;
    }
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    r = check_reply(c, r, err, errlen);
    if (r == NULL)
        return -1;
    freeReplyObject(r);
    return 0;
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
    return -1;
}

int cp__adm_info(redisContext *c, const char *section, const char *field, char *out, size_t len,
                 char *err, size_t errlen) {
    redisReply *r = cp__adm_cmd(c, err, errlen, "INFO %s", section);
    if (r == NULL)
        return -1;
    int rc = -1;
    if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
        rc = cp__info_field(r->str, field, out, len);
    if (rc != 0)
        cp__seterr(err, errlen, "INFO %s has no %s", section, field);
    freeReplyObject(r);
    return rc;
}
