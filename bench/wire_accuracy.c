/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The wire's accuracy (issue: "the median round trip is within 10% or 50 us, whichever is
 * larger, of the target"), measured as a client sees it: PING at depth 1 to one redis-server,
 * directly and through `clusterpipe wire --rtt D`, one after the other (interleaved, so that
 * the machine's drift touches both alike), at each D given. Prints per D the medians and 10th
 * and 90th percentiles, what the wire added to the direct path, and whether the median lies in
 * the band. Driven by bench/wire-accuracy.sh, which starts and stops the server.
 *   usage: wire_accuracy CLUSTERPIPE REDIS_PORT PINGS RTT...   (RTT: 100us, 1ms, ...)
 * Exit status: 0 every median in its band, 1 one is not (or a failure), 2 bad usage.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int dial(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* A free loopback port, as the kernel hands one out (the wire binds it right after). */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* One PING, its round trip in us; < 0 on a failure. */
static double ping(int fd) {
    char buf[64];
    double t0 = now_us();
    if (write(fd, "PING\r\n", 6) != 6)
        return -1;
    size_t got = 0;
    while (got < 7) {
        ssize_t k = read(fd, buf + got, sizeof(buf) - got);
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    return now_us() - t0;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(const double *sorted, int n, double p) {
    return sorted[(int)(p * (n - 1) + 0.5)];
}

/* Parses 100us / 1ms / 0 into us; -1 when it is none of those. */
static double parse_us(const char *s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0)
        return -1;
    if (strcmp(end, "us") == 0)
        return v;
    if (strcmp(end, "ms") == 0)
        return v * 1000;
    if (*end == '\0' && v == 0)
        return 0;
    return -1;
}

/* Starts the wire (its stdout on a pipe) and waits for its "wire: ready". */
static pid_t wire_start(const char *bin, int port, int target, const char *rtt) {
    char link[64];
    snprintf(link, sizeof(link), "w=%d:127.0.0.1:%d", port, target);
    int p[2];
    if (pipe(p) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        execl(bin, bin, "wire", "--rtt", rtt, "--link", link, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    char line[256];
    FILE *in = fdopen(p[0], "r");
    int ready = 0;
    while (!ready && in != NULL && fgets(line, sizeof(line), in) != NULL)
        ready = strncmp(line, "wire: ready", 11) == 0;
    if (in != NULL)
        fclose(in);
    if (!ready && pid > 0) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: wire_accuracy CLUSTERPIPE REDIS_PORT PINGS RTT...\n");
        return 2;
    }
    const char *bin = argv[1];
    int target = atoi(argv[2]), n = atoi(argv[3]);
    if (target <= 0 || n < 10) {
        fprintf(stderr, "wire_accuracy: bad REDIS_PORT or PINGS (at least 10)\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    double *d = calloc((size_t)n, sizeof(double)), *w = calloc((size_t)n, sizeof(double));
    int fails = 0;
    printf("| target RTT | direct p50 | wire p10 | wire p50 | wire p90 | wire p50 - direct p50 "
           "| band for p50 | in band |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int a = 4; a < argc; a++) {
        double us = parse_us(argv[a]);
        if (us < 0) {
            fprintf(stderr, "wire_accuracy: %s: not a duration (100us, 1ms)\n", argv[a]);
            return 2;
        }
        int port = free_port();
        pid_t pid = port > 0 ? wire_start(bin, port, target, argv[a]) : -1;
        int fd_d = dial(target), fd_w = pid > 0 ? dial(port) : -1;
        if (fd_d < 0 || fd_w < 0) {
            fprintf(stderr, "wire_accuracy: cannot start or reach the wire at %s\n", argv[a]);
            return 1;
        }
        for (int i = 0; i < 20; i++) /* warm both paths */
            if (ping(fd_d) < 0 || ping(fd_w) < 0)
                return 1;
        for (int i = 0; i < n; i++) {
            d[i] = ping(fd_d);
            w[i] = ping(fd_w);
            if (d[i] < 0 || w[i] < 0) {
                fprintf(stderr, "wire_accuracy: a PING failed at %s\n", argv[a]);
                return 1;
            }
        }
        close(fd_d);
        close(fd_w);
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        qsort(d, (size_t)n, sizeof(double), cmp);
        qsort(w, (size_t)n, sizeof(double), cmp);
        double tol = us * 0.10 > 50 ? us * 0.10 : 50, m = pct(w, n, 0.5);
        int ok = m >= us - tol && m <= us + tol;
        fails += !ok;
        printf("| %s | %.1f us | %.1f us | %.1f us | %.1f us | %.1f us | %.0f..%.0f us | %s |\n",
               argv[a], pct(d, n, 0.5), pct(w, n, 0.1), m, pct(w, n, 0.9), m - pct(d, n, 0.5),
               us - tol, us + tol, ok ? "yes" : "NO");
        fflush(stdout);
    }
    free(d);
    free(w);
    return fails > 0 ? 1 : 0;
}
