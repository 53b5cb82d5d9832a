/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The context of one compare run (context.c): the options, the document being built, the
 * first failure, what was seen of the environment. cp__compare_run (compare.c) allocates it,
 * hands it down to the runs (runs.c) and the dataset (dataset.c), and frees it; the document
 * becomes the caller's. The calling thread only.
 */
#ifndef CLUSTERPIPE_COMPARE_CONTEXT_H
#define CLUSTERPIPE_COMPARE_CONTEXT_H

#include "bench/session.h"
#include "compare/options.h"

#define CP__CMP_ERRLEN 4096 /* an error message of a step (a setup, a load, a run) */

typedef struct cp__cmp {
    const cp__compare_opts *o;
    cp__session ss; /* o's hooks, cancel flag and hgrm_dir */
    json_t *doc;
    int read_from;          /* the setup being run: its cases' cp_options.read_from */
    int client_cache;       /* the setup being run: its cases' clients keep a client-side cache */
    int failed;             /* any run failed, or a setup did not run */
    char first_err[512];    /* the first problem, for the caller's err */
    char redis_version[64]; /* first seen, for the environment */
    char nutcracker_version[64];
    int cores;
    char cpu_model[128];
} cp__cmp;

/* A problem: the run as a whole failed; the first one is kept for the caller's err, each is
 * handed to the warn hook. */
void cp__cmp_warn(cp__cmp *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A command line that reproduces a step, into the document's "commands". */
void cp__cmp_add_command(cp__cmp *r, const char *text);

#endif /* CLUSTERPIPE_COMPARE_CONTEXT_H */
