#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Instructions per GET of the bench's client process, one build against another, counted with
# callgrind: on this shared 2-core machine timings drift by several percent within minutes, while
# the library's instructions per GET repeat to within 0.2% and the whole process's to within 1%
# (the bench's part follows how often the loop wakes up, which is timing: the "wakes" column,
# epoll_wait calls per GET). Each configuration runs the same GET workload twice, R1 and R2
# requests; (Ir(R2) - Ir(R1)) / (R2 - R1) cancels what a run costs whatever its length (loading,
# connecting, the slot map, COMMAND, the report). Both builds run
# against one cluster started here by the new build (stopped by the trap). The old build runs
# RESP2 only when its bench has no --protocol; the new build runs every protocol in PROTOCOLS.
# Per function (callgrind_annotate, exclusive, "file:function" with inlined code under the file it
# came from) the same difference per GET, and the functions that grew most between two runs.
#   usage: bench/callgrind-get.sh OLD_BUILD_DIR [NEW_BUILD_DIR]   (default new: build)
#   env:   DEPTHS="10 50"  R1=100000  R2=300000  PROTOCOLS="2 3"  SHARDS=3  KEYS=100000
#          VALUE=64  KEY_LAYOUT=per-master (bench/vs-build.sh's)  TOP=10  REPEAT=3 (rounds; the
#          table gives their mean and range, the function tables their mean)
#          OUT=DIR (the callgrind files and per-function tables are kept there; default: a new
#          directory under $TMPDIR, printed)
# Example: the commit before a change, in a worktree, built the way the bench builds:
#   git worktree add /tmp/old HEAD~1 && (cd /tmp/old && cmake -S . -B build && cmake --build build)
#   bench/callgrind-get.sh /tmp/old/build
# Build with debug info (the default RelWithDebInfo) for file names in the per-function tables
# and the "lib" column (Ir/GET from code in src/lib/, inlined code included); Release has the
# same machine code here (GCC, the same -O3 without -g), so the same counts, but no file names:
# its "lib" column is empty.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${1:?usage: bench/callgrind-get.sh OLD_BUILD_DIR [NEW_BUILD_DIR]}/clusterpipe
NEW=${2:-build}/clusterpipe
DEPTHS=${DEPTHS:-"10 50"}
R1=${R1:-100000}
R2=${R2:-300000}
PROTOCOLS=${PROTOCOLS:-"2 3"}
SHARDS=${SHARDS:-3}
KEYS=${KEYS:-100000}
VALUE=${VALUE:-64}
LAYOUT=${KEY_LAYOUT:-per-master}
TOP=${TOP:-10}
REPEAT=${REPEAT:-3}
for b in "$OLD" "$NEW"; do
    [[ -x $b ]] || { echo "no $b: build it first" >&2; exit 2; }
done
((R2 > R1)) || { echo "R2 ($R2) must be larger than R1 ($R1)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 1; }
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/cp-callgrind-XXXXXX")}
mkdir -p "$OUT"

dir=$(mktemp -d "${TMPDIR:-/tmp}/cp-callgrind-cluster-XXXXXX")
rmdir "$dir"
trap '"$NEW" down --dir "$dir" >/dev/null 2>&1 || true' EXIT
"$NEW" up cluster --shards "$SHARDS" --no-password --dir "$dir" -q >/dev/null
"$NEW" load --dir "$dir" --keys "$KEYS" --value-size "$VALUE" --key-layout "$LAYOUT" --quiet \
    >/dev/null

# The protocols a build's bench can speak: RESP2 only before --protocol existed.
protocols_of() {
    local help
    help=$("$1" bench --help 2>&1 || true)
    if [[ $help == *--protocol* ]]; then echo "$PROTOCOLS"; else echo 2; fi
}

# A run's total instructions, from its callgrind file.
total_ir() { awk '/^totals:/ { print $2; exit }' "$1"; }

# Calls into function $2 in a run, from its callgrind file (names are given once, by number).
calls_to() {
    awk -v f="$2" '
        /^c?fn=\(/ { id = $1; sub(/^c?fn=/, "", id)
                     if (NF > 1) { n = $0; sub(/^[^ ]* /, "", n); name[id] = n }
                     if ($0 ~ /^cfn=/) cur = name[id]
                     next }
        /^calls=/ { if (cur == f) { split($1, a, "="); t += a[2] } cur = ""; next }
        END { print t + 0 }' "$1"
}

# Exclusive instructions per "file:function", source paths from src/ on (the two builds live in
# different worktrees) and GCC's clone suffixes dropped (a clone's number may differ between
# builds), summed over what that merges: "Ir<TAB>file:function".
functions_of() {
    callgrind_annotate --inclusive=no --threshold=100 --auto=no "$1" |
        awk '/^-+$/ { dash++; next }
             dash >= 5 && $1 ~ /^[0-9,]+$/ {
                 ir = $1; gsub(",", "", ir)
                 name = $0; sub(/^ *[0-9,]+ +\( *[0-9.]+%\) +/, "", name)
                 sub(/ \[[^]]*\]$/, "", name)
                 sub(/^.*\/src\//, "src/", name)
                 gsub(/\.(lto_priv|constprop|part|isra|cold)\.[0-9]+/, "", name)
                 gsub(/\.cold$/, "", name)
                 sum[name] += ir }
             END { for (n in sum) printf "%d\t%s\n", sum[n], n }'
}

# Per GET by function, from the R1 and R2 runs of one configuration: "Ir_per_GET<TAB>name".
per_get_functions() {
    join -t $'\t' -a 1 -a 2 -e 0 -o 0,1.2,2.2 \
        <(functions_of "$1" | awk -F'\t' '{ print $2 "\t" $1 }' | LC_ALL=C sort -t $'\t' -k1,1) \
        <(functions_of "$2" | awk -F'\t' '{ print $2 "\t" $1 }' | LC_ALL=C sort -t $'\t' -k1,1) |
        awk -F'\t' -v n=$((R2 - R1)) '{ printf "%.2f\t%s\n", ($3 - $2) / n, $1 }'
}

echo "old: $OLD, new: $NEW; cluster: $SHARDS masters, $KEYS keys of $VALUE B ($LAYOUT)"
echo "bench --threads 1 --clients 1 --ratio 0:1; per GET = (Ir($R2) - Ir($R1)) / $((R2 - R1));" \
    "$REPEAT rounds"
echo "callgrind files and per-function tables: $OUT"
# Rounds go over every configuration in turn: what the count still takes from timing (how many
# replies one read finds, how often the loop wakes) then sees the same machine in each.
configs=()
for P in $DEPTHS; do
    for side in old new; do
        b=$OLD
        [[ $side == new ]] && b=$NEW
        for proto in $(protocols_of "$b"); do configs+=("$side-resp$proto-d$P:$b:$proto:$P"); done
    done
done
: >"$OUT/totals"
for k in $(seq 1 "$REPEAT"); do
    for c in "${configs[@]}"; do
        IFS=: read -r name b proto P <<<"$c"
        proto_args=()
        ((proto == 2)) || proto_args=(--protocol "$proto")
        for R in "$R1" "$R2"; do
            valgrind --tool=callgrind --callgrind-out-file="$OUT/$name-k$k-r$R.out" \
                "$b" bench --dir "$dir" --threads 1 --clients 1 --pipeline "$P" \
                --requests "$R" --ratio 0:1 --keys "$KEYS" --value-size "$VALUE" \
                --key-layout "$LAYOUT" "${proto_args[@]}" --quiet \
                >"$OUT/$name-k$k-r$R.log" 2>&1 || {
                cat "$OUT/$name-k$k-r$R.log" >&2
                exit 1
            }
        done
        i1=$(total_ir "$OUT/$name-k$k-r$R1.out")
        i2=$(total_ir "$OUT/$name-k$k-r$R2.out")
        per_get_functions "$OUT/$name-k$k-r$R1.out" "$OUT/$name-k$k-r$R2.out" >"$OUT/$name-k$k.fn"
        lib=$(awk -F'\t' 'index($2, "src/lib/") == 1 { t += $1 } END { printf "%.2f", t }' \
            "$OUT/$name-k$k.fn")
        w1=$(calls_to "$OUT/$name-k$k-r$R1.out" epoll_wait)
        w2=$(calls_to "$OUT/$name-k$k-r$R2.out" epoll_wait)
        echo "$name $P ${name%%-*} $proto $k $i1 $i2 $lib $((w2 - w1))" >>"$OUT/totals"
    done
done
# A configuration's functions: the mean over its rounds.
names=()
for c in "${configs[@]}"; do
    name=${c%%:*}
    names+=("$name")
    cat "$OUT/$name"-k*.fn |
        awk -F'\t' -v k="$REPEAT" '{ t[$2] += $1 }
                                    END { for (n in t) printf "%.2f\t%s\n", t[n] / k, n }' \
            >"$OUT/$name.fn"
done

# "lib": the part of Ir/GET whose code is in src/lib/ (needs debug info), which depends on the
# code alone; the bench's part also depends on how often the loop wakes ("wakes": epoll_wait
# calls per GET), which is timing: how many lanes' replies one wake-up finds.
printf '\n%-5s %-5s %-8s %6s %10s %17s %9s %9s\n' depth build protocol rounds "Ir/GET" "min-max" \
    "lib" "wakes"
awk -v n=$((R2 - R1)) '
    { g = ($7 - $6) / n; id = $1; if (!(id in cnt)) order[++m] = id
      cnt[id]++; sum[id] += g; lib[id] += $8; wk[id] += $9 / n
      line[id] = sprintf("%-5s %-5s RESP%-4s", $2, $3, $4)
      if (!(id in lo) || g < lo[id]) lo[id] = g; if (!(id in hi) || g > hi[id]) hi[id] = g }
    END { for (i = 1; i <= m; i++) { id = order[i]
              printf "%s %6d %10.1f %8.1f-%-8.1f %9s %9.4f\n", line[id], cnt[id],
                     sum[id] / cnt[id], lo[id], hi[id],
                     (lib[id] > 0 ? sprintf("%.1f", lib[id] / cnt[id]) : "-"),
                     wk[id] / cnt[id] } }' \
    "$OUT/totals"

# Ratio of two configurations' Ir per GET: "A B" names, e.g. old-resp2-d10 new-resp2-d10.
ratio() {
    awk -v a="$1" -v b="$2" -v n=$((R2 - R1)) '
        { g[$1] += ($7 - $6) / n; l[$1] += $8; c[$1]++ }
        END { if ((a in g) && (b in g)) {
                  x = g[a] / c[a]; y = g[b] / c[b]; u = l[a] / c[a]; v = l[b] / c[b]
                  printf "%-32s %8.1f -> %8.1f  %+7.1f  %.4fx", b " / " a, x, y, y - x, y / x
                  if (u > 0 && v > 0)
                      printf " | lib %6.1f -> %6.1f  %+6.1f", u, v, v - u
                  printf "\n" } }' "$OUT/totals"
}
# The functions whose instructions per GET grew most from configuration A to B.
top_deltas() {
    echo
    echo "top $TOP functions by growth per GET, $1 -> $2 (exclusive Ir per GET: A, B, B - A)"
    join -t $'\t' -a 1 -a 2 -e 0 -o 0,1.2,2.2 \
        <(awk -F'\t' '{ print $2 "\t" $1 }' "$OUT/$1.fn" | LC_ALL=C sort -t $'\t' -k1,1) \
        <(awk -F'\t' '{ print $2 "\t" $1 }' "$OUT/$2.fn" | LC_ALL=C sort -t $'\t' -k1,1) |
        awk -F'\t' '$3 - $2 >= 0.005 || $3 - $2 <= -0.005 {
                       printf "%8.2f %8.2f %+8.2f  %s\n", $2, $3, $3 - $2, $1 }' |
        sort -k3,3gr >"$OUT/delta"
    awk -v n="$TOP" 'NR <= n && $3 > 0' "$OUT/delta"
    # What grew is often what was inlined elsewhere before: the other side of the move.
    echo "  ... and the $TOP that shrank most:"
    sort -k3,3g "$OUT/delta" | awk -v n="$TOP" 'NR <= n && $3 < 0'
}
# The same by source file (inlined code counted where it was written): how the work moved
# between files does not depend on which function GCC inlined it into.
top_file_deltas() {
    echo
    echo "top $TOP source files by growth per GET, $1 -> $2 (exclusive Ir per GET: A, B, B - A)"
    join -t $'\t' -a 1 -a 2 -e 0 -o 0,1.2,2.2 \
        <(by_file "$OUT/$1.fn") <(by_file "$OUT/$2.fn") |
        awk -F'\t' '$3 - $2 >= 0.005 || $3 - $2 <= -0.005 {
                       printf "%8.2f %8.2f %+8.2f  %s\n", $2, $3, $3 - $2, $1 }' |
        sort -k3,3gr | awk -v n="$TOP" 'NR <= n && $3 > 0'
}
by_file() {
    awk -F'\t' '{ f = $2; sub(/:[^:]*$/, "", f); t[f] += $1 }
                END { for (f in t) printf "%s\t%.2f\n", f, t[f] }' "$1" |
        LC_ALL=C sort -t $'\t' -k1,1
}
# Instructions per GET whose source is one file (inlined code included), by function.
file_share() {
    echo
    echo "$2, per GET, code from $1:"
    awk -F'\t' -v f="$1:" 'index($2, f) == 1 && ($1 > 0.05 || $1 < -0.05) {
                               printf "%8.2f  %s\n", $1, $2; t += $1 }
                           END { printf "%8.2f  total\n", t }' "$OUT/$2.fn" | sort -k1,1gr
}

echo
echo "ratios (Ir per GET: A -> B, B - A, B / A; and the library's part)"
for P in $DEPTHS; do
    ratio "old-resp2-d$P" "new-resp2-d$P"
    ratio "new-resp2-d$P" "new-resp3-d$P"
    ratio "old-resp2-d$P" "new-resp3-d$P"
done
for P in $DEPTHS; do
    top_deltas "old-resp2-d$P" "new-resp2-d$P"
    top_file_deltas "old-resp2-d$P" "new-resp2-d$P"
    if [[ -f $OUT/new-resp3-d$P.fn ]]; then
        top_deltas "new-resp2-d$P" "new-resp3-d$P"
        top_file_deltas "new-resp2-d$P" "new-resp3-d$P"
    fi
done
for name in "${names[@]}"; do
    file_share src/lib/proto/reader.c "$name"
done
