#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the build into a temporary prefix, then builds examples/ against the installed
# library twice, out of tree: with pkg-config (one line) and with CMake's find_package. Both
# binaries must run (their usage error proves they linked and loaded libclusterpipe). Then, with
# pkg-config, the async examples over the header-only adapters (each whose event library is
# installed) and a C++ program of the header: they link against the shared library, which
# exports only the API, and load with every symbol bound at once (LD_BIND_NOW).
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
LD_BIND_NOW=1 LD_LIBRARY_PATH="$libdir" "$tmp/pc_example" >/dev/null 2>&1; rc=$?
set -e
[[ $rc -eq 2 ]] || { echo "pkg-config build: expected usage exit 2, got $rc" >&2; exit 1; }
echo "pkg-config: built and ran examples/pipeline_get.c"

cmake -S "$src/tests/install" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DEXAMPLE_DIR="$src/examples" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
set +e
LD_BIND_NOW=1 LD_LIBRARY_PATH="$libdir" "$tmp/consumer/pipeline_get" >/dev/null 2>&1; rc=$?
set -e
[[ $rc -eq 2 ]] || { echo "find_package build: expected usage exit 2, got $rc" >&2; exit 1; }
echo "find_package: built and ran examples/pipeline_get.c"

# The async examples: the adapters are headers, so what they call must be exported. A negative
# N gives the usage exit (2) before any connection is tried.
for ex in async_poll async_libevent async_libev async_libuv; do
    case $ex in
    async_poll) loop="" ;;
    async_libevent | async_libuv)
        pc=${ex#async_}
        pkg-config --exists "$pc" || { echo "$ex: skipped (no $pc)"; continue; }
        loop=$(pkg-config --cflags --libs "$pc") ;;
    async_libev)
        echo '#include <ev.h>' | cc -E - >/dev/null 2>&1 || { echo "$ex: skipped (no libev)"; continue; }
        loop=-lev ;;
    esac
    # shellcheck disable=SC2086 # the flags are words
    cc -o "$tmp/$ex" "$src/examples/$ex.c" $(pkg-config --cflags --libs clusterpipe) $loop
    set +e
    LD_BIND_NOW=1 LD_LIBRARY_PATH="$libdir" "$tmp/$ex" 127.0.0.1:1 -1 >/dev/null 2>&1; rc=$?
    set -e
    [[ $rc -eq 2 ]] || { echo "$ex: expected usage exit 2, got $rc" >&2; exit 1; }
    echo "pkg-config: built and ran examples/$ex.c"
done

# A C++ consumer of the header (extern "C", CP_API), when there is a C++ compiler.
if command -v c++ >/dev/null; then
    cat >"$tmp/consumer.cc" <<'CC'
#include <clusterpipe/clusterpipe.h>
#include <cstring>
int main() {
    cp_options o = CP_OPTIONS_INIT;
    o.endpoint = "127.0.0.1:1";
    cp_client *c = cp_client_new(&o); // no I/O
    int ok = c != nullptr && c->err == 0 && cp_keyslot("foo", 3) == 12182 &&
             std::strcmp(cp_err_name(CP_ETIMEDOUT), "CP_ETIMEDOUT") == 0;
    cp_free(c);
    return ok ? 0 : 1;
}
CC
    # shellcheck disable=SC2046
    c++ -Wall -Wextra -Werror -o "$tmp/cxx_consumer" "$tmp/consumer.cc" \
        $(pkg-config --cflags --libs clusterpipe)
    LD_BIND_NOW=1 LD_LIBRARY_PATH="$libdir" "$tmp/cxx_consumer" ||
        { echo "C++ consumer: failed" >&2; exit 1; }
    echo "c++: built and ran a consumer of clusterpipe.h"
else
    echo "c++: skipped (no C++ compiler)"
fi
