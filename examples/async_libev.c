/* SPDX-License-Identifier: BSD-3-Clause
 *
 * async_libev: async commands on libev through clusterpipe/adapters/libev.h. Keeps DEPTH keys
 * in flight, each a SET then, from its callback, a GET that must return what was SET, until N
 * keys are done. Prints the operations and the errors; exits 0 only when every callback got
 * CP_DONE with the right reply. async_poll.c is the same program on the built-in loop.
 * The connections keep their read interest, so ev_run would not return by itself while the
 * client lives: the last callback breaks the loop. The client is freed with plain cp_free, as
 * on any loop: the adapter's state for it goes with it (its detach hook).
 *
 *   async_libev [SEEDS [N [DEPTH]]]      SEEDS: host:port[,...], default 127.0.0.1:7000
 */
#include <clusterpipe/clusterpipe.h>
#include <clusterpipe/adapters/libev.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct run {
    cp_client *c;
    long n, next; /* keys wanted, keys started */
    int active;   /* chains still going */
    long ops, errors;
    unsigned tag; /* keeps this run's keys apart from another's */
    struct ev_loop *loop;
} run;

typedef struct chain { /* one key at a time: its SET, then its GET */
    run *r;
    long i; /* its key is async_example:<tag>:<i>, and its value <i> */
} chain;

static void on_set(cp_client *c, const cp_response *resp, void *privdata);

static void problem(run *r, const char *what, const chain *ch, const cp_response *resp) {
    if (r->errors++ < 5)
        fprintf(stderr, "%s async_example:%u:%ld: %s\n", what, r->tag, ch->i,
                resp->outcome != CP_DONE                 ? resp->errstr
                : resp->reply->type == REDIS_REPLY_ERROR ? resp->reply->str
                                                         : "unexpected reply");
}

/* Is v the value SET for key i: the number i, and nothing after it? */
static int holds_value(const redisReply *v, long i) {
    char *end;
    return v->type == REDIS_REPLY_STRING && v->len > 0 && strtol(v->str, &end, 10) == i &&
           *end == '\0';
}

/* Starts the chain's next key, or ends the chain when every key is started. */
static void next_key(chain *ch) {
    run *r = ch->r;
    while (r->next < r->n) {
        ch->i = r->next++;
        if (cp_async_command(r->c, on_set, ch, "SET async_example:%u:%ld %ld", r->tag, ch->i,
                             ch->i) == 0)
            return;
        fprintf(stderr, "SET async_example:%u:%ld refused: %s\n", r->tag, ch->i, r->c->errstr);
        r->errors++;
    }
    if (--r->active == 0) /* the last key is done: leave the loop */
        ev_break(r->loop, EVBREAK_ALL);
}

static void on_get(cp_client *c, const cp_response *resp, void *privdata) {
    (void)c;
    chain *ch = privdata;
    ch->r->ops++;
    if (resp->outcome != CP_DONE || !holds_value(resp->reply, ch->i))
        problem(ch->r, "GET", ch, resp);
    next_key(ch);
}

static void on_set(cp_client *c, const cp_response *resp, void *privdata) {
    chain *ch = privdata;
    ch->r->ops++;
    if (resp->outcome != CP_DONE || resp->reply->type != REDIS_REPLY_STATUS ||
        strcmp(resp->reply->str, "OK") != 0) {
        problem(ch->r, "SET", ch, resp);
        next_key(ch);
        return;
    }
    if (cp_async_command(c, on_get, ch, "GET async_example:%u:%ld", ch->r->tag, ch->i) == 0)
        return;
    fprintf(stderr, "GET async_example:%u:%ld refused: %s\n", ch->r->tag, ch->i, c->errstr);
    ch->r->errors++;
    next_key(ch);
}

int main(int argc, char **argv) {
    cp_options opt = CP_OPTIONS_INIT;
    opt.seeds = argc > 1 ? argv[1] : "127.0.0.1:7000";
    run r = {0};
    r.n = argc > 2 ? atol(argv[2]) : 10000;
    long depth = argc > 3 ? atol(argv[3]) : 64;
    if (r.n < 0 || depth < 1) {
        fprintf(stderr, "usage: async_libev [SEEDS [N [DEPTH]]]\n");
        return 2;
    }
    r.tag = (unsigned)getpid() ^ (unsigned)time(NULL);

    r.loop = ev_loop_new(EVFLAG_AUTO);
    r.c = cp_client_new(&opt); /* no I/O yet: the slot map is read once on the loop */
    chain *chains = calloc((size_t)depth, sizeof(*chains));
    if (r.loop == NULL || r.c == NULL || chains == NULL) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    int rc = r.c->err != 0 ? r.c->err : cp_libev_attach(r.c, r.loop);
    if (rc != 0) {
        fprintf(stderr, "client: %s\n", r.c->err ? r.c->errstr : cp_strerror(rc));
        cp_free(r.c); /* a failed attach left nothing on the loop */
        ev_loop_destroy(r.loop);
        free(chains);
        return 1;
    }
    r.active = (int)depth;
    for (long i = 0; i < depth; i++) {
        chains[i].r = &r;
        next_key(&chains[i]);
    }
    if (r.active > 0)
        ev_run(r.loop, 0);

    cp_free(r.c); /* the client, and the adapter's state for it */
    ev_loop_destroy(r.loop);
    free(chains);
    printf("async_libev: %ld keys, %ld operations, %ld errors\n", r.n, r.ops, r.errors);
    return r.errors == 0 && r.ops == 2 * r.n ? 0 : 1;
}
