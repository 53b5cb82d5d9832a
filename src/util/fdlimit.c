/* SPDX-License-Identifier: BSD-3-Clause
 *
 * RLIMIT_NOFILE raised on demand (fdlimit.h). Process-wide state is the kernel's limit only.
 */
#include "util/fdlimit.h"

#include <errno.h>
#include <sys/resource.h>

static uint64_t as_u64(rlim_t v) {
    return v == RLIM_INFINITY ? UINT64_MAX : (uint64_t)v;
}

int cp__fdlimit_ensure(uint64_t needed, cp__fdlimit *out) {
    struct rlimit rl;
    out->needed = needed;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return -errno;
    out->soft_before = out->soft = as_u64(rl.rlim_cur);
    out->hard = as_u64(rl.rlim_max);
    if (out->soft >= needed)
        return 0;
    if (out->hard < needed)
        return -EMFILE;
    rl.rlim_cur = (rlim_t)needed;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        return -errno;
    out->soft = needed;
    return 0;
}
