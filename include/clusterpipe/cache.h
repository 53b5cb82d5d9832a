/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The client-side cache; included by clusterpipe/clusterpipe.h (which defines CP_API, cp_client and
 * redisReply before it), not on its own.
 */
#ifndef CLUSTERPIPE_CACHE_PUBLIC_H
#define CLUSTERPIPE_CACHE_PUBLIC_H

/* Being written (issue 31). */

#endif
