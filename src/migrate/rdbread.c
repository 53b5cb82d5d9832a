/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The RDB reader (rdbread.h). An element of the file (an opcode with its operands, or a key with
 * its value) is read from `mark`, the first byte not yet handed out. Opcodes are read whole or
 * not at all: when their bytes are not all there, the reader answers "more" and reads them again
 * from `mark` once fed. A value is read by a small program per type (its grammar: strings,
 * lengths, fixed fields and counted loops), whose position is kept between calls, so a value is
 * never read twice however it is fed.
 */
#include "migrate/rdbread.h"

#include "migrate/crc64.h"
#include "migrate/lzf.h"
#include "migrate/rdbprog.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { S_HEADER, S_BODY, S_VALUE, S_DONE, S_ERROR };
enum { OK = 0, MORE = 1, BAD = 2 };

/* The opcodes of the RDB's body (redis src/rdb.h). */
enum {
    OP_FUNCTION2 = 0xF5,
    OP_FUNCTION_PRE_GA = 0xF6,
    OP_MODULE_AUX = 0xF7,
    OP_IDLE = 0xF8,
    OP_FREQ = 0xF9,
    OP_AUX = 0xFA,
    OP_RESIZEDB = 0xFB,
    OP_EXPIRETIME_MS = 0xFC,
    OP_EXPIRETIME = 0xFD,
    OP_SELECTDB = 0xFE,
    OP_EOF = 0xFF,
};

struct cp__rdb_reader {
    unsigned char *buf;
    size_t len, cap;
    size_t mark;      /* the element being read starts here */
    size_t pos;       /* a value being read has been read up to here */
    uint64_t dropped; /* bytes dropped before buf[0] */
    uint64_t need_at; /* a string read last ends here (counted as dropped is): wanted whole */
    uint64_t file_crc;
    int state;
    int version;
    uint64_t db;
    int64_t expire_ms;
    /* The value being read: its type byte is at mark, its key follows, then its value from
     * mark + value_off; the program's position and its loops (body's pc, rounds left). */
    int value_type;
    int module_aux;     /* the value is a module's aux data, not a key's */
    uint64_t module_id; /* a module value's */
    size_t value_off;
    const unsigned char *prog;
    int pc, depth;
    struct {
        int body;
        uint64_t left;
    } loops[CP__RDB_LOOP_DEPTH];
    char *scratch[2]; /* decoded strings (integers, LZF) */
    size_t scratch_cap[2];
    unsigned char *out; /* the DUMP payload handed out */
    size_t out_cap;
    char err[200];
};

/* ---- the buffer ------------------------------------------------------------------------------ */

static int fail(cp__rdb_reader *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(r->err, sizeof r->err,
                     "RDB at byte %llu: ", (unsigned long long)(r->dropped + r->mark));
    vsnprintf(r->err + n, sizeof r->err - (size_t)n, fmt, ap);
    va_end(ap);
    r->state = S_ERROR;
    return BAD;
}

cp__rdb_reader *cp__rdb_new(void) {
    cp__rdb_reader *r = calloc(1, sizeof *r);
    if (r != NULL)
        r->expire_ms = -1;
    return r;
}

void cp__rdb_free(cp__rdb_reader *r) {
    if (r == NULL)
        return;
    free(r->buf);
    free(r->scratch[0]);
    free(r->scratch[1]);
    free(r->out);
    free(r);
}

int cp__rdb_feed(cp__rdb_reader *r, const void *data, size_t n) {
    if (r->state == S_ERROR)
        return -1;
    /* Drop what was handed out once it is half the buffer or more: a move then carries no more
     * bytes than were handed out since the last one, so moves stay linear overall (moving
     * whenever the buffer is full would move a large backlog for every small read). */
    if (r->mark > 0 && r->mark >= r->len / 2) {
        memmove(r->buf, r->buf + r->mark, r->len - r->mark);
        r->len -= r->mark;
        r->pos -= r->mark;
        r->dropped += r->mark;
        r->mark = 0;
    }
    if (r->len + n > r->cap) {
        size_t cap = r->cap ? r->cap : 4096;
        while (cap < r->len + n)
            cap *= 2;
        unsigned char *b = realloc(r->buf, cap);
        if (b == NULL) {
            fail(r, "out of memory for %zu bytes", cap);
            return -1;
        }
        r->buf = b;
        r->cap = cap;
    }
    if (n > 0)
        memcpy(r->buf + r->len, data, n);
    r->len += n;
    return 0;
}

/* The element read so far is handed out: it counts in the file's checksum. */
static void commit(cp__rdb_reader *r, size_t to) {
    r->file_crc = cp__crc64(r->file_crc, r->buf + r->mark, to - r->mark);
    r->mark = r->pos = to;
}

static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* ---- lengths and strings ----------------------------------------------------------------------
 */

/* A length at *at: *special says it is a string's encoding (the low 6 bits) instead. */
static int read_len(cp__rdb_reader *r, size_t *at, uint64_t *out, int *special) {
    size_t p = *at;
    if (p >= r->len)
        return MORE;
    unsigned char b = r->buf[p];
    *special = 0;
    switch (b >> 6) {
    case 0:
        *out = b & 0x3f;
        *at = p + 1;
        return OK;
    case 1:
        if (r->len - p < 2)
            return MORE;
        *out = (uint64_t)(b & 0x3f) << 8 | r->buf[p + 1];
        *at = p + 2;
        return OK;
    case 2: {
        int n = b == 0x80 ? 4 : b == 0x81 ? 8 : 0;
        if (n == 0)
            return fail(r, "unknown length encoding 0x%02x", b);
        if (r->len - p < 1 + (size_t)n)
            return MORE;
        *out = be(r->buf + p + 1, n);
        *at = p + 1 + (size_t)n;
        return OK;
    }
    default:
        *special = 1;
        *out = b & 0x3f;
        *at = p + 1;
        return OK;
    }
}

/* A length where no string encoding may stand. */
static int read_plain_len(cp__rdb_reader *r, size_t *at, uint64_t *out) {
    int special;
    int rc = read_len(r, at, out, &special);
    if (rc == OK && special)
        return fail(r, "a string encoding where a length belongs");
    return rc;
}

/* Where a string's bytes are: raw (n bytes at data), an integer of n bytes, or LZF (n bytes
 * that unpack to ulen). */
typedef struct str_ref {
    enum { STR_RAW, STR_INT, STR_LZF } kind;
    size_t data;
    uint64_t n, ulen;
} str_ref;

/* The LZF format's densest reference: 3 bytes for 264. */
#define LZF_MAX_RATIO 88

static int read_str(cp__rdb_reader *r, size_t *at, str_ref *s) {
    size_t p = *at;
    uint64_t n = 0;
    int special;
    int rc = read_len(r, &p, &n, &special);
    if (rc != OK)
        return rc;
    if (!special) {
        s->kind = STR_RAW;
    } else if (n <= 2) { /* INT8, INT16, INT32 */
        s->kind = STR_INT;
        n = (uint64_t)1 << n;
    } else if (n == 3) {
        s->kind = STR_LZF;
        if ((rc = read_plain_len(r, &p, &n)) != OK || (rc = read_plain_len(r, &p, &s->ulen)) != OK)
            return rc;
        if (s->ulen == 0 || n == 0 || s->ulen / LZF_MAX_RATIO > n)
            return fail(r, "an LZF string of %llu bytes cannot unpack to %llu",
                        (unsigned long long)n, (unsigned long long)s->ulen);
    } else {
        return fail(r, "unknown string encoding %llu", (unsigned long long)n);
    }
    if (n > r->len - p) {
        r->need_at = r->dropped + p + n;
        return MORE;
    }
    s->data = p;
    s->n = n;
    *at = p + n;
    return OK;
}

static char *scratch(cp__rdb_reader *r, int slot, size_t n) {
    if (r->scratch_cap[slot] < n) {
        char *p = realloc(r->scratch[slot], n);
        if (p == NULL)
            return NULL;
        r->scratch[slot] = p;
        r->scratch_cap[slot] = n;
    }
    return r->scratch[slot];
}

/* A string's value: raw bytes in the buffer, or decoded into scratch slot `slot`. */
static int decode_str(cp__rdb_reader *r, const str_ref *s, int slot, const char **out,
                      size_t *out_len) {
    const unsigned char *d = r->buf + s->data;
    if (s->kind == STR_RAW) {
        *out = (const char *)d;
        *out_len = s->n;
        return OK;
    }
    if (s->kind == STR_INT) {
        uint64_t u = le(d, (int)s->n);
        int bits = (int)s->n * 8;
        int64_t v =
            bits < 64 && (u >> (bits - 1)) ? (int64_t)(u - ((uint64_t)1 << bits)) : (int64_t)u;
        char *p = scratch(r, slot, 24);
        if (p == NULL)
            return fail(r, "out of memory");
        *out_len = (size_t)snprintf(p, 24, "%lld", (long long)v);
        *out = p;
        return OK;
    }
    char *p = scratch(r, slot, (size_t)s->ulen);
    if (p == NULL)
        return fail(r, "out of memory for a string of %llu bytes", (unsigned long long)s->ulen);
    if (!cp__lzf_unpack(d, (size_t)s->n, (unsigned char *)p, (size_t)s->ulen))
        return fail(r, "an LZF string that does not unpack");
    *out = p;
    *out_len = (size_t)s->ulen;
    return OK;
}

/* ---- values -----------------------------------------------------------------------------------
 */

/* The operand of a module value's opcode (redis src/rdb.h's RDB_MODULE_OPCODE_*): a signed or
 * unsigned integer (a length), a float (4 bytes), a double (8 bytes) or a string. */
static int read_module_operand(cp__rdb_reader *r, size_t *p, uint64_t opcode) {
    uint64_t n;
    str_ref s;
    switch (opcode) {
    case 1: /* SINT */
    case 2: /* UINT */
        return read_plain_len(r, p, &n);
    case 3: /* FLOAT */
    case 4: /* DOUBLE */
        n = opcode == 3 ? 4 : 8;
        if (r->len - *p < n)
            return MORE;
        *p += n;
        return OK;
    case 5: /* STRING */
        return read_str(r, p, &s);
    default:
        return fail(r, "a module's value holds opcode %llu, which the module API does not write",
                    (unsigned long long)opcode);
    }
}

/* Runs the value's program from where it stopped: OK at its end (pos just past it). */
static int run_value(cp__rdb_reader *r) {
    for (;;) {
        size_t p = r->pos;
        uint64_t n = 0;
        str_ref s;
        int rc = OK;
        switch (r->prog[r->pc]) {
        case P_DONE:
            return OK;
        case P_STR:
            rc = read_str(r, &p, &s);
            break;
        case P_LEN:
            rc = read_plain_len(r, &p, &n);
            break;
        case P_DBL: /* a length byte; 253, 254, 255: NaN, +inf, -inf with no bytes */
            if (p >= r->len)
                return MORE;
            n = r->buf[p] >= 253 ? 1 : 1 + (uint64_t)r->buf[p];
            if (r->len - p < n)
                return MORE;
            p += n;
            break;
        case P_F8:
        case P_F16:
            n = r->prog[r->pc] == P_F8 ? 8 : 16;
            if (r->len - p < n)
                return MORE;
            p += n;
            break;
        case P_MODULE: /* an opcode and its operand at a time, up to the EOF opcode */
            if ((rc = read_plain_len(r, &p, &n)) != OK)
                return rc;
            if (n == 0)
                break;
            if ((rc = read_module_operand(r, &p, n)) != OK)
                return rc;
            r->pos = p;
            continue;
        case P_LOOP:
            if ((rc = read_plain_len(r, &p, &n)) != OK)
                return rc;
            r->pos = p;
            if (n > 0) {
                r->loops[r->depth].body = r->pc + 1;
                r->loops[r->depth].left = n;
                r->depth++;
                r->pc++;
            } else { /* skip the body, inner loops and all */
                int nest = 0;
                for (r->pc++; r->prog[r->pc] != P_END || nest > 0; r->pc++)
                    nest += r->prog[r->pc] == P_LOOP ? 1 : r->prog[r->pc] == P_END ? -1 : 0;
                r->pc++;
            }
            continue;
        case P_END:
            if (--r->loops[r->depth - 1].left > 0) {
                r->pc = r->loops[r->depth - 1].body;
            } else {
                r->depth--;
                r->pc++;
            }
            continue;
        }
        if (rc != OK)
            return rc;
        r->pos = p;
        r->pc++;
    }
}

/* A module's type name from its 64-bit id: 9 characters of 6 bits, then 10 bits of version. */
static void module_name(uint64_t id, char name[10]) {
    static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    for (int j = 0; j < 9; j++)
        name[j] = set[(id >> (64 - 6 * (j + 1))) & 63];
    name[9] = '\0';
}

/* RDB_TYPE_MODULE_PRE_GA (Redis 4.0's release candidates): its end is known to its module alone. */
static int refuse_module(cp__rdb_reader *r, size_t p) {
    uint64_t id = 0;
    int rc = read_plain_len(r, &p, &id);
    if (rc != OK)
        return rc;
    char name[10];
    module_name(id, name);
    return fail(r,
                "a key of module type '%s' (encoding version %u) saved in the format of Redis "
                "4.0's release candidates (RDB type 6): its value cannot be read, nor skipped, "
                "without the module",
                name, (unsigned)(id & 1023));
}

/* The payload DUMP would give: type, value, RDB version, CRC64 (both little endian). */
static int frame_payload(cp__rdb_reader *r, cp__rdb_event *ev) {
    size_t vlen = r->pos - (r->mark + r->value_off);
    size_t n = 1 + vlen + 10;
    if (r->out_cap < n) {
        unsigned char *o = realloc(r->out, n);
        if (o == NULL)
            return fail(r, "out of memory for a value of %zu bytes", vlen);
        r->out = o;
        r->out_cap = n;
    }
    unsigned char *o = r->out;
    o[0] = (unsigned char)r->value_type;
    memcpy(o + 1, r->buf + r->mark + r->value_off, vlen);
    o[1 + vlen] = (unsigned char)(r->version & 0xff);
    o[2 + vlen] = (unsigned char)(r->version >> 8);
    uint64_t crc = cp__crc64(0, o, 3 + vlen);
    for (int i = 0; i < 8; i++)
        o[3 + vlen + i] = (unsigned char)(crc >> (8 * i));
    ev->value = o;
    ev->value_len = n;
    return OK;
}

/* ---- the body ---------------------------------------------------------------------------------
 */

static int read_header(cp__rdb_reader *r, cp__rdb_event *ev) {
    if (r->len - r->mark < 9)
        return MORE;
    const unsigned char *h = r->buf + r->mark;
    if (memcmp(h, "REDIS", 5) != 0)
        return fail(r, "not an RDB: it does not start with \"REDIS\"");
    int v = 0;
    for (int i = 5; i < 9; i++) {
        if (h[i] < '0' || h[i] > '9')
            return fail(r, "not an RDB: its version is not 4 digits");
        v = v * 10 + (h[i] - '0');
    }
    if (v < 1)
        return fail(r, "RDB version %d is not a version", v);
    if (v > CP__RDB_VERSION_MAX)
        return fail(r, "RDB version %d is newer than this reader knows (up to %d)", v,
                    CP__RDB_VERSION_MAX);
    r->version = v;
    commit(r, r->mark + 9);
    r->state = S_BODY;
    ev->type = CP__RDB_EV_VERSION;
    ev->version = v;
    return OK;
}

static int read_end(cp__rdb_reader *r, size_t p, cp__rdb_event *ev) {
    size_t sum_len = r->version >= 5 ? 8 : 0;
    if (r->len - p < sum_len)
        return MORE;
    commit(r, p); /* the checksum covers the EOF opcode */
    uint64_t stored = sum_len ? le(r->buf + p, 8) : 0;
    if (stored != 0 && stored != r->file_crc)
        return fail(r, "the file's checksum is %016llx, its bytes sum to %016llx",
                    (unsigned long long)stored, (unsigned long long)r->file_crc);
    r->mark = r->pos = p + sum_len;
    r->state = S_DONE;
    ev->type = CP__RDB_EV_END;
    ev->checksum = stored;
    return OK;
}

/* The value of type `type` from p, read by the program r->prog. */
static void start_value(cp__rdb_reader *r, int type, size_t p) {
    r->value_type = type;
    r->module_aux = 0;
    r->value_off = p - r->mark;
    r->pos = p;
    r->pc = r->depth = 0;
    r->state = S_VALUE;
}

/* A key: its type byte at p - 1 (mark), its name from p. */
static int start_key(cp__rdb_reader *r, int type, size_t p) {
    str_ref key;
    int rc = read_str(r, &p, &key);
    if (rc != OK)
        return rc;
    if (type == 6)
        return refuse_module(r, p);
    r->prog = cp__rdb_program(type);
    if (r->prog == NULL)
        return fail(r, "unknown value type %d (RDB version %d)", type, r->version);
    size_t id_at = p;
    if (type == CP__RDB_TYPE_MODULE2 && (rc = read_plain_len(r, &id_at, &r->module_id)) != OK)
        return rc;
    start_value(r, type, p);
    return OK;
}

/* A module's aux data: the module id from p, then its value. */
static int start_module_aux(cp__rdb_reader *r, size_t p) {
    size_t id_at = p;
    int rc = read_plain_len(r, &id_at, &r->module_id);
    if (rc != OK)
        return rc;
    r->prog = CP__RDB_PROG_MODULE_AUX;
    start_value(r, -1, p);
    r->module_aux = 1;
    return OK;
}

static int finish_key(cp__rdb_reader *r, cp__rdb_event *ev) {
    if (r->module_aux || r->value_type == CP__RDB_TYPE_MODULE2)
        module_name(r->module_id, ev->module);
    if (r->module_aux) { /* no key, no payload: the module alone could use it */
        ev->type = CP__RDB_EV_MODULE_AUX;
        commit(r, r->pos);
        r->state = S_BODY;
        return OK;
    }
    size_t p = r->mark + 1;
    str_ref key;
    int rc = read_str(r, &p, &key); /* it was read whole before the value */
    if (rc == OK)
        rc = decode_str(r, &key, 0, &ev->name, &ev->name_len);
    if (rc == OK)
        rc = frame_payload(r, ev);
    if (rc != OK)
        return rc;
    ev->type = CP__RDB_EV_KEY;
    ev->db = r->db;
    ev->expire_ms = r->expire_ms;
    ev->value_type = r->value_type;
    r->expire_ms = -1;
    commit(r, r->pos);
    r->state = S_BODY;
    return OK;
}

/* One opcode or the start of a key; OK with *emitted set when ev was filled. */
static int read_body(cp__rdb_reader *r, cp__rdb_event *ev, int *emitted) {
    size_t p = r->mark;
    if (p >= r->len)
        return MORE;
    int op = r->buf[p++];
    uint64_t a = 0, b = 0;
    str_ref s1, s2;
    int rc;
    *emitted = 1;
    switch (op) {
    case OP_EOF:
        return read_end(r, p, ev);
    case OP_SELECTDB:
        if ((rc = read_plain_len(r, &p, &a)) != OK)
            return rc;
        r->db = a;
        ev->type = CP__RDB_EV_SELECTDB;
        ev->db = a;
        break;
    case OP_RESIZEDB:
        if ((rc = read_plain_len(r, &p, &a)) != OK || (rc = read_plain_len(r, &p, &b)) != OK)
            return rc;
        ev->type = CP__RDB_EV_RESIZEDB;
        ev->db = r->db;
        ev->db_size = a;
        ev->expires_size = b;
        break;
    case OP_EXPIRETIME:
    case OP_EXPIRETIME_MS: {
        size_t n = op == OP_EXPIRETIME ? 4 : 8;
        if (r->len - p < n)
            return MORE;
        uint64_t t = le(r->buf + p, (int)n);
        r->expire_ms = op == OP_EXPIRETIME ? (int64_t)(t * 1000) : (int64_t)t;
        p += n;
        *emitted = 0;
        break;
    }
    case OP_FREQ: /* the LFU counter and the LRU idle time: not part of DUMP's payload */
        if (p >= r->len)
            return MORE;
        p++;
        *emitted = 0;
        break;
    case OP_IDLE:
        if ((rc = read_plain_len(r, &p, &a)) != OK)
            return rc;
        *emitted = 0;
        break;
    case OP_AUX:
        if ((rc = read_str(r, &p, &s1)) != OK || (rc = read_str(r, &p, &s2)) != OK)
            return rc;
        if ((rc = decode_str(r, &s1, 0, &ev->name, &ev->name_len)) != OK ||
            (rc = decode_str(r, &s2, 1, (const char **)&ev->value, &ev->value_len)) != OK)
            return rc;
        ev->type = CP__RDB_EV_AUX;
        break;
    case OP_FUNCTION2:
        if ((rc = read_str(r, &p, &s1)) != OK)
            return rc;
        if ((rc = decode_str(r, &s1, 1, (const char **)&ev->value, &ev->value_len)) != OK)
            return rc;
        ev->type = CP__RDB_EV_FUNCTION;
        break;
    case OP_FUNCTION_PRE_GA:
        return fail(r, "a function of Redis 7.0's release candidates (opcode 0xF6) is not read");
    case OP_MODULE_AUX:
        *emitted = 0;
        return start_module_aux(r, p);
    default:
        *emitted = 0;
        return start_key(r, op, p);
    }
    commit(r, p);
    return OK;
}

int cp__rdb_next(cp__rdb_reader *r, cp__rdb_event *ev) {
    memset(ev, 0, sizeof *ev);
    ev->expire_ms = -1;
    for (;;) {
        int rc = OK, emitted = 1;
        switch (r->state) {
        case S_ERROR:
            return CP__RDB_ERROR;
        case S_DONE:
            return CP__RDB_MORE;
        case S_HEADER:
            rc = read_header(r, ev);
            break;
        case S_BODY:
            rc = read_body(r, ev, &emitted);
            break;
        case S_VALUE:
            rc = run_value(r);
            if (rc == OK)
                rc = finish_key(r, ev);
            break;
        }
        if (rc == MORE)
            return CP__RDB_MORE;
        if (rc == BAD)
            return CP__RDB_ERROR;
        if (emitted)
            return CP__RDB_EVENT;
    }
}

const char *cp__rdb_error(const cp__rdb_reader *r) {
    return r->state == S_ERROR ? r->err : NULL;
}

const unsigned char *cp__rdb_rest(const cp__rdb_reader *r, size_t *len) {
    *len = r->len - r->mark;
    return r->buf + r->mark;
}

void cp__rdb_drop(cp__rdb_reader *r, size_t n) {
    if (r->state != S_DONE || n > r->len - r->mark)
        return;
    r->mark += n;
    r->pos = r->mark;
}

uint64_t cp__rdb_consumed(const cp__rdb_reader *r) {
    return r->dropped + r->mark;
}

uint64_t cp__rdb_parsed(const cp__rdb_reader *r) {
    return r->dropped + r->pos;
}

int cp__rdb_wants_string(const cp__rdb_reader *r) {
    return r->need_at > r->dropped + r->len;
}
