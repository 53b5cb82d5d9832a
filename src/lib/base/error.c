/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Names and messages of the CP_E* codes, both generated from the one table in clusterpipe.h
 * (CP_ERRNO_MAP). Static strings, any thread.
 */
#include "clusterpipe/clusterpipe.h"

const char *cp_strerror(int code) {
    switch (code) {
#define CP__ERRNO_MSG(name, value, msg)                                                            \
    case CP_##name:                                                                                \
        return msg;
        CP_ERRNO_MAP(CP__ERRNO_MSG)
#undef CP__ERRNO_MSG
    default:
        return "unknown error";
    }
}

const char *cp_err_name(int code) {
    switch (code) {
#define CP__ERRNO_NAME(name, value, msg)                                                           \
    case CP_##name:                                                                                \
        return "CP_" #name;
        CP_ERRNO_MAP(CP__ERRNO_NAME)
#undef CP__ERRNO_NAME
    default:
        return "CP_UNKNOWN";
    }
}
