/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Key positions from key specs, the legacy triple or the built-in table (keyspec.h). The spec
 * rules follow what Redis 7 documents and does for COMMAND GETKEYS:
 * - begin_search index: the keys start at that position; keyword: the first argument equal to
 *   the keyword (any case) searched from startfrom towards the end (startfrom < 0: from
 *   argc + startfrom towards the start), never the last argument (nor, backwards, argument
 *   1); the keys start after it. A keyword not found means this spec gives no keys.
 * - find_keys range: up to first + lastkey (lastkey >= 0), or argc + lastkey, or with a limit
 *   only the first 1/limit of the arguments left; keynum: the count at first + keynumidx (a
 *   plain non-negative decimal), the keys from first + firstkey.
 * - Keys out of bounds or a bad count make the whole argv invalid: no keys, as the server says.
 * - A spec of an unknown type, or one flagged INCOMPLETE once it matched, hands the command to
 *   its own rule (SORT's STORE, MIGRATE's KEYS); without one, the other specs' keys are kept.
 * No allocation, no globals.
 */
#include "lib/cmd/keyspec.h"

#include <string.h>
#include <strings.h>

#define BAD (-1)     /* the argv is invalid for the specs: no keys */
#define UNKNOWN (-2) /* a spec cannot be followed: the command's own rule decides */

static void add_run(cp__keys *k, int first, int count, int step) {
    if (count <= 0)
        return;
    k->run[k->nruns++] = (cp__keyrun){first, count, step};
    k->n += count;
}

static int arg_is(const char *a, size_t alen, const char *word, size_t wlen) {
    return alen == wlen && strncasecmp(a, word, wlen) == 0;
}

#define ARG_IS(i, lit) arg_is(argv[i], argvlen[i], lit, sizeof(lit) - 1)

/* A key count as the server reads it: "0" or a decimal without sign or leading zero, not above
 * the bound (anything larger is past the arguments anyway). -1 otherwise. */
static int parse_count(const char *s, size_t len) {
    if (len == 0 || len > 9 || (s[0] == '0' && len > 1))
        return -1;
    int n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        n = n * 10 + (s[i] - '0');
    }
    return n;
}

/* Evaluates every spec. partial: a spec that fails is skipped instead of ending the search. */
static int eval_specs(const cp__cmdspec *e, const cp__cmdtable *t, int argc,
                      const char *const *argv, const size_t *argvlen, unsigned search, int partial,
                      cp__keys *k) {
    int unknown = 0;
    for (uint32_t j = 0; j < e->nspecs; j++) {
        const cp__keyspec *s = &t->specs[e->spec0 + j];
        if ((s->flags & CP__KF_NOT_KEY) && !(search & CP__KEYS_WITH_CHANNELS))
            continue;
        int first = 0, last, step, rc = 0;
        if (s->bs == CP__BS_INDEX) {
            first = s->pos;
        } else if (s->bs == CP__BS_KEYWORD) {
            int from = s->pos > 0 ? s->pos : argc + s->pos;
            int to = s->pos > 0 ? argc - 1 : 1; /* excluded, as the server does */
            int dir = from <= to ? 1 : -1;
            const char *kw = t->pool + s->kw;
            for (int i = from; i != to && i >= 1 && i < argc; i += dir) {
                if (arg_is(argv[i], argvlen[i], kw, s->kwlen)) {
                    first = i + 1;
                    break;
                }
            }
            if (first == 0)
                continue; /* keyword absent: no keys from this spec */
        } else {
            rc = UNKNOWN;
            goto failed;
        }
        if (s->fk == CP__FK_RANGE) {
            step = s->b;
            if (s->a >= 0)
                last = first + s->a;
            else if (s->c == 0)
                last = argc + s->a;
            else
                last = first + ((argc - first) / s->c + s->a);
        } else if (s->fk == CP__FK_KEYNUM) {
            step = s->c;
            int at = first + s->a;
            int n = at < argc ? parse_count(argv[at], argvlen[at]) : -1;
            if (n < 0) {
                rc = BAD;
                goto failed;
            }
            first += s->b;
            last = first + n - 1;
        } else {
            rc = UNKNOWN;
            goto failed;
        }
        if (last >= argc || last < first || first >= argc) {
            rc = BAD;
            goto failed;
        }
        add_run(k, first, (last - first) / step + 1, step);
        if (s->flags & CP__KF_NOT_KEY)
            k->flags |= CP__KEYS_CHANNELS;
        if (s->flags & CP__KF_INCOMPLETE) {
            rc = UNKNOWN;
            goto failed;
        }
        continue;
    failed:
        if (!partial)
            return rc;
        unknown |= rc == UNKNOWN;
    }
    return unknown ? UNKNOWN : 0;
}

/* SORT key [BY p] [LIMIT o c] [GET p ...] [ASC|DESC] [ALPHA] [STORE dst]: the sorted key, and
 * the last STORE's destination. Arguments are read as options one by one; BY and GET take one
 * argument, LIMIT two; a STORE destination is itself read as an option next. */
static void proc_sort(int argc, const char *const *argv, const size_t *argvlen, int store,
                      cp__keys *k) {
    int dst = 0;
    for (int i = 2; store && i < argc; i++) {
        if (ARG_IS(i, "limit"))
            i += 2;
        else if (ARG_IS(i, "store") && i + 1 < argc)
            dst = i + 1;
        else if (ARG_IS(i, "get") || ARG_IS(i, "by"))
            i += 1;
    }
    add_run(k, 1, argc > 1, 1);
    if (dst)
        add_run(k, dst, 1, 1);
}

/* MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw | AUTH2 user pw] [KEYS key...]:
 * argv[3], or with KEYS (read from argument 6 on, skipping the options' own arguments) the keys
 * after it, which need argv[3] empty. */
static void proc_migrate(int argc, const char *const *argv, const size_t *argvlen, cp__keys *k) {
    int first = 3, n = argc > 3;
    for (int i = 6; i < argc; i++) {
        if (ARG_IS(i, "keys")) {
            if (argvlen[3] > 0) {
                n = 0;
            } else {
                first = i + 1;
                n = argc - first;
            }
            break;
        }
        if (ARG_IS(i, "auth"))
            i += 1;
        else if (ARG_IS(i, "auth2"))
            i += 2;
    }
    add_run(k, first, n, 1);
}

/* The built-in table: one run, as command.h gives it for argv's entry ci. */
static void builtin(const cp__cmdinfo *ci, int argc, const char *const *argv, const size_t *argvlen,
                    cp__keys *k) {
    int first, step;
    int n = cp__cmd_keyspan(ci, argc, argv, argvlen, &first, &step);
    add_run(k, first, n, step);
    if (ci->flags & CP__CMD_READONLY)
        k->flags |= CP__KEYS_READONLY;
}

/* The legacy triple (servers before 7): first..last by step, last < 0 counting from the end; a
 * range past the arguments gives no keys. */
static void legacy(const cp__cmdspec *e, int argc, cp__keys *k) {
    if (e->first <= 0)
        return;
    int last = e->last < 0 ? argc + e->last : e->last;
    if (last >= argc || last < e->first)
        return;
    add_run(k, e->first, (last - e->first) / e->step + 1, e->step);
}

int cp__keys_of(const cp__cmdinfo *ci, const cp__cmdspec *e, const cp__cmdtable *t, int argc,
                const char *const *argv, const size_t *argvlen, unsigned search, cp__keys *out) {
    out->n = out->nruns = 0;
    out->flags = 0;
    if (argc < 1)
        return 0;
    if (e == NULL || t == NULL) {
        builtin(ci, argc, argv, argvlen, out);
        return out->n;
    }
    out->flags = CP__KEYS_SERVER | (cp__cmdspec_readonly(e) ? CP__KEYS_READONLY : 0u);
    if (!e->has_specs) {
        if ((e->flags & CP__CF_MOVABLEKEYS) && ci->name[0]) {
            unsigned ro = out->flags & CP__KEYS_READONLY;
            builtin(ci, argc, argv, argvlen, out);
            out->flags = (out->flags & ~CP__KEYS_READONLY) | ro;
        } else {
            legacy(e, argc, out);
        }
        return out->n;
    }
    int rc = eval_specs(e, t, argc, argv, argvlen, search, 0, out);
    if (rc == 0)
        return out->n;
    unsigned keep = out->flags & (CP__KEYS_SERVER | CP__KEYS_READONLY);
    out->n = out->nruns = 0;
    out->flags = keep;
    switch (e->proc) {
    case CP__PROC_SORT:
    case CP__PROC_SORT_RO:
        proc_sort(argc, argv, argvlen, e->proc == CP__PROC_SORT, out);
        return out->n;
    case CP__PROC_MIGRATE:
        proc_migrate(argc, argv, argvlen, out);
        return out->n;
    default:
        break;
    }
    if (rc == UNKNOWN) {
        eval_specs(e, t, argc, argv, argvlen, search, 1, out);
        out->flags |= CP__KEYS_PARTIAL;
    } else {
        out->flags |= CP__KEYS_INVALID;
    }
    return out->n;
}

int cp__keys_find(const cp__cmdtable *t, int argc, const char *const *argv, const size_t *argvlen,
                  unsigned search, cp__keys *out) {
    if (argc < 1) {
        out->n = out->nruns = 0;
        out->flags = 0;
        return 0;
    }
    return cp__keys_of(cp__cmd_lookup(argv[0], argvlen[0]),
                       cp__cmdtable_lookup(t, argc, argv, argvlen), t, argc, argv, argvlen, search,
                       out);
}
