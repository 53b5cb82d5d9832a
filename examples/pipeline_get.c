/* SPDX-License-Identifier: BSD-3-Clause
 *
 * pipeline_get: the smallest useful libclusterpipe program. Writes N keys, then reads them back
 * in pipelined batches, against a Redis Cluster (--cluster host:port,...) or one endpoint such as
 * twemproxy (--proxy host:port): the same calls serve both. Prints what it did and the outcome of
 * every command that did not complete.
 *
 *   pipeline_get --cluster 127.0.0.1:7000 [--keys 10000] [--batch 100] [--password PW]
 */
#include <clusterpipe/clusterpipe.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void) {
    fprintf(stderr, "usage: pipeline_get (--cluster HOST:PORT[,...] | --proxy HOST:PORT)\n"
                    "                    [--keys N] [--batch B] [--password PW]\n");
    return 2;
}

/* Runs the pipeline and reports every command that did not end CP_DONE. */
static int run(cp_pipeline *p, const char *what) {
    int rc = cp_exec(p);
    if (rc == 0)
        return 0;
    fprintf(stderr, "%s: %s\n", what, cp_pipeline_errstr(p));
    for (size_t i = 0; i < cp_count(p); i++) {
        cp_outcome o = cp_get_outcome(p, i);
        if (o != CP_DONE)
            fprintf(stderr, "  command %zu: %s\n", i,
                    o == CP_UNKNOWN ? "outcome unknown (may have run)" : "not executed");
    }
    return 1;
}

int main(int argc, char **argv) {
    cp_options opt = CP_OPTIONS_INIT;
    long keys = 10000, batch = 100;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            return usage();
        if (strcmp(argv[i], "--cluster") == 0)
            opt.seeds = argv[++i];
        else if (strcmp(argv[i], "--proxy") == 0)
            opt.endpoint = argv[++i];
        else if (strcmp(argv[i], "--keys") == 0)
            keys = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--batch") == 0)
            batch = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--password") == 0)
            opt.password = argv[++i];
        else
            return usage();
    }
    if ((opt.seeds == NULL) == (opt.endpoint == NULL) || keys <= 0 || batch <= 0)
        return usage();

    cp_client *c = cp_connect(&opt);
    if (c == NULL || c->err) {
        fprintf(stderr, "connect: %s\n", c ? c->errstr : "out of memory");
        cp_free(c);
        return 1;
    }
    cp_pipeline *p = cp_pipeline_new(c);
    int failed = 0;
    long wrong = 0;
    for (long k = 0; k < keys; k += batch) {
        for (long i = k; i < k + batch && i < keys; i++)
            cp_append(p, "SET key:%ld value-%ld", i, i);
        failed |= run(p, "SET");
        cp_pipeline_reset(p); /* buffers are kept for the next batch */
    }
    for (long k = 0; k < keys; k += batch) {
        for (long i = k; i < k + batch && i < keys; i++)
            cp_append(p, "GET key:%ld", i);
        failed |= run(p, "GET");
        /* Replies come back in append order, one per command, whatever node served them. */
        for (size_t j = 0; j < cp_count(p); j++) {
            char want[48];
            snprintf(want, sizeof(want), "value-%ld", k + (long)j);
            const redisReply *r = cp_reply(p, j);
            if (cp_get_outcome(p, j) == CP_DONE &&
                (r->type != REDIS_REPLY_STRING || strcmp(r->str, want) != 0))
                wrong++;
        }
        cp_pipeline_reset(p);
    }
    cp_stats st;
    cp_get_stats(c, &st);
    printf("%ld keys written and read back in batches of %ld (%s): %ld wrong replies, "
           "%llu MOVED, %llu ASK\n",
           keys, batch, cp_is_cluster(c) ? "cluster" : "single endpoint", wrong,
           (unsigned long long)st.moved, (unsigned long long)st.ask);
    cp_pipeline_free(p);
    cp_free(c);
    return failed || wrong ? 1 : 0;
}
