#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One build of `clusterpipe bench` against another, paired, on one 4-master cluster started here
# (stopped by the trap): did a change cost speed? Each round runs the same GET workload with each
# build, one after the other (every other round the other way round, so neither always runs on a
# warmer machine), and reads each run's own report (--csv: ops/s and client CPU per GET over its
# measured interval). Both are the same tool, so their own reports measure the same thing. Also
# the servers' GETs per read (INFO stats) and CPU per GET under each build: a change in how
# requests are batched shows there first. Ratios are NEW/OLD, the geometric mean of each round's
# own ratio with a 95% Student-t interval: on a shared machine the speed drifts by 2x within
# minutes, and only paired ratios see through that.
#   usage: bench/vs-build.sh OLD_BUILD_DIR [NEW_BUILD_DIR]   (default new: build)
#   env:   DEPTHS="10 50"  ROUNDS=10  SECONDS_PER_RUN=3  CLIENTS=10  KEYS=100000  VALUE=64
#          OLD_ARGS / NEW_ARGS: each side's workload flags, shell-quoted (default "--ratio 0:1")
# One build against itself with other flags, e.g. a template against the built-in GET path:
#   NEW_ARGS="--command 'GET __key__'" bench/vs-build.sh build build
# Example: a worktree of the commit before the change, built the default way:
#   git worktree add /tmp/old HEAD~1 && (cd /tmp/old && cmake -S . -B build && cmake --build build)
#   bench/vs-build.sh /tmp/old/build
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${1:?usage: bench/vs-build.sh OLD_BUILD_DIR [NEW_BUILD_DIR]}/clusterpipe
NEW=${2:-build}/clusterpipe
DEPTHS=${DEPTHS:-"10 50"}
ROUNDS=${ROUNDS:-10}
SECS=${SECONDS_PER_RUN:-3}
C=${CLIENTS:-10}
KEYS=${KEYS:-100000}
VALUE=${VALUE:-64}
eval "old_args=(${OLD_ARGS:---ratio 0:1})"
eval "new_args=(${NEW_ARGS:---ratio 0:1})"
for b in "$OLD" "$NEW"; do
    [[ -x $b ]] || { echo "no $b: build it first" >&2; exit 2; }
done
command -v redis-cli >/dev/null || { echo "redis-cli not found (Debian: redis-tools)" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/cp-vsbuild-XXXXXX")
rmdir "$dir"
out=$(mktemp -d)
trap '"$NEW" down --dir "$dir" >/dev/null 2>&1 || true; rm -rf "$out"' EXIT
"$NEW" up cluster --shards 4 --no-password --dir "$dir" -q >/dev/null
"$NEW" load --dir "$dir" --keys "$KEYS" --value-size "$VALUE" --key-layout per-master --quiet \
    >/dev/null
ports=$("$NEW" status --dir "$dir" | awk '$1 == "master" { split($2, a, ":"); print a[2] }')
echo "old: $OLD ($("$OLD" --version)) ${old_args[*]}, new: $NEW ($("$NEW" --version)) ${new_args[*]}"
echo "cluster: 4 masters; GET, $C connections, ${SECS} s per run, $ROUNDS paired rounds per depth"

# Commands and reads the four masters have processed so far: "commands reads".
served() {
    local p
    for p in $ports; do redis-cli -p "$p" INFO stats | tr -d '\r'; done |
        awk -F: '/^total_commands_processed/ { c += $2 } /^total_reads_processed/ { r += $2 }
                 END { print c, r }'
}

# One run of build $1 at depth $2: appends "ops_per_sec client_us_per_op gets_per_read
# servers_us_per_op" to $3;
# the rest of the arguments are the side's workload flags.
run() {
    local before after b=$1 p=$2 f=$3
    shift 3
    before=$(served)
    "$b" bench --dir "$dir" --clients "$C" --pipeline "$p" --duration "$SECS" "$@" \
        --keys "$KEYS" --value-size "$VALUE" --key-layout per-master --quiet --csv "$out/run.csv" \
        >"$out/run.out" 2>&1 || { cat "$out/run.out" >&2; exit 1; }
    after=$(served)
    awk -F, -v b="$before" -v a="$after" '
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        NR == 2 { split(b, x, " "); split(a, y, " ")
                  printf "%s %s %.2f %s\n", $col["ops_per_sec"], $col["us_per_op_client"],
                         (y[1] - x[1]) / (y[2] - x[2]), $col["us_per_op_redis"]; exit }' \
        "$out/run.csv" >>"$f"
}

printf '\n%-6s %11s %11s %9s %9s | %s\n' depth "old ops/s" "new ops/s" "old us/op" \
    "new us/op" "new/old, 95% confidence interval"
for P in $DEPTHS; do
    : >"$out/old" && : >"$out/new"
    for r in $(seq 1 "$ROUNDS"); do
        if ((r % 2)); then
            run "$OLD" "$P" "$out/old" "${old_args[@]}"; run "$NEW" "$P" "$out/new" "${new_args[@]}"
        else
            run "$NEW" "$P" "$out/new" "${new_args[@]}"; run "$OLD" "$P" "$out/old" "${old_args[@]}"
        fi
    done
    paste -d' ' "$out/old" "$out/new" | awk -v p="$P" '
        function t95(df) {   # two-sided 95% quantiles of Student t, df 1..30
            split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 " \
                  "2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086 2.080 2.074 2.069 2.064 " \
                  "2.060 2.056 2.052 2.048 2.045 2.042", t, " ")
            return df <= 30 ? t[df] : 1.96
        }
        function gm(s, ss, n,   m, v, h) {   # "mean [lo-hi]" of the ratios, from their logs
            m = s / n; v = n > 1 ? (ss - n * m * m) / (n - 1) / n : 0
            h = v > 0 ? t95(n - 1) * sqrt(v) : 0
            return sprintf("%.3fx [%.3f-%.3f]", exp(m), exp(m - h), exp(m + h))
        }
        { n++; oo[n] = $1; no[n] = $5; oc[n] = $2; nc[n] = $6; og += $3; ng += $7
          lo = log($5 / $1); so += lo; sso += lo * lo
          lc = log($6 / $2); sc += lc; ssc += lc * lc
          lr = log($8 / $4); sr += lr; ssr += lr * lr }
        function med(a, n,   i, j, t) {
            for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--)
                a[j + 1] = a[j]; a[j + 1] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        END {
            printf "%-6s %11.0f %11.0f %9.3f %9.3f | %s ops, %s client CPU per GET\n", p,
                   med(oo, n), med(no, n), med(oc, n), med(nc, n), gm(so, sso, n), gm(sc, ssc, n)
            printf "       servers GETs per read: old %.1f, new %.1f; servers CPU per GET %s\n",
                   og / n, ng / n, gm(sr, ssr, n)
        }'
done
echo "(medians of ops/s and client us per GET over the rounds; ratios are new/old, the geometric"
echo " mean of the rounds' own ratios with a 95% confidence interval)"
