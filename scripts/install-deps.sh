#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the Debian packages clusterpipe needs, only those that are missing.
# A fast no-op (one dpkg-query) when everything is present. Runs apt-get as root or via sudo.
set -euo pipefail

PKGS=(build-essential cmake pkg-config clang-format
      libhiredis-dev libcmocka-dev libjansson-dev libssl-dev openssl libc-ares-dev
      libevent-dev libev-dev libuv1-dev
      redis-server redis-tools nutcracker gnuplot-nox
      python3-minimal)
# CI also fuzzes (clang + libFuzzer runtime) and runs valgrind.
[[ "${1:-}" == "--ci" ]] && PKGS+=(clang libclang-rt-14-dev valgrind)

missing=()
for p in "${PKGS[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
    [[ "$status" == ii* ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# --no-install-recommends keeps the redis-server package from pulling in extras;
# Debian's redis-server postinst tries to start a service, harmless where there is no init.
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
