/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Passwords and TLS material for spawned topologies (see secure.h). Randomness comes from
 * /dev/urandom; certificates come from the `openssl` command run as a child and waited for by
 * PID, with our own minimal config file so the system's openssl.cnf cannot change what we get.
 * Keys are written into DIR/tls (0700 inside the 0700 topology directory) and made 0600. No state.
 */
#include "orch/secure.h"

#include "clusterpipe/clusterpipe.h"
#include "orch/proc.h"
#include "util/clock.h"
#include "util/errmsg.h"
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define OPENSSL_TIMEOUT_MS 30000
#define CERT_DAYS "90" /* a topology's certificates outlive any benchmark run */

/* Reads exactly len random bytes. */
static int urandom(unsigned char *buf, size_t len, char *err, size_t errlen) {
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cp__seterr(err, errlen, "/dev/urandom: %s", strerror(errno));
        return CP_EIO;
    }
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            cp__seterr(err, errlen, "/dev/urandom: %s", n < 0 ? strerror(errno) : "short read");
            close(fd);
            return CP_EIO;
        }
        got += (size_t)n;
    }
    close(fd);
    return 0;
}

static void to_hex(const unsigned char *b, size_t n, char *out) {
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
    out[2 * n] = '\0';
}

int cp__secure_gen_password(char *out, size_t len, char *err, size_t errlen) {
    unsigned char b[CP__PASSWORD_HEX / 2];
    if (len < CP__PASSWORD_HEX + 1) {
        cp__seterr(err, errlen, "password buffer too small");
        return CP_EINVAL;
    }
    int rc = urandom(b, sizeof(b), err, errlen);
    if (rc != 0)
        return rc;
    to_hex(b, sizeof(b), out);
    return 0;
}

void cp__secure_paths(cp_topo *t) {
    /* prepare_dir / state_load keep dir under CP__DIR_MAX, so these never truncate. */
    const int d = CP__DIR_MAX;
    t->password_file[0] = t->tls_ca[0] = t->tls_cert[0] = t->tls_key[0] = '\0';
    t->tls_client_cert[0] = t->tls_client_key[0] = '\0';
    if (t->password != NULL)
        snprintf(t->password_file, sizeof(t->password_file), "%.*s/password", d, t->dir);
    if (!t->tls)
        return;
    snprintf(t->tls_ca, sizeof(t->tls_ca), "%.*s/tls/ca.crt", d, t->dir);
    snprintf(t->tls_cert, sizeof(t->tls_cert), "%.*s/tls/server.crt", d, t->dir);
    snprintf(t->tls_key, sizeof(t->tls_key), "%.*s/tls/server.key", d, t->dir);
    if (t->tls_auth_clients) {
        snprintf(t->tls_client_cert, sizeof(t->tls_client_cert), "%.*s/tls/client.crt", d, t->dir);
        snprintf(t->tls_client_key, sizeof(t->tls_client_key), "%.*s/tls/client.key", d, t->dir);
    }
}

int cp__secure_write_password(const cp_topo *t, char *err, size_t errlen) {
    if (t->password == NULL)
        return 0;
    /* O_TRUNC keeps an old file's mode: remove it first so 0600 always holds. */
    unlink(t->password_file);
    int rc = cp__topo_write_file(t->password_file, t->password, err, errlen);
    if (rc == 0 && chmod(t->password_file, 0600) != 0) {
        cp__seterr(err, errlen, "%s: %s", t->password_file, strerror(errno));
        rc = CP_EIO;
    }
    return rc;
}

void cp__secure_remove(const char *dir) {
    char path[PATH_MAX + 16];
    snprintf(path, sizeof(path), "%.*s/password", CP__DIR_MAX, dir);
    cp__rm_rf(path);
    snprintf(path, sizeof(path), "%.*s/tls", CP__DIR_MAX, dir);
    cp__rm_rf(path);
}

/* Our openssl config: no dependence on /etc/ssl/openssl.cnf defaults. The server certificate
 * also allows clientAuth because Redis presents it when it connects to other nodes (cluster bus,
 * replication), which servers with tls-auth-clients yes verify. */
static const char cnf_text[] = "# Written by clusterpipe for this topology's certificates\n"
                               "[req]\n"
                               "distinguished_name = dn\n"
                               "prompt = no\n"
                               "[dn]\n"
                               "CN = clusterpipe\n"
                               "[ca_ext]\n"
                               "basicConstraints = critical, CA:TRUE\n"
                               "keyUsage = critical, keyCertSign, cRLSign\n"
                               "subjectKeyIdentifier = hash\n"
                               "[server_ext]\n"
                               "basicConstraints = critical, CA:FALSE\n"
                               "keyUsage = critical, digitalSignature\n"
                               "extendedKeyUsage = serverAuth, clientAuth\n"
                               "subjectAltName = IP:127.0.0.1, IP:::1, DNS:localhost\n"
                               "subjectKeyIdentifier = hash\n"
                               "authorityKeyIdentifier = keyid\n"
                               "[client_ext]\n"
                               "basicConstraints = critical, CA:FALSE\n"
                               "keyUsage = critical, digitalSignature\n"
                               "extendedKeyUsage = clientAuth\n"
                               "subjectKeyIdentifier = hash\n"
                               "authorityKeyIdentifier = keyid\n";

/* Runs one openssl step in tdir; on failure err gets the step, how it ended and the output. */
static int step(cp_topo *t, const char *tdir, const char *what, char *const *argv, char *err,
                size_t errlen) {
    char out[PATH_MAX + 32], e[256], tail[1024];
    snprintf(out, sizeof(out), "%s/openssl.log", tdir);
    int rc = cp__run(argv, tdir, out, OPENSSL_TIMEOUT_MS, t->cancel, e, sizeof(e));
    if (rc == 0)
        return 0;
    if (cp__topo_cancelled(t)) {
        cp__seterr(err, errlen, "interrupted");
        return CP_EIO;
    }
    if (cp__file_tail(out, 6, tail, sizeof(tail)) == 0)
        snprintf(tail, sizeof(tail), "  (no output)");
    cp__seterr(err, errlen, "generating the TLS %s with %s: %s; output:\n%s", what, argv[0], e,
               tail);
    return rc;
}

/* A random positive certificate serial, "0x" + 16 hex digits. */
static int serial(char *buf, size_t len, char *err, size_t errlen) {
    unsigned char b[8];
    if (len < 19) {
        cp__seterr(err, errlen, "serial buffer too small");
        return CP_EINVAL;
    }
    int rc = urandom(b, sizeof(b), err, errlen);
    if (rc != 0)
        return rc;
    b[0] &= 0x7f;
    b[0] |= 0x10; /* no leading zero byte */
    buf[0] = '0';
    buf[1] = 'x';
    to_hex(b, sizeof(b), buf + 2);
    return 0;
}

/* Makes NAME.key + NAME.crt signed by the CA with extension section ext. */
static int leaf(cp_topo *t, const char *tdir, const char *name, const char *ext, char *err,
                size_t errlen) {
    char key[32], csr[32], crt[32], subj[64], ser[24];
    snprintf(key, sizeof(key), "%s.key", name);
    snprintf(csr, sizeof(csr), "%s.csr", name);
    snprintf(crt, sizeof(crt), "%s.crt", name);
    snprintf(subj, sizeof(subj), "/CN=clusterpipe %s", name);
    int rc = serial(ser, sizeof(ser), err, errlen);
    if (rc != 0)
        return rc;
    char *req[] = {t->openssl_bin, "req",      "-config",
                   "openssl.cnf",  "-new",     "-newkey",
                   "ec",           "-pkeyopt", "ec_paramgen_curve:prime256v1",
                   "-nodes",       "-keyout",  key,
                   "-out",         csr,        "-subj",
                   subj,           NULL};
    rc = step(t, tdir, name, req, err, errlen);
    if (rc != 0)
        return rc;
    char *sign[] = {
        t->openssl_bin, "x509",        "-req",        "-in",       csr,     "-CA",     "ca.crt",
        "-CAkey",       "ca.key",      "-set_serial", ser,         "-days", CERT_DAYS, "-sha256",
        "-extfile",     "openssl.cnf", "-extensions", (char *)ext, "-out",  crt,       NULL};
    rc = step(t, tdir, name, sign, err, errlen);
    if (rc != 0)
        return rc;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/%s", tdir, csr);
    unlink(path);
    return 0;
}

/* chmod 0600 on the key files: openssl's own modes depend on its version and our umask. */
static int protect_keys(const cp_topo *t, const char *tdir, char *err, size_t errlen) {
    static const char *const keys[] = {"ca.key", "server.key", "client.key"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (i == 2 && !t->tls_auth_clients)
            break;
        char path[PATH_MAX + 32];
        snprintf(path, sizeof(path), "%s/%s", tdir, keys[i]);
        if (chmod(path, 0600) != 0) {
            cp__seterr(err, errlen, "%s: %s", path, strerror(errno));
            return CP_EIO;
        }
    }
    return 0;
}

int cp__secure_gen_tls(cp_topo *t, char *err, size_t errlen) {
    char tdir[PATH_MAX + 8], path[PATH_MAX + 32];
    snprintf(tdir, sizeof(tdir), "%.*s/tls", CP__DIR_MAX, t->dir);
    cp__rm_rf(tdir);
    int rc = cp__mkdir_p(tdir, 0700);
    if (rc != 0) {
        cp__seterr(err, errlen, "%s: %s", tdir, strerror(-rc));
        return CP_EIO;
    }
    snprintf(path, sizeof(path), "%s/openssl.cnf", tdir);
    rc = cp__topo_write_file(path, cnf_text, err, errlen);
    if (rc != 0)
        return rc;
    cp__topo_log(t, "generating a CA and certificates for this run in %s (openssl)", tdir);
    char ser[24];
    rc = serial(ser, sizeof(ser), err, errlen);
    if (rc != 0)
        return rc;
    char *ca[] = {t->openssl_bin,
                  "req",
                  "-config",
                  "openssl.cnf",
                  "-x509",
                  "-new",
                  "-newkey",
                  "ec",
                  "-pkeyopt",
                  "ec_paramgen_curve:prime256v1",
                  "-nodes",
                  "-keyout",
                  "ca.key",
                  "-out",
                  "ca.crt",
                  "-days",
                  CERT_DAYS,
                  "-sha256",
                  "-set_serial",
                  ser,
                  "-subj",
                  "/CN=clusterpipe CA for one topology",
                  "-extensions",
                  "ca_ext",
                  NULL};
    rc = step(t, tdir, "CA", ca, err, errlen);
    if (rc == 0)
        rc = leaf(t, tdir, "server", "server_ext", err, errlen);
    if (rc == 0 && t->tls_auth_clients)
        rc = leaf(t, tdir, "client", "client_ext", err, errlen);
    return rc != 0 ? rc : protect_keys(t, tdir, err, errlen);
}
