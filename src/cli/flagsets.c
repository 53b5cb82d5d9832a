/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The shared flag definitions (flagsets.h) and the parsers of their structured values (SET:GET
 * mix, key distribution, key layout, command templates). Constant data; the parsers write only
 * their destination and print only usage errors; cp_cli_commands_build allocates the set it
 * returns. Single-threaded.
 */
#include "cli/flagsets.h"

#include "cli/cli.h"

#include "bench/engine.h"
#include "bench/keyspace.h"
#include "bench/limits.h"
#include "bench/plan.h"
#include "util/dur.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_ratio(const char *cmd, const cp_cli_flag *f, const char *val, void *dst) {
    unsigned v[2];
    if (cp__ratio_parse(val, &v[0], &v[1]) != 0)
        return cp_cli_flag_error(cmd, f,
                                 "'%s' is not SET:GET (two integers, not both 0, e.g. 1:10)", val);
    memcpy(dst, v, sizeof(v)); /* ratio_set, then ratio_get */
    return 0;
}

static int parse_rtt(const char *cmd, const cp_cli_flag *f, const char *val, void *dst) {
    uint64_t v[2];
    if (cp__dur_parse_jitter(val, &v[0], &v[1]) != 0)
        return cp_cli_flag_error(cmd, f,
                                 "'%s': expected a duration with its unit (500us, 1ms, 0.25ms), "
                                 "optionally ~JITTER no larger than it",
                                 val);
    memcpy(dst, v, sizeof(v)); /* rtt_ns, then jitter_ns */
    return 0;
}

static int parse_dist(const char *cmd, const cp_cli_flag *f, const char *val, void *dst) {
    if (cp__dist_parse(val, dst) != 0)
        return cp_cli_flag_error(cmd, f,
                                 "'%s' is not uniform, sequential, zipf:S (0 < S <= 100), "
                                 "gaussian or gaussian:C,S (centre C >= 0, spread S > 0)",
                                 val);
    return 0;
}

static int parse_value_size(const char *cmd, const cp_cli_flag *f, const char *val, void *dst) {
    char why[256];
    if (cp__value_sizes_parse(val, dst, why, sizeof(why)) != 0)
        return cp_cli_flag_error(cmd, f, "%s", why);
    return 0;
}

/* --command: appended to the list, each template refused at once when it cannot be parsed. */
static int parse_command(const char *cmd, const cp_cli_flag *f, const char *val, void *dst) {
    cp_cli_commands *c = dst;
    if (c->n == CP__COMMANDS_MAX)
        return cp_cli_flag_error(cmd, f, "at most %d of them", CP__COMMANDS_MAX);
    cp__template *t = malloc(sizeof(*t));
    if (t == NULL)
        return cp_cli_flag_error(cmd, f, "out of memory");
    char why[256];
    int rc = cp__template_parse(val, t, why, sizeof(why));
    free(t);
    if (rc != 0)
        return cp_cli_flag_error(cmd, f, "'%s': %s", val, why);
    c->text[c->n++] = val;
    return 0;
}

static int parse_layout(const char *cmd, const cp_cli_flag *f, const char *val, void *dst) {
    if (cp__key_layout_parse(val, dst) != 0)
        return cp_cli_flag_error(cmd, f, "'%s' is not spread or per-master", val);
    return 0;
}

static int parse_read_from(const char *cmd, const cp_cli_flag *f, const char *val, void *dst) {
    static const char *const names[] = {"master", "replica", "replica-preferred"};
    for (int i = 0; i < 3; i++)
        if (strcmp(val, names[i]) == 0) {
            *(int *)dst = i; /* CP_READ_MASTER, CP_READ_REPLICA, CP_READ_REPLICA_PREFERRED */
            return 0;
        }
    return cp_cli_flag_error(cmd, f, "'%s' is not master, replica or replica-preferred", val);
}

/* A count with an optional binary suffix (k, m, g: 2^10, 2^20, 2^30), > 0, into *out. */
static int parse_count(const char *s, size_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno != 0 || v == 0 || *s == '-')
        return -1;
    unsigned shift = 0;
    if (*end == 'k' || *end == 'K')
        shift = 10;
    else if (*end == 'm' || *end == 'M')
        shift = 20;
    else if (*end == 'g' || *end == 'G')
        shift = 30;
    if (shift != 0)
        end++;
    if (*end != '\0' || v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)v << shift;
    return 0;
}

/* --client-cache-size ENTRIES[:BYTES] into a cp_cache_options (0 stays the library's default). */
static int parse_cache_size(const char *cmd, const cp_cli_flag *f, const char *val, void *dst) {
    cp_cache_options *c = dst;
    char entries[32];
    const char *colon = strchr(val, ':');
    size_t n = colon != NULL ? (size_t)(colon - val) : strlen(val);
    if (n == 0 || n >= sizeof(entries))
        goto bad;
    memcpy(entries, val, n);
    entries[n] = '\0';
    if (parse_count(entries, &c->max_entries) != 0 ||
        (colon != NULL && parse_count(colon + 1, &c->max_bytes) != 0))
        goto bad;
    return 0;
bad:
    return cp_cli_flag_error(cmd, f,
                             "'%s' is not ENTRIES[:BYTES] (counts > 0, k/m/g allowed, e.g. "
                             "10000:16m)",
                             val);
}

/* ---- the workload set ------------------------------------------------------------------------
 */

const cp_cli_flag cp_cli_def_threads =
    CP_CLI_NUM("--threads", "T", CP_CLI_INT, CP__THREADS_MIN, CP__THREADS_MAX, 0,
               "worker threads, each with its own event loop");
const cp_cli_flag cp_cli_def_clients =
    CP_CLI_NUM("--clients", "C", CP_CLI_INT, CP__CLIENTS_MIN, CP__CLIENTS_MAX, 0,
               "clients (connections) in total, spread over the threads");
const cp_cli_flag cp_cli_def_pipeline =
    CP_CLI_NUM("--pipeline", "P", CP_CLI_INT, CP__PIPELINE_MIN, CP__PIPELINE_MAX, 0,
               "requests in flight per connection");
const cp_cli_flag cp_cli_def_requests =
    CP_CLI_NUM("--requests", "N", CP_CLI_U64, 1, LONG_MAX, 0, "total requests");
const cp_cli_flag cp_cli_def_keys =
    CP_CLI_NUM("--keys", "K", CP_CLI_U64, 1, LONG_MAX, 0, "key space key:0 .. key:K-1");
const cp_cli_flag cp_cli_def_dataset_keys =
    CP_CLI_NUM("--keys", "N", CP_CLI_U64, 1, CP_CLI_DATASET_KEYS_MAX, 0,
               "keys loaded and used, key:0 .. key:N-1");
const cp_cli_flag cp_cli_def_value_size = CP_CLI_FN(
    "--value-size", "B", parse_value_size, 0,
    "bytes per value: B, MIN-MAX (uniform) or SIZE:WEIGHT,...\n(e.g. 100:7,1000:2,10000:1); "
    "a key's size is the same\nwherever it is written or read");
const cp_cli_flag cp_cli_def_duration = {
    .name = "--duration",
    .arg = "S",
    .kind = CP_CLI_DOUBLE,
    .dmin = 0.001,
    .dmax = 1e7,
    .help = "run for S seconds instead of a request count",
};
const cp_cli_flag cp_cli_def_ratio =
    CP_CLI_FN("--ratio", "SET:GET", parse_ratio, 0, "operation mix");
const cp_cli_flag cp_cli_def_rtt =
    CP_CLI_FN("--rtt", "D[~J]", parse_rtt, 0, "the round trip of each link between hosts");
const cp_cli_flag cp_cli_def_key_dist = CP_CLI_FN(
    "--key-dist", "D", parse_dist, 0,
    "uniform | zipf:S | sequential | gaussian[:C,S]\n(default uniform; gaussian: centre C, "
    "spread S in keys,\ndefault K/2 and K/6)");
const cp_cli_flag cp_cli_def_key_layout = CP_CLI_FN(
    "--key-layout", "L", parse_layout, 0, "spread (default) or per-master (see bench --help)");
const cp_cli_flag cp_cli_def_read_from =
    CP_CLI_FN("--read-from", "R", parse_read_from, 0,
              "cluster: where reads go: master (default), replica or\nreplica-preferred "
              "(READONLY on every connection)");
const cp_cli_flag cp_cli_def_retry_budget =
    CP_CLI_NUM("--retry-budget", "MS", CP_CLI_INT, 0, 3600000, 0,
               "time a batch may spend retrying after errors (default: the library's, 3000)");
const cp_cli_flag cp_cli_def_no_verify = CP_CLI_SET(
    "--no-verify", CP_CLI_BOOL, 0, 0, "do not check that each GET reply belongs to its key");
const cp_cli_flag cp_cli_def_client_cache =
    CP_CLI_SET("--client-cache", CP_CLI_SWITCH, 1, 0,
               "cluster: every client keeps a client-side cache (CLIENT\nTRACKING; RESP3 "
               "unless --protocol 2: then REDIRECT\nto a tracking link per node)");
const cp_cli_flag cp_cli_def_client_cache_size =
    CP_CLI_FN("--client-cache-size", "ENTRIES[:BYTES]", parse_cache_size, 0,
              "bounds of each client's cache (implies --client-cache;\ndefault 100000:64m)");
const cp_cli_flag cp_cli_def_quiet = {
    .name = "--quiet",
    .alias = "-q",
    .kind = CP_CLI_SWITCH,
    .set = 1,
    .help = "no progress lines on stderr",
};
const cp_cli_flag cp_cli_def_out = CP_CLI_STR("--out", "DIR", 0, "output directory");
const cp_cli_flag cp_cli_def_dir =
    CP_CLI_STR("--dir", "DIR", 0, "a topology started by 'clusterpipe up'");
const cp_cli_flag cp_cli_def_password = CP_CLI_STR("--password", "PW", 0, "AUTH password");

/* ---- --command and --command-ratio -----------------------------------------------------------
 */

#define CMDS(field) offsetof(cp_cli_commands, field)

const cp_cli_flag cp_cli_command_flags[] = {
    CP_CLI_FN("--command", "TEMPLATE", parse_command, 0,
              "run this Redis command instead of GET/SET (repeatable, up\n"
              "to 16): split as redis-cli splits ('...' and \"...\" group),\n"
              "with placeholders __key__ (the key drawn), __data__ (its\n"
              "verifiable value), __tag__ (__key__ as a hash-tagged prefix:\n"
              "__tag__:h is a key in __key__'s slot) and __otherkey__\n"
              "(another key of the key space); e.g. 'HSET __tag__:h f\n"
              "__data__' and 'HGET __tag__:h f'. Reads of __key__'s values\n"
              "and counters (INCR) are verified, other commands counted"),
    CP_CLI_STR("--command-ratio", "W,...", CMDS(ratio),
               "weights of the --command templates, one each (default\nequal), e.g. 3,1"),
    CP_CLI_END,
};

int cp_cli_commands_build(const char *cmd, const cp_cli_commands *c, cp__cmdset **out) {
    *out = NULL;
    if (c->n == 0) {
        if (c->ratio != NULL)
            return cp_cli_usage_error(cmd, "--command-ratio needs --command");
        return CP_EXIT_OK;
    }
    char err[512];
    int rc = cp__cmdset_new(c->text, c->n, c->ratio, out, err, sizeof(err));
    if (rc == CP_ENOMEM) {
        fprintf(stderr, "clusterpipe %s: out of memory\n", cmd);
        return CP_EXIT_FAIL;
    }
    if (rc != 0) /* each template was checked as it was parsed: the weights are wrong */
        return cp_cli_usage_error(cmd, "%s%s", c->ratio != NULL ? "--command-ratio: " : "", err);
    return CP_EXIT_OK;
}

/* ---- TARGET, AUTH and TLS --------------------------------------------------------------------
 */

const cp_cli_flag cp_cli_def_cluster = CP_CLI_STR(
    "--cluster", "HOST:PORT[,...]", 0, "Redis Cluster seeds (one connection per master)");
const cp_cli_flag cp_cli_def_proxy =
    CP_CLI_STR("--proxy", "HOST:PORT[,...]", 0,
               "twemproxy (or plain redis) endpoints, clients\nspread round-robin over them");

#define TGT(field) offsetof(cp_cli_target, field)
#define TGT_STRING(flag, field, placeholder, text) CP_CLI_STR(flag, placeholder, TGT(field), text)

const cp_cli_flag cp_cli_target_flags[] = {
    CP_CLI_HEAD("TARGET (one of):"),
    CP_CLI_LIKE(cp_cli_def_cluster, TGT(cluster), NULL),
    CP_CLI_LIKE(cp_cli_def_proxy, TGT(proxy), NULL),
    CP_CLI_LIKE(cp_cli_def_dir, TGT(dir),
                "a topology started by 'clusterpipe up' (its kind and\npassword are read from it; "
                "its processes' CPU is\nmeasured)"),
    CP_CLI_HEAD("connection:"),
    CP_CLI_LIKE(cp_cli_def_password, TGT(password),
                "AUTH password (default with --dir: the topology's)"),
    TGT_STRING("--user", user, "U", "ACL user for AUTH"),
    CP_CLI_SET("--tls", CP_CLI_SWITCH, 1, TGT(tls),
               "TLS to the cluster (with --dir: from the topology)"),
    TGT_STRING("--cacert", cacert, "FILE",
               "CA bundle to verify the servers (default: the system's)"),
    TGT_STRING("--cert", cert, "FILE", "client certificate (tls-auth-clients)"),
    TGT_STRING("--key", key, "FILE", "the client certificate's key"),
    CP_CLI_SET("--insecure", CP_CLI_SWITCH, 1, TGT(insecure),
               "TLS without verifying the servers' certificates (implies --tls)"),
    CP_CLI_NUM("--protocol", "N", CP_CLI_INT, 2, 3, TGT(protocol),
               "RESP version every connection speaks: 2 (default) or 3\n(HELLO 3)"),
    CP_CLI_END,
};
