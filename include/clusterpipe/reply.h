/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Reply types and values for RESP3; included by clusterpipe/clusterpipe.h (which defines CP_API
 * and CP_EINVAL before it), not on its own.
 */
#ifndef CLUSTERPIPE_REPLY_PUBLIC_H
#define CLUSTERPIPE_REPLY_PUBLIC_H

/* ---- replies ------------------------------------------------------------------------------- */

/* A reply is hiredis's redisReply, the struct Debian's hiredis 0.14 defines (type, integer, len,
 * str, elements, element), read by the library's own reader. RESP2 replies use hiredis's five
 * types. RESP3 (cp_options.protocol = 3) adds types of the same values as hiredis 1.x's
 * REDIS_REPLY_* (so a program built against either reads them the same way), carried in the
 * fields the struct has: a RESP3 null is CP_REPLY_NIL, as in RESP2; a map's key i is element
 * 2i and its value element 2i+1; a verbatim string's str is its text without the "txt:" prefix.
 * RESP3 attributes are read and dropped (Redis sends them only for DEBUG PROTOCOL attrib). What
 * 0.14's struct has no field for is read through the calls below. docs/api.md, "Replies". */
#define CP_REPLY_STRING 1  /* str, len */
#define CP_REPLY_ARRAY 2   /* element[0..elements) */
#define CP_REPLY_INTEGER 3 /* integer */
#define CP_REPLY_NIL 4
#define CP_REPLY_STATUS 5  /* str, len */
#define CP_REPLY_ERROR 6   /* str, len; also RESP3's blob error */
#define CP_REPLY_DOUBLE 7  /* str, len: the text sent; cp_reply_double gives the value */
#define CP_REPLY_BOOL 8    /* integer: 0 or 1 */
#define CP_REPLY_MAP 9     /* element: 2 * pairs, key then value */
#define CP_REPLY_SET 10    /* element[0..elements) */
#define CP_REPLY_PUSH 12   /* element: kind first; only a push callback ever sees one */
#define CP_REPLY_BIGNUM 13 /* str, len: the decimal digits, '-' first when negative */
#define CP_REPLY_VERB 14   /* str, len: the text; cp_reply_verbatim_format gives "txt" / "mkd" */

#endif
