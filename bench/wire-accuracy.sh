#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The wire's accuracy on this machine: PING at depth 1 to one redis-server, directly and through
# `clusterpipe wire --rtt D`, interleaved (bench/wire_accuracy.c), at each D. The median must lie
# within 10% or 50 us (whichever is larger) of D. A measurement of a quiet machine: run nothing
# else meanwhile (the suite's test_wire_real checks only what a wrong wire fails).
#   usage: bench/wire-accuracy.sh [BUILD_DIR]     (default build)
#   env:   RTTS="100us 500us 1ms 5ms"  PINGS=2000
# Exit status: 0 every median in its band, 1 one is not (or a failure), 2 bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
CP=$BUILD/clusterpipe
DRV=$BUILD/bench/wire_accuracy
for b in "$CP" "$DRV"; do
    [[ -x $b ]] || { echo "no $b: build it first (cmake --build $BUILD)" >&2; exit 2; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/cp-wireacc-XXXXXX")
rmdir "$dir"
trap '"$CP" down --dir "$dir" >/dev/null 2>&1 || true' EXIT
"$CP" up cluster --shards 1 --no-password --dir "$dir" -q >/dev/null
port=$("$CP" status --dir "$dir" --json | python3 -c \
    'import json,sys; print([p["address"].rsplit(":",1)[1] for p in json.load(sys.stdin)["processes"] if p["role"]=="master"][0])')
echo "wire accuracy: PING at depth 1, ${PINGS:-2000} per path and RTT, one redis-server on port $port"
"$DRV" "$CP" "$port" "${PINGS:-2000}" ${RTTS:-100us 500us 1ms 5ms}
