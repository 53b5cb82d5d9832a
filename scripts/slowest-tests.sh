#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Prints the N slowest tests (default 10) of the last ctest run in build dir BUILD, from ctest's
# own log (Testing/Temporary/LastTest.log: a "K/M Test: NAME" line, later "Test time = S sec").
# Usage: scripts/slowest-tests.sh BUILD [N]. Prints nothing when there is no log.
set -eu
log="$1/Testing/Temporary/LastTest.log"
n="${2:-10}"
[ -r "$log" ] || exit 0
echo "slowest $n tests:"
awk '/^[0-9]+\/[0-9]+ Test: / { name = $3 }
     /^Test time = / && name != "" { printf "%8.2f s  %s\n", $4, name; name = "" }' "$log" |
    sort -rn | head -n "$n"
