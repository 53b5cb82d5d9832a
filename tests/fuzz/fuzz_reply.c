/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fuzz target: the redirect and error parser (an error reply's text decides where a command goes
 * next), the parser of preformatted commands (cp_append_formatted takes caller bytes), and the
 * host:port parser. None may crash or return a slot or port out of range.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/resp.h"
#include "lib/topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';

    redisReply r;
    memset(&r, 0, sizeof(r));
    r.type = REDIS_REPLY_ERROR;
    r.str = s;
    r.len = strlen(s);
    int slot = -1, port = -1;
    char host[CP__HOSTLEN];
    cp__errkind k = cp__classify(&r, &slot, host, sizeof(host), &port);
    if ((k == CP__ERR_MOVED || k == CP__ERR_ASK) &&
        (slot < 0 || slot >= CP_SLOTS || port <= 0 || port > 65535 || strlen(host) >= sizeof(host)))
        abort();

    const char *argv[8];
    size_t argvlen[8];
    int argc = cp__parse_command((const char *)data, size, argv, argvlen, 8);
    for (int i = 0; i < argc && i < 8; i++)
        if (argv[i] < (const char *)data || argv[i] + argvlen[i] > (const char *)data + size)
            abort();

    if (cp__parse_addr((const char *)data, size, host, sizeof(host), &port) == 0 &&
        (port <= 0 || port > 65535))
        abort();
    free(s);
    return 0;
}
