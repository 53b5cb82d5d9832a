/* SPDX-License-Identifier: BSD-3-Clause
 *
 * A session of bench runs (session.h): the progress hook, the cancel flag, and each run's .hgrm
 * files, which compare and scenario both write (their own modules may not share code: they are
 * one layer). No state; the files are written atomically by bench/report.c. The caller's thread.
 */
#include "bench/session.h"

#include "bench/report.h"

#include <stdarg.h>
#include <stdio.h>

void cp__session_say(const cp__session *ss, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cp__vlogf(ss->log, ss->ud, fmt, ap);
    va_end(ap);
}

int cp__session_cancelled(const cp__session *ss) {
    return ss->cancel != NULL && *ss->cancel != 0;
}

int cp__session_write_hgrm(const cp__session *ss, json_t *bo, const char *name,
                           const cp__cmdset *commands, const cp__bench_result *r, char *err,
                           size_t errlen) {
    if (ss->hgrm_dir == NULL)
        return 0;
    char file[200], path[4200];
    snprintf(file, sizeof(file), "%s.hgrm", name);
    for (char *p = file; *p; p++) /* a run's name has spaces ("cluster pipelined GET") */
        if (*p == ' ' || *p == '=' || *p == '/')
            *p = '-';
    snprintf(path, sizeof(path), "%s/%s", ss->hgrm_dir, file);
    int rc = cp__bench_write_hgrm(path, r, err, errlen);
    for (size_t k = 0; rc == 0 && commands != NULL && k < r->ncommands; k++) {
        char one[4300];
        cp__bench_hgrm_command_path(path, k, commands->t[k].name, one, sizeof(one));
        rc = cp__bench_write_hgrm_of(one, &r->commands[k].latency, err, errlen);
    }
    if (rc != 0)
        return rc;
    json_object_set_new(bo, "hgrm", json_string(file));
    json_t *named = json_object_get(bo, "commands");
    for (size_t k = 0; commands != NULL && k < json_array_size(named) && k < r->ncommands; k++) {
        char one[200];
        cp__bench_hgrm_command_path(file, k, commands->t[k].name, one, sizeof(one));
        json_object_set_new(json_array_get(named, k), "hgrm", json_string(one));
    }
    return 0;
}
