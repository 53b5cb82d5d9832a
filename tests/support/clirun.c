/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Runs the clusterpipe binary for tests and captures its exit code and output (see clirun.h).
 * The scratch directory and the captured output belong to the cp_clirun. Single-threaded.
 */
#include "clirun.h"

#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/clock.h"
#include "util/errmsg.h"
#include "util/file.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CP_BINARY
#define CP_BINARY "clusterpipe"
#endif

void cp_clirun_init(cp_clirun *r) {
    memset(r, 0, sizeof(*r));
    r->scratch = cp_test_mkdtemp("clirun");
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return strdup("");
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while (buf != NULL && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len - 1 == 0) {
            char *nb = realloc(buf, cap * 2);
            if (nb == NULL)
                break;
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf != NULL)
        buf[len] = '\0';
    return buf;
}

void cp_clirun_free(cp_clirun *r) {
    if (r->scratch != NULL)
        cp__rm_rf(r->scratch);
    free(r->scratch);
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof(*r));
}

const char *cp_clirun_path(cp_clirun *r, const char *name) {
    static char buf[4096];
    snprintf(buf, sizeof(buf), "%s/%s", r->scratch, name);
    return buf;
}

pid_t cp_clirun_start(cp_clirun *r, const char *const *args) {
    char o[4096], e[4096];
    snprintf(o, sizeof(o), "%s/.stdout", r->scratch);
    snprintf(e, sizeof(e), "%s/.stderr", r->scratch);
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)CP_BINARY;
    for (; *args != NULL && argc < 63; args++)
        argv[argc++] = (char *)*args;
    argv[argc] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        abort();
    if (pid == 0) {
        int fo = open(o, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fe = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fi = open("/dev/null", O_RDONLY);
        if (fo < 0 || fe < 0 || fi < 0)
            _exit(126);
        dup2(fo, 1);
        dup2(fe, 2);
        dup2(fi, 0);
        if (r->nofile_soft > 0 || r->nofile_hard > 0) {
            struct rlimit rl;
            if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
                _exit(126);
            if (r->nofile_hard > 0)
                rl.rlim_max = r->nofile_hard;
            if (r->nofile_soft > 0)
                rl.rlim_cur = r->nofile_soft;
            if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
                _exit(126);
        }
        execv(CP_BINARY, argv);
        _exit(127);
    }
    return pid;
}

int cp_clirun_finish(cp_clirun *r, pid_t pid, int timeout_s) {
    int status = 0;
    struct rusage ru = {0};
    for (long i = 0;; i++) {
        pid_t w = wait4(pid, &status, WNOHANG, &ru);
        if (w == pid)
            break;
        if (i >= (long)timeout_s * 100) {
            kill(pid, SIGKILL);
            wait4(pid, &status, 0, &ru);
            status = -1;
            break;
        }
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    r->maxrss_kb = ru.ru_maxrss;
    char o[4096], e[4096];
    snprintf(o, sizeof(o), "%s/.stdout", r->scratch);
    snprintf(e, sizeof(e), "%s/.stderr", r->scratch);
    free(r->out);
    free(r->err);
    r->out = slurp(o);
    r->err = slurp(e);
    if (status == -1)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int cp_clirun_run(cp_clirun *r, const char *const *args) {
    return cp_clirun_finish(r, cp_clirun_start(r, args), 120);
}

void cp_clirun_expect(cp_clirun *r, const char *const *args, int want) {
    int rc = cp_clirun_run(r, args);
    if (rc != want)
        fail_msg("%s exited %d, want %d: %s%s", args[0], rc, want, r->out ? r->out : "",
                 r->err ? r->err : "");
}
