/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A session of bench runs driven from the layer above the engine (private to src/; used by
 * src/compare/ and src/scenario/, which are of one rank and may not share a file of theirs):
 * where its progress lines go, whether it was cancelled, and where each run's latency
 * distributions are written. Written once here for both. The session borrows everything it
 * points to; no state of its own. Any thread, one session per thread (the hooks run on the
 * caller's).
 */
#ifndef CLUSTERPIPE_SESSION_H
#define CLUSTERPIPE_SESSION_H

#include <signal.h>
#include <stddef.h>

#include <jansson.h>

#include "bench/engine.h"
#include "util/log.h"

typedef struct cp__session {
    cp__log_fn log;                      /* progress lines (no newline); NULL: none */
    void *ud;                            /* log's first argument */
    const volatile sig_atomic_t *cancel; /* non-zero: stop; NULL: never */
    const char *hgrm_dir;                /* an existing directory for the .hgrm files; NULL: none */
} cp__session;

/* One progress line (at most 1 KiB) to the session's log hook; nothing without one. */
void cp__session_say(const cp__session *ss, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* 1 once the session's cancel flag is set, else 0. */
int cp__session_cancelled(const cp__session *ss);

/* Writes run r's latency distribution to HGRM_DIR/FILE, FILE being name with ' ', '=' and '/'
 * as '-' and ".hgrm" after it, and with --command (commands non-NULL) each command's beside it
 * (cp__bench_hgrm_command_path); then names them in the run's bench object bo: "hgrm" and each
 * commands[k].hgrm. Nothing without an hgrm_dir. Returns 0, or the first error (CP_ENOMEM,
 * CP_EIO: err says why) with nothing named in bo. Blocks on the writes. */
int cp__session_write_hgrm(const cp__session *ss, json_t *bo, const char *name,
                           const cp__cmdset *commands, const cp__bench_result *r, char *err,
                           size_t errlen);

#endif /* CLUSTERPIPE_SESSION_H */
