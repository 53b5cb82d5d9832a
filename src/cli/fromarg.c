/* SPDX-License-Identifier: BSD-3-Clause
 *
 * `--from`'s forms (fromarg.h).
 */
#include "cli/fromarg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "migrate/clustersrc.h"
#include "migrate/migrate.h"
#include "migrate/nutconf.h"
#include "util/file.h"

/* "host:port,host:port". */
static int parse_list(const char *cmd, const char *list, cp_cli_sources *out) {
    int cap = 1;
    for (const char *p = list; *p; p++)
        cap += *p == ',';
    if (cap > CP__MIGRATE_MAX_SOURCES)
        return cp_cli_usage_error(cmd, "--from: at most %d sources", CP__MIGRATE_MAX_SOURCES);
    out->hosts = calloc((size_t)cap, sizeof *out->hosts);
    out->ports = calloc((size_t)cap, sizeof *out->ports);
    if (out->hosts == NULL || out->ports == NULL)
        return CP_EXIT_FAIL;
    const char *p = list;
    for (;;) {
        size_t len = strcspn(p, ",");
        const char *colon = NULL; /* the last one: an IPv6 address has others */
        for (const char *c = p; c < p + len; c++)
            colon = *c == ':' ? c : colon;
        char port[16];
        long v;
        if (colon == NULL || colon == p || (size_t)(p + len - colon - 1) >= sizeof port)
            return cp_cli_usage_error(cmd, "--from: '%.*s' is not HOST:PORT", (int)len, p);
        snprintf(port, sizeof port, "%.*s", (int)(p + len - colon - 1), colon + 1);
        if (cp_cli_parse_long(cmd, "--from", port, 1, 65535, &v) != 0)
            return CP_EXIT_USAGE;
        out->hosts[out->n] = strndup(p, (size_t)(colon - p));
        if (out->hosts[out->n] == NULL)
            return CP_EXIT_FAIL;
        out->ports[out->n++] = (int)v;
        if (p[len] == '\0')
            return 0;
        p += len + 1;
    }
}

/* A nutcracker YAML's servers. -1: from is not a file (nor named as one). */
static int parse_yaml(const char *cmd, const char *from, cp_cli_sources *out) {
    size_t len = strlen(from);
    int named = (len > 4 && strcmp(from + len - 4, ".yml") == 0) ||
                (len > 5 && strcmp(from + len - 5, ".yaml") == 0);
    size_t got;
    char *text = cp__read_file(from, 1 << 20, &got);
    if (text == NULL && !named)
        return -1;
    if (text == NULL)
        return cp_cli_usage_error(cmd, "--from %s: cannot read it", from);
    static cp__nutconf conf;
    char err[512];
    int rc = cp__nutconf_parse(text, &conf, err, sizeof err);
    free(text);
    if (rc != 0)
        return cp_cli_usage_error(cmd, "--from %s: %s", from, err);
    out->hosts = calloc((size_t)conf.n, sizeof *out->hosts);
    out->ports = calloc((size_t)conf.n, sizeof *out->ports);
    if (out->hosts == NULL || out->ports == NULL)
        return CP_EXIT_FAIL;
    for (int i = 0; i < conf.n; i++) {
        out->hosts[i] = strdup(conf.host[i]);
        if (out->hosts[i] == NULL)
            return CP_EXIT_FAIL;
        out->ports[i] = conf.port[i];
        out->n++;
    }
    if (conf.has_password && (out->yaml_password = strdup(conf.password)) == NULL)
        return CP_EXIT_FAIL;
    return 0;
}

int cp_cli_sources_parse(const char *cmd, const char *from, cp_cli_sources *out) {
    memset(out, 0, sizeof *out);
    int rc = parse_yaml(cmd, from, out);
    return rc < 0 ? parse_list(cmd, from, out) : rc;
}

void cp_cli_sources_free(cp_cli_sources *s) {
    for (int i = 0; s->hosts != NULL && i < s->n; i++)
        free(s->hosts[i]);
    free(s->hosts);
    free(s->ports);
    free(s->yaml_password);
    memset(s, 0, sizeof *s);
}

int cp_cli_tls_check(const char *cmd, cp_cli_tls *from, cp_cli_tls *to) {
    from->tls |= from->insecure;
    to->tls |= to->insecure;
    if ((from->cacert || from->cert || from->key) && !from->tls)
        return cp_cli_usage_error(cmd, "--from-cacert, --from-cert and --from-key need --from-tls");
    if ((to->cacert || to->cert || to->key) && !to->tls)
        return cp_cli_usage_error(cmd, "--to-cacert, --to-cert and --to-key need --to-tls");
    return 0;
}

const cp_options *cp_cli_tls_options(const cp_cli_tls *t, cp_options *o) {
    memset(o, 0, sizeof *o);
    if (!t->tls)
        return NULL;
    o->tls = 1;
    o->tls_insecure = t->insecure;
    o->tls_ca_file = t->cacert;
    o->tls_cert_file = t->cert;
    o->tls_key_file = t->key;
    return o;
}

int cp_cli_sources_resolve(const char *cmd, cp_cli_sources *s, const char *user,
                           const char *password, const cp_options *tls, int timeout_ms) {
    static cp__sources found;
    char err[1024];
    if (cp__sources_resolve((const char *const *)s->hosts, s->ports, s->n, user, password, tls,
                            timeout_ms, &found, err, sizeof err) != 0) {
        fprintf(stderr, "clusterpipe %s: %s\n", cmd, err);
        return CP_EXIT_FAIL;
    }
    if (!found.cluster)
        return 0;
    char **hosts = calloc((size_t)found.n, sizeof *hosts);
    int *ports = calloc((size_t)found.n, sizeof *ports);
    for (int i = 0; hosts != NULL && ports != NULL && i < found.n; i++) {
        hosts[i] = strdup(found.host[i]);
        ports[i] = found.port[i];
    }
    for (int i = 0; i < s->n; i++)
        free(s->hosts[i]);
    free(s->hosts);
    free(s->ports);
    s->hosts = hosts;
    s->ports = ports;
    s->n = hosts != NULL && ports != NULL ? found.n : 0;
    for (int i = 0; i < s->n; i++)
        if (hosts[i] == NULL) {
            fprintf(stderr, "clusterpipe %s: out of memory\n", cmd);
            return CP_EXIT_FAIL;
        }
    if (s->n == 0) {
        fprintf(stderr, "clusterpipe %s: %s\n", cmd,
                hosts == NULL || ports == NULL ? "out of memory"
                                               : "the source cluster has no master");
        return CP_EXIT_FAIL;
    }
    s->cluster = 1;
    return 0;
}

int cp_cli_users_check(const char *cmd, const char *from_user, const char *from_password,
                       const char *to_user, const char *to_password) {
    if (from_user != NULL && from_password == NULL)
        return cp_cli_usage_error(cmd, "--from-user needs --from-password (or a YAML's "
                                       "redis_auth)");
    if (to_user != NULL && to_password == NULL)
        return cp_cli_usage_error(cmd, "--to-user needs --to-password");
    return 0;
}
