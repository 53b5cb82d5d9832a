/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Fuzz target: the command-line parsing of `clusterpipe bench` and `load` (the subcommands that
 * take the most flags and values). The input is split into arguments at newlines; the first
 * byte picks the subcommand; a target that refuses connections (127.0.0.1:1) is appended, so
 * whatever parses cleanly ends fast at "cannot reach". Only the exit code contract is checked
 * here (0/1/2); ASan and UBSan (in the libFuzzer build) catch the rest. Writes nothing: --json,
 * --csv and --dir values are neutralised.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXARGS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 4096)
        return 0;
    char *buf = malloc(size);
    if (buf == NULL)
        return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    char *argv[MAXARGS + 4];
    int argc = 0;
    argv[argc++] = (data[0] & 1) ? "load" : "bench";
    for (char *p = buf, *tok; argc < MAXARGS && (tok = strsep(&p, "\n")) != NULL;) {
        /* Never let the fuzzer point the command at files or topologies. */
        if (argc > 1 &&
            (strcmp(argv[argc - 1], "--json") == 0 || strcmp(argv[argc - 1], "--csv") == 0 ||
             strcmp(argv[argc - 1], "--dir") == 0))
            tok = "/nonexistent/cp-fuzz";
        argv[argc++] = tok;
    }
    argv[argc++] = "--proxy";
    argv[argc++] = "127.0.0.1:1";
    argv[argc] = NULL;
    int rc = (data[0] & 1) ? cp_cli_load(argc, argv) : cp_cli_bench(argc, argv);
    if (rc < 0 || rc > 2)
        abort();
    free(buf);
    return 0;
}
