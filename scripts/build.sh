#!/usr/bin/env bash
# Configures and builds Keel into build/. Extra arguments go to cmake's configure
# step; KEEL_BUILD_TARGETS (space-separated) limits the build to those targets.
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
# ccache, when installed, makes rebuilds in several checkouts cheap; never required.
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" >/dev/null
targets=()
for t in ${KEEL_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build build -j"$(nproc)" "${targets[@]}"
