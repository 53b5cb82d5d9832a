/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Scripts (clusterpipe/script.h) inside the library: a script appended as EVALSHA with its EVAL
 * form kept beside it in the pipeline's arena, and the swap to that form a NOSCRIPT asks for.
 * The pipeline owns both forms (cp__script_eval records); the cp_script stays the caller's.
 * async.c and blocking.c append through here, recv.c swaps, send.c swaps when it cannot hold
 * the slot. One thread, the client's.
 */
#ifndef CLUSTERPIPE_SCRIPT_H
#define CLUSTERPIPE_SCRIPT_H

#include "lib/client/pipeline.h"

/* Appends script s with numkeys keys then the other arguments (argv[0..argc), argvlen NULL:
 * strlen) to p, new or running: EVALSHA flagged CP__F_SCRIPT, its EVAL form recorded; as EVAL
 * alone inside a MULTI unit. 0, CP_EINVAL (bad numkeys or argc, no script: the reason on p and
 * the client) or CP_ENOMEM. */
int cp__script_append(cp_pipeline *p, const struct cp_script *s, int numkeys, int argc,
                      const char **argv, const size_t *argvlen);

/* Command tag of p (flagged CP__F_SCRIPT) goes as its EVAL from now on: its bytes are the EVAL
 * form's and the flag is gone, so this happens at most once. 0, or -1 when it has no EVAL form
 * (then nothing changed). */
int cp__script_use_eval(cp_pipeline *p, uint32_t tag);

#endif
