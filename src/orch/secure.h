/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Secrets of a topology: the generated password and its file (DIR/password, 0600), and the TLS
 * material made for the run with the `openssl` command (DIR/tls: a CA, a server certificate for
 * 127.0.0.1 and localhost, and a client certificate when servers require one; keys 0600). The
 * paths live in the cp_topo (cp__secure_paths); nothing here keeps state. Admin connections
 * read them from there (cp__topo_connect). One thread per cp_topo.
 */
#ifndef CLUSTERPIPE_ORCH_SECURE_H
#define CLUSTERPIPE_ORCH_SECURE_H

#include "orch/topo.h"

#define CP__PASSWORD_HEX 32 /* generated password length: 16 random bytes in hex */

/* Fills out (at least CP__PASSWORD_HEX + 1 bytes) with a fresh random password from
 * /dev/urandom. Returns 0, CP_EINVAL (out too small) or CP_EIO with err. */
int cp__secure_gen_password(char *out, size_t len, char *err, size_t errlen);

/* Sets t's password_file and tls_* paths from t->dir (they are "" when unused). */
void cp__secure_paths(cp_topo *t);

/* Writes t->password to DIR/password (mode 0600, no newline); nothing without a password.
 * Returns 0 or CP_EIO with err. */
int cp__secure_write_password(const cp_topo *t, char *err, size_t errlen);

/* Generates DIR/tls: ca.crt + ca.key, server.crt + server.key (SAN IP:127.0.0.1, IP:::1,
 * DNS:localhost, usable as a client certificate too, for the cluster bus when clients must
 * authenticate), and with t->tls_auth_clients client.crt + client.key. Runs t->openssl_bin by PID,
 * one step at a time, honouring t->cancel. Returns 0 or a CP_E* code with err (and openssl's output
 * tail): CP_EIO (a step failed or was interrupted), CP_ETIMEDOUT (a step took too long). */
int cp__secure_gen_tls(cp_topo *t, char *err, size_t errlen);

/* Removes DIR/password and DIR/tls (after a failed start, or before reusing a directory). */
void cp__secure_remove(const char *dir);

#endif /* CLUSTERPIPE_ORCH_SECURE_H */
