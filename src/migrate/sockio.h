/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Bytes through a connected non-blocking socket, or through its TLS session (clusterpipe/tls.h):
 * one call, the same answers either way. For the sources' connections (source.h, respconn.h).
 */
#ifndef CLUSTERPIPE_MIGRATE_SOCKIO_H
#define CLUSTERPIPE_MIGRATE_SOCKIO_H

#include <stddef.h>
#include <sys/types.h>

#include "clusterpipe/tls.h"

/* Reads into buf (reading) or writes buf, through tls when it is not NULL. As the socket calls:
 * bytes moved (> 0), 0 (reading: the peer closed), -EAGAIN (it would block, or a signal came),
 * -ECONNRESET (the peer reset a plain connection) or -EIO; why says which for the last two. */
ssize_t cp__sock_move(int fd, cp_tls *tls, int reading, void *buf, size_t len, char *why,
                      size_t whylen);

#endif
