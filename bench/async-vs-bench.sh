#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The async API on libevent (examples/async_libevent.c: one thread, chains of SET then GET of the
# value just set, DEPTH chains in flight) against `clusterpipe bench` (one thread, CLIENTS
# clients x pipeline P, SET:GET 1:1, every GET verified), on one 4-master cluster started here
# (`clusterpipe up cluster --shards 4`, stopped by the trap). The same requests in flight: the
# bench keeps CLIENTS x 4 lanes x P, the example DEPTH = that many. Each round runs both, one
# after the other (every other round the other way round); throughput is ops over wall time of
# the whole run, client CPU is the process's user + system time (bash's `time`) per op, for both
# tools the same way. Ratios are EXAMPLE/BENCH: the geometric mean of the rounds' own ratios with
# a 95% Student-t interval (paired: the shared machine's speed drifts between rounds).
#   usage: bench/async-vs-bench.sh [OPS]          (build first; OPS per run, default 2000000)
#   env:   BUILD=build-dir  ROUNDS=8  CLIENTS=10  P=10
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OPS=${1:-2000000}
ROUNDS=${ROUNDS:-8}
CLIENTS=${CLIENTS:-10}
P=${P:-10}
CP=$BUILD/clusterpipe
EX=$BUILD/examples/async_libevent
[[ -x $CP && -x $EX ]] || { echo "build first (with libevent-dev): $CP, $EX" >&2; exit 1; }
DEPTH=$((CLIENTS * 4 * P))
DIR=$(mktemp -d)
trap '"$CP" down --dir "$DIR" >/dev/null 2>&1 || true; rm -rf "$DIR"' EXIT
"$CP" up cluster --shards 4 --dir "$DIR" --no-password >/dev/null
SEEDS=$("$CP" status --dir "$DIR" | awk '/^endpoints:/{print $2}')
echo "cluster: $SEEDS"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "$OPS ops per run, $ROUNDS interleaved rounds; $DEPTH requests in flight each (bench:" \
     "$CLIENTS clients x 4 lanes x pipeline $P)"

# Prints "wall user sys" of a command (its output discarded).
timed() {
    local TIMEFORMAT='%R %U %S'
    { time "$@" >/dev/null 2>&1; } 2>&1
}

run_bench() {
    timed "$CP" bench --dir "$DIR" --threads 1 --clients "$CLIENTS" --pipeline "$P" \
        --ratio 1:1 --keys 100000 --requests "$OPS"
}
run_example() {
    timed "$EX" "$SEEDS" $((OPS / 2)) "$DEPTH"
}

"$CP" load --dir "$DIR" --keys 100000 >/dev/null
ratios=()
printf '%-6s %12s %10s | %12s %10s | %8s %8s\n' round "bench op/s" "us/op" "async op/s" "us/op" \
    "ops" "cpu"
for ((i = 1; i <= ROUNDS; i++)); do
    if ((i % 2)); then b=$(run_bench); e=$(run_example); else e=$(run_example); b=$(run_bench); fi
    read -r bw bu bs <<<"$b"
    read -r ew eu es <<<"$e"
    read -r r1 r2 < <(awk -v o="$OPS" -v bw="$bw" -v bu="$bu" -v bs="$bs" -v ew="$ew" \
        -v eu="$eu" -v es="$es" 'BEGIN { bc = (bu + bs) * bw; ec = (eu + es) * ew;
            printf "%f %f\n", bw / ew, ((eu + es) / (bu + bs)) }')
    awk -v i="$i" -v o="$OPS" -v bw="$bw" -v bu="$bu" -v bs="$bs" -v ew="$ew" -v eu="$eu" \
        -v es="$es" -v r1="$r1" -v r2="$r2" 'BEGIN {
            printf "%-6s %12.0f %10.3f | %12.0f %10.3f | %7.2fx %7.2fx\n", i, o / bw,
                   (bu + bs) * 1e6 / o, o / ew, (eu + es) * 1e6 / o, r1, r2 }'
    ratios+=("$r1 $r2")
done
printf '%s\n' "${ratios[@]}" | awk '
    { n++; lo[n] = log($1); lc[n] = log($2); so += lo[n]; sc += lc[n] }
    END {
        mo = so / n; mc = sc / n
        for (i = 1; i <= n; i++) { vo += (lo[i] - mo) ^ 2; vc += (lc[i] - mc) ^ 2 }
        t = (n >= 8 ? 2.365 : 2.776)  # Student t, 95%, df 7 / 4
        if (n == 10) t = 2.262
        ho = t * sqrt(vo / (n - 1) / n); hc = t * sqrt(vc / (n - 1) / n)
        printf "async/bench: throughput %.2fx (95%% CI %.2f-%.2f), client CPU per op %.2fx (%.2f-%.2f)\n",
               exp(mo), exp(mo - ho), exp(mo + ho), exp(mc), exp(mc - hc), exp(mc + hc)
    }'
echo "(want: throughput >= 0.9x at client CPU per op <= 1.2x; wall time includes each tool's" \
     "connect and setup)"
