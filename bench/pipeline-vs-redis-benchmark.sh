#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# libclusterpipe's synchronous pipeline vs redis-benchmark, side by side on one 4-master cluster:
# one thread, one client, batches of 10 and 100 GETs over the same key space. redis-benchmark
# --cluster pins each client to one node; clusterpipe splits every batch over all 4 masters.
# Prints ops/s and client CPU microseconds per op for both, and the ratios. Both from whole runs:
# redis-benchmark --cluster starts one thread per master (the one client runs on one of them),
# stops them only at its 250 ms progress tick and spins meanwhile, so its elapsed time and CPU
# carry up to 250 ms each; bench/vs-redis-benchmark.sh measures a steady window instead.
#   usage: bench/pipeline-vs-redis-benchmark.sh [REQUESTS] [KEYS]     (run `make` first)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REQ=${1:-1000000}
KEYS=${2:-100000}
CP=$BUILD/clusterpipe
DRV=$BUILD/bench/pipeline_bench
[[ -x $CP && -x $DRV ]] || { echo "build first: make" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/cp-pipebench-XXXXXX")
rmdir "$dir"
trap '"$CP" down --dir "$dir" >/dev/null 2>&1 || true' EXIT INT TERM
"$CP" up cluster --shards 4 --dir "$dir" >/dev/null
seeds=$("$CP" status --dir "$dir" --json | sed -n 's/.*"endpoints": *"\([^"]*\)".*/\1/p' | head -1)
port=${seeds%%,*}; port=${port##*:}
pw=$(cat "$dir/password")   # `up` makes one by default; both tools AUTH with it
echo "cluster: $seeds; loading $KEYS keys of 100 bytes" >&2
redis-benchmark --cluster -h 127.0.0.1 -p "$port" -a "$pw" -t set -r "$KEYS" -n $((KEYS * 3)) -P 64 -d 100 -q >/dev/null

# CPU seconds (user+sys) of one command, from bash's own accounting of the child.
cpu_of() { local TIMEFORMAT='%U %S'; { time "$@" >"$out" 2>&1; } 2>&1 | awk '{print $1 + $2}'; }
out=$(mktemp)
printf '%-6s %14s %14s %10s | %14s %14s %10s\n' depth "rb ops/s" "rb cpu us/op" "" "cp ops/s" "cp cpu us/op" ""
for P in 10 100; do
    rb_cpu=$(cpu_of redis-benchmark --cluster -h 127.0.0.1 -p "$port" -a "$pw" -c 1 -P "$P" -n "$REQ" -t get -r "$KEYS" -q)
    rb_ops=$(tr '\r' '\n' <"$out" | sed -n 's/^GET: \([0-9.]*\) requests per second.*/\1/p' | tail -1)
    cp_cpu=$(cpu_of "$DRV" "$seeds" "$P" "$REQ" "$KEYS" "$pw")
    cp_ops=$(sed -n 's/.*ops_per_sec=\([0-9.]*\).*/\1/p' "$out")
    awk -v p="$P" -v ro="$rb_ops" -v rc="$rb_cpu" -v co="$cp_ops" -v cc="$cp_cpu" -v n="$REQ" 'BEGIN {
        rcu = rc * 1e6 / n; ccu = cc * 1e6 / n;
        printf "%-6s %14.0f %14.3f %10s | %14.0f %14.3f %10s\n", p, ro, rcu, "", co, ccu, "";
        printf "       clusterpipe/redis-benchmark: throughput %.2fx, client CPU per op %.2fx\n", co / ro, ccu / rcu }'
done
rm -f "$out"
