/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Integer flag values, usage errors and the small helpers several subcommands share (the command
 * line as reports record it, creating an output directory). Prints only usage errors.
 */
#include "cli/cli.h"

#include "orch/orch.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cp_cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "clusterpipe%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'clusterpipe %s%s--help'.\n", cmd ? cmd : "", cmd ? " " : "");
    return CP_EXIT_USAGE;
}

int cp_cli_parse_long(const char *cmd, const char *flag, const char *val, long min, long max,
                      long *out) {
    char *end = NULL;
    if (val == NULL || *val == '\0') {
        cp_cli_usage_error(cmd, "%s needs a value", flag);
        return -1;
    }
    errno = 0;
    long v = strtol(val, &end, 10);
    if (errno == ERANGE || *end != '\0' || end == val) {
        cp_cli_usage_error(cmd, "%s: '%s' is not an integer", flag, val);
        return -1;
    }
    if (v < min || v > max) {
        cp_cli_usage_error(cmd, "%s: %ld is out of range [%ld, %ld]", flag, v, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

/* The reports' command line (see cli.h). Every argument may become 4x longer (each ' is
 * written '\''), plus its quotes and a space. */
char *cp_cli_command_line(int argc, char **argv) {
    size_t n = 32;
    for (int i = 0; i < argc; i++)
        n += strlen(argv[i]) * 4 + 3;
    char *s = malloc(n), *p = s;
    if (s == NULL)
        return NULL;
    p += sprintf(p, "clusterpipe");
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (i > 0 && strcmp(argv[i - 1], "--password") == 0)
            a = "***";
        else if (strncmp(a, "--password=", 11) == 0)
            a = "--password=***";
        *p++ = ' ';
        if (*a != '\0' && strpbrk(a, " \t'\"$\\;&|<>*?") == NULL) {
            p += sprintf(p, "%s", a);
            continue;
        }
        *p++ = '\'';
        for (; *a; a++) {
            if (*a == '\'')
                p += sprintf(p, "'\\''");
            else
                *p++ = *a;
        }
        *p++ = '\'';
    }
    *p = '\0';
    return s;
}

void cp_cli_join_command(int argc, char **argv, char *buf, size_t len) {
    char *line = cp_cli_command_line(argc, argv);
    snprintf(buf, len, "%s", line ? line : "clusterpipe");
    free(line);
}

/* mkdir -p, so --out a/b/c works; an existing directory is fine. */
int cp_cli_make_dirs(const char *path, char *err, size_t errlen) {
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp)) {
        snprintf(err, errlen, "%.1000s...: path too long", path);
        return -1;
    }
    for (char *p = tmp + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "cannot create %.1000s: %s", tmp, strerror(errno));
            return -1;
        }
        *p = c;
        if (c == '\0')
            break;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode) || access(path, W_OK) != 0) {
        snprintf(err, errlen, "%.1000s is not a writable directory", path);
        return -1;
    }
    return 0;
}

volatile sig_atomic_t cp_cli_interrupted;

static void on_signal(int sig) {
    cp_cli_interrupted = sig;
}

void cp_cli_install_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

int cp_cli_is_help(const char *arg) {
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

void cp_cli_pids_add(cp_cli_pids *p, pid_t pid, unsigned long long start_time) {
    if (p->n < CP_CLI_MAX_PIDS) {
        p->pid[p->n] = pid;
        p->start[p->n] = start_time;
        p->n++;
    }
}

/* Belt and braces: the orchestration stops every process it started; a survivor is a bug worth
 * failing loudly on. */
size_t cp_cli_pids_check(const cp_cli_pids *p, const char *cmd) {
    size_t alive = 0;
    for (size_t i = 0; i < p->n; i++)
        if (cp_orch_pid_alive(p->pid[i], p->start[i])) {
            fprintf(stderr, "clusterpipe %s: process %ld still running after teardown\n", cmd,
                    (long)p->pid[i]);
            alive++;
        }
    return alive;
}
