/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Scripts run by their SHA1 (EVALSHA, EVAL on NOSCRIPT); included by clusterpipe/clusterpipe.h
 * (which defines CP_API, cp_client and redisReply before it), not on its own.
 */
#ifndef CLUSTERPIPE_SCRIPT_PUBLIC_H
#define CLUSTERPIPE_SCRIPT_PUBLIC_H

/* Being written (issue 31). */

#endif
