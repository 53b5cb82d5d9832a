#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The man page covers every subcommand and every flag their --help texts name (regenerate it
# with scripts/gen-man.sh when a flag changes), and man renders it.
#   usage: test_manpage.sh CLUSTERPIPE_BINARY MANPAGE
set -euo pipefail
cp=$1 page=$2
[[ -f $page ]] || { echo "missing $page: run scripts/gen-man.sh" >&2; exit 1; }
plain=$(sed 's/\\-/-/g' "$page")
missing=0
for c in $("$cp" --help | awk '/^commands:/ {on=1; next} on && /^  [a-z]/ {print $1}'); do
    grep -q "^\.SS $c\$" "$page" || { echo "man page lacks subcommand $c" >&2; missing=1; }
    for f in $("$cp" "$c" --help | grep -oE -- '--[a-z][a-z0-9-]+' | sort -u); do
        grep -qF -- "$f" <<<"$plain" || { echo "man page lacks $c $f" >&2; missing=1; }
    done
done
if command -v man >/dev/null; then
    MANWIDTH=100 man -l "$page" >/dev/null 2>&1 || { echo "man cannot render $page" >&2; exit 1; }
fi
[[ $missing -eq 0 ]] || { echo "regenerate: scripts/gen-man.sh" >&2; exit 1; }
echo "man page covers every subcommand and flag"
