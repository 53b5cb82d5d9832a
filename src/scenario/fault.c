/* SPDX-License-Identifier: BSD-3-Clause
 *
 * The wire's side of a partition or a slow link (scenario.h): which link the fault goes on, the
 * wire's control requests and byte counts, and the probes that measure each shard through the
 * load's path while the fault lasts. Calling thread only (the scenario's orchestration thread);
 * every client opened here is closed before the probes' JSON is returned.
 */
#include "scenario/scenario.h"

#include "util/clock.h"
#include "util/dur.h"
#include "util/errmsg.h"
#include "wire/control.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIRE_ASK_MS 2000
#define PROBE_MS 50          /* one GET per shard this often during the fault */
#define PROBE_TIMEOUT_MS 250 /* a probe not answered by then counts as unanswered */
#define PROBE_MAX 4096       /* samples per shard kept */

/* One shard as the probe sees it: a key it holds (RANDOMKEY on its own port, direct), and a
 * client that reaches it by the load's path (the master's client port, or the faulted proxy). */
typedef struct probe {
    size_t shard;
    char key[128];
    cp_client *c;
    double *us; /* answered GETs' round trips */
    size_t n;
    uint64_t sent, unanswered;
} probe;

/* The link the fault is on: cluster, the client's link to the first master; twemproxy, the
 * first proxy's link to the first shard not on its host. *via: the process a probe talks to
 * (the master itself, or that proxy). -1 when there is none. */
static int fault_link(const cp_topo *t, size_t *victim, size_t *via) {
    int cluster = cp_topo_get_kind(t) == CP_TOPO_CLUSTER;
    for (size_t k = 0; k < cp_topo_nlinks(t); k++) {
        const cp_link *l = cp_topo_link(t, k);
        if (!l->crosses)
            continue;
        cp_proc_role to = cp_topo_proc(t, (size_t)l->to)->role;
        if (cluster && l->from == CP_LINK_CLIENT && to == CP_ROLE_MASTER) {
            *victim = *via = (size_t)l->to;
            return (int)k;
        }
        if (!cluster && l->from >= 0 && to == CP_ROLE_SHARD) {
            *victim = (size_t)l->to;
            *via = (size_t)l->from;
            return (int)k;
        }
    }
    return -1;
}

/* Bytes the wire delivered on link `name`, both ways ("stats": wire/control.h). 0 when the
 * wire could not be asked (err set) or has no such link. */
static int link_bytes(const cp_topo *t, const char *name, uint64_t *bytes, char *err,
                      size_t errlen) {
    char out[16384], key[64];
    if (cp__wire_ask(cp_topo_wire_control(t), "stats", out, sizeof(out), WIRE_ASK_MS, err,
                     errlen) != 0)
        return CP_EIO;
    snprintf(key, sizeof(key), "link %s ", name);
    for (const char *line = out; line != NULL && *line;) {
        unsigned long long up, down;
        if (strncmp(line, key, strlen(key)) == 0) {
            const char *u = strstr(line, " up ");
            if (u != NULL && sscanf(u, " up %llu down %llu", &up, &down) == 2) {
                *bytes = up + down;
                return 0;
            }
        }
        line = strchr(line, '\n');
        line = line != NULL ? line + 1 : NULL;
    }
    snprintf(err, errlen, "the wire's stats have no link %s", name);
    return CP_EIO;
}

static int ask_wire(const cp_topo *t, const char *fmt, const char *name, const char *arg, char *err,
                    size_t errlen) {
    char req[512], e[256];
    snprintf(req, sizeof(req), fmt, name, arg);
    if (cp__wire_ask(cp_topo_wire_control(t), req, NULL, 0, WIRE_ASK_MS, e, sizeof(e)) != 0) {
        cp__seterr(err, errlen, "the wire refused '%s': %s", req, e);
        return CP_EIO;
    }
    return 0;
}

/* A client to shard i through port (the load's path to it: the master's client port, or the
 * faulted proxy). */
static cp_client *probe_client(const cp_topo *t, size_t i, int port) {
    char ep[96];
    snprintf(ep, sizeof(ep), "%s:%d", cp_topo_proc(t, i)->host, port);
    cp_options co = CP_OPTIONS_INIT;
    cp_topo_client_options(t, &co);
    co.endpoint = ep;
    co.connect_timeout_ms = PROBE_TIMEOUT_MS;
    co.io_timeout_ms = PROBE_TIMEOUT_MS;
    co.retry_budget_ms = CP_RETRY_NONE;
    cp_client *c = cp_connect(&co);
    if (c != NULL && c->err != 0) {
        cp_free(c);
        c = NULL;
    }
    return c;
}

/* Fills the probes' keys (before the fault: the admin path is direct anyway). */
static size_t probes_init(const cp_topo *t, probe *p, size_t max) {
    size_t n = 0;
    cp_proc_role role = cp_topo_get_kind(t) == CP_TOPO_CLUSTER ? CP_ROLE_MASTER : CP_ROLE_SHARD;
    for (size_t i = 0; i < cp_topo_nprocs(t) && n < max; i++) {
        if (cp_topo_proc(t, i)->role != role)
            continue;
        cp_client *c = probe_client(t, i, cp_topo_proc(t, i)->port);
        redisReply *r = c != NULL ? cp_command(c, "RANDOMKEY") : NULL;
        if (r != NULL && r->type == REDIS_REPLY_STRING && r->len < sizeof(p[n].key)) {
            memset(&p[n], 0, sizeof(p[n]));
            p[n].shard = i;
            memcpy(p[n].key, r->str, r->len);
            p[n].us = malloc(PROBE_MAX * sizeof(double));
            if (p[n].us != NULL)
                n++;
        }
        if (r != NULL)
            cp_reply_free(r);
        if (c != NULL)
            cp_free(c);
    }
    return n;
}

/* One GET per probe, each through the load's path to its shard. */
static void probes_round(const cp_topo *t, probe *p, size_t n, size_t via) {
    int cluster = cp_topo_get_kind(t) == CP_TOPO_CLUSTER;
    for (size_t k = 0; k < n; k++) {
        size_t to = cluster ? p[k].shard : via;
        p[k].sent++;
        if (p[k].c == NULL)
            p[k].c = probe_client(t, to, cp_topo_client_port(t, to));
        uint64_t t0 = cp__now_ns();
        redisReply *r = p[k].c != NULL ? cp_command(p[k].c, "GET %s", p[k].key) : NULL;
        double us = (double)(cp__now_ns() - t0) / 1e3;
        if (r != NULL && r->type == REDIS_REPLY_STRING) {
            if (p[k].n < PROBE_MAX)
                p[k].us[p[k].n++] = us;
        } else {
            p[k].unanswered++;
            if (p[k].c != NULL) { /* a timed-out connection is out of step: a new one */
                cp_free(p[k].c);
                p[k].c = NULL;
            }
        }
        if (r != NULL)
            cp_reply_free(r);
    }
}

static double percentile(double *v, size_t n, double q) {
    if (n == 0)
        return NAN;
    cp__scn_median(v, n); /* sorts */
    size_t i = (size_t)ceil(q / 100.0 * (double)n);
    return v[i > 0 ? i - 1 : 0];
}

/* The probes as JSON (one object per shard), freeing them. */
static json_t *probes_json(const cp_topo *t, probe *p, size_t n, size_t victim) {
    json_t *a = json_array();
    for (size_t k = 0; k < n; k++) {
        json_array_append_new(
            a,
            json_pack("{s:i,s:b,s:I,s:I,s:I,s:o,s:o}", "port", cp_topo_proc(t, p[k].shard)->port,
                      "faulted", p[k].shard == victim, "gets", (json_int_t)p[k].sent, "answered",
                      (json_int_t)p[k].n, "unanswered", (json_int_t)p[k].unanswered, "p50_us",
                      p[k].n ? json_real(percentile(p[k].us, p[k].n, 50)) : json_null(), "p99_us",
                      p[k].n ? json_real(percentile(p[k].us, p[k].n, 99)) : json_null()));
        if (p[k].c != NULL)
            cp_free(p[k].c);
        free(p[k].us);
    }
    return a;
}

/* After the heal: probes the faulted shard alone until a GET through the healed path is
 * answered (or the run ends). Returns the seconds from the heal to that answer, NaN when none
 * came. The samples are not kept: the probes' numbers are the fault's. */
static double probe_recovery(const cp_topo *t, probe *p, size_t n, size_t victim, size_t via,
                             uint64_t heal_ns, int (*stop)(const void *ud), const void *ud) {
    size_t k = 0;
    while (k < n && p[k].shard != victim)
        k++;
    if (k == n)
        return NAN;
    probe one = p[k];
    one.n = PROBE_MAX; /* full: keeps no sample */
    while (!stop(ud)) {
        uint64_t unanswered = one.unanswered;
        probes_round(t, &one, 1, via);
        if (one.unanswered == unanswered)
            break;
        cp__sleep_ms(PROBE_MS / 5);
    }
    p[k].c = one.c;
    return one.unanswered == p[k].unanswered + (one.sent - p[k].sent)
               ? NAN
               : (double)(cp__now_ns() - heal_ns) / 1e9;
}

/* 1 when process i answers ROLE with "master" on its own port, 0 when with something else, -1
 * when it could not be asked. */
static int role_is_master(const cp_topo *t, size_t i) {
    cp_client *c = probe_client(t, i, cp_topo_proc(t, i)->port);
    redisReply *r = c != NULL ? cp_command(c, "ROLE") : NULL;
    int rc = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
                     r->element[0]->type == REDIS_REPLY_STRING
                 ? strcmp(r->element[0]->str, "master") == 0
                 : -1;
    if (r != NULL)
        cp_reply_free(r);
    if (c != NULL)
        cp_free(c);
    return rc;
}

/* partition / slow-link: the link is blocked (or slowed) for down_s, the shards probed all the
 * while, then it heals. The link's bytes are read from the wire at the fault, at the heal and
 * (cp__scn_fault_after, after the run) at the end, so the report shows that nothing
 * passed during a partition and that traffic came back after it. */
int cp__scn_wire_fault(const cp__scn_opts *o, cp__session *ss, cp_topo *t,
                       int (*stop)(const void *ud), const void *ud, json_t *c, uint64_t *start_ns,
                       uint64_t *heal_ns, char *err, size_t errlen) {
    int partition = o->kind == CP__SCN_PARTITION;
    int cluster = cp_topo_get_kind(t) == CP_TOPO_CLUSTER;
    size_t victim = 0, via = 0;
    int li = fault_link(t, &victim, &via);
    if (li < 0) {
        snprintf(err, errlen, "no link crossing hosts to put the fault on");
        return CP_EINVAL;
    }
    const cp_link *l = cp_topo_link(t, (size_t)li);
    probe pr[16];
    size_t npr = probes_init(t, pr, 16);
    char delay[32] = "0";
    cp__dur_format(o->delay_ns, delay, sizeof(delay));
    uint64_t b0 = 0, b1 = 0;
    const cp_proc *v = cp_topo_proc(t, victim);
    cp__session_say(ss, "%s: %s link %s (to the %s on port %d) for %g s",
                    cluster ? "cluster" : "twemproxy", partition ? "blocking" : "slowing", l->name,
                    cp_proc_role_name(v->role), v->port, o->down_s);
    *start_ns = cp__now_ns();
    int rc = partition ? ask_wire(t, "block %s%s", l->name, "", err, errlen)
                       : ask_wire(t, "delay %s %s", l->name, delay, err, errlen);
    if (rc == 0) /* from the block on: a partition lets nothing through */
        rc = link_bytes(t, l->name, &b0, err, errlen);
    uint64_t until = *start_ns + (uint64_t)(o->down_s * 1e9);
    while (rc == 0 && cp__now_ns() < until && !stop(ud)) {
        uint64_t next = cp__now_ns() + PROBE_MS * 1000000ull;
        probes_round(t, pr, npr, via);
        while (cp__now_ns() < next && cp__now_ns() < until)
            cp__sleep_ms(5);
    }
    if (rc == 0 && link_bytes(t, l->name, &b1, err, errlen) != 0)
        rc = CP_EIO;
    /* heal, whatever happened meanwhile */
    char herr[256] = "";
    int hrc = partition ? ask_wire(t, "unblock %s%s", l->name, "", herr, sizeof(herr))
                        : ask_wire(t, "delay %s %s", l->name, "0", herr, sizeof(herr));
    double recovered = NAN;
    if (hrc == 0) {
        *heal_ns = cp__now_ns();
        recovered = probe_recovery(t, pr, npr, victim, via, *heal_ns, stop, ud);
    }
    json_t *f = json_pack("{s:s,s:s,s:i,s:s,s:i,s:I,s:I}", "link", l->name, "to",
                          cp_proc_role_name(v->role), "to_port", v->port, "from",
                          l->from >= 0 ? cp_proc_role_name(cp_topo_proc(t, via)->role) : "client",
                          "from_port", l->from >= 0 ? cp_topo_proc(t, via)->port : 0,
                          "bytes_at_block", (json_int_t)b0, "bytes_at_heal", (json_int_t)b1);
    if (rc == 0) /* both counts read */
        json_object_set_new(f, "bytes_during", json_integer((json_int_t)(b1 - b0)));
    if (!partition)
        json_object_set_new(f, "delay_ns", json_integer((json_int_t)o->delay_ns));
    json_object_set_new(f, "probes", probes_json(t, pr, npr, victim));
    json_object_set_new(f, "recovered_after",
                        isnan(recovered) ? json_null() : json_real(recovered));
    if (cluster && partition) /* the bus is direct: the nodes never saw the partition */
        json_object_set_new(f, "still_master", json_integer(role_is_master(t, victim)));
    json_object_set_new(c, "fault", f);
    if (rc == 0 && hrc != 0) {
        snprintf(err, errlen, "%s", herr);
        rc = hrc;
    }
    return rc;
}

/* After the run: the faulted link's bytes since the heal (traffic came back). */
void cp__scn_fault_after(const cp_topo *t, json_t *c) {
    json_t *f = json_object_get(c, "fault");
    uint64_t b2 = 0;
    char err[256];
    if (f == NULL ||
        link_bytes(t, json_string_value(json_object_get(f, "link")), &b2, err, sizeof(err)) != 0)
        return;
    json_int_t b1 = json_integer_value(json_object_get(f, "bytes_at_heal"));
    json_object_set_new(f, "bytes_after_heal", json_integer((json_int_t)b2 - b1));
}
