/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Key positions for every command the packaged redis-server lists, against the server itself.
 * The library reads COMMAND from a one-master cluster (through its own reader), parses it
 * (cmdtable.h), and for every command and subcommand the test builds sample argvs from the
 * command's arity and key specs, as read by the test from the raw reply (not through the
 * library): structured ones (1, 2 or 3 keys per variadic spec, keywords in place, numkeys
 * filled, extra trailing arguments) plus a few written by hand where the specs say "unknown"
 * (SORT's STORE, MIGRATE's KEYS), and random ones over the command's own keywords, numbers and
 * empty strings. Every argv goes to COMMAND GETKEYS, and the keys the library finds (keyspec.h)
 * must be the server's, in order; where the server finds none ("Invalid arguments", "no key
 * arguments") the library must find none. The read-only classification is checked against the
 * readonly / write flags of every command, and the built-in table's answers (command.h) are
 * compared for the commands it knows (printed: it is only the fallback).
 *
 * CP_RECORD_COMMAND=PATH also writes the COMMAND reply as RESP to PATH: that is how
 * tests/data/command_redis7.resp was made (test_keyspec's recording).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "asserts.h"
#include "clusterpipe/clusterpipe.h"
#include "fixture.h"
#include "lib/cmd/keyspec.h"

#define MAXARGS 40
#define TOKLEN 24

typedef struct sample {
    int argc;
    char argv[MAXARGS][TOKLEN];
    size_t len[MAXARGS];
    int entry;   /* index into the test's list of leaf commands */
    int kind;    /* 0 structured, 1 by hand, 2 random */
    int builtin; /* compare the built-in table too */
    int local;   /* argc 1 (arity 1): COMMAND GETKEYS needs an argument; the library alone */
} sample;

typedef struct samples {
    sample *v;
    size_t n, cap;
} samples;

/* A leaf command as the test reads it from the raw reply. */
typedef struct leaf {
    char name[2][TOKLEN]; /* container and subcommand, or the command and "" */
    int nnames;
    long long arity;
    int readonly, write;
    const redisReply *specs; /* may be NULL (no key specs) */
    int server_keys;         /* samples for which the server named at least one key */
    int server_none;         /* samples the server said have no keys */
    int keyless;             /* the server said "The command has no key arguments" */
} leaf;

static const redisReply *field(const redisReply *m, const char *key) {
    if (m == NULL || m->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (size_t i = 0; i + 1 < m->elements; i += 2)
        if ((m->element[i]->type == REDIS_REPLY_STRING ||
             m->element[i]->type == REDIS_REPLY_STATUS) &&
            strcmp(m->element[i]->str, key) == 0)
            return m->element[i + 1];
    return NULL;
}

static long long ifield(const redisReply *m, const char *key) {
    const redisReply *v = field(m, key);
    assert_non_null(v);
    assert_int_equal(v->type, REDIS_REPLY_INTEGER);
    return v->integer;
}

static int has_flag(const redisReply *flags, const char *name) {
    for (size_t i = 0; i < flags->elements; i++)
        if (strcmp(flags->element[i]->str, name) == 0)
            return 1;
    return 0;
}

/* ---- building samples ---------------------------------------------------------------------- */

static void set_arg(sample *s, int i, const char *v) {
    assert_int_lt(i, MAXARGS);
    while (s->argc <= i) {
        snprintf(s->argv[s->argc], TOKLEN, "f%d", s->argc);
        s->len[s->argc] = strlen(s->argv[s->argc]);
        s->argc++;
    }
    snprintf(s->argv[i], TOKLEN, "%s", v);
    s->len[i] = strlen(s->argv[i]);
}

static void start(sample *s, const leaf *l, int entry, int kind) {
    memset(s, 0, sizeof(*s));
    s->entry = entry;
    s->kind = kind;
    for (int i = 0; i < l->nnames; i++)
        set_arg(s, i, l->name[i]);
}

/* Fits the arity: pads a short argv; 0 when it is too long for a fixed arity. */
static int fit_arity(sample *s, const leaf *l, int extra) {
    int want = l->arity > 0 ? (int)l->arity : (int)-l->arity;
    if (l->arity > 0 && s->argc > want)
        return 0;
    if (s->argc < want)
        set_arg(s, want - 1, "f");
    if (l->arity < 0)
        for (int i = 0; i < extra; i++)
            set_arg(s, s->argc, "t");
    if (l->arity > 0 && s->argc != want)
        return 0;
    if (s->argc == 1 && l->arity < 0)
        set_arg(s, 1, "t"); /* COMMAND GETKEYS wants one argument after the name */
    s->local = s->argc == 1;
    return s->argc < MAXARGS;
}

static void push(samples *ss, const sample *s) {
    if (ss->n == ss->cap) {
        ss->cap = ss->cap ? ss->cap * 2 : 1024;
        ss->v = realloc(ss->v, ss->cap * sizeof(*ss->v));
        assert_non_null(ss->v);
    }
    ss->v[ss->n++] = *s;
}

/* One structured sample: every spec in order, K keys where a spec allows several. */
static int structured(sample *s, const leaf *l, int entry, int K, int extra) {
    start(s, l, entry, 0);
    int keyno = 0;
    char key[TOKLEN];
    size_t nspecs = l->specs ? l->specs->elements : 0;
    for (size_t j = 0; j < nspecs; j++) {
        const redisReply *sp = l->specs->element[j];
        const redisReply *bs = field(sp, "begin_search"), *fk = field(sp, "find_keys");
        const char *bt = field(bs, "type")->str, *ft = field(fk, "type")->str;
        const redisReply *bspec = field(bs, "spec"), *fspec = field(fk, "spec");
        int begin;
        if (strcmp(bt, "index") == 0) {
            begin = (int)ifield(bspec, "index");
        } else if (strcmp(bt, "keyword") == 0) {
            long long from = ifield(bspec, "startfrom");
            int at = from > 0 ? (int)from : 0;
            if (at < s->argc)
                at = s->argc;
            set_arg(s, at, field(bspec, "keyword")->str);
            begin = at + 1;
        } else {
            continue; /* unknown: the hand-written samples cover these */
        }
        if (strcmp(ft, "range") == 0) {
            long long lastkey = ifield(fspec, "lastkey"), step = ifield(fspec, "keystep");
            long long limit = ifield(fspec, "limit");
            int n = lastkey >= 0 ? (int)(lastkey / step) + 1 : K;
            for (int k = 0; k < n; k++) {
                snprintf(key, sizeof(key), "k%d", keyno++);
                set_arg(s, begin + k * (int)step, key);
            }
            int lastpos = begin + (n - 1) * (int)step;
            if (lastkey < 0 && limit > 0) {
                set_arg(s, begin + n * (int)limit - 1, "id"); /* the other parts (XREAD ids) */
            } else if (lastkey < 0) {
                /* the keys end at argc + lastkey: the rest of the last group, then what the
                 * spec leaves after the keys (BLPOP's timeout) */
                int trailing = (int)(step - 1) + (int)(-lastkey - 1);
                if (trailing > 0)
                    set_arg(s, lastpos + trailing, "v");
            }
        } else if (strcmp(ft, "keynum") == 0) {
            long long idx = ifield(fspec, "keynumidx"), firstkey = ifield(fspec, "firstkey");
            long long step = ifield(fspec, "keystep");
            char num[8];
            snprintf(num, sizeof(num), "%d", K);
            set_arg(s, begin + (int)idx, num);
            for (int k = 0; k < K; k++) {
                snprintf(key, sizeof(key), "k%d", keyno++);
                set_arg(s, begin + (int)firstkey + k * (int)step, key);
            }
        }
    }
    return fit_arity(s, l, extra);
}

/* Samples for the specs "unknown" cannot describe, and forms the structured ones miss. */
static const char *const by_hand[] = {
    "SORT k",
    "SORT k STORE d",
    "SORT k BY p LIMIT 0 10 GET g GET h DESC ALPHA STORE d",
    "SORT k STORE a STORE b",
    "SORT k LIMIT STORE x STORE",
    "SORT_RO k BY p GET g",
    "MIGRATE h 1 k 0 5",
    "MIGRATE h 1 k 0 5 COPY REPLACE",
    "MIGRATE h 1 \"\" 0 5 KEYS a b c",
    "MIGRATE h 1 \"\" 0 5 COPY AUTH pw KEYS a b",
    "MIGRATE h 1 \"\" 0 5 AUTH2 u pw KEYS a",
    "MIGRATE h 1 \"\" 0 5 AUTH KEYS KEYS a",
    "MIGRATE h 1 k 0 5 KEYS a",
    "GEORADIUS k 0 0 1 km STORE d STOREDIST e",
    "GEORADIUS k 0 0 1 km STOREDIST e STORE d",
    "XREAD COUNT 2 BLOCK 0 STREAMS a b c 0 0 0",
    "XREADGROUP GROUP g c COUNT 1 NOACK STREAMS a b 0 0",
    "ZUNIONSTORE d 3 a b c WEIGHTS 1 2 3 AGGREGATE SUM",
    "EVAL s 3 a b c x y",
    "SET k v NX GET",
    "BITFIELD k GET u8 0 SET u8 0 1",
    "MSET a 1 b 2 c 3",
    "BLPOP a b c 0",
};

static int leaf_of(const leaf *leaves, int nleaves, const char *a, const char *b) {
    for (int i = 0; i < nleaves; i++)
        if (strcasecmp(leaves[i].name[0], a) == 0 &&
            (b == NULL ? leaves[i].nnames == 1
                       : leaves[i].nnames == 2 && strcasecmp(leaves[i].name[1], b) == 0))
            return i;
    return -1;
}

static void hand_samples(samples *ss, const leaf *leaves, int nleaves) {
    for (size_t i = 0; i < sizeof(by_hand) / sizeof(by_hand[0]); i++) {
        char line[256];
        snprintf(line, sizeof(line), "%s", by_hand[i]);
        sample s;
        memset(&s, 0, sizeof(s));
        for (char *tok = strtok(line, " "); tok != NULL; tok = strtok(NULL, " "))
            set_arg(&s, s.argc, strcmp(tok, "\"\"") == 0 ? "" : tok);
        s.entry = leaf_of(leaves, nleaves, s.argv[0], NULL);
        assert_int_ge(s.entry, 0);
        s.kind = 1;
        push(ss, &s);
    }
}

/* Random argvs of the command's arity over tokens that matter to key finding. */
static void random_samples(samples *ss, const leaf *l, int entry, unsigned *seed, int count) {
    static const char *const common[] = {"0",     "1",     "2",       "3",     "-1",
                                         "",      "STORE", "LIMIT",   "GET",   "BY",
                                         "KEYS",  "AUTH",  "AUTH2",   "COPY",  "COUNT",
                                         "BLOCK", "GROUP", "STREAMS", "NOACK", "STOREDIST"};
    const char *own[CP__CMDTABLE_SPECMAX];
    int nown = 0;
    for (size_t j = 0; l->specs && j < l->specs->elements && nown < CP__CMDTABLE_SPECMAX; j++) {
        const redisReply *bs = field(l->specs->element[j], "begin_search");
        const redisReply *kw = field(field(bs, "spec"), "keyword");
        if (kw != NULL)
            own[nown++] = kw->str;
    }
    size_t ncommon = sizeof(common) / sizeof(common[0]);
    for (int v = 0; v < count; v++) {
        sample s;
        start(&s, l, entry, 2);
        *seed = *seed * 1103515245u + 12345u;
        int argc = l->arity > 0 ? (int)l->arity : (int)-l->arity + (int)((*seed >> 16) % 7);
        if (argc < 2)
            continue; /* arity 1: the structured sample, asked locally */
        if (argc >= MAXARGS)
            argc = MAXARGS - 1;
        for (int a = s.argc; a < argc; a++) {
            *seed = *seed * 1103515245u + 12345u;
            unsigned r = (*seed >> 16) % (unsigned)(ncommon + (size_t)nown + 6);
            char tok[TOKLEN];
            if (r < ncommon)
                snprintf(tok, sizeof(tok), "%s", common[r]);
            else if (r < ncommon + (unsigned)nown)
                snprintf(tok, sizeof(tok), "%s", own[r - ncommon]);
            else
                snprintf(tok, sizeof(tok), "r%d", a);
            set_arg(&s, a, tok);
        }
        if (s.argc == argc)
            push(ss, &s);
    }
}

/* ---- the check ----------------------------------------------------------------------------- */

/* Appends to a string buffer; what does not fit is dropped whole (a test's message). */
static void append(char *out, size_t outlen, const char *fmt, ...) {
    char piece[160];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(piece, sizeof(piece), fmt, ap);
    va_end(ap);
    size_t used = strlen(out);
    if (n > 0 && (size_t)n < sizeof(piece) && used + (size_t)n < outlen)
        memcpy(out + used, piece, (size_t)n + 1);
}

/* The library's keys of s (table t; NULL: the built-in table) as a string, "k0 k1". */
static void keys_string(const cp__cmdtable *t, const sample *s, char *out, size_t outlen,
                        unsigned *flags) {
    const char *argv[MAXARGS];
    for (int i = 0; i < s->argc; i++)
        argv[i] = s->argv[i];
    cp__keys k;
    int n = cp__keys_find(t, s->argc, argv, s->len, 0, &k);
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        int a = cp__keys_at(&k, i);
        assert_int_ge(a, 1);
        assert_int_lt(a, s->argc);
        append(out, outlen, "%s[%s]", i ? " " : "", s->argv[a]);
    }
    *flags = k.flags;
}

static void server_string(const redisReply *r, char *out, size_t outlen) {
    out[0] = '\0';
    for (size_t i = 0; i < r->elements; i++)
        append(out, outlen, "%s[%s]", i ? " " : "", r->element[i]->str);
}

static void show(const sample *s, char *out, size_t outlen) {
    out[0] = '\0';
    for (int i = 0; i < s->argc; i++)
        append(out, outlen, "%s%s", i ? " " : "", s->len[i] ? s->argv[i] : "\"\"");
}

static void record(const redisReply *r, FILE *o) {
    switch (r->type) {
    case REDIS_REPLY_ARRAY:
        fprintf(o, "*%zu\r\n", r->elements);
        for (size_t i = 0; i < r->elements; i++)
            record(r->element[i], o);
        break;
    case REDIS_REPLY_STRING:
        fprintf(o, "$%zu\r\n", r->len);
        fwrite(r->str, 1, r->len, o);
        fputs("\r\n", o);
        break;
    case REDIS_REPLY_STATUS:
        fprintf(o, "+%s\r\n", r->str);
        break;
    case REDIS_REPLY_ERROR:
        fprintf(o, "-%s\r\n", r->str);
        break;
    case REDIS_REPLY_INTEGER:
        fprintf(o, ":%lld\r\n", r->integer);
        break;
    default:
        fputs("$-1\r\n", o);
        break;
    }
}

static void every_command_matches_getkeys(void **state) {
    cp_fixture *f = *state;
    cp_client *c = cp_fixture_client(f, NULL);
    redisReply *cmds = cp_command(c, "COMMAND");
    assert_non_null(cmds);
    assert_int_equal(cmds->type, REDIS_REPLY_ARRAY);
    const char *rec = getenv("CP_RECORD_COMMAND");
    if (rec != NULL && rec[0] != '\0') {
        FILE *o = fopen(rec, "wb");
        assert_non_null(o);
        record(cmds, o);
        assert_int_equal(fclose(o), 0);
    }
    cp__cmdtable *t = NULL;
    char err[128];
    assert_int_equal(cp__cmdtable_parse(cmds, &t, err, sizeof(err)), 0);
    assert_int_equal(t->skipped, 0);

    /* The leaf commands and the containers, read from the raw reply. */
    leaf *leaves = calloc(1024, sizeof(*leaves));
    int nleaves = 0, ncontainers = 0, nro = 0, nwrite = 0, nneither = 0;
    assert_non_null(leaves);
    for (size_t i = 0; i < cmds->elements; i++) {
        const redisReply *e = cmds->element[i];
        assert_int_ge(e->elements, 10);
        const redisReply *subs = e->element[9];
        if (subs->elements > 0) {
            /* A container: keyless itself and for subcommands it does not have. */
            ncontainers++;
            sample s;
            leaf l = {.nnames = 1, .arity = -1};
            snprintf(l.name[0], TOKLEN, "%s", e->element[0]->str);
            start(&s, &l, -1, 0);
            char got[512];
            unsigned fl;
            keys_string(t, &s, got, sizeof(got), &fl);
            assert_string_equal(got, "");
            set_arg(&s, 1, "nosuch");
            set_arg(&s, 2, "k");
            keys_string(t, &s, got, sizeof(got), &fl);
            assert_string_equal(got, "");
        }
        size_t nsub = subs->elements ? subs->elements : 1;
        for (size_t j = 0; j < nsub; j++) {
            const redisReply *x = subs->elements ? subs->element[j] : e;
            leaf *l = &leaves[nleaves++];
            assert_int_lt(nleaves, 1024);
            const char *bar = strchr(x->element[0]->str, '|');
            if (bar != NULL) {
                size_t blen = (size_t)(bar - x->element[0]->str);
                assert_int_lt(blen, TOKLEN);
                memcpy(l->name[0], x->element[0]->str, blen);
                l->name[0][blen] = '\0';
                snprintf(l->name[1], TOKLEN, "%s", bar + 1);
                l->nnames = 2;
            } else {
                snprintf(l->name[0], TOKLEN, "%s", x->element[0]->str);
                l->nnames = 1;
            }
            l->arity = x->element[1]->integer;
            l->readonly = has_flag(x->element[2], "readonly");
            l->write = has_flag(x->element[2], "write");
            assert_false(l->readonly && l->write);
            nro += l->readonly;
            nwrite += l->write;
            nneither += !l->readonly && !l->write;
            l->specs = x->element[8];
        }
    }

    samples ss = {0};
    for (int i = 0; i < nleaves; i++) {
        sample s;
        /* Seeded by name: the same samples whatever order the server lists commands in. */
        unsigned seed = 20261201u;
        for (int n = 0; n < leaves[i].nnames; n++)
            for (const char *p = leaves[i].name[n]; *p; p++)
                seed = seed * 31u + (unsigned char)*p;
        for (int K = 1; K <= 3; K++)
            for (int extra = 0; extra <= 2; extra++)
                if (structured(&s, &leaves[i], i, K, extra)) {
                    s.builtin = 1;
                    push(&ss, &s);
                }
        random_samples(&ss, &leaves[i], i, &seed, 24);
    }
    hand_samples(&ss, leaves, nleaves);

    /* Every sample to COMMAND GETKEYS, pipelined, on the master's own connection. */
    int port = atoi(strrchr(f->endpoints, ':') + 1);
    redisContext *rc = cp_fixture_conn(f, port);
    assert_non_null(rc);
    for (size_t i = 0; i < ss.n; i++) {
        if (ss.v[i].local)
            continue;
        const char *argv[MAXARGS + 2] = {"COMMAND", "GETKEYS"};
        size_t len[MAXARGS + 2] = {7, 7};
        for (int a = 0; a < ss.v[i].argc; a++)
            argv[a + 2] = ss.v[i].argv[a], len[a + 2] = ss.v[i].len[a];
        assert_int_equal(redisAppendCommandArgv(rc, ss.v[i].argc + 2, argv, len), REDIS_OK);
    }
    size_t compared = 0, with_keys = 0, mismatches = 0, builtin_diff = 0, nlocal = 0;
    int last_diff = -1, last_builtin = -1, builtin_checked = 0;
    size_t kinds[3] = {0, 0, 0};
    for (size_t i = 0; i < ss.n; i++) {
        sample *s = &ss.v[i];
        leaf *l = &leaves[s->entry];
        redisReply *r = NULL;
        if (!s->local)
            assert_int_equal(redisGetReply(rc, (void **)&r), REDIS_OK);
        char want[512], got[512], line[512];
        unsigned fl;
        keys_string(t, s, got, sizeof(got), &fl);
        show(s, line, sizeof(line));
        if (s->local) {
            want[0] = '\0'; /* only argv[0]: no argument can be a key */
            nlocal += !l->keyless;
            l->server_none++;
            l->keyless = 1;
        } else if (r->type == REDIS_REPLY_ARRAY) {
            server_string(r, want, sizeof(want));
            if (r->elements > 0) {
                l->server_keys++;
                with_keys++;
            } else {
                l->server_none++;
            }
        } else if (r->type == REDIS_REPLY_ERROR &&
                   (strstr(r->str, "Invalid arguments") || strstr(r->str, "no key arguments"))) {
            want[0] = '\0';
            l->server_none++;
            if (strstr(r->str, "no key arguments"))
                l->keyless = 1;
        } else {
            fail_msg("%s: unexpected answer %s", line, r->type == REDIS_REPLY_ERROR ? r->str : "?");
        }
        if (strcmp(want, got) != 0) {
            print_error("%s: server %s, library %s\n", line, want, got);
            mismatches++;
        }
        /* Read-only exactly when the server says readonly (and not write). */
        if (!!(fl & CP__KEYS_READONLY) != (l->readonly && !l->write)) {
            print_error("%s: read-only %d, flags readonly %d write %d\n", line,
                        !!(fl & CP__KEYS_READONLY), l->readonly, l->write);
            mismatches++;
        }
        assert_true(fl & CP__KEYS_SERVER);
        /* The built-in table, for the commands it knows: its keys must be the server's on
         * the structured samples; its read-only column is printed where it differs (once per
         * command). */
        if (s->builtin && l->nnames == 1 && cp__cmd_lookup(s->argv[0], s->len[0])->name[0]) {
            char bgot[512];
            unsigned bfl;
            keys_string(NULL, s, bgot, sizeof(bgot), &bfl);
            if (strcmp(bgot, want) != 0) {
                print_error("%s: built-in table's keys %s, server %s\n", line, bgot, want);
                mismatches++;
            }
            if (!!(bfl & CP__KEYS_READONLY) != !!(fl & CP__KEYS_READONLY) &&
                last_diff != s->entry) {
                last_diff = s->entry;
                builtin_diff++;
                print_message("built-in table's read-only %d, server's flags %d: %s\n",
                              !!(bfl & CP__KEYS_READONLY), !!(fl & CP__KEYS_READONLY), s->argv[0]);
            }
            builtin_checked += last_builtin != s->entry;
            last_builtin = s->entry;
        }
        kinds[s->kind]++;
        compared += !s->local;
        if (r != NULL)
            freeReplyObject(r);
    }

    /* Every leaf command is covered: the server named keys for some sample, or it has none. */
    int covered_keys = 0, covered_keyless = 0, uncovered = 0;
    for (int i = 0; i < nleaves; i++) {
        leaf *l = &leaves[i];
        if (l->server_keys > 0)
            covered_keys++;
        else if (l->keyless || (l->specs == NULL || l->specs->elements == 0))
            covered_keyless++;
        else {
            print_error("not covered: %s%s%s (no sample the server found keys in)\n", l->name[0],
                        l->nnames > 1 ? " " : "", l->nnames > 1 ? l->name[1] : "");
            uncovered++;
        }
    }
    print_message("%zu top-level commands, %d containers, %d leaf commands: %d with keys checked "
                  "against GETKEYS, %d keyless; %zu GETKEYS compared (%zu structured, %zu by "
                  "hand, %zu random), %zu of them with keys; flags: %d readonly, %d write, "
                  "%d neither; %zu commands of arity 1 checked by the library alone; the built-in "
                  "table's keys agree on its %d commands, its read-only flag differs on %zu\n",
                  cmds->elements, ncontainers, nleaves, covered_keys, covered_keyless, compared,
                  kinds[0], kinds[1], kinds[2], with_keys, nro, nwrite, nneither, nlocal,
                  builtin_checked, builtin_diff);
    assert_int_equal(mismatches, 0);
    assert_int_equal(uncovered, 0);
    assert_int_equal(covered_keys + covered_keyless, nleaves);

    free(ss.v);
    free(leaves);
    cp__cmdtable_free(t);
    freeReplyObject(cmds);
    cp_free(c);
}

static int setup_one_master(void **state) {
    cp_fixture *f = cp_fixture_cluster(1, 0);
    *state = f;
    return f != NULL ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(every_command_matches_getkeys, setup_one_master,
                                        cp_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
