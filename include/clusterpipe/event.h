/* SPDX-License-Identifier: BSD-3-Clause
 *
 * What happens to the client and its nodes: lifecycle events and per-node stats; included by
 * clusterpipe/clusterpipe.h (which defines CP_API, cp_client and redisReply before it), not on its
 * own.
 */
#ifndef CLUSTERPIPE_EVENT_PUBLIC_H
#define CLUSTERPIPE_EVENT_PUBLIC_H

/* Being written (issue 31). */

#endif
