/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Glob patterns as Redis matches them (SCAN MATCH, KEYS): '*' any run of bytes, '?' one byte,
 * [abc], [^abc], [a-z] (a reversed range is the same range), '\' quotes the next byte, inside
 * brackets too. The cluster SCAN (scan.c) filters the keys it lists itself with it, so they must
 * be the keys the server's SCAN MATCH would have given: the odd cases follow Redis 7's
 * stringmatchlen (util.c) exactly. An unterminated '[' class ends the pattern; a range compares
 * bytes as signed chars; a pattern nesting '*' more than 1000 deep matches nothing; the pattern
 * "*" alone is no filter at all for SCAN (the caller's to know), but as a pattern it does not
 * match the empty string. Binary-safe, pure, any thread.
 */
#ifndef CLUSTERPIPE_GLOB_H
#define CLUSTERPIPE_GLOB_H

#include <stddef.h>

/* 1 when s[0..slen) matches pattern[0..plen), else 0. Case-sensitive. */
int cp__glob_match(const char *pattern, size_t plen, const char *s, size_t slen);

#endif
