#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the build into a temporary prefix, then builds examples/ against the installed
# library twice, out of tree: with pkg-config (one line) and with CMake's find_package. Both
# binaries must run (their usage error proves they linked and loaded libclusterpipe).
#   usage: test_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cp-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(ls -d "$tmp"/prefix/lib*/ | head -1)
test -f "$tmp/prefix/include/clusterpipe/clusterpipe.h"
test -x "$tmp/prefix/bin/clusterpipe"

export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -o "$tmp/pc_example" "$src/examples/pipeline_get.c" $(pkg-config --cflags --libs clusterpipe)
set +e
LD_LIBRARY_PATH="$libdir" "$tmp/pc_example" >/dev/null 2>&1; rc=$?
set -e
[[ $rc -eq 2 ]] || { echo "pkg-config build: expected usage exit 2, got $rc" >&2; exit 1; }
echo "pkg-config: built and ran examples/pipeline_get.c"

cmake -S "$src/tests/install" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DEXAMPLE_DIR="$src/examples" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
set +e
LD_LIBRARY_PATH="$libdir" "$tmp/consumer/pipeline_get" >/dev/null 2>&1; rc=$?
set -e
[[ $rc -eq 2 ]] || { echo "find_package build: expected usage exit 2, got $rc" >&2; exit 1; }
echo "find_package: built and ran examples/pipeline_get.c"
