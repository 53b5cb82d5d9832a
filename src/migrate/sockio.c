/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Bytes through a socket or its TLS session (sockio.h).
 */
#include "migrate/sockio.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

ssize_t cp__sock_move(int fd, cp_tls *tls, int reading, void *buf, size_t len, char *why,
                      size_t whylen) {
    if (tls != NULL)
        return reading ? cp_tls_read(tls, buf, len, why, whylen)
                       : cp_tls_write(tls, buf, len, why, whylen);
    ssize_t n = reading ? recv(fd, buf, len, 0) : send(fd, buf, len, MSG_NOSIGNAL);
    if (n >= 0)
        return n;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return -EAGAIN;
    snprintf(why, whylen, "%s", strerror(errno));
    return errno == ECONNRESET ? -ECONNRESET : -EIO;
}
