/* SPDX-License-Identifier: BSD-3-Clause
 *
 * pipeline_bench: one thread, one client, synchronous pipelines of B GETs over uniformly random
 * keys "key:%012d" (redis-benchmark's -r naming), for bench/pipeline-vs-redis-benchmark.sh. Each
 * batch is routed by slot and split over every master. Prints one line:
 *   ops=<n> seconds=<s> ops_per_sec=<x> cpu_us_per_op=<y> wrong=<k>
 * where cpu is this process's user+system time over the measured loop only.
 */
#include <clusterpipe/clusterpipe.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double cpu_now(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: pipeline_bench SEEDS BATCH REQUESTS KEYS [PASSWORD]\n");
        return 2;
    }
    cp_options opt = CP_OPTIONS_INIT;
    opt.seeds = argv[1];
    opt.password = argc == 6 ? argv[5] : NULL;
    long batch = atol(argv[2]), requests = atol(argv[3]), keys = atol(argv[4]);
    if (batch <= 0 || requests <= 0 || keys <= 0) {
        fprintf(stderr, "pipeline_bench: BATCH, REQUESTS and KEYS must be positive\n");
        return 2;
    }
    cp_client *c = cp_connect(&opt);
    if (c->err) {
        fprintf(stderr, "pipeline_bench: %s\n", c->errstr);
        return 1;
    }
    cp_pipeline *p = cp_pipeline_new(c);
    uint64_t rng = 88172645463325252ull;
    long done = 0, wrong = 0;
    /* Like redis-benchmark, patch the 12 digits of a fixed key in place instead of printf. */
    char key[17] = "key:000000000000";
    const char *av[2] = {"GET", key};
    size_t al[2] = {3, 16};
    double w0 = wall_now(), c0 = cpu_now();
    while (done < requests) {
        for (long i = 0; i < batch; i++) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            uint64_t k = rng % (uint64_t)keys;
            for (int d = 15; d >= 4; d--, k /= 10)
                key[d] = (char)('0' + k % 10);
            cp_append_argv(p, 2, av, al);
        }
        if (cp_exec(p) != 0) {
            fprintf(stderr, "pipeline_bench: %s\n", cp_pipeline_errstr(p));
            return 1;
        }
        for (long i = 0; i < batch; i++)
            wrong += cp_reply(p, (size_t)i)->type == REDIS_REPLY_ERROR;
        done += batch;
        cp_pipeline_reset(p);
    }
    double secs = wall_now() - w0, cpu = cpu_now() - c0;
    printf("ops=%ld seconds=%.3f ops_per_sec=%.0f cpu_us_per_op=%.3f wrong=%ld\n", done, secs,
           done / secs, cpu * 1e6 / done, wrong);
    cp_pipeline_free(p);
    cp_free(c);
    return wrong ? 1 : 0;
}
