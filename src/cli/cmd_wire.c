/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `clusterpipe wire`: the emulated network (wire/wire.h) as a process of its own, which `up
 * --rtt` starts and `down` stops by PID like the servers; run by hand, it puts a delay in front
 * of any loopback server. Runs until SIGTERM or SIGINT.
 */
#include "cli/cli.h"
#include "cli/flags.h"
#include "util/dur.h"
#include "wire/wire.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define MAX_LINKS 256

typedef struct wire_args {
    const char *rtt;
    const char *bind;
    const char *control;
    size_t queue;
    size_t nlinks;
    cp__wire_link_spec links[MAX_LINKS];
} wire_args;

static int parse_link(const char *cmd, const cp_cli_flag *f, const char *val, void *dst) {
    wire_args *a = (wire_args *)((char *)dst - offsetof(wire_args, nlinks));
    char err[256];
    if (a->nlinks == MAX_LINKS)
        return cp_cli_flag_error(cmd, f, "at most %d links", MAX_LINKS);
    if (cp__wire_link_parse(val, &a->links[a->nlinks], err, sizeof(err)) != 0)
        return cp_cli_flag_error(cmd, f, "%s", err);
    for (size_t i = 0; i < a->nlinks; i++)
        if (strcmp(a->links[i].name, a->links[a->nlinks].name) == 0)
            return cp_cli_flag_error(cmd, f, "two links named %s", a->links[i].name);
    a->nlinks++;
    return 0;
}

static const cp_cli_flag wire_rows[] = {
    CP_CLI_FN("--link", "NAME=PORT:HOST:PORT", parse_link, offsetof(wire_args, nlinks),
              "listen on PORT, forward to HOST:PORT (numeric; IPv6 in\nbrackets); repeat for "
              "each link (at least one)"),
    CP_CLI_STR("--rtt", "D[~J]", offsetof(wire_args, rtt),
               "the round trip each link adds, half each way, with an\noptional jitter J "
               "(500us~50us); default 0"),
    CP_CLI_NUM("--queue", "BYTES", CP_CLI_SIZE, 4096, 1LL << 30, offsetof(wire_args, queue),
               "bytes one direction of a connection holds before the\nwire stops reading its "
               "sender (default 4194304)"),
    CP_CLI_STR("--bind", "ADDR", offsetof(wire_args, bind),
               "the address the links listen on (default 127.0.0.1)"),
    CP_CLI_STR("--control", "PATH", offsetof(wire_args, control),
               "a Unix socket taking: block NAME, unblock NAME,\ndelay NAME DUR, stats"),
    CP_CLI_END,
};

static const cp_cli_cmd wire_cmd = {
    .name = "wire",
    .usage = "usage: clusterpipe wire --link NAME=PORT:HOST:PORT [--link ...] [--rtt D[~J]]\n"
             "                        [--queue BYTES] [--bind ADDR] [--control PATH]\n"
             "\n"
             "An emulated network on loopback: every connection to a link's PORT is forwarded\n"
             "to its HOST:PORT, each direction's bytes held for RTT/2, in order and without\n"
             "loss; a full direction stops reading its sender (backpressure). Through the\n"
             "control socket a link can be blocked (a partition: connections stay open, nothing\n"
             "passes) or slowed. 'up --rtt' starts one in front of every link that crosses\n"
             "hosts. Prints \"wire: ready\" once every link listens; runs until SIGTERM.\n",
    .options = "options:",
    .rows = wire_rows,
    .epilog = "Exit status: 0 stopped by a signal, 1 failure (a port in use, ...), 2 bad usage.\n",
    .width = 26,
};

static void say_ready(void *arg) {
    (void)arg;
    printf("wire: ready\n");
    fflush(stdout);
}

int cp_cli_wire(int argc, char **argv) {
    static wire_args a;
    memset(&a, 0, sizeof(a));
    a.queue = 4u << 20;
    int prc = cp_cli_parse(&wire_cmd, argc, argv, 1, &a, NULL);
    if (prc != CP_CLI_GO)
        return prc;
    if (a.nlinks == 0)
        return cp_cli_usage_error("wire", "--link is required (at least one)");
    uint64_t rtt = 0, jitter = 0;
    if (a.rtt != NULL && cp__dur_parse_jitter(a.rtt, &rtt, &jitter) != 0)
        return cp_cli_usage_error("wire",
                                  "--rtt %s: expected a duration with its unit (500us, 1ms, "
                                  "0.25ms), optionally ~JITTER no larger than it",
                                  a.rtt);
    cp_cli_install_signals();
    cp__wire_opts o = {.bind = a.bind,
                       .delay_ns = rtt / 2,
                       .jitter_ns = jitter / 2,
                       .queue_bytes = a.queue,
                       .control = a.control,
                       .links = a.links,
                       .nlinks = a.nlinks,
                       .stop = &cp_cli_interrupted,
                       .ready = say_ready};
    char err[512] = "";
    if (cp__wire_run(&o, err, sizeof(err)) != 0) {
        fprintf(stderr, "clusterpipe wire: %s\n", err);
        return CP_EXIT_FAIL;
    }
    return CP_EXIT_OK;
}
