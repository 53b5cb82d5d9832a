#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Memory that stays flat: `clusterpipe bench` in open loop (verified SET:GET 1:3) on a 3-master
# cluster with a replica each, while slots move between masters all the time, a replica takes over
# by CLUSTER FAILOVER every FAILOVER_EVERY seconds and, a quarter into the run, one master is
# killed (kill -9) and restarted DOWN seconds later. Requests may wait 10 s for a master
# (--retry-budget 10000), but a lane (a client's connection to one master) holds at most
# MAX_INFLIGHT of them (--max-inflight): past it the open loop sheds its requests (counted as
# shed, no failure here). The default is two seconds of a lane's share of RATE, so the kill's
# outage (failure detection alone takes the cluster's 2 s node timeout) reaches the bound and no
# later wait on a master can hold more than it did. The bench counts the library's live bytes
# (--lib-memory); every SAMPLE seconds this prints the bench's RSS and the library's live bytes.
# The chaos stops CALM seconds before the end. It fails when, over the second half of the chaos,
# RSS grew by more than RSS_SLACK_KB or the library's live bytes by more than LIVE_SLACK bytes,
# when the calm level of the live bytes is more than LIVE_SLACK above the level before the chaos
# (plus the buffers of a connection from each client to each master, see below),
# or when the bench failed a request (other than shed) or read a wrong value.
#   usage: bench/soak.sh [MINUTES]   (default 10; `make soak` runs 2)
#   env:   BUILD=build  RATE=5000  CLIENTS=50  THREADS=1  FAILOVER_EVERY=20  DOWN=8
#          SAMPLE=5  WARMUP=20  CALM=20  RSS_SLACK_KB=256  LIVE_SLACK=65536
#          MAX_INFLIGHT=RATE*2/(CLIENTS*3)  KEEP=DIR (keep the samples, the call sites and the
#          logs there)
# Exit: 0 flat, 1 grew or the run failed, 2 usage.
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-10}
[[ $MINUTES =~ ^[0-9]+$ && $MINUTES -ge 1 ]] || {
    echo "usage: bench/soak.sh [MINUTES]  (whole minutes, >= 1)" >&2
    exit 2
}
CP=${BUILD:-build}/clusterpipe
RATE=${RATE:-5000}
CLIENTS=${CLIENTS:-50}
THREADS=${THREADS:-1}
FAILOVER_EVERY=${FAILOVER_EVERY:-20}
DOWN=${DOWN:-8}
SAMPLE=${SAMPLE:-5}
WARMUP=${WARMUP:-20}
CALM=${CALM:-20}
RSS_SLACK_KB=${RSS_SLACK_KB:-256}
LIVE_SLACK=${LIVE_SLACK:-65536}
MAX_INFLIGHT=${MAX_INFLIGHT:-$((RATE * 2 / (CLIENTS * 3)))}
((MAX_INFLIGHT >= 1)) || MAX_INFLIGHT=1
KEYS=100000
[[ -x $CP ]] || { echo "no $CP: build it first (make)" >&2; exit 2; }
command -v redis-cli >/dev/null || { echo "redis-cli not found (Debian: redis-tools)" >&2; exit 1; }
duration=$((MINUTES * 60))
chaos_end=$((duration - CALM))
((chaos_end > WARMUP + 4 * SAMPLE)) || { echo "soak: $MINUTES min is too short" >&2; exit 2; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/cp-soak-XXXXXX")
rmdir "$dir"
out=${KEEP:-$(mktemp -d)}
mkdir -p "$out"
pids=() # what this script started and stops: the chaos loops, the bench, a restarted master
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    "$CP" down --dir "$dir" >/dev/null 2>&1 || true
    [[ -n ${KEEP:-} ]] || rm -rf "$out"
}
trap cleanup EXIT
"$CP" up cluster --shards 3 --replicas 1 --dir "$dir" -q >/dev/null
pw=$(cat "$dir/password")
"$CP" load --dir "$dir" --keys "$KEYS" --quiet >/dev/null
ports=$("$CP" status --dir "$dir" | awk '$1 == "master" || $1 == "replica" {
    split($2, a, ":"); print a[2] }')

cli() { redis-cli --no-auth-warning -a "$pw" -p "$@"; }
# CLUSTER NODES from the first node that answers.
nodes() {
    local p
    for p in $ports; do
        cli "$p" CLUSTER NODES 2>/dev/null | grep -q myself && { cli "$p" CLUSTER NODES; return; }
    done
}
# "port id slots" of each master that serves, one a line.
masters() {
    nodes | awk '$3 ~ /master/ && $3 !~ /fail/ && $8 == "connected" {
        n = 0; for (i = 9; i <= NF; i++) if ($i !~ /^\[/) { split($i, r, "-");
            n += (r[2] == "" ? 1 : r[2] - r[1] + 1) }
        split($2, a, "[:@]"); print a[2], $1, n }'
}

# Slots move between two masters all the time, 20 at a time, from the one with more.
migrate_loop() {
    local m from to
    while :; do
        mapfile -t m < <(masters | shuf -n 2)
        if ((${#m[@]} == 2)); then
            read -r fp fid fn <<<"${m[0]}"
            read -r tp tid tn <<<"${m[1]}"
            if ((fn < tn)); then
                read -r fp fid fn <<<"${m[1]}"
                read -r tp tid tn <<<"${m[0]}"
            fi
            redis-cli --no-auth-warning -a "$pw" --cluster reshard "127.0.0.1:$fp" \
                --cluster-from "$fid" --cluster-to "$tid" --cluster-slots 20 --cluster-yes \
                --cluster-pipeline 100 >/dev/null 2>&1 && echo moved >>"$out/chaos.log" ||
                { echo "reshard failed" >>"$out/chaos.log"
                  redis-cli --no-auth-warning -a "$pw" --cluster fix "127.0.0.1:$fp" \
                      --cluster-yes >/dev/null 2>&1 || true; }
        fi
        sleep 0.5
    done
}

# A replica takes over by CLUSTER FAILOVER every FAILOVER_EVERY seconds.
failover_loop() {
    local r
    while :; do
        sleep "$FAILOVER_EVERY"
        r=$(nodes | awk '$3 ~ /slave/ && $3 !~ /fail/ && $8 == "connected" {
            split($2, a, "[:@]"); print a[2] }' | shuf -n 1)
        [[ -n $r ]] && cli "$r" CLUSTER FAILOVER >/dev/null 2>&1 &&
            echo "failover $r" >>"$out/chaos.log" || true
    done
}

"$CP" bench --dir "$dir" --rate "$RATE" --ratio 1:3 --keys "$KEYS" --clients "$CLIENTS" \
    --threads "$THREADS" --duration "$duration" --retry-budget 10000 --max-inflight "$MAX_INFLIGHT" \
    --lib-memory "$out/mem" --quiet \
    >"$out/bench.txt" 2>&1 &
bench=$!
pids+=("$bench")
# The script's clock runs from the bench's start, as the samples' seconds do (give or take the
# bench's connecting): the kill lands a quarter into the run and the chaos stops CALM seconds
# before its end, where the checks below look for them.
started=$(date +%s)
sleep "$WARMUP"
migrate_loop &
pids+=($!)
failover_loop &
pids+=($!)
chaos=("${pids[@]:1}")

# Samples: "seconds rss_kb live_bytes blocks malloc_used malloc_heap" (bench --lib-memory: the
# library's live bytes and blocks, glibc malloc's bytes in use and its heaps' size), printed.
echo "soak: $MINUTES min, $RATE ops/s SET:GET 1:3 verified, 3 masters + 3 replicas;" \
    "chaos from ${WARMUP} s to ${chaos_end} s; at most $MAX_INFLIGHT requests in flight per lane" \
    "($((CLIENTS * MAX_INFLIGHT)) on a master that does not answer)"
printf '%6s %10s %12s %8s %12s %12s\n' seconds rss_kb live_bytes blocks malloc_used malloc_heap
killed=0
while kill -0 "$bench" 2>/dev/null; do
    sleep "$SAMPLE"
    t=$(($(date +%s) - started))
    line=$(tail -n 1 "$out/mem" 2>/dev/null || true)
    [[ $line == mem* ]] && read -r _ s rss live blocks used _ _ heap <<<"$line" &&
        printf '%6s %10s %12s %8s %12s %12s\n' "$s" "$rss" "$live" "$blocks" "$used" "$heap"
    if ((killed == 0 && t >= duration / 4)); then
        killed=1
        victim=$(masters | shuf -n 1 | cut -d' ' -f1)
        vpid=$(cli "$victim" INFO server | tr -d '\r' | awk -F: '$1 == "process_id" { print $2 }')
        kill -9 "$vpid"
        echo "killed master $victim (pid $vpid)" | tee -a "$out/chaos.log"
        (sleep "$DOWN" && exec redis-server "$dir/redis-$victim/redis.conf" >/dev/null 2>&1) &
        pids+=($!)
    fi
    if ((${#chaos[@]} > 0 && t >= chaos_end)); then
        kill "${chaos[@]}" 2>/dev/null || true
        wait "${chaos[@]}" 2>/dev/null || true
        chaos=()
        redis-cli --no-auth-warning -a "$pw" --cluster fix "127.0.0.1:$(masters | head -n 1 |
            cut -d' ' -f1)" --cluster-yes >/dev/null 2>&1 || true
        echo "chaos stopped at ${t} s"
    fi
done
wait "$bench" || true # its verdict is read from its summary below
moves=$(grep -c moved "$out/chaos.log" || true)
failovers=$(grep -c failover "$out/chaos.log" || true)
echo "chaos: $moves reshards of 20 slots, $failovers manual failovers, 1 master killed"
grep -E '^(clusterpipe bench|throughput|redirects|outcomes|verify)' "$out/bench.txt"

# Second half of the chaos, and the calm after it against the warm-up. The live bytes include the
# requests in flight, which come and go with the latency: each window's floor (its lowest
# sample) is what the library keeps. RSS only ever shows its high-water mark: last minus first.
# After the chaos a client may hold the buffers of a connection to each master (a lane's client
# had one to its own master before; a MOVED sends it to another): CONN_BYTES each, a read buffer
# grown to 64 KiB by bursts, 16 KiB output, FIFO and queue. That much more is no growth.
conns=$((CLIENTS * 3 * 2 * 84 * 1024))
awk -v w="$WARMUP" -v ce="$chaos_end" -v end="$duration" -v rs="$RSS_SLACK_KB" -v ls="$LIVE_SLACK" \
    -v conns="$conns" '
    function low(cur, v) { return cur == "" || v < cur ? v : cur }
    $1 != "mem" { next }
    $2 >= 5 && $2 <= w { base = low(base, $4) }
    $2 >= (w + ce) / 2 && $2 <= ce {
        if (r0 == "") r0 = $3
        r1 = $3
        if ($2 < (w + 3 * ce) / 4) l0 = low(l0, $4); else l1 = low(l1, $4)
    }
    $2 > ce + 5 && $2 < end - 1 { calm = low(calm, $4) }
    END {
        bad = 0
        printf "second half of the chaos: RSS %+d KB (bound %d), library live bytes %+d, floor " \
            "of its last quarter against its third (bound %d)\n", r1 - r0, rs, l1 - l0, ls
        if (r1 - r0 > rs || l1 - l0 > ls) bad = 1
        printf "library live bytes (floors): %d before the chaos, %d after it (%+d; bound +%d: " \
            "%d + %d for connections to the other 2 masters)\n", base, calm, calm - base,
            ls + conns, ls, conns
        if (calm - base > ls + conns) bad = 1
        exit bad
    }' "$out/mem" || { echo "soak: FAILED: memory grew"; exit 1; }
# A kill -9 leaves the writes it cut off unknown (sent, never answered), and requests past the
# open loop's bound are shed: neither is a failure. Every other failed request is.
grep -qE '^outcomes +failed ([0-9]+) \(error replies 0, shed \1\)' "$out/bench.txt" &&
    grep -qE '^verify .*mismatches 0$' "$out/bench.txt" ||
    { echo "soak: FAILED: the bench failed requests or read wrong values"; exit 1; }
echo "soak: ok"
