#!/usr/bin/env bash
# Configures and builds Keel into build/. Extra arguments go to cmake's configure
# step; KEEL_BUILD_TARGETS (space-separated) limits the build to those targets.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
targets=()
for t in ${KEEL_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build build -j"$(nproc)" "${targets[@]}"
