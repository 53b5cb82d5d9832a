/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Command templates of the bench (private to src/bench/; parsed for `bench --command`, `compare`
 * and `scenario`): the text of a Redis command with placeholders, split into arguments as
 * redis-cli splits its input (spaces separate, "..." with \n \r \t \b \a \\ \" \xHH escapes and
 * '...' with \' group), its placeholders found, and what a reply to it can be checked for; a set
 * of templates with their weights (--command-ratio) and the order in which a client's stream
 * takes them; and the expansion of a template for one request into the argv the library sends.
 *
 * Placeholders, anywhere inside an argument (a run of letters, digits and single underscores
 * between "__" and "__"; any other such name is refused):
 *   __key__       the request's key, drawn from --keys by --key-dist, named as the bench names
 *                 keys ("key:42"; per-master layout "key:{TAG}:000000000042")
 *   __data__      the value of __key__ as load and the bench write it: key, version and length
 *                 embedded (--value-size), so a reply holding it can be verified
 *   __tag__       __key__ as a hash-tagged prefix: "{key:42}", or the key itself when it has a
 *                 tag already (per-master layout); "__tag__:h" is a key of its own for each
 *                 __key__, in __key__'s slot (multi-key commands in a cluster, and keys of other
 *                 types than load's strings)
 *   __otherkey__  another key of the key space, drawn by --key-dist for each occurrence; in a
 *                 cluster a command then spans slots: MGET, MSET, DEL, EXISTS, UNLINK and TOUCH
 *                 are split by slot by the library, others get CROSSSLOT
 *
 * Routing: a template whose first argument after the command name is __key__ or starts with
 * __tag__ (and that has no __otherkey__) is routed by __key__'s slot, computed once when the key
 * is drawn (cp_append_argv_slot, as the GET/SET path); any other template is routed by the
 * library from the server's key specs (cp_append_argv).
 *
 * Checks (cp__tmpl_check), for templates whose key argument is such a __key__ one: a read of one
 * value (GET, GETEX, GETDEL, GETSET, HGET, LINDEX, LMOVE, RPOPLPUSH, and LPOP, RPOP, SPOP,
 * SRANDMEMBER without a count) must answer nil or a value of __key__; a read of several (LRANGE,
 * SMEMBERS, HVALS, HMGET, HGETALL's values, ZRANGE, ZRANGEBYSCORE, ZRANGEBYLEX, ZREVRANGE,
 * ZREVRANGEBYSCORE, ZREVRANGEBYLEX members with or without WITHSCORES, the pops with a count)
 * must answer an array whose strings are all values of __key__; a counter (INCR, INCRBY and
 * HINCRBY by a positive literal) must answer an integer above the one the same client last got
 * for the same key. Anything else is only counted.
 *
 * Memory: a cp__template is a fixed-size plain struct; a cp__cmdset is allocated by
 * cp__cmdset_new (with its schedule) and freed by cp__cmdset_free. Parsing and expanding never
 * keep state; a parsed set is read-only and may be shared by every thread.
 */
#ifndef CLUSTERPIPE_TEMPLATE_H
#define CLUSTERPIPE_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CP__COMMANDS_MAX 16      /* --command given at most this many times */
#define CP__TEMPLATE_LEN_MAX 512 /* bytes of a template as given */
#define CP__TEMPLATE_ARGS_MAX 64 /* arguments of a template, the command name included */
#define CP__TEMPLATE_PIECES_MAX 128
#define CP__COMMAND_WEIGHT_MAX 10000 /* a --command-ratio weight */
#define CP__COMMAND_NAME_MAX 31

/* What an argument, or a piece of one, is. */
typedef enum cp__ph {
    CP__PH_LIT = 0, /* literal bytes */
    CP__PH_KEY,
    CP__PH_DATA,
    CP__PH_TAG,
    CP__PH_OTHERKEY,
    CP__PH_MIXED, /* an argument of several pieces */
} cp__ph;

/* What a reply can be checked for (see the top of this file). */
typedef enum cp__tmpl_check {
    CP__CHECK_NONE = 0, /* only counted */
    CP__CHECK_VALUE,    /* nil (a miss) or a value of __key__ */
    CP__CHECK_VALUES,   /* an array (empty: a miss) whose checked strings are values of __key__ */
    CP__CHECK_COUNTER,  /* an integer above this client's last for the key */
} cp__tmpl_check;

typedef struct cp__tmpl_piece {
    uint8_t ph;        /* cp__ph, never MIXED */
    uint8_t other;     /* CP__PH_OTHERKEY: which of the template's other keys */
    uint16_t off, len; /* CP__PH_LIT: bytes lit[off, off + len) */
} cp__tmpl_piece;

typedef struct cp__tmpl_arg {
    uint8_t ph;        /* a whole-argument cp__ph, or CP__PH_MIXED */
    uint8_t other;     /* CP__PH_OTHERKEY */
    uint16_t off, len; /* CP__PH_LIT */
    uint16_t first, n; /* CP__PH_MIXED: pieces[first, first + n) */
} cp__tmpl_arg;

typedef struct cp__template {
    char text[CP__TEMPLATE_LEN_MAX + 1]; /* as given */
    char name[CP__COMMAND_NAME_MAX + 1]; /* the command, upper case: "HSET" */
    char lit[CP__TEMPLATE_LEN_MAX + 1];  /* the arguments' bytes, unquoted */
    int argc;
    cp__tmpl_arg arg[CP__TEMPLATE_ARGS_MAX];
    cp__tmpl_piece piece[CP__TEMPLATE_PIECES_MAX];
    int npieces;
    unsigned nkey, ndata, ntag, nother; /* occurrences of each placeholder */
    bool by_slot;                       /* routed by __key__'s slot (cp_append_argv_slot) */
    cp__tmpl_check check;               /* what a reply is checked for (with verification on) */
    bool read;         /* CP__CHECK_VALUE or VALUES: a read, its nil replies are misses */
    int first, stride; /* CP__CHECK_VALUES: array elements first, first + stride, ... */
} cp__template;

/* Parses one template (see the top of this file). Returns 0, or CP_EINVAL with the reason in err
 * ("empty", "unbalanced quotes", "unknown placeholder '__x__'", ...; without the flag's name). */
int cp__template_parse(const char *text, cp__template *t, char *err, size_t errlen);

/* "value", "values", "counter" or "none". */
const char *cp__tmpl_check_str(cp__tmpl_check c);

/* Writes __tag__ for key into out (at least keylen + 2 bytes): the key itself when it has a hash
 * tag ("{...}" with something between), else "{" key "}". Returns its length. Any suffix then
 * gives a key in key's slot, unless key holds a '}' but no tag (never one of the bench's keys:
 * no such prefix exists for it). */
size_t cp__key_tag(const char *key, size_t keylen, char *out);

/* What a request's placeholders stand for; the caller fills what the template uses. */
typedef struct cp__tmpl_subst {
    const char *key;
    size_t keylen;
    const char *data; /* __data__: cp__value_fill of key */
    size_t datalen;
    const char *tag; /* __tag__: cp__key_tag of key */
    size_t taglen;
    const char *const *other; /* nother keys, in order of occurrence */
    const size_t *otherlen;
} cp__tmpl_subst;

/* Bytes of scratch cp__template_expand may write for keys up to keymax and values up to
 * valmax bytes (mixed arguments only: the others point into t and sub). */
size_t cp__template_scratch(const cp__template *t, size_t keymax, size_t valmax);

/* The request's arguments into argv / argvlen (t->argc entries): literal and whole-placeholder
 * arguments point into t and sub, mixed ones are written into scratch. Returns t->argc. */
int cp__template_expand(const cp__template *t, const cp__tmpl_subst *sub, char *scratch,
                        const char **argv, size_t *argvlen);

/* Argument k alone into out (cut to cap bytes): e.g. the key a mismatching reply was for.
 * Returns its length. */
size_t cp__template_arg(const cp__template *t, int k, const cp__tmpl_subst *sub, char *out,
                        size_t cap);

/* ---- a set of templates ------------------------------------------------------------------- */

typedef struct cp__cmdset {
    int n;
    cp__template t[CP__COMMANDS_MAX];
    unsigned weight[CP__COMMANDS_MAX];
    char ratio[CP__COMMANDS_MAX * 6]; /* the weights as --command-ratio spells them: "3,1" */
    bool any_other, any_counter;      /* a template has __otherkey__, one is a counter */
    /* The template of request m of each period of a client's stream: the weights divided by
     * their greatest common divisor give the period, and at every step the template furthest
     * behind its share goes next, so any prefix of a stream holds each template's share to
     * within one request. period entries, owned. */
    uint8_t *schedule;
    size_t period;
} cp__cmdset;

/* Parses texts[0..n) (1 <= n <= CP__COMMANDS_MAX) and the weights "W,W,..." (one per template,
 * each in [1, CP__COMMAND_WEIGHT_MAX]; NULL: all 1) into a new set. Returns 0, CP_EINVAL with
 * the reason in err (naming the template by its number when there are several) or CP_ENOMEM. */
int cp__cmdset_new(const char *const *texts, int n, const char *ratio, cp__cmdset **out, char *err,
                   size_t errlen);
void cp__cmdset_free(cp__cmdset *s);

/* The template of request n of a client's stream. */
static inline unsigned cp__cmdset_pick(const cp__cmdset *s, uint64_t n) {
    return s->period == 1 ? 0u : s->schedule[n % s->period];
}

/* " --command 'T' ... --command-ratio W,..." (shell-quoted), for reproducing commands in
 * reports. Returns what snprintf returns. */
int cp__cmdset_flags(const cp__cmdset *s, char *buf, size_t cap);

/* A short label for the set: the command's name for one template, the names joined by "/" when
 * they fit in cap, else "N commands". */
void cp__cmdset_label(const cp__cmdset *s, char *buf, size_t cap);

#endif /* CLUSTERPIPE_TEMPLATE_H */
