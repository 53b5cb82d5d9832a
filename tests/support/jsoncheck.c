/* SPDX-License-Identifier: BSD-3-Clause
 *
 * JSON reading for assertions (jsoncheck.h). No state; single-threaded.
 */
#include "jsoncheck.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "orch/orch.h"

json_t *cp_json_load(const char *path) {
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (j == NULL)
        fail_msg("%s: %s", path, je.text);
    return j;
}

json_t *cp_json_last_line(const char *text) {
    const char *last = text, *nl;
    while ((nl = strchr(last, '\n')) != NULL && nl[1] != '\0')
        last = nl + 1;
    json_error_t je;
    json_t *j = json_loads(last, 0, &je);
    if (!json_is_object(j))
        fail_msg("the last line is not a JSON object: %s (%s)", last, je.text);
    return j;
}

double cp_json_num(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        fail_msg("'%s' is not a number", key);
    return json_number_value(v);
}

const char *cp_json_str(const json_t *o, const char *key) {
    const char *s = json_string_value(json_object_get(o, key));
    if (s == NULL)
        fail_msg("'%s' is not a string", key);
    return s != NULL ? s : "";
}

int cp_json_kill_recorded(const json_t *doc, const char *list, int *seen) {
    int alive = 0, n = 0;
    size_t i, j;
    const json_t *t, *p;
    json_array_foreach(json_object_get(doc, list), i, t) {
        json_array_foreach(json_object_get(t, "processes"), j, p) {
            pid_t pid = (pid_t)json_integer_value(json_object_get(p, "pid"));
            unsigned long long st =
                (unsigned long long)json_integer_value(json_object_get(p, "start_time"));
            n++;
            if (cp_orch_pid_alive(pid, st)) {
                kill(pid, SIGKILL);
                alive++;
            }
        }
    }
    if (seen != NULL)
        *seen = n;
    return alive;
}
