/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Scratch directories, stored fixtures, fixed ports, the protocol the suite runs under and a
 * command that must succeed, for the tests. Single-threaded use.
 */
#include "testutil.h"

#include "orch/ports.h"

#include <hiredis/hiredis.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <unistd.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *cp_test_mkdtemp(const char *tag) {
    const char *tmp = getenv("TMPDIR");
    if (tmp == NULL || *tmp == '\0')
        tmp = "/tmp";
    size_t n = strlen(tmp) + strlen(tag) + 32;
    char *path = malloc(n);
    if (path == NULL)
        abort();
    snprintf(path, n, "%s/cp-test-%s-XXXXXX", tmp, tag);
    if (mkdtemp(path) == NULL) {
        perror("mkdtemp");
        abort();
    }
    return path;
}

char *cp_test_read_data(const char *name, size_t *len) {
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", CP_TEST_DATA, name);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return NULL;
    }
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

int cp_test_fixed_base(int n, const char *dir) {
    for (int p = 2000 + (int)(getpid() % 350) * 20, tries = 0; tries < 400; tries++, p += 20) {
        if (p + n > 9999)
            p = 2000;
        cp__ports a;
        cp__ports_init(&a, p);
        cp__ports_set_owner(&a, dir);
        int ok = 1;
        for (int k = 0; k < n && ok; k++) {
            int port;
            char err[256];
            ok = cp__ports_take(&a, 1, &port, err, sizeof(err)) == 0;
        }
        if (ok)
            return p; /* claimed for dir: the topology started there takes them as its own */
        cp__ports_release(&a);
    }
    return -1;
}

int cp_test_listen(int port) {
    return cp__port_listen(port);
}

void cp_test_protocol(cp_options *o) {
    const char *env = getenv("CP_TEST_PROTOCOL");
    if (env == NULL || *env == '\0' || o->protocol != 0)
        return;
    if (strcmp(env, "2") != 0 && strcmp(env, "3") != 0) {
        fprintf(stderr, "CP_TEST_PROTOCOL=%s: 2 or 3\n", env);
        abort();
    }
    o->protocol = env[0] - '0';
}

redisReply *cp_test_parse_reply(const char *buf, size_t len) {
    redisReader *rd = redisReaderCreate();
    void *r = NULL, *more = NULL;
    if (rd == NULL)
        return NULL;
    int ok = redisReaderFeed(rd, buf, len) == REDIS_OK && redisReaderGetReply(rd, &r) == REDIS_OK &&
             r != NULL && redisReaderGetReply(rd, &more) == REDIS_OK && more == NULL;
    redisReaderFree(rd);
    if (more != NULL)
        freeReplyObject(more);
    if (!ok && r != NULL) {
        freeReplyObject(r);
        r = NULL;
    }
    return r;
}

redisReply *cp_test_read_reply(const char *name) {
    size_t len;
    char *buf = cp_test_read_data(name, &len);
    redisReply *r = buf != NULL ? cp_test_parse_reply(buf, len) : NULL;
    free(buf);
    return r;
}

void cp_test_ok(redisContext *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (r == NULL)
        fail_msg("%s: no answer (%s)", fmt, c->errstr);
    if (r->type == REDIS_REPLY_ERROR)
        fail_msg("%s: %s", fmt, r->str);
    freeReplyObject(r);
}

cp_node_role cp_test_role_at(cp_client *c, int port) {
    for (int i = 0; i < cp_node_count(c); i++) {
        cp_node_info n;
        assert_int_equal(cp_node_get(c, i, &n), 0);
        if (n.port == port)
            return n.role;
    }
    fail_msg("the client knows no node on port %d", port);
    return CP_NODE_OTHER;
}
