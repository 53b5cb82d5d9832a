/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Redis's glob matching (glob.h), written after the behaviour of stringmatchlen in Redis 7's
 * util.c (BSD-3-Clause, Copyright (c) 2009-2012 Salvatore Sanfilippo), odd cases included, so
 * that a key the library filters itself is a key SCAN MATCH would have returned. Pure.
 */
#include "lib/proto/glob.h"

#define MAX_NESTING 1000 /* as the server: deeper '*' nesting matches nothing */

/* One bracket class at p[0] == '[' against the byte c. Leaves *p and *pl on the class's last
 * byte (its ']', or the pattern's last byte when the class is unterminated). */
static int class_match(const char **pp, size_t *ppl, char c) {
    const char *p = *pp + 1;
    size_t pl = *ppl - 1;
    int negate = pl > 0 && p[0] == '^', hit = 0;
    if (negate) {
        p++;
        pl--;
    }
    for (;; p++, pl--) {
        if (pl == 0) { /* unterminated: the last byte ends the pattern */
            p--;
            pl++;
            break;
        }
        if (p[0] == '\\' && pl >= 2) {
            p++;
            pl--;
            hit |= p[0] == c;
        } else if (p[0] == ']') {
            break;
        } else if (pl >= 3 && p[1] == '-') {
            int lo = (signed char)p[0], hi = (signed char)p[2], x = (signed char)c;
            if (lo > hi) {
                int t = lo;
                lo = hi;
                hi = t;
            }
            hit |= x >= lo && x <= hi;
            p += 2;
            pl -= 2;
        } else {
            hit |= p[0] == c;
        }
    }
    *pp = p;
    *ppl = pl;
    return negate ? !hit : hit;
}

/* *give_up: the rest of the pattern after some '*' matched nowhere in the rest of the string, so
 * a longer match of an earlier '*' cannot help either (what keeps "*a*a*a*b" linear). */
static int match(const char *p, size_t pl, const char *s, size_t sl, int *give_up, int depth) {
    if (depth > MAX_NESTING)
        return 0;
    while (pl > 0 && sl > 0) {
        switch (p[0]) {
        case '*':
            while (pl > 1 && p[1] == '*') {
                p++;
                pl--;
            }
            if (pl == 1)
                return 1;
            for (; sl > 0; s++, sl--) {
                if (match(p + 1, pl - 1, s, sl, give_up, depth + 1))
                    return 1;
                if (*give_up)
                    return 0;
            }
            *give_up = 1;
            return 0;
        case '?':
            break;
        case '[':
            if (!class_match(&p, &pl, s[0]))
                return 0;
            break;
        case '\\':
            if (pl >= 2) {
                p++;
                pl--;
            }
            /* fall through */
        default:
            if (p[0] != s[0])
                return 0;
            break;
        }
        p++;
        pl--;
        s++;
        sl--;
        if (sl == 0) {
            while (pl > 0 && p[0] == '*') {
                p++;
                pl--;
            }
            break;
        }
    }
    return pl == 0 && sl == 0;
}

int cp__glob_match(const char *pattern, size_t plen, const char *s, size_t slen) {
    int give_up = 0;
    return match(pattern, plen, s, slen, &give_up, 0);
}
