/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Where each component of the compare experiment runs (private to src/compare/; parsed by
 * `clusterpipe compare --cpus` and `--proxy-placement`): the CPU set of the redis servers, of the
 * proxies and of the client (its load and bench threads), the side the proxies share when they
 * have no set of their own, and what is wrong with a placement that was asked (sets that overlap,
 * more processes than CPUs in a set, a component left unpinned): the document records the
 * placement and these warnings, so a ratio measured with components queueing for one CPU is
 * never read as if they had their own hosts.
 *
 * A value type: no allocation except the JSON object handed to the caller (json_decref). Any
 * thread.
 */
#ifndef CLUSTERPIPE_COMPARE_PLACEMENT_H
#define CLUSTERPIPE_COMPARE_PLACEMENT_H

#include <sched.h>
#include <stddef.h>

#include <jansson.h>

/* Which side's CPUs the proxies share when --cpus gives them none, and with an RTT which hosts
 * they sit on: the servers' (the published setup: twemproxy on the redis hosts), the client's (a
 * sidecar next to each application), or (with an RTT only) hosts of their own, a proxy tier,
 * whose CPUs --cpus leaves unpinned unless proxy= gives them. */
typedef enum cp__proxy_side {
    CP__PROXY_WITH_SERVERS = 0,
    CP__PROXY_WITH_CLIENTS = 1,
    CP__PROXY_TIER = 2
} cp__proxy_side;

/* The name of the 2-core preset of --cpus: the servers on CPU 0, everything else on CPU 1. */
#define CP__PLACEMENT_PRESET_2CORE "2core"
#define CP__PLACEMENT_WARNINGS_MAX 8

typedef struct cp__placement {
    int given;      /* --cpus was given; 0: nothing is pinned */
    char spec[256]; /* --cpus as given, for the document */
    cpu_set_t redis, proxy, client;
    int has_redis, has_proxy, has_client; /* that component is pinned */
    int proxy_explicit;                   /* proxy=LIST was in --cpus (else the side decides) */
    int side_given;                       /* --proxy-placement was given */
    cp__proxy_side side;
    /* The run has hosts (--rtt, --sweep rtt): the side then also places the proxies' hosts, so
     * --proxy-placement needs no --cpus. Set by the caller before cp__placement_resolve. */
    int hosts;
} cp__placement;

/* No placement (nothing pinned, proxies with the servers). */
void cp__placement_init(cp__placement *p);

/* Parses --cpus: "2core", or "redis=LIST,proxy=LIST,client=LIST" in any order, each optional,
 * LIST in the kernel's list format (a comma followed by a number continues the list: "redis=0,2,
 * client=1" gives redis CPUs 0 and 2). Returns 0, or -1 with the reason in err. */
int cp__placement_parse(cp__placement *p, const char *spec, char *err, size_t errlen);

/* Parses --proxy-placement: "servers", "clients" or "tier". Returns 0 or -1 with err. */
/* "servers", "clients", "tier": the flag's word. */
const char *cp__placement_side_name(cp__proxy_side side);

int cp__placement_parse_side(cp__placement *p, const char *side, char *err, size_t errlen);

/* Completes the placement before anything starts: the proxies' set from the side when proxy=
 * was not given. Refuses (-1 with err) --proxy-placement with proxy=, or with neither --cpus nor
 * hosts, tier without hosts, and any CPU this process may not use (sched_getaffinity): pinning a
 * server there would fail halfway. */
int cp__placement_resolve(cp__placement *p, char *err, size_t errlen);

/* The placement's problems for a setup of `servers` redis processes, `proxies` nutcrackers and
 * `threads` client threads, one line each into lines[0..max) (each of linelen). Returns how many.
 */
int cp__placement_warnings(const cp__placement *p, int servers, int proxies, int threads,
                           char (*lines)[256], int max);

/* {"cpus": spec, "redis": "0", "proxy": "0", "client": "1" (null: not pinned), "proxy_placement":
 * "servers"|"clients", "usable": "0-1", "warnings": [...]} or null when not given. New reference.
 */
json_t *cp__placement_json(const cp__placement *p, int servers, int proxies, int threads);

#endif /* CLUSTERPIPE_COMPARE_PLACEMENT_H */
