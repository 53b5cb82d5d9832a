/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The command table the router uses: key positions, read-only flag, split rules. Kept sorted by
 * name for binary search. Commands not listed are routed by argv[1] and treated as writes, which
 * is the safe default: they are never re-sent after an unknown outcome.
 */
#include "lib/command.h"

#define RO CP__CMD_READONLY
#define NK CP__CMD_NOKEY

/* Sorted by name (strcmp order), upper case. */
static const cp__cmdinfo table[] = {
    {"APPEND", 1, 1, 1, 0, CP__MERGE_NONE},
    {"AUTH", 0, 0, 0, NK, CP__MERGE_NONE},
    {"BITCOUNT", 1, 1, 1, RO, CP__MERGE_NONE},
    {"BITPOS", 1, 1, 1, RO, CP__MERGE_NONE},
    {"CLIENT", 0, 0, 0, NK, CP__MERGE_NONE},
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
    {"EXISTS", 1, -1, 1, RO | CP__CMD_SPLIT, CP__MERGE_SUM},
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
    {"GET", 1, 1, 1, RO, CP__MERGE_NONE},
    {"GETBIT", 1, 1, 1, RO, CP__MERGE_NONE},
    {"GETDEL", 1, 1, 1, 0, CP__MERGE_NONE},
    {"GETEX", 1, 1, 1, 0, CP__MERGE_NONE},
    {"GETRANGE", 1, 1, 1, RO, CP__MERGE_NONE},
    {"GETSET", 1, 1, 1, 0, CP__MERGE_NONE},
    {"HDEL", 1, 1, 1, 0, CP__MERGE_NONE},
    {"HEXISTS", 1, 1, 1, RO, CP__MERGE_NONE},
    {"HGET", 1, 1, 1, RO, CP__MERGE_NONE},
    {"HGETALL", 1, 1, 1, RO, CP__MERGE_NONE},
    {"HINCRBY", 1, 1, 1, 0, CP__MERGE_NONE},
    {"HINCRBYFLOAT", 1, 1, 1, 0, CP__MERGE_NONE},
    {"HKEYS", 1, 1, 1, RO, CP__MERGE_NONE},
    {"HLEN", 1, 1, 1, RO, CP__MERGE_NONE},
    {"HMGET", 1, 1, 1, RO, CP__MERGE_NONE},
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
    {"LINDEX", 1, 1, 1, RO, CP__MERGE_NONE},
    {"LINSERT", 1, 1, 1, 0, CP__MERGE_NONE},
    {"LLEN", 1, 1, 1, RO, CP__MERGE_NONE},
    {"LPOP", 1, 1, 1, 0, CP__MERGE_NONE},
    {"LPOS", 1, 1, 1, RO, CP__MERGE_NONE},
    {"LPUSH", 1, 1, 1, 0, CP__MERGE_NONE},
    {"LPUSHX", 1, 1, 1, 0, CP__MERGE_NONE},
    {"LRANGE", 1, 1, 1, RO, CP__MERGE_NONE},
    {"LREM", 1, 1, 1, 0, CP__MERGE_NONE},
    {"LSET", 1, 1, 1, 0, CP__MERGE_NONE},
    {"LTRIM", 1, 1, 1, 0, CP__MERGE_NONE},
    {"MEMORY", 0, 0, 0, NK, CP__MERGE_NONE},
    {"MGET", 1, -1, 1, RO | CP__CMD_SPLIT, CP__MERGE_ARRAY},
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
    {"PTTL", 1, 1, 1, RO, CP__MERGE_NONE},
    {"RANDOMKEY", 0, 0, 0, NK | RO, CP__MERGE_NONE},
    {"RENAME", 1, 2, 1, 0, CP__MERGE_NONE},
    {"RPOP", 1, 1, 1, 0, CP__MERGE_NONE},
    {"RPUSH", 1, 1, 1, 0, CP__MERGE_NONE},
    {"RPUSHX", 1, 1, 1, 0, CP__MERGE_NONE},
    {"SADD", 1, 1, 1, 0, CP__MERGE_NONE},
    {"SCAN", 0, 0, 0, NK | RO, CP__MERGE_NONE},
    {"SCARD", 1, 1, 1, RO, CP__MERGE_NONE},
    {"SCRIPT", 0, 0, 0, NK | CP__CMD_SUBALL, CP__MERGE_NONE},
    {"SDIFF", 1, -1, 1, RO, CP__MERGE_NONE},
    {"SET", 1, 1, 1, 0, CP__MERGE_NONE},
    {"SETEX", 1, 1, 1, 0, CP__MERGE_NONE},
    {"SETNX", 1, 1, 1, 0, CP__MERGE_NONE},
    {"SETRANGE", 1, 1, 1, 0, CP__MERGE_NONE},
    {"SINTER", 1, -1, 1, RO, CP__MERGE_NONE},
    {"SISMEMBER", 1, 1, 1, RO, CP__MERGE_NONE},
    {"SMEMBERS", 1, 1, 1, RO, CP__MERGE_NONE},
    {"SMISMEMBER", 1, 1, 1, RO, CP__MERGE_NONE},
    {"SPOP", 1, 1, 1, 0, CP__MERGE_NONE},
    {"SRANDMEMBER", 1, 1, 1, RO, CP__MERGE_NONE},
    {"SREM", 1, 1, 1, 0, CP__MERGE_NONE},
    {"SSCAN", 1, 1, 1, RO, CP__MERGE_NONE},
    {"STRLEN", 1, 1, 1, RO, CP__MERGE_NONE},
    {"SUNION", 1, -1, 1, RO, CP__MERGE_NONE},
    {"TIME", 0, 0, 0, NK | RO, CP__MERGE_NONE},
    {"TOUCH", 1, -1, 1, RO | CP__CMD_SPLIT, CP__MERGE_SUM},
    {"TTL", 1, 1, 1, RO, CP__MERGE_NONE},
    {"TYPE", 1, 1, 1, RO, CP__MERGE_NONE},
    {"UNLINK", 1, -1, 1, CP__CMD_SPLIT, CP__MERGE_SUM},
    {"UNWATCH", 0, 0, 0, NK | RO | CP__CMD_ALL | CP__CMD_UNWATCH, CP__MERGE_OK},
    {"WATCH", 1, -1, 1, RO | CP__CMD_WATCH, CP__MERGE_NONE},
    {"XADD", 1, 1, 1, 0, CP__MERGE_NONE},
    {"XLEN", 1, 1, 1, RO, CP__MERGE_NONE},
    {"XRANGE", 1, 1, 1, RO, CP__MERGE_NONE},
    {"XREVRANGE", 1, 1, 1, RO, CP__MERGE_NONE},
    {"ZADD", 1, 1, 1, 0, CP__MERGE_NONE},
    {"ZCARD", 1, 1, 1, RO, CP__MERGE_NONE},
    {"ZCOUNT", 1, 1, 1, RO, CP__MERGE_NONE},
    {"ZINCRBY", 1, 1, 1, 0, CP__MERGE_NONE},
    {"ZMSCORE", 1, 1, 1, RO, CP__MERGE_NONE},
    {"ZRANGE", 1, 1, 1, RO, CP__MERGE_NONE},
    {"ZRANGEBYSCORE", 1, 1, 1, RO, CP__MERGE_NONE},
    {"ZRANK", 1, 1, 1, RO, CP__MERGE_NONE},
    {"ZREM", 1, 1, 1, 0, CP__MERGE_NONE},
    {"ZREVRANGE", 1, 1, 1, RO, CP__MERGE_NONE},
    {"ZREVRANK", 1, 1, 1, RO, CP__MERGE_NONE},
    {"ZSCORE", 1, 1, 1, RO, CP__MERGE_NONE},
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
