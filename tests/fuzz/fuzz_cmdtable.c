/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fuzz target: bytes from a (possibly hostile) node, parsed as RESP by the library's own reader,
 * then given to the COMMAND parser (cmdtable.h); every entry of a table it accepts is asked for
 * keys (keyspec.h) on argvs made of its own name and arguments taken from the input. Nothing may
 * crash or leak, and every key position must lie inside its argv.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "lib/cmd/keyspec.h"
#include "lib/proto/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const words[] = {"k",     "0",       "1",     "2",     "-1", "",
                                    "STORE", "KEYS",    "GET",   "LIMIT", "BY", "AUTH",
                                    "AUTH2", "STREAMS", "COUNT", "BLOCK", "x",  "STOREDIST"};

static void exercise(const cp__cmdtable *t, const uint8_t *data, size_t size) {
    for (uint32_t i = 0; i < t->ncmds; i++) {
        const cp__cmdspec *e = &t->cmds[i];
        const char *name = cp__cmdtable_name(t, e);
        for (int v = 0; v < 3; v++) {
            const char *argv[16];
            size_t len[16];
            int argc = 1;
            argv[0] = name, len[0] = e->baselen;
            if (e->baselen != e->namelen) {
                argv[1] = name + e->baselen + 1, len[1] = (size_t)(e->namelen - e->baselen - 1);
                argc = 2;
            }
            size_t at = (i * 7u + (size_t)v * 13u) % (size > 0 ? size : 1);
            int want = argc + (size > 0 ? data[at] % 12 : v * 3);
            while (argc < want && argc < 16) {
                unsigned char b = size > 0 ? data[(at + (size_t)argc) % size] : (unsigned char)argc;
                argv[argc] = words[b % (sizeof(words) / sizeof(words[0]))];
                len[argc] = 0;
                while (argv[argc][len[argc]] != '\0')
                    len[argc]++;
                argc++;
            }
            cp__keys k;
            int n = cp__keys_find(t, argc, argv, len, v & 1 ? CP__KEYS_WITH_CHANNELS : 0, &k);
            if (n != k.n || k.nruns < 0 || k.nruns > CP__KEYRUNS)
                abort();
            for (int j = 0; j < n; j++) {
                int p = cp__keys_at(&k, j);
                if (p < 1 || p >= argc)
                    abort();
            }
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cp__reader rd = {0};
    cp__reply_arena a = {0};
    if (cp__reader_feed(&rd, (const char *)data, size) == 0) {
        redisReply *reply;
        while (cp__reader_next(&rd, &a, &reply) == 1) {
            cp__cmdtable *t = NULL;
            char err[128];
            if (cp__cmdtable_parse(reply, &t, err, sizeof(err)) == 0) {
                exercise(t, data, size);
                cp__cmdtable_free(t);
            } else if (t != NULL) {
                abort();
            }
        }
    }
    cp__reader_free(&rd);
    cp__arena_free(&a);
    return 0;
}
