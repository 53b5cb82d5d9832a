/* SPDX-License-Identifier: BSD-3-Clause
 *
 * Placement of the compare experiment's components on CPUs (placement.h): parsing --cpus and
 * --proxy-placement, completing and checking the sets, and the warnings the report carries. No
 * state beyond the caller's struct; any thread.
 */
#include "compare/placement.h"

#include "util/cpuset.h"
#include "util/errmsg.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

void cp__placement_init(cp__placement *p) {
    memset(p, 0, sizeof(*p));
    p->side = CP__PROXY_WITH_SERVERS;
}

/* The component named by "redis=", "proxy=" or "client=" at s (its length in *len), else NULL. */
static const char *component_at(const char *s, size_t *len) {
    static const char *const names[] = {"redis", "proxy", "client"};
    for (size_t i = 0; i < 3; i++) {
        size_t n = strlen(names[i]);
        if (strncmp(s, names[i], n) == 0 && s[n] == '=') {
            *len = n + 1;
            return names[i];
        }
    }
    return NULL;
}

int cp__placement_parse(cp__placement *p, const char *spec, char *err, size_t errlen) {
    snprintf(p->spec, sizeof(p->spec), "%s", spec);
    p->given = 1;
    p->has_redis = p->has_proxy = p->has_client = p->proxy_explicit = 0;
    if (strcmp(spec, CP__PLACEMENT_PRESET_2CORE) == 0) {
        CPU_ZERO(&p->redis);
        CPU_SET(0, &p->redis);
        CPU_ZERO(&p->client);
        CPU_SET(1, &p->client);
        p->has_redis = p->has_client = 1;
        return 0;
    }
    const char *s = spec;
    while (*s != '\0') {
        size_t nlen = 0;
        const char *name = component_at(s, &nlen);
        if (name == NULL) {
            cp__seterr(err, errlen,
                       "'%s' is not 2core or redis=LIST,proxy=LIST,client=LIST (at '%s')", spec, s);
            return -1;
        }
        s += nlen;
        /* The list runs to the next ",name=" (a comma followed by a digit continues it). */
        const char *end = s;
        for (size_t skip; *end != '\0'; end++)
            if (*end == ',' && component_at(end + 1, &skip) != NULL)
                break;
        char list[256];
        if ((size_t)(end - s) >= sizeof(list)) {
            cp__seterr(err, errlen, "the CPU list of %s is too long", name);
            return -1;
        }
        memcpy(list, s, (size_t)(end - s));
        list[end - s] = '\0';
        cpu_set_t *set = name[0] == 'r' ? &p->redis : name[0] == 'p' ? &p->proxy : &p->client;
        int *has = name[0] == 'r' ? &p->has_redis : name[0] == 'p' ? &p->has_proxy : &p->has_client;
        if (*has) {
            cp__seterr(err, errlen, "%s= is given twice", name);
            return -1;
        }
        if (cp__cpuset_parse(list, set) != 0) {
            cp__seterr(err, errlen, "%s='%s' is not a CPU list (e.g. 0, 0-3 or 0,2)", name, list);
            return -1;
        }
        *has = 1;
        if (name[0] == 'p')
            p->proxy_explicit = 1;
        s = *end == ',' ? end + 1 : end;
    }
    if (!p->has_redis && !p->has_proxy && !p->has_client) {
        cp__seterr(err, errlen, "'%s' names no component", spec);
        return -1;
    }
    return 0;
}

const char *cp__placement_side_name(cp__proxy_side side) {
    return side == CP__PROXY_WITH_CLIENTS ? "clients" : side == CP__PROXY_TIER ? "tier" : "servers";
}

int cp__placement_parse_side(cp__placement *p, const char *side, char *err, size_t errlen) {
    if (strcmp(side, "servers") == 0)
        p->side = CP__PROXY_WITH_SERVERS;
    else if (strcmp(side, "clients") == 0)
        p->side = CP__PROXY_WITH_CLIENTS;
    else if (strcmp(side, "tier") == 0)
        p->side = CP__PROXY_TIER;
    else {
        cp__seterr(err, errlen, "'%s' is not servers, clients or tier", side);
        return -1;
    }
    p->side_given = 1;
    return 0;
}

/* The first CPU of s that usable lacks, or -1. */
static int first_missing(const cpu_set_t *s, const cpu_set_t *usable) {
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, s) && !CPU_ISSET(c, usable))
            return c;
    return -1;
}

int cp__placement_resolve(cp__placement *p, char *err, size_t errlen) {
    if (p->side == CP__PROXY_TIER && !p->hosts) {
        cp__seterr(err, errlen,
                   "--proxy-placement tier puts the proxies on hosts of their own: it needs "
                   "--rtt or --sweep rtt=...");
        return -1;
    }
    if (!p->given) {
        if (p->side_given && !p->hosts) {
            cp__seterr(err, errlen,
                       "--proxy-placement needs --cpus (it says whose CPUs the "
                       "proxies share) or --rtt (whose hosts)");
            return -1;
        }
        return 0;
    }
    if (p->side_given && p->proxy_explicit) {
        cp__seterr(err, errlen,
                   "--proxy-placement and proxy= in --cpus both place the proxies; "
                   "give one");
        return -1;
    }
    if (!p->proxy_explicit) {
        int from_servers = p->side == CP__PROXY_WITH_SERVERS;
        p->has_proxy = p->side == CP__PROXY_TIER ? 0 /* hosts of their own: no side's CPUs */
                       : from_servers            ? p->has_redis
                                                 : p->has_client;
        p->proxy = from_servers ? p->redis : p->client;
    }
    cpu_set_t usable;
    if (cp__cpuset_usable(&usable) != 0)
        return 0; /* cannot tell: the spawn will say */
    char have[256];
    cp__cpuset_format(&usable, have, sizeof(have));
    static const char *const names[] = {"redis", "proxy", "client"};
    const cpu_set_t *sets[] = {&p->redis, &p->proxy, &p->client};
    const int has[] = {p->has_redis, p->has_proxy, p->has_client};
    for (int i = 0; i < 3; i++) {
        int c = has[i] ? first_missing(sets[i], &usable) : -1;
        if (c >= 0) {
            cp__seterr(err, errlen,
                       "--cpus: %s CPU %d is not usable here (this machine lets us run on %s)",
                       names[i], c, have);
            return -1;
        }
    }
    return 0;
}

int cp__placement_warnings(const cp__placement *p, int servers, int proxies, int threads,
                           char (*lines)[256], int max) {
    if (!p->given)
        return 0;
    int n = 0;
    static const char *const names[] = {"redis", "proxy", "client"};
    const cpu_set_t *sets[] = {&p->redis, &p->proxy, &p->client};
    const int has[] = {p->has_redis, p->has_proxy, p->has_client};
    const int procs[] = {servers, proxies, threads};
    const char *const what[] = {"redis-server processes", "nutcracker processes (twemproxy only)",
                                "client threads"};
    for (int i = 0; i < 3 && n < max; i++) {
        if (!has[i]) {
            snprintf(lines[n++], 256, "%s is not pinned: it may run on any CPU, the others' too",
                     names[i]);
            continue;
        }
        int ncpu = CPU_COUNT(sets[i]);
        if (procs[i] > ncpu && n < max)
            snprintf(lines[n++], 256,
                     "%d %s share %d CPU%s: they queue for %s, as they would not with a CPU each",
                     procs[i], what[i], ncpu, ncpu == 1 ? "" : "s", ncpu == 1 ? "it" : "them");
    }
    /* Overlaps the user did not ask for by choosing a side: the proxies sharing their own side's
     * CPUs is the placement itself, not a problem. */
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3 && n < max; j++) {
            if (!has[i] || !has[j])
                continue;
            int intended =
                !p->proxy_explicit && i == 0 && j == 1 && p->side == CP__PROXY_WITH_SERVERS;
            intended |= !p->proxy_explicit && i == 1 && j == 2 && p->side == CP__PROXY_WITH_CLIENTS;
            cpu_set_t both;
            CPU_AND(&both, sets[i], sets[j]);
            if (intended || CPU_COUNT(&both) == 0)
                continue;
            char list[128];
            cp__cpuset_format(&both, list, sizeof(list));
            snprintf(lines[n++], 256,
                     "%s and %s overlap on CPU %s: their CPU time competes, which separate hosts "
                     "would not",
                     names[i], names[j], list);
        }
    return n;
}

static json_t *set_or_null(int has, const cpu_set_t *s) {
    if (!has)
        return json_null();
    char buf[256];
    cp__cpuset_format(s, buf, sizeof(buf));
    return json_string(buf);
}

json_t *cp__placement_json(const cp__placement *p, int servers, int proxies, int threads) {
    if (!p->given)
        return json_null();
    char usable[256] = "";
    cpu_set_t u;
    if (cp__cpuset_usable(&u) == 0)
        cp__cpuset_format(&u, usable, sizeof(usable));
    char lines[CP__PLACEMENT_WARNINGS_MAX][256];
    int n = cp__placement_warnings(p, servers, proxies, threads, lines, CP__PLACEMENT_WARNINGS_MAX);
    json_t *w = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(w, json_string(lines[i]));
    return json_pack("{s:s,s:o,s:o,s:o,s:s,s:s,s:o}", "cpus", p->spec, "redis",
                     set_or_null(p->has_redis, &p->redis), "proxy",
                     set_or_null(p->has_proxy, &p->proxy), "client",
                     set_or_null(p->has_client, &p->client), "proxy_placement",
                     cp__placement_side_name(p->side), "usable", usable, "warnings", w);
}
