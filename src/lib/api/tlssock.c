/* SPDX-License-Identifier: BSD-3-Clause
 *
 * TLS on a caller's socket (clusterpipe/tls.h): a context and a session of the library's own TLS
 * (lib/net/tls.h), built from a client's options as a client builds them.
 */
#include "clusterpipe/tls.h"
#include "lib/base/alloc.h"
#include "lib/net/tls.h"

#include <stdio.h>

struct cp_tls {
    struct ssl_ctx_st *ctx;
    struct ssl_st *ssl;
    char host[256]; /* the name the certificate is verified against */
};

cp_tls *cp_tls_new(const cp_options *o, int fd, const char *host, char *err, size_t errlen) {
    cp_tls *t = cp__calloc(1, sizeof *t);
    if (t == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    snprintf(t->host, sizeof t->host, "%s", o->tls_server_name != NULL ? o->tls_server_name : host);
    cp__tlsopts opts = {o->tls_ca_file, o->tls_cert_file, o->tls_key_file, o->tls_insecure};
    if ((t->ctx = cp__tls_ctx_new(&opts, err, errlen)) == NULL ||
        (t->ssl = cp__tls_start(t->ctx, fd, t->host, err, errlen)) == NULL) {
        cp_tls_free(t);
        return NULL;
    }
    return t;
}

int cp_tls_handshake(cp_tls *t, int *want_read, char *err, size_t errlen) {
    return cp__tls_step(t->ssl, t->host, want_read, err, errlen);
}

ssize_t cp_tls_read(cp_tls *t, void *buf, size_t len, char *err, size_t errlen) {
    return cp__tls_read(t->ssl, buf, len, err, errlen);
}

ssize_t cp_tls_write(cp_tls *t, const void *buf, size_t len, char *err, size_t errlen) {
    return cp__tls_write(t->ssl, buf, len, err, errlen);
}

size_t cp_tls_pending(const cp_tls *t) {
    return cp__tls_pending(t->ssl);
}

void cp_tls_free(cp_tls *t) {
    if (t == NULL)
        return;
    cp__tls_free(t->ssl);
    if (t->ctx != NULL)
        cp__tls_ctx_free(t->ctx);
    cp__free(t);
}
