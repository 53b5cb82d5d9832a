/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Node-level helpers of the bench engine (private to src/bench/): the cluster's masters and slot
 * owners as the bench needs them, read from a client's map (warm-up keys that reach every
 * master, the node of a mismatching key, where to send INFO CPU and DBSIZE), address lists, and
 * single-node admin commands (INFO CPU, DBSIZE, the server version) plus nutcracker's version
 * from its stats port. It knows nothing of targets: connections take their password, user and
 * TLS from a cp_options.
 *
 * Everything here talks to servers through the public library (cp_connect in endpoint mode and
 * cp_command) and reads the slot map through it (cp_node_get, cp_node_slots), never through
 * library internals: the library's is the one parser of CLUSTER SHARDS / SLOTS. The functions
 * that talk to a server block (one round trip each, bounded by the connection timeouts); all run
 * on the calling thread; nothing keeps global state. A cp__nodemap is a plain caller-allocated
 * struct (about 160 KiB: allocate it on the heap).
 */
#ifndef CLUSTERPIPE_NODES_H
#define CLUSTERPIPE_NODES_H

#include <stddef.h>
#include <stdint.h>

#include "bench/cpu.h"
#include "bench/keyspace.h"
#include "clusterpipe/clusterpipe.h"

#define CP__NODES_MAX 512
#define CP__HOST_MAX CP_NODE_HOSTLEN /* any host the library names */

typedef struct cp__node_addr {
    char host[CP__HOST_MAX];
    int port;
} cp__node_addr;

typedef struct cp__nodemap {
    int nmasters;
    cp__node_addr masters[CP__NODES_MAX];
    int16_t owner[CP_SLOTS]; /* index into masters, -1 when the slot has no owner */
} cp__nodemap;

/* The masters and slot owners of cluster client c's current map (cp_node_get, cp_node_slots):
 * every node serving a slot, under the address the library uses for it. Never does I/O. Returns
 * 0, or CP_ETOPOLOGY (no slot assigned, more than CP__NODES_MAX masters) or CP_ENOMEM with err
 * set. */
int cp__nodemap_read(const cp_client *c, cp__nodemap *m, char *err, size_t errlen);

/* "host:port" of the master owning key's slot into buf ("?" when unknown). */
void cp__nodemap_key_node(const cp__nodemap *m, const char *key, size_t keylen, char *buf,
                          size_t cap);

/* Finds, for every master, a key index n in [0, limit) whose key (as kf names it) lands on that
 * master, writing them to out[0..nmasters) (UINT64_MAX where none was found within limit).
 * Used for warm-up batches that open every connection before the measured interval. */
void cp__nodemap_probe_keys(const cp__nodemap *m, const cp__keyfmt *kf, uint64_t limit,
                            uint64_t *out);

/* Splits "h:p[,h:p...]" into addrs (at most max). Returns how many, or CP_EINVAL on an entry that
 * is not HOST:PORT with 1 <= PORT <= 65535 or an empty list. */
int cp__addr_list_parse(const char *list, cp__node_addr *addrs, int max);

/* A single-endpoint client to host:port with the connection fields of *auth (password, user,
 * TLS; its seeds, endpoint and timeouts are not used): an admin connection with a 2 s I/O
 * timeout. Returns the client (caller cp_free()s) or NULL with err set; blocks up to the
 * connect timeout. */
cp_client *cp__node_connect(const char *host, int port, const cp_options *auth, char *err,
                            size_t errlen);

/* INFO CPU on c, parsed. Returns 0 or a negative code (CP_E* or -errno from the parser). */
int cp__node_info_cpu(cp_client *c, cp__cpu_times *out);

/* A master's replication as INFO replication on c gives it: its master_repl_offset, how many
 * replicas are attached online (slaveN:...,state=online,...) and the lowest offset they
 * acknowledged (the master's master_repl_offset when none). Returns 0 or a negative CP_E* code
 * (CP_EPROTO: no master_repl_offset, e.g. c is not a redis server). */
int cp__node_repl_offsets(cp_client *c, long long *master_offset, int *online,
                          long long *min_acked);

/* DBSIZE on c. Returns the count (>= 0) or a negative CP_E* code. */
long long cp__node_dbsize(cp_client *c);

/* INFO server's redis_version into buf ("" when unknown). Returns 0 or a negative CP_E* code. */
int cp__node_version(cp_client *c, char *buf, size_t cap);

/* nutcracker's version from its stats port (JSON with a "version" field) into buf. Returns 0 or
 * a negative CP_E* code (buf then ""). Blocks up to about one second. */
int cp__nutcracker_version(const char *host, int stats_port, char *buf, size_t cap);

#endif /* CLUSTERPIPE_NODES_H */
