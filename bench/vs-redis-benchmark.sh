#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# `clusterpipe bench` vs redis-benchmark, side by side on one 4-master cluster started here
# (`clusterpipe up cluster --shards 4`, stopped by the trap). The same keys and value size, GET
# only, the same number of connections and the same requests in flight per connection:
#   redis-benchmark --cluster -c 4C -P P -r KEYS/4   (its default in cluster mode: one thread
#                                                  per master, each client pinned to one master)
#   clusterpipe bench --clients C --pipeline P --keys KEYS --key-layout per-master
#                                                 (one thread; each client holds one connection
#                                                  per master)
# for P = 1, 10, 50. The same keys: redis-benchmark --cluster reads key:{TAG}:%012d, n < -r, with
# one hash tag per master (all of a master's keys in one slot); `--key-layout per-master` names
# keys the same way, so `clusterpipe load` writes the KEYS keys both tools read, and the servers
# do the same work under either tool. clusterpipe verifies every reply and records per-request
# latency; redis-benchmark does neither. A second clusterpipe run per round reads clusterpipe's
# own keys, key:0 .. key:KEYS-1 (shorter, spread over every slot as an application's are),
# against the same redis-benchmark runs: the servers then read other keys than redis-benchmark's.
#
# Both tools are measured the same way, from outside, over a window of steady traffic: after
# WARM seconds, the GETs the four masters executed (INFO commandstats), their CPU and the tool's
# CPU (/proc, all threads) over the next SECONDS seconds. Not from each tool's own report:
# redis-benchmark's threads stop only at its 250 ms progress tick, so its elapsed time is rounded
# up to the tick (a 2 s run reports up to 12% too few requests per second), and they spin on
# writable sockets meanwhile (its CPU per request over a whole 1M-GET run at depth 50 came out
# 0.8-1.0 us against 0.63-0.71 us while it runs); setup and teardown would also count.
# Optional: LOAD_KEYS=N compares `clusterpipe load` (defaults, and SET at depth 64) with
# `redis-benchmark -t set -P 64`, ROUNDS rounds on fresh clusters (whole runs: 20 s or more, so
# the tick costs redis-benchmark ~1% of its rate);
# STRACE=1 counts syscalls per GET at depth 10 for both with `strace -c -f`.
# OLD_BUILD=DIR: an older build's bench too, in the same GET rounds (per-master keys), with its
# own ratios to redis-benchmark and the new build's to it: whether a change kept the ratios on
# this machine, whatever the machine makes of them.
# CLIENT_CPUS / SERVER_CPUS (taskset lists, e.g. 0 and 1): the tool measured in the GET and hash
# rounds runs on those CPUs (all its threads), and the four servers are moved to theirs (not in
# the LOAD_KEYS rounds). Unset, the
# scheduler places everything: redis-benchmark's thread per master then tends to share its
# master's core, and the servers' CPU per GET depends on where the client's threads run
# (docs/performance.md, "The bench against redis-benchmark").
#   usage: bench/vs-redis-benchmark.sh [SECONDS] [KEYS] [CLIENTS]   (build first)
#   env:   BUILD=build-dir  VALUE=64  DEPTHS="1 10 50"  ROUNDS=3  WARM=2  LOAD_KEYS=0  STRACE=0
#          OLD_BUILD=build-dir
#          CLIENT_CPUS=LIST  SERVER_CPUS=LIST
#          CP_ARGS="..." (more `clusterpipe bench` flags for its GET rounds, e.g. --threads 2)
#          HASH_DEPTHS="10" (the HSET and HGET rows' depths; "" skips them)
# The HSET and HGET rows: redis-benchmark's custom-command form against `bench --command`, at the
# same connections and depth, each command its own rounds (redis-benchmark runs one command per
# process): `redis-benchmark --cluster ... HSET h:{tag}:__rand_int__ f V` (V: VALUE bytes; {tag}
# is its per-master hash tag) against `--command 'HSET __tag__:h f __data__'` (the key's own
# hash, in its master's slot under the per-master layout; a value of VALUE bytes), then HGET of
# the same fields, both tools reading what their HSET rounds wrote. The servers' executed
# commands are counted by INFO commandstats for the command the row measures.
# Each depth runs ROUNDS interleaved rounds (redis-benchmark, then clusterpipe; every other round
# the other way round). On a shared machine single runs swing by 10% and more, and the machine's
# speed drifts within minutes, so the ratios reported are the geometric means of each round's own
# ratio, with a 95% confidence interval: a target holds for certain only if the interval does.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
WINDOW=${1:-5}
KEYS=${2:-100000}
C=${3:-10}
VALUE=${VALUE:-64}
DEPTHS=${DEPTHS:-"1 10 50"}
HASH_DEPTHS=${HASH_DEPTHS-10}
STAT=get # the command whose executions the window counts (INFO commandstats)
ROUNDS=${ROUNDS:-3}
WARM=${WARM:-2}
LOAD_KEYS=${LOAD_KEYS:-0}
STRACE=${STRACE:-0}
CP=$BUILD/clusterpipe
[[ -x $CP ]] || { echo "build first: cmake -S . -B $BUILD && cmake --build $BUILD" >&2; exit 1; }
OLD_CP=
if [[ -n ${OLD_BUILD:-} ]]; then
    OLD_CP=$OLD_BUILD/clusterpipe
    [[ -x $OLD_CP ]] || { echo "no $OLD_CP: build it first" >&2; exit 1; }
fi
command -v redis-benchmark >/dev/null && command -v redis-cli >/dev/null ||
    { echo "redis-benchmark and redis-cli not found (Debian: redis-tools)" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/cp-vsrb-XXXXXX")
rmdir "$dir"
out=$(mktemp)
tool=0   # the tool running in the background while it is measured
cleanup() {
    [[ $tool == 0 ]] || { kill "$tool" 2>/dev/null; wait "$tool" 2>/dev/null; }
    "$CP" down --dir "$dir" >/dev/null 2>&1 || true
    rm -f "$out" "$out".{st,rb,cp,cp64,sp,srv,old}
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$CP" up cluster --shards 4 --dir "$dir" >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
seeds=$("$CP" status --dir "$dir" --json | sed -n 's/.*"endpoints": *"\([^"]*\)".*/\1/p' | head -1)
port=${seeds%%,*}; port=${port##*:}
pw=$(cat "$dir/password")   # `up` makes one by default; both tools AUTH with it
echo "cluster: $seeds" >&2
echo "machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" >&2
(( KEYS % 4 == 0 )) || { echo "KEYS must be a multiple of 4 (KEYS/4 per master)" >&2; exit 2; }
RB_R=$((KEYS / 4))
echo "loading $KEYS keys of $VALUE bytes named as redis-benchmark names them, and clusterpipe's" \
     "own $KEYS" >&2
"$CP" load --dir "$dir" --keys "$KEYS" --key-layout per-master --value-size "$VALUE" --quiet >/dev/null
"$CP" load --dir "$dir" --keys "$KEYS" --value-size "$VALUE" --no-check --quiet >/dev/null

# CPU seconds (user+sys) of one command, from bash's own accounting of the child; the servers'
# CPU seconds during it go to $out.srv.
pids=$("$CP" status --dir "$dir" | awk '$1 == "master" {print $3}')
pin=()   # the measured tool's placement
if [[ -n ${CLIENT_CPUS:-} ]]; then
    command -v taskset >/dev/null || { echo "CLIENT_CPUS needs taskset (util-linux)" >&2; exit 1; }
    pin=(taskset -c "$CLIENT_CPUS")
    echo "the tools run on CPUs $CLIENT_CPUS" >&2
fi
if [[ -n ${SERVER_CPUS:-} ]]; then
    for p in $pids; do taskset -a -p -c "$SERVER_CPUS" "$p" >/dev/null; done
    echo "the servers run on CPUs $SERVER_CPUS" >&2
fi
hz=$(getconf CLK_TCK)
server_ticks() { local p t=0; for p in $pids; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo $t; }
cpu_of() {
    local TIMEFORMAT='%U %S' s0 s1 c
    s0=$(server_ticks)
    c=$({ time "$@" >"$out" 2>&1; } 2>&1 | awk '{print $1 + $2}')
    s1=$(server_ticks)
    awk -v d=$((s1 - s0)) -v hz="$hz" 'BEGIN { print d / hz }' >"$out.srv"
    echo "$c"
}
rb_ops_of() { tr '\r' '\n' <"$out" | sed -n 's/^[A-Z]*: \([0-9.]*\) requests per second.*/\1/p' | tail -1; }

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { cut -d' ' -f"$2" "$1" | median; }   # median of column $2 of file $1

# One snapshot: time, GETs the masters executed, their CPU ticks, CPU ticks of process $1.
ports=$(tr ',' '\n' <<<"$seeds" | sed 's/.*://')
snapshot() {
    local p g=0 s=0 t c
    for p in $ports; do
        g=$((g + $(redis-cli -p "$p" -a "$pw" --no-auth-warning info commandstats |
            sed -n "s/^cmdstat_$STAT:calls=\\([0-9]*\\),.*/\\1/p")))
    done
    s=$(server_ticks)
    c=$(awk '{print $14 + $15}' "/proc/$1/stat")
    t=$(date +%s.%N)
    echo "$t $g $s $c"
}
# Measures the tool running as $tool over the window: prints GETs/s, its CPU us per GET, the
# servers' CPU us per GET.
window() {
    local a b
    sleep "$WARM"
    kill -0 "$tool" 2>/dev/null || { echo "the tool exited before it was measured:" >&2; cat "$out" >&2; exit 1; }
    a=$(snapshot "$tool")
    sleep "$WINDOW"
    b=$(snapshot "$tool")
    echo "$a $b" | awk -v hz="$hz" '{ dt = $5 - $1; g = $6 - $2
        if (g <= 0) { print "0 0 0"; exit }
        printf "%.0f %.4f %.4f\n", g / dt, ($8 - $4) / hz * 1e6 / g, ($7 - $3) / hz * 1e6 / g }'
}
echo "GET, $ROUNDS interleaved rounds per depth (every other one in the opposite order)," \
     "${WINDOW} s measured after ${WARM} s each;" \
     "$((4 * C)) connections each" >&2
printf '\n%-6s %10s %9s | %10s %9s | %9s %9s | %9s %9s\n' depth "rb ops/s" "rb us/op" "cp ops/s" \
    "cp us/op" "ops ratio" "cpu ratio" "rb srv" "cp srv"
# One run of clusterpipe bench in the background, measured over the window into file $1; the
# rest of the arguments go to bench. CPBIN: another build's binary.
cp_round() {
    local f=$1 mix=(--ratio 0:1)
    shift
    [[ " $* " == *" --command "* ]] && mix=()
    "${pin[@]}" "${CPBIN:-$CP}" bench --dir "$dir" --clients "$C" --pipeline "$P" --duration $((WARM + WINDOW + 1)) \
        --value-size "$VALUE" "${mix[@]}" --quiet ${CP_ARGS:-} "$@" >"$out" 2>&1 &
    tool=$!
    window >>"$f"
    wait "$tool" || true; tool=0
    grep -q 'mismatches 0$' "$out" || { echo "clusterpipe bench failed:" >&2; cat "$out" >&2; }
}
rb_round() {
    # more requests than the window can take; stopped by PID once measured. Arguments: a custom
    # command instead of -t get.
    local what=(-t get)
    (($#)) && what=("$@")
    "${pin[@]}" redis-benchmark --cluster -h 127.0.0.1 -p "$port" -a "$pw" -c $((4 * C)) -P "$P" \
        -n 2000000000 -r "$RB_R" -d "$VALUE" -q "${what[@]}" >"$out" 2>&1 &
    tool=$!
    window >>"$out.rb"
    kill "$tool"; wait "$tool" 2>/dev/null || true; tool=0
}
# The ratios of clusterpipe (file $1) to redis-benchmark (or to file $2), round by round: the
# tools ran one after the other, so a round's ratio is measured under the same load on the
# machine, while the load drifts between rounds. Prints the geometric means of the rounds' throughput and client CPU
# ratios, each followed by its 95% confidence interval (Student's t on the logarithms).
paired() {
    paste -d' ' "${2:-$out.rb}" "$1" | awk '
        function t95(df) {   # two-sided 95% quantiles of Student t, df 1..30
            split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 " \
                  "2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086 2.080 2.074 2.069 2.064 " \
                  "2.060 2.056 2.052 2.048 2.045 2.042", q, " ")
            return df <= 30 ? q[df] : 1.960
        }
        function ci(s, ss, n,   m, v, h) {
            m = s / n
            v = n > 1 ? (ss - n * m * m) / (n - 1) / n : 0
            h = v > 0 ? t95(n - 1) * sqrt(v) : 0
            return sprintf("%.2fx %.2f-%.2f", exp(m), exp(m - h), exp(m + h))
        }
        $1 > 0 && $4 > 0 { n++; o = log($4 / $1); c = log($5 / $2)
                           so += o; sso += o * o; sc += c; ssc += c * c }
        END { if (n) printf "%s %s", ci(so, sso, n), ci(sc, ssc, n) }'
}
for P in $DEPTHS; do
    : >"$out.rb"; : >"$out.cp"; : >"$out.sp"; : >"$out.old"
    for ((r = 0; r < ROUNDS; r++)); do
        # every other round in the opposite order: a drift in the machine's load then favours
        # neither tool
        if ((r % 2 == 0)); then rb_round; fi
        if [[ -n $OLD_CP ]] && ((r % 2 == 1)); then
            CPBIN=$OLD_CP cp_round "$out.old" --keys "$KEYS" --key-layout per-master
        fi
        cp_round "$out.cp" --keys "$KEYS" --key-layout per-master
        cp_round "$out.sp" --keys "$KEYS"   # its own keys, spread over every slot
        if [[ -n $OLD_CP ]] && ((r % 2 == 0)); then
            CPBIN=$OLD_CP cp_round "$out.old" --keys "$KEYS" --key-layout per-master
        fi
        if ((r % 2 == 1)); then rb_round; fi
    done
    awk -v p="$P" -v ro="$(col "$out.rb" 1)" -v rc="$(col "$out.rb" 2)" -v rs="$(col "$out.rb" 3)" \
        -v co="$(col "$out.cp" 1)" -v cc="$(col "$out.cp" 2)" -v cs="$(col "$out.cp" 3)" \
        -v pr="$(paired "$out.cp")" 'BEGIN { split(pr, f, " ")
        printf "%-6s %10.0f %9.3f | %10.0f %9.3f | %9s %9s | %9.3f %9.3f\n", p, ro, rc, co,
               cc, f[1], f[3], rs, cs
        printf "       95%% CI: ops %s, cpu %s\n", f[2], f[4] }'
    # each round's own ratios: how far single runs swing
    paste -d' ' "$out.rb" "$out.cp" | awk '{ printf "%s%.2fx/%.2fx", (NR > 1 ? ", " : "       rounds: "),
        $4 / $1, $5 / $2 } END { print "" }'
    awk -v co="$(col "$out.sp" 1)" -v cc="$(col "$out.sp" 2)" -v cs="$(col "$out.sp" 3)" \
        -v pr="$(paired "$out.sp")" 'BEGIN { split(pr, f, " ")
        printf "       spread keys: %10.0f %9.3f | %9s %9s | srv %.3f  (95%% CI: ops %s, cpu %s)\n",
               co, cc, f[1], f[3], cs, f[2], f[4] }'
    if [[ -n $OLD_CP ]]; then
        awk -v co="$(col "$out.old" 1)" -v cc="$(col "$out.old" 2)" -v cs="$(col "$out.old" 3)" \
            -v pr="$(paired "$out.old")" 'BEGIN { split(pr, f, " ")
            printf "       old build:   %10.0f %9.3f | %9s %9s | srv %.3f  (95%% CI: ops %s, cpu %s)\n",
                   co, cc, f[1], f[3], cs, f[2], f[4] }'
        awk -v pr="$(paired "$out.cp" "$out.old")" 'BEGIN { split(pr, f, " ")
            printf "       new/old:     ops %s (%s), cpu %s (%s)\n", f[1], f[2], f[3], f[4] }'
    fi
done
# The HSET and HGET rows (see the top): each command its own interleaved rounds.
hval=$(head -c "$VALUE" /dev/zero | tr '\0' v)
for P in $HASH_DEPTHS; do
    for cmd in HSET HGET; do
        STAT=${cmd,,}
        if [[ $cmd == HSET ]]; then
            rb=(HSET "h:{tag}:__rand_int__" f "$hval")
            tpl='HSET __tag__:h f __data__'
        else
            rb=(HGET "h:{tag}:__rand_int__" f)
            tpl='HGET __tag__:h f'
        fi
        : >"$out.rb"; : >"$out.cp"
        for ((r = 0; r < ROUNDS; r++)); do
            if ((r % 2 == 0)); then rb_round "${rb[@]}"; fi
            cp_round "$out.cp" --keys "$KEYS" --key-layout per-master --command "$tpl"
            if ((r % 2 == 1)); then rb_round "${rb[@]}"; fi
        done
        awk -v p="$P $cmd" -v ro="$(col "$out.rb" 1)" -v rc="$(col "$out.rb" 2)" \
            -v rs="$(col "$out.rb" 3)" -v co="$(col "$out.cp" 1)" -v cc="$(col "$out.cp" 2)" \
            -v cs="$(col "$out.cp" 3)" -v pr="$(paired "$out.cp")" 'BEGIN { split(pr, f, " ")
            printf "%-6s %10.0f %9.3f | %10.0f %9.3f | %9s %9s | %9.3f %9.3f\n", p, ro, rc, co,
                   cc, f[1], f[3], rs, cs
            printf "       95%% CI: ops %s, cpu %s\n", f[2], f[4] }'
    done
done
STAT=get
echo "(ops/s, us/op, srv: medians over the rounds; ops ratio = clusterpipe/redis-benchmark" \
     "throughput, want >= 1.0; cpu ratio = client CPU per op, want <= 0.9: both the geometric" \
     "mean of the rounds' own ratios, with its 95% confidence interval; srv = the four servers'" \
     "CPU us per request under each tool; rounds: ops/cpu ratio of each round; spread keys:" \
     "clusterpipe reading its own keys, key:0 .. key:$((KEYS - 1)), against the same" \
     "redis-benchmark rounds)"

if [[ $STRACE == 1 ]]; then
    command -v strace >/dev/null || { echo "strace not found" >&2; exit 1; }
    n=200000
    echo
    echo "syscalls per GET at depth 10 ($n GETs, strace -c -f):"
    # strace -c rows: % time, seconds, usecs/call, calls, [errors], syscall
    count() { awk 'NR > 2 && $1 !~ /^-/ && $NF != "total" { t += $4 } END { printf "%d", t }' "$out.st"; }
    detail() { awk -v n="$1" 'NR > 2 && $1 !~ /^-/ && $NF != "total" && $4 / n >= 0.005 {
                   printf " %s %.3f", $NF, $4 / n }' "$out.st"; }
    strace -c -f -o "$out.st" redis-benchmark --cluster -h 127.0.0.1 -p "$port" -a "$pw" -c $((4 * C)) \
        -P 10 -n "$n" -t get -r "$RB_R" -d "$VALUE" -q >/dev/null 2>&1
    printf '  redis-benchmark %.3f per GET:%s\n' "$(awk -v t="$(count)" -v n="$n" 'BEGIN{print t/n}')" "$(detail "$n")"
    strace -c -f -o "$out.st" "$CP" bench --dir "$dir" --clients "$C" --pipeline 10 \
        --requests "$n" --keys "$KEYS" --key-layout per-master --value-size "$VALUE" --quiet \
        >/dev/null 2>&1
    printf '  clusterpipe     %.3f per GET:%s\n' "$(awk -v t="$(count)" -v n="$n" 'BEGIN{print t/n}')" "$(detail "$n")"
fi

if [[ $LOAD_KEYS -gt 0 ]]; then
    echo
    echo "load of $LOAD_KEYS keys of $VALUE bytes, each run on a fresh 4-master cluster, $ROUNDS" \
         "interleaved rounds, medians:"
    echo "  rb:    redis-benchmark --cluster -t set -P 64 -c 50 -r N -n N"
    echo "  cp:    clusterpipe load (its defaults: pipeline 512, MSET of the keys of one slot)"
    echo "  cp@64: clusterpipe load --pipeline 64 --mset 1 (one SET per key, redis-benchmark's depth)"
    fresh() {
        "$CP" down --dir "$dir" >/dev/null 2>&1
        "$CP" up cluster --shards 4 --dir "$dir" >"$out" 2>&1 || { cat "$out" >&2; exit 1; }
        seeds=$("$CP" status --dir "$dir" --json | sed -n 's/.*"endpoints": *"\([^"]*\)".*/\1/p' | head -1)
        port=${seeds%%,*}; port=${port##*:}
        pw=$(cat "$dir/password")
        pids=$("$CP" status --dir "$dir" | awk '$1 == "master" {print $3}')
    }
    keys_held() { "$CP" status --dir "$dir" | awk '$1 == "master" { k += $NF } END { print k }'; }
    # one row per run: rate, client CPU s, servers' CPU s, distinct keys the servers hold after
    load_rb() {
        local c
        c=$(cpu_of redis-benchmark --cluster -h 127.0.0.1 -p "$port" -a "$pw" -t set -P 64 -c 50 \
            -n "$LOAD_KEYS" -r "$LOAD_KEYS" -d "$VALUE" -q)
        echo "$(rb_ops_of) $c $(cat "$out.srv") $(keys_held)"
    }
    load_cp() {
        local c
        c=$(cpu_of "$CP" load --dir "$dir" --keys "$LOAD_KEYS" --value-size "$VALUE" --quiet "$@")
        grep -q 'as expected' "$out" || { echo "clusterpipe load did not check out:" >&2; cat "$out" >&2; }
        echo "$(sed -n 's/^loaded .* = \([0-9,]*\) keys\/s.*/\1/p' "$out" | tr -d ,) $c $(cat "$out.srv") $(keys_held)"
    }
    : >"$out.rb"; : >"$out.cp"; : >"$out.cp64"
    for ((r = 0; r < ROUNDS; r++)); do
        fresh; load_rb >>"$out.rb"
        fresh; load_cp >>"$out.cp"
        fresh; load_cp --pipeline 64 --mset 1 >>"$out.cp64"
    done
    rb_ops=$(col "$out.rb" 1)
    printf '  %-6s %10s %12s %12s %12s %10s %10s\n' tool "keys/s" "client us/op" "server us/op" \
        "keys held" "rate" "cpu/op"
    for t in rb cp cp64; do
        f=$out.$t
        awk -v t="${t/cp64/cp@64}" -v o="$(col "$f" 1)" -v c="$(col "$f" 2)" -v s="$(col "$f" 3)" \
            -v k="$(col "$f" 4)" -v ro="$rb_ops" -v rc="$(col "$out.rb" 2)" -v n="$LOAD_KEYS" 'BEGIN {
            printf "  %-6s %10.0f %12.3f %12.3f %12d %9.2fx %9.2fx\n", t, o, c * 1e6 / n,
                   s * 1e6 / n, k, o / ro, c / rc }'
    done
    echo "  (rate and cpu/op relative to rb, want rate >= 1.0; keys held: distinct keys in the" \
         "servers afterwards - redis-benchmark's -r draws keys with replacement)"
fi
