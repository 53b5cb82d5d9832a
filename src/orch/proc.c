/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Process control for the orchestration layer (see proc.h): fork/exec with an exec-status pipe,
 * recognition by PID + start time + cmdline, stopping by PID. Keeps no state: the caller owns the
 * PIDs, and reaps through cp__proc_wait_gone / cp__proc_stop_many / cp__proc_exit_desc. The child
 * side of cp__spawn only makes async-signal-safe calls, so spawning from a multi-threaded program
 * is safe. Errors are CP_E* codes (errno values are turned into one here, never passed up).
 */
#include "orch/proc.h"

#include "clusterpipe/clusterpipe.h"
#include "util/clock.h"
#include "util/errmsg.h"
#include "util/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* In the child between fork and exec: mark every descriptor >= 3 close-on-exec, so the server
 * inherits none of ours (hiredis sockets are not CLOEXEC, and an inherited pipe would keep a
 * caller reading our stdout waiting forever). close_range when the kernel has it, else a loop. */
static void child_cloexec_all(void) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
        return;
#endif
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536)
        max = 65536;
    for (int fd = 3; fd < max; fd++)
        fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/* The child's side of cp__spawn; reports a failure's errno through the pipe and exits 127. */
static void child_exec(char *const argv[], const char *workdir, int outfd, int nullfd, int errfd,
                       int die_with_parent, const cpu_set_t *cpus, pid_t parent) {
    int e = 0;
    setsid();
    if (cpus != NULL && sched_setaffinity(0, sizeof(*cpus), cpus) != 0) {
        e = errno;
        if (write(errfd, &e, sizeof(e)) < 0) {
            /* nothing more we can do */
        }
        _exit(126); /* 126: the parent tells an affinity refusal from an exec failure */
    }
    if (die_with_parent) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) /* the parent died before prctl took effect */
            _exit(127);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            sigaction(sig, &sa, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (chdir(workdir) != 0)
        goto fail;
    if (dup2(nullfd, 0) < 0 || dup2(outfd, 1) < 0 || dup2(outfd, 2) < 0)
        goto fail;
    child_cloexec_all();
    execv(argv[0], argv);
fail:
    e = errno;
    if (write(errfd, &e, sizeof(e)) < 0) {
        /* nothing more we can do */
    }
    _exit(127);
}

/* The CP_E* code of a failure to start a process with errno e. */
static int spawn_code(int e) {
    return e == ENOMEM ? CP_ENOMEM : CP_EIO;
}

int cp__spawn(char *const argv[], const char *workdir, const char *outfile, int die_with_parent,
              const cpu_set_t *cpus, pid_t *pid, unsigned long long *start_time, char *err,
              size_t errlen) {
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        int e = errno;
        cp__seterr(err, errlen, "pipe: %s", strerror(e));
        return spawn_code(e);
    }
    int outfd = open(outfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (outfd < 0) {
        int e = errno;
        cp__seterr(err, errlen, "%s: %s", outfile, strerror(e));
        close(pfd[0]);
        close(pfd[1]);
        return spawn_code(e);
    }
    int nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (nullfd < 0) {
        int e = errno;
        cp__seterr(err, errlen, "/dev/null: %s", strerror(e));
        close(outfd);
        close(pfd[0]);
        close(pfd[1]);
        return spawn_code(e);
    }
    pid_t parent = getpid();
    pid_t child = fork();
    if (child == 0)
        child_exec(argv, workdir, outfd, nullfd, pfd[1], die_with_parent, cpus, parent);
    int fork_errno = errno;
    close(pfd[1]);
    close(outfd);
    close(nullfd);
    if (child < 0) {
        close(pfd[0]);
        cp__seterr(err, errlen, "fork: %s", strerror(fork_errno));
        return spawn_code(fork_errno);
    }
    int child_errno = 0;
    ssize_t n;
    do {
        n = read(pfd[0], &child_errno, sizeof(child_errno));
    } while (n < 0 && errno == EINTR);
    close(pfd[0]);
    if (n == (ssize_t)sizeof(child_errno)) {
        int status = 0;
        while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
        }
        if (WIFEXITED(status) && WEXITSTATUS(status) == 126)
            cp__seterr(err, errlen, "cannot start %s: sched_setaffinity: %s", argv[0],
                       strerror(child_errno));
        else
            cp__seterr(err, errlen, "cannot start %s (in %s): %s", argv[0], workdir,
                       strerror(child_errno));
        return spawn_code(child_errno);
    }
    *pid = child;
    if (cp__proc_stat(child, start_time, NULL) != 0)
        *start_time = 0; /* died already; callers see it as not alive */
    return 0;
}

int cp__run(char *const argv[], const char *workdir, const char *outfile, int timeout_ms,
            const volatile sig_atomic_t *cancel, char *err, size_t errlen) {
    pid_t pid = 0;
    unsigned long long start = 0;
    int rc = cp__spawn(argv, workdir, outfile, 1, NULL, &pid, &start, err, errlen);
    if (rc != 0)
        return rc;
    int64_t deadline = cp__now_ms() + timeout_ms;
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            cp__seterr(err, errlen, "%s: waitpid: %s", argv[0], strerror(errno));
            return CP_EIO;
        }
        int stop = (cancel != NULL && *cancel) || cp__now_ms() >= deadline;
        if (stop) {
            /* Our own unreaped child: its PID cannot have been reused, so killing it is safe. */
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            if (cancel != NULL && *cancel) {
                cp__seterr(err, errlen, "interrupted");
                return CP_EIO;
            }
            cp__seterr(err, errlen, "%s did not finish within %d s", argv[0], timeout_ms / 1000);
            return CP_ETIMEDOUT;
        }
        cp__sleep_ms(20);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status))
        cp__seterr(err, errlen, "%s exited with status %d", argv[0], WEXITSTATUS(status));
    else
        cp__seterr(err, errlen, "%s was killed by signal %d", argv[0],
                   WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    return CP_EIO;
}

/* Reads /proc/PID/<name> (one read: these files are small) into buf, NUL-terminated. Returns 0,
 * or CP_EIO when there is no such process or nothing could be read. */
static int read_proc(pid_t pid, const char *name, char *buf, size_t len) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/%s", (long)pid, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return CP_EIO;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0)
        return CP_EIO;
    buf[n] = '\0';
    return 0;
}

int cp__proc_stat(pid_t pid, unsigned long long *start_time, char *state) {
    char buf[1024];
    int rc = read_proc(pid, "stat", buf, sizeof(buf));
    if (rc != 0)
        return rc;
    /* comm (field 2) may contain spaces and parentheses: fields resume after the last ')'. */
    char *p = strrchr(buf, ')');
    if (p == NULL || p[1] != ' ')
        return CP_EIO;
    p += 2;
    if (state != NULL)
        *state = *p;
    /* p is field 3; field 22 is 19 fields further. */
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (p == NULL)
            return CP_EIO;
        p++;
    }
    if (start_time != NULL)
        *start_time = strtoull(p, NULL, 10);
    return 0;
}

/* 1 when /proc/PID/cmdline (argv joined by spaces; redis rewrites it to its title) mentions exe,
 * or any of our three programs when exe is NULL (redis-server, nutcracker, clusterpipe's wire). */
static int cmdline_mentions(pid_t pid, const char *exe) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)pid);
    size_t len = 0;
    char *buf = cp__read_file(path, 8192, &len);
    if (buf == NULL)
        return 0;
    int blank = 1;
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '\0')
            buf[i] = ' ';
        blank = blank && buf[i] == ' ';
    }
    /* Blank: the process is rewriting its title (redis-server clears its argv area, then writes
     * "redis-server host:port [cluster]" there, as it starts): inconclusive, and the PID with its
     * start time (same_process) has already said who it is. Taken for "not ours", a server
     * caught mid-rewrite once failed a fixture as "exited during startup" while it was serving. */
    int ok = blank || (exe != NULL ? strstr(buf, exe) != NULL
                                   : (strstr(buf, "redis-server") != NULL ||
                                      strstr(buf, "nutcracker") != NULL ||
                                      strstr(buf, "clusterpipe") != NULL));
    free(buf);
    return ok;
}

/* 1 when pid exists, is not a zombie and has the given start time. */
static int same_process(pid_t pid, unsigned long long start_time) {
    unsigned long long st;
    char state;
    if (pid <= 0 || cp__proc_stat(pid, &st, &state) != 0)
        return 0;
    return st == start_time && state != 'Z' && state != 'X';
}

int cp__proc_is_ours(const cp__pidref *ref) {
    return same_process(ref->pid, ref->start_time) && cmdline_mentions(ref->pid, ref->exe);
}

int cp__proc_signal(const cp__pidref *ref, int sig) {
    if (!cp__proc_is_ours(ref))
        return CP_EINVAL;
    return kill(ref->pid, sig) == 0 ? 0 : CP_EIO;
}

/* Threads still listed in /proc/PID/task (the leader included, even as a zombie). */
static int threads_left(pid_t pid) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
    DIR *d = opendir(path);
    if (d == NULL)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Reaps ref when it is our exited child (start time checked first, so a recycled PID of another
 * child is never reaped by mistake), then reports whether it is gone. A zombie leader is not
 * enough: the leader of a multi-threaded process (nutcracker has a stats thread) turns zombie
 * while its other threads still exit, and their shared sockets stay open until the last one is
 * gone, so a restart right then failed to bind the port (EADDRINUSE). Our own child is gone
 * when waitpid reaps it, which the kernel allows only after every thread has exited; another
 * process's when its leader is the only thread left. */
static int gone(const cp__pidref *ref) {
    unsigned long long st;
    char state;
    if (ref->pid <= 0 || cp__proc_stat(ref->pid, &st, &state) != 0)
        return 1;
    if (st != ref->start_time)
        return 1;
    if (state == 'Z' || state == 'X') {
        pid_t w = waitpid(ref->pid, NULL, WNOHANG);
        if (w == ref->pid)
            return 1;
        if (w == 0)
            return 0;                       /* ours, threads still exiting */
        return threads_left(ref->pid) <= 1; /* ECHILD: not ours, init reaps it */
    }
    return 0;
}

int cp__proc_wait_gone(const cp__pidref *ref, int timeout_ms) {
    int64_t deadline = cp__now_ms() + timeout_ms;
    int nap = 2;
    for (;;) {
        if (gone(ref))
            return 1;
        if (cp__now_ms() >= deadline)
            return 0;
        cp__sleep_ms(nap);
        if (nap < 50)
            nap *= 2;
    }
}

/* Waits until every ref is gone or the deadline passes; returns how many remain. */
static size_t wait_all_gone(const cp__pidref *refs, size_t n, int timeout_ms) {
    int64_t deadline = cp__now_ms() + timeout_ms;
    int nap = 2;
    for (;;) {
        size_t left = 0;
        for (size_t i = 0; i < n; i++)
            if (!gone(&refs[i]))
                left++;
        if (left == 0 || cp__now_ms() >= deadline)
            return left;
        cp__sleep_ms(nap);
        if (nap < 50)
            nap *= 2;
    }
}

size_t cp__proc_stop_many(const cp__pidref *refs, size_t n, int term_ms) {
    size_t sent = 0;
    for (size_t i = 0; i < n; i++)
        if (cp__proc_signal(&refs[i], SIGTERM) == 0)
            sent++;
    if (sent == 0)
        return wait_all_gone(refs, n, 0);
    if (wait_all_gone(refs, n, term_ms) == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!gone(&refs[i]))
            cp__proc_signal(&refs[i], SIGKILL);
    return wait_all_gone(refs, n, 5000);
}

#define EXIT_DESC_WAIT_MS 1000 /* how long a dying child may take to become reapable */

void cp__proc_exit_desc(pid_t pid, char *buf, size_t len) {
    int status = 0;
    pid_t r = pid > 0 ? waitpid(pid, &status, WNOHANG) : -1;
    /* A process judged dead may still be exiting: its cmdline is already empty (so it no longer
     * counts as ours) while its threads finish, and only then can it be reaped. Seen in CI: a
     * nutcracker killed by SIGKILL during `up` was described as "exited". Wait for that briefly. */
    for (int waited = 0; r == 0 && waited < EXIT_DESC_WAIT_MS; waited += 5) {
        cp__sleep_ms(5);
        r = waitpid(pid, &status, WNOHANG);
    }
    if (r == pid && WIFEXITED(status))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    else if (r == pid && WIFSIGNALED(status))
        snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(buf, len, "exited");
}

long long cp__proc_rss(pid_t pid) {
    char buf[256];
    unsigned long long size, resident;
    if (read_proc(pid, "statm", buf, sizeof(buf)) != 0 ||
        sscanf(buf, "%llu %llu", &size, &resident) != 2)
        return -1; /* a quantity, not an error code: "unknown" as in cp_proc_stats */
    return (long long)resident * sysconf(_SC_PAGESIZE);
}

/* 1 when path is a regular executable file. */
static int is_exec(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int cp__find_binary(const char *given, const char *name, const char *pkg, char *out, size_t len,
                    char *err, size_t errlen) {
    char cand[PATH_MAX];
    if (given != NULL && *given != '\0') {
        if (!is_exec(given) || realpath(given, cand) == NULL) {
            cp__seterr(err, errlen,
                       "%s: not an executable file (%s comes from the Debian package %s: "
                       "sudo apt-get install %s)",
                       given, name, pkg, pkg);
            return CP_EINVAL;
        }
        snprintf(out, len, "%s", cand);
        return 0;
    }
    const char *path = getenv("PATH");
    char dirs[8192];
    snprintf(dirs, sizeof(dirs), "%s:/usr/sbin:/usr/bin:/usr/local/sbin:/usr/local/bin",
             path != NULL ? path : "");
    char *save = NULL;
    for (char *d = strtok_r(dirs, ":", &save); d != NULL; d = strtok_r(NULL, ":", &save)) {
        if (*d != '/')
            continue; /* relative PATH entries would depend on our cwd */
        if (snprintf(cand, sizeof(cand), "%s/%s", d, name) >= (int)sizeof(cand))
            continue;
        if (is_exec(cand)) {
            snprintf(out, len, "%s", cand);
            return 0;
        }
    }
    cp__seterr(err, errlen,
               "%s not found in $PATH, /usr/sbin or /usr/bin: install the Debian package %s "
               "(sudo apt-get install %s, or scripts/install-deps.sh)",
               name, pkg, pkg);
    return CP_EINVAL;
}
