/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The command table the router uses: key positions, read-only flag, split rules. Kept sorted by
 * name for binary search. Commands not listed are routed by argv[1] and treated as writes, which
 * is the safe default: they are never re-sent after an unknown outcome.
 */
#include "lib/cmd/command.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RO CP__CMD_READONLY
#define NK CP__CMD_NOKEY
#define CONN CP__CMD_CONN
#define BLK CP__CMD_BLOCKING
#define CC CP__CMD_CACHE

/* Sorted by name (strcmp order), upper case. */
static const cp__cmdinfo table[] = {
    {"APPEND", 1, 1, 1, 0, CP__MERGE_NONE},
    {"AUTH", 0, 0, 0, NK | CONN, CP__MERGE_NONE},
    {"BITCOUNT", 1, 1, 1, RO, CP__MERGE_NONE},
    {"BITPOS", 1, 1, 1, RO, CP__MERGE_NONE},
    {"BLMOVE", 1, 2, 1, BLK, CP__MERGE_NONE},
    {"BLMPOP", 0, 0, 0, CP__CMD_NUMKEYS | BLK, CP__MERGE_NONE},
    {"BLPOP", 1, -2, 1, BLK, CP__MERGE_NONE},
    {"BRPOP", 1, -2, 1, BLK, CP__MERGE_NONE},
    {"BRPOPLPUSH", 1, 2, 1, BLK, CP__MERGE_NONE},
    {"BZMPOP", 0, 0, 0, CP__CMD_NUMKEYS | BLK, CP__MERGE_NONE},
    {"BZPOPMAX", 1, -2, 1, BLK, CP__MERGE_NONE},
    {"BZPOPMIN", 1, -2, 1, BLK, CP__MERGE_NONE},
    {"CLIENT", 0, 0, 0, NK | CONN, CP__MERGE_NONE},
    {"CLUSTER", 0, 0, 0, NK, CP__MERGE_NONE},
    {"COMMAND", 0, 0, 0, NK | RO, CP__MERGE_NONE},
    {"CONFIG", 0, 0, 0, NK, CP__MERGE_NONE},
    {"DBSIZE", 0, 0, 0, NK | RO | CP__CMD_ALL, CP__MERGE_SUM},
    {"DECR", 1, 1, 1, 0, CP__MERGE_NONE},
    {"DECRBY", 1, 1, 1, 0, CP__MERGE_NONE},
    {"DEL", 1, -1, 1, CP__CMD_SPLIT, CP__MERGE_SUM},
    {"DISCARD", 0, 0, 0, NK | CP__CMD_EXEC, CP__MERGE_NONE},
    {"DUMP", 1, 1, 1, RO, CP__MERGE_NONE},
    {"ECHO", 0, 0, 0, NK | RO, CP__MERGE_NONE},
    {"EVAL", 0, 0, 0, CP__CMD_NUMKEYS, CP__MERGE_NONE},
    {"EVALSHA", 0, 0, 0, CP__CMD_NUMKEYS, CP__MERGE_NONE},
    {"EVALSHA_RO", 0, 0, 0, CP__CMD_NUMKEYS | RO, CP__MERGE_NONE},
    {"EVAL_RO", 0, 0, 0, CP__CMD_NUMKEYS | RO, CP__MERGE_NONE},
    {"EXEC", 0, 0, 0, NK | CP__CMD_EXEC, CP__MERGE_NONE},
    {"EXISTS", 1, -1, 1, RO | CC | CP__CMD_SPLIT, CP__MERGE_SUM},
    {"EXPIRE", 1, 1, 1, 0, CP__MERGE_NONE},
    {"EXPIREAT", 1, 1, 1, 0, CP__MERGE_NONE},
    {"EXPIRETIME", 1, 1, 1, RO, CP__MERGE_NONE},
    {"FCALL", 0, 0, 0, CP__CMD_NUMKEYS, CP__MERGE_NONE},
    {"FCALL_RO", 0, 0, 0, CP__CMD_NUMKEYS | RO, CP__MERGE_NONE},
    {"FLUSHALL", 0, 0, 0, NK | CP__CMD_ALL, CP__MERGE_OK},
    {"FLUSHDB", 0, 0, 0, NK | CP__CMD_ALL, CP__MERGE_OK},
    {"FUNCTION", 0, 0, 0, NK | CP__CMD_SUBALL, CP__MERGE_NONE},
    {"GEODIST", 1, 1, 1, RO, CP__MERGE_NONE},
    {"GEOHASH", 1, 1, 1, RO, CP__MERGE_NONE},
    {"GEOPOS", 1, 1, 1, RO, CP__MERGE_NONE},
    {"GET", 1, 1, 1, RO | CC, CP__MERGE_NONE},
    {"GETBIT", 1, 1, 1, RO, CP__MERGE_NONE},
    {"GETDEL", 1, 1, 1, 0, CP__MERGE_NONE},
    {"GETEX", 1, 1, 1, 0, CP__MERGE_NONE},
    {"GETRANGE", 1, 1, 1, RO | CC, CP__MERGE_NONE},
    {"GETSET", 1, 1, 1, 0, CP__MERGE_NONE},
    {"HDEL", 1, 1, 1, 0, CP__MERGE_NONE},
    {"HELLO", 0, 0, 0, NK | CONN, CP__MERGE_NONE},
    {"HEXISTS", 1, 1, 1, RO | CC, CP__MERGE_NONE},
    {"HGET", 1, 1, 1, RO | CC, CP__MERGE_NONE},
    {"HGETALL", 1, 1, 1, RO | CC, CP__MERGE_NONE},
    {"HINCRBY", 1, 1, 1, 0, CP__MERGE_NONE},
    {"HINCRBYFLOAT", 1, 1, 1, 0, CP__MERGE_NONE},
    {"HKEYS", 1, 1, 1, RO, CP__MERGE_NONE},
    {"HLEN", 1, 1, 1, RO | CC, CP__MERGE_NONE},
    {"HMGET", 1, 1, 1, RO | CC, CP__MERGE_NONE},
    {"HMSET", 1, 1, 1, 0, CP__MERGE_NONE},
    {"HSCAN", 1, 1, 1, RO, CP__MERGE_NONE},
    {"HSET", 1, 1, 1, 0, CP__MERGE_NONE},
    {"HSETNX", 1, 1, 1, 0, CP__MERGE_NONE},
    {"HSTRLEN", 1, 1, 1, RO, CP__MERGE_NONE},
    {"HVALS", 1, 1, 1, RO, CP__MERGE_NONE},
    {"INCR", 1, 1, 1, 0, CP__MERGE_NONE},
    {"INCRBY", 1, 1, 1, 0, CP__MERGE_NONE},
    {"INCRBYFLOAT", 1, 1, 1, 0, CP__MERGE_NONE},
    {"INFO", 0, 0, 0, NK | RO, CP__MERGE_NONE},
    {"KEYS", 0, 0, 0, NK | RO | CP__CMD_ALL, CP__MERGE_CONCAT},
    {"LINDEX", 1, 1, 1, RO | CC, CP__MERGE_NONE},
    {"LINSERT", 1, 1, 1, 0, CP__MERGE_NONE},
    {"LLEN", 1, 1, 1, RO | CC, CP__MERGE_NONE},
    {"LPOP", 1, 1, 1, 0, CP__MERGE_NONE},
    {"LPOS", 1, 1, 1, RO, CP__MERGE_NONE},
    {"LPUSH", 1, 1, 1, 0, CP__MERGE_NONE},
    {"LPUSHX", 1, 1, 1, 0, CP__MERGE_NONE},
    {"LRANGE", 1, 1, 1, RO | CC, CP__MERGE_NONE},
    {"LREM", 1, 1, 1, 0, CP__MERGE_NONE},
    {"LSET", 1, 1, 1, 0, CP__MERGE_NONE},
    {"LTRIM", 1, 1, 1, 0, CP__MERGE_NONE},
    {"MEMORY", 0, 0, 0, NK, CP__MERGE_NONE},
    {"MGET", 1, -1, 1, RO | CC | CP__CMD_SPLIT, CP__MERGE_ARRAY},
    {"MONITOR", 0, 0, 0, NK | CONN, CP__MERGE_NONE},
    {"MSET", 1, -1, 2, CP__CMD_SPLIT, CP__MERGE_OK},
    {"MSETNX", 1, -1, 2, 0, CP__MERGE_NONE},
    {"MULTI", 0, 0, 0, NK | CP__CMD_MULTI, CP__MERGE_NONE},
    {"PERSIST", 1, 1, 1, 0, CP__MERGE_NONE},
    {"PEXPIRE", 1, 1, 1, 0, CP__MERGE_NONE},
    {"PEXPIREAT", 1, 1, 1, 0, CP__MERGE_NONE},
    {"PFADD", 1, 1, 1, 0, CP__MERGE_NONE},
    {"PFCOUNT", 1, -1, 1, 0, CP__MERGE_NONE},
    {"PING", 0, 0, 0, NK | RO, CP__MERGE_NONE},
    {"PSETEX", 1, 1, 1, 0, CP__MERGE_NONE},
    {"PSUBSCRIBE", 0, 0, 0, NK | CONN, CP__MERGE_NONE},
    {"PTTL", 1, 1, 1, RO, CP__MERGE_NONE},
    {"PUNSUBSCRIBE", 0, 0, 0, NK | CONN, CP__MERGE_NONE},
    {"QUIT", 0, 0, 0, NK | CONN, CP__MERGE_NONE},
    {"RANDOMKEY", 0, 0, 0, NK | RO, CP__MERGE_NONE},
    {"READONLY", 0, 0, 0, NK | CONN, CP__MERGE_NONE},
    {"READWRITE", 0, 0, 0, NK | CONN, CP__MERGE_NONE},
    {"RENAME", 1, 2, 1, 0, CP__MERGE_NONE},
    {"RESET", 0, 0, 0, NK | CONN, CP__MERGE_NONE},
    {"RPOP", 1, 1, 1, 0, CP__MERGE_NONE},
    {"RPUSH", 1, 1, 1, 0, CP__MERGE_NONE},
    {"RPUSHX", 1, 1, 1, 0, CP__MERGE_NONE},
    {"SADD", 1, 1, 1, 0, CP__MERGE_NONE},
    {"SCAN", 0, 0, 0, NK | RO, CP__MERGE_NONE},
    {"SCARD", 1, 1, 1, RO | CC, CP__MERGE_NONE},
    {"SCRIPT", 0, 0, 0, NK | CP__CMD_SUBALL, CP__MERGE_NONE},
    {"SDIFF", 1, -1, 1, RO, CP__MERGE_NONE},
    {"SELECT", 0, 0, 0, NK | CONN, CP__MERGE_NONE},
    {"SET", 1, 1, 1, 0, CP__MERGE_NONE},
    {"SETEX", 1, 1, 1, 0, CP__MERGE_NONE},
    {"SETNX", 1, 1, 1, 0, CP__MERGE_NONE},
    {"SETRANGE", 1, 1, 1, 0, CP__MERGE_NONE},
    {"SINTER", 1, -1, 1, RO, CP__MERGE_NONE},
    {"SISMEMBER", 1, 1, 1, RO | CC, CP__MERGE_NONE},
    {"SMEMBERS", 1, 1, 1, RO | CC, CP__MERGE_NONE},
    {"SMISMEMBER", 1, 1, 1, RO, CP__MERGE_NONE},
    {"SPOP", 1, 1, 1, 0, CP__MERGE_NONE},
    {"SRANDMEMBER", 1, 1, 1, RO, CP__MERGE_NONE},
    {"SREM", 1, 1, 1, 0, CP__MERGE_NONE},
    {"SSCAN", 1, 1, 1, RO, CP__MERGE_NONE},
    {"SSUBSCRIBE", 0, 0, 0, NK | CONN, CP__MERGE_NONE},
    {"STRLEN", 1, 1, 1, RO | CC, CP__MERGE_NONE},
    {"SUBSCRIBE", 0, 0, 0, NK | CONN, CP__MERGE_NONE},
    {"SUNION", 1, -1, 1, RO, CP__MERGE_NONE},
    {"SUNSUBSCRIBE", 0, 0, 0, NK | CONN, CP__MERGE_NONE},
    {"TIME", 0, 0, 0, NK | RO, CP__MERGE_NONE},
    {"TOUCH", 1, -1, 1, RO | CP__CMD_SPLIT, CP__MERGE_SUM},
    {"TTL", 1, 1, 1, RO, CP__MERGE_NONE},
    {"TYPE", 1, 1, 1, RO, CP__MERGE_NONE},
    {"UNLINK", 1, -1, 1, CP__CMD_SPLIT, CP__MERGE_SUM},
    {"UNSUBSCRIBE", 0, 0, 0, NK | CONN, CP__MERGE_NONE},
    {"UNWATCH", 0, 0, 0, NK | RO | CP__CMD_ALL | CP__CMD_UNWATCH, CP__MERGE_OK},
    {"WATCH", 1, -1, 1, RO | CP__CMD_WATCH, CP__MERGE_NONE},
    {"XADD", 1, 1, 1, 0, CP__MERGE_NONE},
    {"XLEN", 1, 1, 1, RO, CP__MERGE_NONE},
    {"XRANGE", 1, 1, 1, RO, CP__MERGE_NONE},
    {"XREVRANGE", 1, 1, 1, RO, CP__MERGE_NONE},
    {"ZADD", 1, 1, 1, 0, CP__MERGE_NONE},
    {"ZCARD", 1, 1, 1, RO | CC, CP__MERGE_NONE},
    {"ZCOUNT", 1, 1, 1, RO, CP__MERGE_NONE},
    {"ZINCRBY", 1, 1, 1, 0, CP__MERGE_NONE},
    {"ZMSCORE", 1, 1, 1, RO, CP__MERGE_NONE},
    {"ZRANGE", 1, 1, 1, RO | CC, CP__MERGE_NONE},
    {"ZRANGEBYSCORE", 1, 1, 1, RO, CP__MERGE_NONE},
    {"ZRANK", 1, 1, 1, RO, CP__MERGE_NONE},
    {"ZREM", 1, 1, 1, 0, CP__MERGE_NONE},
    {"ZREVRANGE", 1, 1, 1, RO, CP__MERGE_NONE},
    {"ZREVRANK", 1, 1, 1, RO, CP__MERGE_NONE},
    {"ZSCORE", 1, 1, 1, RO | CC, CP__MERGE_NONE},
};

static const cp__cmdinfo unknown_cmd = {"", 1, 1, 1, 0, CP__MERGE_NONE};

/* Compares a caller's name of any case with an upper-case table name, in the table's (strcmp)
 * order. strncasecmp would fold to lower case, which orders '_' differently from letters. */
static int name_cmp(const char *name, size_t len, const char *upper) {
    size_t i = 0;
    for (; i < len && upper[i] != '\0'; i++) {
        int a = (unsigned char)name[i];
        if (a >= 'a' && a <= 'z')
            a -= 'a' - 'A';
        if (a != (unsigned char)upper[i])
            return a - (unsigned char)upper[i];
    }
    if (i < len)
        return 1;
    return upper[i] == '\0' ? 0 : -1;
}

const cp__cmdinfo *cp__cmd_lookup(const char *name, size_t len) {
    size_t lo = 0, hi = sizeof(table) / sizeof(table[0]);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = name_cmp(name, len, table[mid].name);
        if (c == 0)
            return &table[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return &unknown_cmd;
}

int cp__cmd_keyspan(const cp__cmdinfo *ci, int argc, const char *const *argv, const size_t *argvlen,
                    int *first, int *step) {
    *first = 0;
    *step = 1;
    if (ci->flags & CP__CMD_NOKEY)
        return 0;
    if (ci->flags & CP__CMD_NUMKEYS) {
        /* EVAL script numkeys key... arg...: numkeys must be a plain decimal within argc. */
        if (argc < 3 || argvlen[2] == 0 || argvlen[2] > 9)
            return 0;
        int n = 0;
        for (size_t i = 0; i < argvlen[2]; i++) {
            if (argv[2][i] < '0' || argv[2][i] > '9')
                return 0;
            n = n * 10 + (argv[2][i] - '0');
        }
        if (n > argc - 3)
            return 0;
        *first = 3;
        return n;
    }
    if (ci->first <= 0 || ci->first >= argc)
        return 0;
    int last = ci->last < 0 ? argc + ci->last : ci->last;
    if (last >= argc)
        last = argc - 1;
    if (last < ci->first)
        return 0;
    *first = ci->first;
    *step = ci->step;
    return (last - ci->first) / ci->step + 1;
}

/* ASCII case-insensitive: a == b (b upper case). */
static int arg_is(const char *a, size_t len, const char *upper) {
    return name_cmp(a, len, upper) == 0;
}

const char *cp__cmd_refusal(const cp__cmdinfo *ci, int argc, const char *const *argv,
                            const size_t *argvlen) {
    const char *name = ci->name;
    if (strcmp(name, "SELECT") == 0)
        return argc == 2 && argvlen[1] == 1 && argv[1][0] == '0'
                   ? NULL
                   : "SELECT: a cluster has only database 0, and a client's connections are "
                     "shared and reopened at will: use a client per database (endpoint mode)";
    if (strcmp(name, "CLIENT") == 0) {
        if (argc < 2)
            return NULL;
        if (arg_is(argv[1], argvlen[1], "REPLY"))
            return "CLIENT REPLY: the connection is shared: every command on it needs its reply";
        if (arg_is(argv[1], argvlen[1], "TRACKING") || arg_is(argv[1], argvlen[1], "CACHING"))
            return "CLIENT TRACKING / CACHING: the library's client-side cache tracks its own "
                   "connections' reads: turn it on with cp_options.client_cache (clusterpipe/"
                   "cache.h)";
        return NULL;
    }
    /* Subscriptions need connections of their own, which cp_subscribe makes. */
    if (strcmp(name, "SUBSCRIBE") == 0 || strcmp(name, "PSUBSCRIBE") == 0 ||
        strcmp(name, "SSUBSCRIBE") == 0)
        return "SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE: would turn a shared connection into a "
               "subscriber's: subscribe with cp_subscribe on an event-loop client (docs/async.md, "
               "\"Pub/sub\")";
    if (strstr(name, "UNSUBSCRIBE") != NULL)
        return "UNSUBSCRIBE, PUNSUBSCRIBE, SUNSUBSCRIBE: subscriptions are cp_subscribe's; end one "
               "with cp_unsubscribe (docs/async.md, \"Pub/sub\")";
    if (strcmp(name, "MONITOR") == 0)
        return "MONITOR: turns the connection into a stream of every command the server runs; "
               "run it with redis-cli against one node";
    if (strcmp(name, "HELLO") == 0)
        return "HELLO: the library sets each connection's protocol and authentication itself "
               "(cp_options)";
    if (strcmp(name, "AUTH") == 0)
        return "AUTH: the library authenticates every connection it opens with "
               "cp_options.username and password; AUTH on one shared connection would change the "
               "user of everyone's commands and be lost when it reconnects";
    if (strcmp(name, "RESET") == 0)
        return "RESET: would drop the connection's authentication and state for every command on "
               "it";
    if (strcmp(name, "QUIT") == 0)
        return "QUIT: would close a connection other commands share (cp_free closes them all)";
    if (strcmp(name, "READONLY") == 0 || strcmp(name, "READWRITE") == 0)
        return "READONLY / READWRITE: the library sends READONLY itself where cp_options.read_from "
               "sends reads to replicas";
    return NULL;
}

/* A timeout argument: seconds (a decimal, fractions allowed: BLPOP) or milliseconds (an
 * integer: XREAD's BLOCK), in ms; 0 means none (UINT32_MAX). Unreadable or negative: 0 ms (the
 * server refuses it at once). */
static uint32_t timeout_arg(const char *s, size_t len, int seconds) {
    char buf[32];
    if (len == 0 || len >= sizeof(buf))
        return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (*end != '\0' || !(v >= 0) || v != v)
        return 0;
    double ms = seconds ? v * 1000.0 : v;
    if (ms == 0)
        return UINT32_MAX;
    return ms >= (double)(UINT32_MAX - 1) ? UINT32_MAX - 1 : (uint32_t)(ms + 0.999);
}

cp__timeout_rule cp__cmd_timeout_rule(const char *name, size_t len) {
    if (arg_is(name, len, "XREAD") || arg_is(name, len, "XREADGROUP"))
        return CP__TIMEOUT_BLOCK_ARG;
    if (arg_is(name, len, "WAIT") || arg_is(name, len, "WAITAOF"))
        return CP__TIMEOUT_LAST_MS;
    if (arg_is(name, len, "BLMPOP") || arg_is(name, len, "BZMPOP"))
        return CP__TIMEOUT_FIRST_S;
    return CP__TIMEOUT_LAST_S;
}

int cp__cmd_block_timeout(cp__timeout_rule rule, int argc, const char *const *argv,
                          const size_t *argvlen, uint32_t *ms) {
    *ms = UINT32_MAX;
    if (argc < 2)
        return 1;
    switch (rule) {
    case CP__TIMEOUT_BLOCK_ARG: /* ... [BLOCK ms] ... STREAMS ...: blocks only with BLOCK */
        for (int i = 1; i + 1 < argc && !arg_is(argv[i], argvlen[i], "STREAMS"); i++)
            if (arg_is(argv[i], argvlen[i], "BLOCK")) {
                *ms = timeout_arg(argv[i + 1], argvlen[i + 1], 0);
                return 1;
            }
        return 0;
    case CP__TIMEOUT_LAST_MS: /* WAIT ... timeout (ms) */
        *ms = timeout_arg(argv[argc - 1], argvlen[argc - 1], 0);
        return 1;
    case CP__TIMEOUT_FIRST_S: /* BLMPOP timeout numkeys ... */
        *ms = timeout_arg(argv[1], argvlen[1], 1);
        return 1;
    default: /* BLPOP key ... timeout, BLMOVE src dst LEFT RIGHT timeout, ...: the last */
        *ms = timeout_arg(argv[argc - 1], argvlen[argc - 1], 1);
        return 1;
    }
}
