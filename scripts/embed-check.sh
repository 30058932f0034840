#!/usr/bin/env bash
# The embeddable runtime, as an application developer gets it (issue 12): configures
# and builds the runtime alone (no compiler, tests, benchmarks or CUDA) into
# build-embed/, installs it into build-embed/prefix, builds apps/embed_c against the
# installed package with find_package(Keel) and, when a test model maker is at hand
# (build/bin/keel_vm_make_test_model from the full build, or $KEEL_MAKE_MODEL), runs
# it on a model. Then scripts/runtime-size.sh prints the sizes and fails above the
# committed limits. CI runs this after the test suite; one to two minutes with a warm ccache (98 s at load average 9).
#
#   scripts/embed-check.sh [BUILD_DIR]      (default build-embed)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-embed}
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
rm -rf "$dir/prefix" "$dir/embed_c"
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
  -DKEEL_BUILD_COMPILER=OFF -DKEEL_BUILD_TESTS=OFF -DKEEL_BUILD_BENCH=OFF -DKEEL_CUDA=OFF >/dev/null
cmake --build "$dir" -j"$(nproc)"
cmake --install "$dir" --prefix "$dir/prefix" --component keel_runtime >/dev/null
prefix=$(cd "$dir/prefix" && pwd)
cmake -S apps/embed_c -B "$dir/embed_c" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$dir/embed_c"
echo "embed-check: apps/embed_c built against $prefix (find_package(Keel))"

make_model=${KEEL_MAKE_MODEL:-build/bin/keel_vm_make_test_model}
kernels=${KEEL_TEST_KERNELS:-build/lib/libkeel_test_kernels.so}
if [ -x "$make_model" ] && [ -f "$kernels" ]; then
  "$make_model" "$dir/embed_c/m.keel" "$kernels" static >/dev/null
  # The installed libkeelvm.so (CMake gives the consumer a build RUNPATH to it; the path is belt and braces).
  LD_LIBRARY_PATH="$prefix/lib:${LD_LIBRARY_PATH:-}" "$dir/embed_c/keel_embed_c" "$dir/embed_c/m.keel" | tee "$dir/embed_c/out.txt"
  grep -q "^matmul: " "$dir/embed_c/out.txt"
  echo "embed-check: the installed runtime ran the test model"
else
  echo "embed-check: no test model maker ($make_model); built and linked only"
fi
scripts/runtime-size.sh "$dir"
