/* SPDX-License-Identifier: BSD-3-Clause
 *
 * TLS with OpenSSL: client contexts, a handshake in non-blocking steps, and
 * non-blocking record I/O. See tls.h. Contexts belong to a client, sessions to a connection;
 * one thread each. OpenSSL 1.1+ initialises itself, so there is no global setup here.
 */
#include "lib/net/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/* The most specific OpenSSL reason, for messages. */
static void ssl_reason(char *err, size_t errlen, const char *what) {
    unsigned long e = ERR_get_error();
    char buf[160] = "";
    if (e != 0)
        ERR_error_string_n(e, buf, sizeof(buf));
    ERR_clear_error();
    snprintf(err, errlen, "%s%s%s", what, buf[0] ? ": " : "", buf);
}

SSL_CTX *cp__tls_ctx_new(const cp__tlsopts *o, char *err, size_t errlen) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        ssl_reason(err, errlen, "TLS context");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* Our output buffer may move between a short write and its retry. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (o->insecure) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        int ok = o->ca_file ? SSL_CTX_load_verify_locations(ctx, o->ca_file, NULL)
                            : SSL_CTX_set_default_verify_paths(ctx);
        if (ok != 1) {
            ssl_reason(err, errlen, o->ca_file ? o->ca_file : "default CA paths");
            SSL_CTX_free(ctx);
            return NULL;
        }
    }
    if (o->cert_file != NULL &&
        (SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) != 1 ||
         SSL_CTX_use_PrivateKey_file(ctx, o->key_file ? o->key_file : o->cert_file,
                                     SSL_FILETYPE_PEM) != 1)) {
        ssl_reason(err, errlen, o->cert_file);
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

void cp__tls_ctx_free(SSL_CTX *ctx) {
    SSL_CTX_free(ctx);
}

/* Names the peer to verify: an IP literal is checked against the certificate's IP SANs, a name
 * against its DNS names (and sent as SNI). */
static int expect_peer(SSL *s, const char *host) {
    unsigned char tmp[16];
    int is_ip = inet_pton(AF_INET, host, tmp) == 1 || inet_pton(AF_INET6, host, tmp) == 1;
    if (is_ip)
        return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), host) == 1 ? 0 : -1;
    if (SSL_set_tlsext_host_name(s, host) != 1 || SSL_set1_host(s, host) != 1)
        return -1;
    return 0;
}

SSL *cp__tls_start(SSL_CTX *ctx, int fd, const char *host, char *err, size_t errlen) {
    SSL *s = SSL_new(ctx);
    if (s == NULL || SSL_set_fd(s, fd) != 1 || expect_peer(s, host) != 0) {
        ssl_reason(err, errlen, "TLS session");
        SSL_free(s);
        return NULL;
    }
    return s;
}

int cp__tls_step(SSL *s, const char *host, int *want_read, char *err, size_t errlen) {
    int rc = SSL_connect(s);
    if (rc == 1)
        return 1;
    int why = SSL_get_error(s, rc);
    if (why == SSL_ERROR_WANT_READ || why == SSL_ERROR_WANT_WRITE) {
        *want_read = why == SSL_ERROR_WANT_READ;
        return 0;
    }
    long v = SSL_get_verify_result(s);
    if (v != X509_V_OK)
        snprintf(err, errlen, "TLS handshake with %s: certificate: %s", host,
                 X509_verify_cert_error_string(v));
    else
        ssl_reason(err, errlen, "TLS handshake");
    return -1;
}

/* Maps an SSL_read/SSL_write result to the socket-like convention of tls.h. */
static ssize_t io_result(SSL *s, int rc, char *err, size_t errlen, int reading) {
    if (rc > 0)
        return rc;
    switch (SSL_get_error(s, rc)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        return -EAGAIN;
    case SSL_ERROR_ZERO_RETURN:
        return reading ? 0 : -EIO;
    case SSL_ERROR_SYSCALL:
        if (reading && ERR_peek_error() == 0 && errno == 0)
            return 0; /* EOF without close_notify: the peer went away */
        snprintf(err, errlen, "TLS %s: %s", reading ? "read" : "write",
                 errno ? strerror(errno) : "unexpected EOF");
        ERR_clear_error();
        return -EIO;
    default:
        ssl_reason(err, errlen, reading ? "TLS read" : "TLS write");
        return -EIO;
    }
}

ssize_t cp__tls_write(SSL *s, const void *buf, size_t len, char *err, size_t errlen) {
    errno = 0;
    int n = SSL_write(s, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    return io_result(s, n, err, errlen, 0);
}

ssize_t cp__tls_read(SSL *s, void *buf, size_t len, char *err, size_t errlen) {
    errno = 0;
    int n = SSL_read(s, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    return io_result(s, n, err, errlen, 1);
}

size_t cp__tls_pending(const SSL *s) {
    int n = SSL_pending(s);
    return n > 0 ? (size_t)n : 0;
}

void cp__tls_free(SSL *s) {
    if (s != NULL) {
        SSL_shutdown(s); /* best effort close_notify; never waits */
        SSL_free(s);
    }
}
