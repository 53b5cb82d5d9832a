#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# migrate's two phases measured (issue 43, point 8), on one machine:
#   1. Snapshot: KEYS keys of VALUE bytes in a standalone redis-server, moved into a 3-master
#      cluster by `migrate --until-synced` with the source's writes stopped (so the run is the
#      snapshot phase and its catch-up), paired in each round with `clusterpipe load` of the same
#      keys into the same cluster (FLUSHALL between): the target's write rate is the limit, so
#      load is the yardstick, at its default (MSETs of 16 keys of a slot) and with --mset 1 (a
#      SET per key: migrate's source gives keys in no slot order, so it writes one RESTORE per
#      key). ROUNDS rounds, the order rotating; prints each run's keys/s and MB/s and the ratios
#      migrate/load, median [min-max]. Each round runs in two layouts:
#      - shared: every process on every core, the source's fork (which makes the RDB) taking its
#        CPU from the target and the tool;
#      - apart: the source on CPU 0, as on a host of its own, the target's masters and the tool
#        (migrate's or load's) on CPU 1: the target's write rate is then the limit, as it is when
#        the source is another machine. Needs taskset (util-linux) and 2 CPUs.
#   2. Stream: `migrate` follows the source while `clusterpipe bench` writes WRITE_RATE SETs/s to
#      it for STREAM_SECONDS (open loop); prints migrate's lag (bytes and seconds) each second and
#      the largest lag seen after the snapshot.
# Machine load counts: run it on a quiet machine, nothing else benchmarking.
#   usage: bench/migrate-speed.sh        env: BUILD=build KEYS=1000000 VALUE=100 ROUNDS=3
#                                             WRITE_RATE=50000 STREAM_SECONDS=20
# Exit: 0 measured, 1 a run failed, 2 usage.
set -euo pipefail
cd "$(dirname "$0")/.."
CP=${BUILD:-build}/clusterpipe
KEYS=${KEYS:-1000000}
VALUE=${VALUE:-100}
ROUNDS=${ROUNDS:-3}
WRITE_RATE=${WRITE_RATE:-50000}
STREAM_SECONDS=${STREAM_SECONDS:-20}
[[ $# -eq 0 ]] || { echo "usage: bench/migrate-speed.sh  (settings from the environment)" >&2; exit 2; }
[[ -x $CP ]] || { echo "no $CP: build it first (make)" >&2; exit 2; }
command -v redis-cli >/dev/null || { echo "redis-cli not found (Debian: redis-tools)" >&2; exit 1; }

src=$(mktemp -d "${TMPDIR:-/tmp}/cp-msrc-XXXXXX") dst=$(mktemp -d "${TMPDIR:-/tmp}/cp-mdst-XXXXXX")
rmdir "$src" "$dst"
out=$(mktemp -d)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    "$CP" down --dir "$src" >/dev/null 2>&1 || true
    "$CP" down --dir "$dst" >/dev/null 2>&1 || true
    rm -rf "$out"
}
trap cleanup EXIT
# The source: the redis-server of a one-shard twemproxy topology (its proxy stays idle).
"$CP" up twemproxy --shards 1 --dir "$src" -q >/dev/null
"$CP" up cluster --shards 3 --dir "$dst" -q >/dev/null
spw=$(cat "$src/password") dpw=$(cat "$dst/password")
sport=$("$CP" status --dir "$src" | awk '$1 == "shard" { split($2, a, ":"); print a[2] }')
seed=$("$CP" status --dir "$dst" | awk '$1 == "master" { print $2; exit }')
masters=$("$CP" status --dir "$dst" | awk '$1 == "master" { split($2, a, ":"); print a[2] }')
[[ -n $sport && -n $seed ]] || { echo "migrate-speed: no source or seed in status" >&2; exit 1; }
spid=$(redis-cli --no-auth-warning -a "$spw" -p "$sport" INFO server | awk -F: '/^process_id/ { print $2 + 0 }')
mpids=$(for p in $masters; do
    redis-cli --no-auth-warning -a "$dpw" -p "$p" INFO server | awk -F: '/^process_id/ { print $2 + 0 }'
done)
command -v taskset >/dev/null || { echo "taskset not found (Debian: util-linux)" >&2; exit 1; }
[[ $(nproc) -ge 2 ]] || { echo "migrate-speed: the apart layout needs 2 CPUs" >&2; exit 1; }
# layout shared|apart: where the source, the target's masters and the tools run (the top of the
# file). Every thread of a server moves (-a); a fork inherits its parent's CPUs.
pin=()
layout() {
    local all p
    all=0-$(($(nproc) - 1))
    if [[ $1 == apart ]]; then
        taskset -a -p -c 0 "$spid" >/dev/null
        for p in $mpids; do taskset -a -p -c 1 "$p" >/dev/null; done
        pin=(taskset -c 1)
    else
        for p in $spid $mpids; do taskset -a -p -c "$all" "$p" >/dev/null; done
        pin=()
    fi
}
flush_target() {
    local p
    for p in $masters; do redis-cli --no-auth-warning -a "$dpw" -p "$p" FLUSHALL >/dev/null; done
}
now() { date +%s.%N; }
# The target's masters' CPU so far, in ns (every thread's, from the scheduler's own account).
masters_ns() {
    local p t n=0
    for p in $mpids; do
        for t in /proc/"$p"/task/*/schedstat; do n=$((n + $(cut -d' ' -f1 "$t"))); done
    done
    echo "$n"
}
# What a run took: "seconds masters-CPU-seconds", from the times before it (now, masters_ns).
took() {
    awk -v t0="$1" -v t1="$(now)" -v c0="$2" -v c1="$(masters_ns)" \
        'BEGIN { printf "%.3f %.3f", t1 - t0, (c1 - c0) / 1e9 }'
}

echo "loading the source: $KEYS keys of $VALUE bytes"
"$CP" load --proxy "127.0.0.1:$sport" --password "$spw" --keys "$KEYS" --value-size "$VALUE" \
    --quiet >/dev/null
mb=$(awk -v k="$KEYS" -v v="$VALUE" 'BEGIN { printf "%.1f", k * v / 1e6 }')

# One side's run: prints its seconds and the masters' CPU seconds (took). run_load's argument:
# extra flags (--mset 1: a SET per key).
run_load() {
    flush_target
    local t0 c0
    t0=$(now) c0=$(masters_ns)
    # shellcheck disable=SC2086
    "${pin[@]}" "$CP" load --cluster "$seed" --password "$dpw" --keys "$KEYS" --value-size "$VALUE" \
        --quiet ${1:-} >/dev/null
    took "$t0" "$c0"
}
run_migrate() {
    flush_target
    local t0 c0
    t0=$(now) c0=$(masters_ns)
    "${pin[@]}" "$CP" migrate --from "127.0.0.1:$sport" --from-password "$spw" --to "$seed" \
        --to-password "$dpw" --until-synced -q >"$out/migrate.log" 2>&1 ||
        { cat "$out/migrate.log" >&2; exit 1; }
    took "$t0" "$c0"
}

echo "snapshot phase: $ROUNDS rounds of migrate, load (MSETs of 16 keys of a slot, its default) and"
echo "load --mset 1 (a SET per key, as migrate writes a RESTORE per key), in a rotating order, each"
echo "round in both layouts (shared: every process on every core; apart: the source on CPU 0, the"
echo "target and the tool on CPU 1). Apart, migrate takes at least the masters' CPU for its RESTOREs"
echo "(one core for them and the tool), so load's seconds over that CPU bound migrate/load."
declare -A ratios=() ratios1=() bounds=()
for ((r = 1; r <= ROUNDS; r++)); do
    for lay in shared apart; do
        layout "$lay"
        case $((r % 3)) in
            1) m=$(run_migrate); l=$(run_load); l1=$(run_load "--mset 1") ;;
            2) l=$(run_load); l1=$(run_load "--mset 1"); m=$(run_migrate) ;;
            0) l1=$(run_load "--mset 1"); m=$(run_migrate); l=$(run_load) ;;
        esac
        read -r ms mc <<<"$m"
        read -r ls lc <<<"$l"
        read -r l1s l1c <<<"$l1"
        ratios[$lay]+="$(awk -v m="$ms" -v l="$ls" 'BEGIN { printf "%.3f", l / m }') "
        ratios1[$lay]+="$(awk -v m="$ms" -v l="$l1s" 'BEGIN { printf "%.3f", l / m }') "
        bounds[$lay]+="$(awk -v m="$mc" -v l="$ls" 'BEGIN { printf "%.3f", l / m }') "
        awk -v r="$r" -v lay="$lay" -v m="$ms" -v l="$ls" -v l1="$l1s" -v k="$KEYS" -v mb="$mb" \
            -v mc="$mc" -v lc="$lc" -v l1c="$l1c" 'BEGIN {
            printf "round %d, %s: migrate %.2f s (%.0f keys/s, %.1f MB/s), load %.2f s (%.0f keys/s), load --mset 1 %.2f s (%.0f keys/s): migrate/load %.3fx, migrate/load --mset 1 %.3fx; the masters'"'"' CPU: %.2f s, %.2f s, %.2f s\n",
                r, lay, m, k / m, mb / m, l, k / l, l1, k / l1, l / m, l1 / m, mc, lc, l1c }'
    done
done
layout shared
summary() { # what "ratio ratio ...": the ratios' median [min-max]
    # shellcheck disable=SC2086
    printf '%s\n' $2 | sort -n | awk -v what="$1" '{ v[NR] = $1 } END {
        if (NR) printf "snapshot, %s %.3fx [%.3f-%.3f] over %d rounds\n", what,
            (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], v[NR], NR }'
}
for lay in shared apart; do
    summary "$lay: migrate/load keys/s" "${ratios[$lay]}"
    summary "$lay: migrate/load --mset 1 keys/s" "${ratios1[$lay]}"
done
summary "apart: the bound on migrate/load (load's seconds / the masters' CPU for the RESTOREs)" \
    "${bounds[apart]}"

echo "stream phase: $WRITE_RATE SETs/s at the source for $STREAM_SECONDS s while migrate follows"
flush_target
"$CP" migrate --from "127.0.0.1:$sport" --from-password "$spw" --to "$seed" --to-password "$dpw" \
    --json >"$out/follow.jsonl" 2>"$out/follow.err" &
mpid=$!
pids+=("$mpid")
# the snapshot first: wait for the first line with a lag
for ((i = 0; i < 600; i++)); do
    grep -q '"lag_seconds":[0-9]' "$out/follow.jsonl" 2>/dev/null && break
    sleep 0.5
done
"$CP" bench --proxy "127.0.0.1:$sport" --password "$spw" --ratio 1:0 --keys "$KEYS" \
    --value-size "$VALUE" --rate "$WRITE_RATE" --duration "$STREAM_SECONDS" --threads 2 \
    --clients 20 >"$out/bench.log" 2>&1 || { cat "$out/bench.log" >&2; exit 1; }
sleep 2
kill -INT "$mpid"
wait "$mpid" || { cat "$out/follow.err" >&2; exit 1; }
pids=()
grep -o '"elapsed_s":[0-9.]*\|"lag_bytes":[-0-9]*\|"lag_seconds":[0-9.null]*' "$out/follow.jsonl" |
    paste - - - | tr -d '"' | awk -F'[:\t]' '$4 >= 0 && $6 != "null" {
        printf "  %6.1f s  lag %9d B  %6.2f s\n", $2, $4, $6;
        if ($6 + 0 > max) max = $6 + 0; if ($4 + 0 > maxb) maxb = $4 + 0 }
        END { printf "stream: largest lag %.2f s, %d B\n", max, maxb }'
grep -E "ops/s|outcomes" "$out/bench.log" | sed "s/^/bench: /"
