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

/* The flags whose value is a file the command writes or a topology it opens, each with its
 * neutralised --flag=VALUE form: never let the fuzzer point the command at files or topologies.
 * Both forms, since the parser takes --flag=VALUE too (a --lib-memory=VALUE, opened for writing
 * before any connection, left empty files named by the fuzzer in CI's working directory). */
#define NOWHERE "/nonexistent/cp-fuzz"
static const char *const path_flags[][2] = {
    {"--json", "--json=" NOWHERE},         {"--csv", "--csv=" NOWHERE},
    {"--hdr-file", "--hdr-file=" NOWHERE}, {"--lib-memory", "--lib-memory=" NOWHERE},
    {"--dir", "--dir=" NOWHERE},           {"--out", "--out=" NOWHERE},
};

/* tok, or NOWHERE when it is a path flag's value (prev is the flag), or the flag's neutralised
 * form when it is --flag=VALUE. */
static char *neutralised(const char *prev, char *tok) {
    for (size_t i = 0; i < sizeof(path_flags) / sizeof(path_flags[0]); i++) {
        size_t n = strlen(path_flags[i][0]);
        if (prev != NULL && strcmp(prev, path_flags[i][0]) == 0)
            return NOWHERE;
        if (strncmp(tok, path_flags[i][0], n) == 0 && tok[n] == '=')
            return (char *)path_flags[i][1];
    }
    return tok;
}

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
        argv[argc] = neutralised(argc > 1 ? argv[argc - 1] : NULL, tok);
        argc++;
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
