/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A plain connection to a source, beside its replica connection (source.h), for what a replica
 * cannot ask: how many keys each database holds (INFO keyspace), where the source's replication
 * offset stands (INFO replication: the stream's lag is it minus the offset applied), a key's
 * value and expiry for a re-copy (DUMP, PEXPIRETIME), and any commands pipelined (the verify's
 * reads: cp__sc_append, cp__sc_reply). Blocking (respconn.h: plain TCP or TLS), each call
 * bounded by the timeout given.
 */
#ifndef CLUSTERPIPE_MIGRATE_SRCCONN_H
#define CLUSTERPIPE_MIGRATE_SRCCONN_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "clusterpipe/clusterpipe.h"

typedef struct cp__srcconn cp__srcconn;

#define CP__SRCCONN_MAX_DBS 64

typedef struct cp__keyspace {
    int n;
    int db[CP__SRCCONN_MAX_DBS];
    uint64_t keys[CP__SRCCONN_MAX_DBS];
} cp__keyspace;

/* user NULL: AUTH password alone (password NULL: no AUTH). tls: TLS when tls->tls (its tls_*
 * fields, clusterpipe/tls.h), NULL: plain TCP. NULL with err on failure (unreachable, a TLS
 * handshake that fails, a wrong user or password, a timeout). */
cp__srcconn *cp__sc_connect(const char *host, int port, const char *user, const char *password,
                            const cp_options *tls, int timeout_ms, char *err, size_t errlen);
void cp__sc_free(cp__srcconn *c);

/* Each database that holds keys, with its count. 0, or -1 with err. */
int cp__sc_keyspace(cp__srcconn *c, cp__keyspace *out, char *err, size_t errlen);

/* 1 in *yes when the source is a cluster node (INFO cluster: cluster_enabled:1). 0, or -1 with
 * err. */
int cp__sc_is_cluster(cp__srcconn *c, int *yes, char *err, size_t errlen);

/* master_repl_offset. 0, or -1 with err. */
int cp__sc_offset(cp__srcconn *c, uint64_t *offset, char *err, size_t errlen);

/* SELECT db (for the re-copies' DUMPs). 0, or -1 with err. */
int cp__sc_select(cp__srcconn *c, int db, char *err, size_t errlen);

/* The key's DUMP payload (*payload malloc'd, NULL when the key does not exist) and its absolute
 * expiry in ms (-1: none), read in one MULTI/EXEC so that both are of the same moment: the
 * expiry from PEXPIRETIME, or, on a source before Redis 7.0, from PTTL and the source's TIME.
 * 0, or -1 with err. */
int cp__sc_dump(cp__srcconn *c, const char *key, size_t klen, char **payload, size_t *plen,
                int64_t *expire_ms, char *err, size_t errlen);

/* Queues a command (written at the next cp__sc_reply). 0, or -1 out of memory. */
int cp__sc_append(cp__srcconn *c, int argc, const char **argv, const size_t *argvlen);

/* The next queued command's reply (*out the caller's, freeReplyObject; an error reply is a reply).
 * 0, or -1 with err (the connection failed or timed out: it is then unusable). */
int cp__sc_reply(cp__srcconn *c, redisReply **out, char *err, size_t errlen);

/* "host:port". */
const char *cp__sc_name(const cp__srcconn *c);

#endif
