/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Node-level helpers of the bench engine: the cluster's masters and slot owners (the library's
 * map, through the public node calls), address lists, single-node admin commands (INFO CPU, DBSIZE,
 * version) and nutcracker's version from its stats port. See nodes.h for the contract.
 *
 * Every reply obtained here is freed here; clients returned by cp__node_connect belong to the
 * caller. Blocking, calling thread only, no global state.
 */
#include "bench/nodes.h"

#include <errno.h>
#include <jansson.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/keyspace.h"

/* Splits one "host:port" entry (host may be "[v6]"); rejects ports outside 1..65535. */
static int parse_addr(const char *s, size_t len, cp__node_addr *out) {
    const char *colon = NULL;
    for (size_t i = len; i > 0; i--)
        if (s[i - 1] == ':') {
            colon = s + i - 1;
            break;
        }
    if (colon == NULL || colon == s || (size_t)(colon - s) >= CP__HOST_MAX)
        return CP_EINVAL;
    size_t plen = len - (size_t)(colon - s) - 1;
    if (plen == 0 || plen > 5)
        return CP_EINVAL;
    int port = 0;
    for (size_t i = 0; i < plen; i++) {
        char ch = colon[1 + i];
        if (ch < '0' || ch > '9')
            return CP_EINVAL;
        port = port * 10 + (ch - '0');
    }
    if (port < 1 || port > 65535)
        return CP_EINVAL;
    const char *h = s;
    size_t hlen = (size_t)(colon - s);
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    if (hlen == 0)
        return CP_EINVAL;
    memcpy(out->host, h, hlen);
    out->host[hlen] = '\0';
    out->port = port;
    return 0;
}

int cp__addr_list_parse(const char *list, cp__node_addr *addrs, int max) {
    int n = 0;
    const char *p = list;
    if (list == NULL)
        return CP_EINVAL;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0 || n >= max)
            return CP_EINVAL;
        if (parse_addr(p, len, &addrs[n]) != 0)
            return CP_EINVAL;
        n++;
        p += len + (end != NULL);
        if (end != NULL && *p == '\0')
            return CP_EINVAL; /* trailing comma */
    }
    return n > 0 ? n : CP_EINVAL;
}

/* The map is the library's, read through the public node calls, so the bench sees the cluster
 * exactly as its clients route it: one parser of CLUSTER SHARDS / SLOTS (src/lib), and a node
 * that announces no address (cluster-preferred-endpoint-type unknown-endpoint) has the address
 * the library gave it (its ip in CLUSTER SHARDS, else the host the map came from). Nodes that
 * serve no slot (replicas, seeds, masters without slots) are left out: they have no keys to
 * give. Masters are numbered by the first slot they serve, as CLUSTER SLOTS lists them, not in
 * the order the client met them: the per-master key layout names keys by that number, and a
 * load and a bench seeded differently must name them alike. */
int cp__nodemap_read(const cp_client *c, cp__nodemap *m, char *err, size_t errlen) {
    memset(m, 0, sizeof(*m));
    for (int s = 0; s < CP_SLOTS; s++)
        m->owner[s] = -1;
    enum { MAX_RANGES = CP_SLOTS / 2 }; /* a node's slots alternating with another's */
    int(*ranges)[2] = malloc(MAX_RANGES * sizeof(*ranges));
    if (ranges == NULL) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    int node[CP__NODES_MAX], first[CP__NODES_MAX]; /* per master: the client's index, 1st slot */
    for (int i = 0; i < cp_node_count(c); i++) {
        if (cp_node_slots(c, i, ranges, 1) <= 0)
            continue;
        if (m->nmasters == CP__NODES_MAX) {
            snprintf(err, errlen, "the slot map names more than %d masters", CP__NODES_MAX);
            free(ranges);
            return CP_ETOPOLOGY;
        }
        int at = m->nmasters++;
        for (; at > 0 && first[at - 1] > ranges[0][0]; at--) {
            node[at] = node[at - 1];
            first[at] = first[at - 1];
        }
        node[at] = i;
        first[at] = ranges[0][0];
    }
    for (int k = 0; k < m->nmasters; k++) {
        cp_node_info ni;
        cp_node_get(c, node[k], &ni);
        snprintf(m->masters[k].host, CP__HOST_MAX, "%s", ni.host);
        m->masters[k].port = ni.port;
        int n = cp_node_slots(c, node[k], ranges, MAX_RANGES);
        for (int r = 0; r < n && r < MAX_RANGES; r++)
            for (int s = ranges[r][0]; s <= ranges[r][1]; s++)
                m->owner[s] = (int16_t)k;
    }
    free(ranges);
    if (m->nmasters == 0) {
        snprintf(err, errlen, "the cluster's slot map assigns no slot");
        return CP_ETOPOLOGY;
    }
    return 0;
}

void cp__nodemap_key_node(const cp__nodemap *m, const char *key, size_t keylen, char *buf,
                          size_t cap) {
    int o = m->owner[cp_keyslot(key, keylen)];
    if (o < 0)
        snprintf(buf, cap, "?");
    else
        snprintf(buf, cap, "%s:%d", m->masters[o].host, m->masters[o].port);
}

/* Keys land on masters at random, so a few hundred tries find one per master whp. */
void cp__nodemap_probe_keys(const cp__nodemap *m, const cp__keyfmt *kf, uint64_t limit,
                            uint64_t *out) {
    char key[CP__KEY_MAX_LEN];
    int found = 0;
    for (int i = 0; i < m->nmasters; i++)
        out[i] = UINT64_MAX;
    for (uint64_t n = 0; n < limit && found < m->nmasters; n++) {
        size_t len = cp__key_format(kf, n, key);
        int o = m->owner[cp_keyslot(key, len)];
        if (o >= 0 && out[o] == UINT64_MAX) {
            out[o] = n;
            found++;
        }
    }
}

cp_client *cp__node_connect(const char *host, int port, const cp_options *auth, char *err,
                            size_t errlen) {
    char ep[CP__HOST_MAX + 16];
    snprintf(ep, sizeof(ep), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    cp_options opt = CP_OPTIONS_INIT;
    opt.endpoint = ep;
    opt.password = auth->password;
    opt.username = auth->username;
    opt.tls = auth->tls;
    opt.tls_insecure = auth->tls_insecure;
    opt.tls_ca_file = auth->tls_ca_file;
    opt.tls_cert_file = auth->tls_cert_file;
    opt.tls_key_file = auth->tls_key_file;
    opt.io_timeout_ms = 2000;
    cp_client *c = cp_connect(&opt);
    if (c == NULL) {
        snprintf(err, errlen, "%s: out of memory", ep);
        return NULL;
    }
    if (c->err != 0) {
        snprintf(err, errlen, "%s", c->errstr);
        cp_free(c);
        return NULL;
    }
    return c;
}

int cp__node_info_cpu(cp_client *c, cp__cpu_times *out) {
    redisReply *r = cp_command(c, "INFO cpu");
    if (r == NULL)
        return c->err ? c->err : CP_EIO;
    int rc = CP_ESERVER;
    if (r->type == CP_REPLY_STRING || r->type == CP_REPLY_VERB) /* VERB: RESP3's INFO */
        rc = cp__cpu_parse_info(r->str, r->len, out);
    cp_reply_free(r);
    return rc;
}

int cp__node_repl_offsets(cp_client *c, long long *master_offset, int *online,
                          long long *min_acked) {
    redisReply *r = cp_command(c, "INFO replication");
    if (r == NULL)
        return c->err ? c->err : CP_EIO;
    int rc = CP_ESERVER;
    if (r->type == CP_REPLY_STRING || r->type == CP_REPLY_VERB) {
        const char *at = strstr(r->str, "master_repl_offset:");
        rc = at != NULL ? 0 : CP_EPROTO;
        *master_offset = at != NULL ? strtoll(at + strlen("master_repl_offset:"), NULL, 10) : 0;
        *online = 0;
        *min_acked = *master_offset;
        /* slave0:ip=127.0.0.1,port=7005,state=online,offset=1234,lag=0 */
        for (const char *l = r->str; rc == 0 && (l = strstr(l, "\nslave")) != NULL; l++) {
            const char *end = strchr(l + 1, '\n'), *st = strstr(l, ",state=online,"),
                       *off = strstr(l, ",offset=");
            if (end == NULL || st == NULL || st > end || off == NULL || off > end)
                continue;
            long long v = strtoll(off + strlen(",offset="), NULL, 10);
            (*online)++;
            if (v < *min_acked)
                *min_acked = v;
        }
    }
    cp_reply_free(r);
    return rc;
}

long long cp__node_dbsize(cp_client *c) {
    redisReply *r = cp_command(c, "DBSIZE");
    if (r == NULL)
        return c->err ? c->err : CP_EIO;
    long long n = r->type == REDIS_REPLY_INTEGER ? r->integer : CP_ESERVER;
    cp_reply_free(r);
    return n;
}

int cp__node_version(cp_client *c, char *buf, size_t cap) {
    buf[0] = '\0';
    redisReply *r = cp_command(c, "INFO server");
    if (r == NULL)
        return c->err ? c->err : CP_EIO;
    int rc = CP_ESERVER;
    if (r->type == CP_REPLY_STRING || r->type == CP_REPLY_VERB) {
        const char *v = strstr(r->str, "redis_version:");
        if (v != NULL) {
            v += strlen("redis_version:");
            size_t n = strcspn(v, "\r\n");
            if (n >= cap)
                n = cap - 1;
            memcpy(buf, v, n);
            buf[n] = '\0';
            rc = 0;
        }
    }
    cp_reply_free(r);
    return rc;
}

/* nutcracker writes one JSON document to every connection on its stats port and closes it. */
int cp__nutcracker_version(const char *host, int stats_port, char *buf, size_t cap) {
    buf[0] = '\0';
    char portstr[8];
    snprintf(portstr, sizeof(portstr), "%d", stats_port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, portstr, &hints, &res) != 0)
        return CP_ECONNECT;
    int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
    if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
        freeaddrinfo(res);
        if (fd >= 0)
            close(fd);
        return CP_ECONNECT;
    }
    freeaddrinfo(res);
    size_t len = 0, bcap = 64 * 1024;
    char *data = malloc(bcap);
    int rc = CP_EIO;
    while (data != NULL) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 1000) <= 0)
            break;
        if (len == bcap) {
            char *n = realloc(data, bcap * 2);
            if (n == NULL)
                break;
            data = n;
            bcap *= 2;
        }
        ssize_t got = read(fd, data + len, bcap - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            rc = got == 0 ? 0 : CP_EIO;
            break;
        }
        len += (size_t)got;
    }
    close(fd);
    if (rc == 0) {
        json_t *j = json_loadb(data, len, 0, NULL);
        const char *v = j ? json_string_value(json_object_get(j, "version")) : NULL;
        if (v != NULL)
            snprintf(buf, cap, "%s", v);
        else
            rc = CP_EPROTO;
        json_decref(j);
    }
    free(data);
    return rc;
}
