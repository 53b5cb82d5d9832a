/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The CP_E* code table. Static strings, any thread.
 */
#include "clusterpipe/clusterpipe.h"

const char *cp_strerror(int code) {
    switch (code) {
    case CP_OK:
        return "success";
    case CP_ENOMEM:
        return "out of memory";
    case CP_EINVAL:
        return "invalid argument";
    case CP_ECONNECT:
        return "could not connect";
    case CP_EIO:
        return "socket I/O error";
    case CP_ECLOSED:
        return "connection closed by peer";
    case CP_ETIMEDOUT:
        return "timed out";
    case CP_EPROTO:
        return "protocol error";
    case CP_EAUTH:
        return "authentication failed";
    case CP_ETOPOLOGY:
        return "no usable cluster topology";
    case CP_EREDIRECT:
        return "too many redirects";
    case CP_ECROSSSLOT:
        return "keys in different slots";
    case CP_EPARTIAL:
        return "some commands did not complete";
    case CP_ESERVER:
        return "server error reply";
    default:
        return "unknown error";
    }
}
