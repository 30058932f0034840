#!/usr/bin/env bash
# scripts/fuzz.sh — builds Keel's libFuzzer targets (fuzz/) with clang, ASan and
# UBSan into build-fuzz/, makes the seed corpora and runs every target.
#
#   scripts/fuzz.sh [--runs N | --time SECONDS] [--parallel] [--ci] [TARGET...]
#
#   --runs N       iterations per target (default 10000)
#   --time S       run each target for S seconds instead (e.g. 14400 for hours)
#   --parallel     run the targets at the same time (one process each)
#   --ci           bounded CI run: --runs 3000; exit 0 with "skipped" when clang is absent
#   TARGET         onnx, executable, plan, c_api (default: all)
#
# Corpora grow in build-fuzz/corpus/<target>/ (kept between runs); crashes go to
# build-fuzz/artifacts/<target>/ (once fixed, copy them to fuzz/regressions/<target>/,
# which every run replays first). Prints the iterations each target ran and exits
# non-zero when any target found a crash, a leak, a timeout or a sanitizer report.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=10000
time_s=""
parallel=0
ci=0
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --time) time_s=$2; shift 2 ;;
    --parallel) parallel=1; shift ;;
    --ci) ci=1; runs=3000; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    onnx|executable|plan|c_api) targets+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ ${#targets[@]} -eq 0 ] && targets=(onnx executable plan c_api)

cc=$(command -v clang || command -v clang-14 || true)
cxx=$(command -v clang++ || command -v clang++-14 || true)
if [ -z "$cc" ] || [ -z "$cxx" ]; then
  echo "fuzz.sh: skipped: clang not found (apt-get install clang)"
  [ $ci -eq 1 ] && exit 0
  exit 77
fi

build=build-fuzz
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS_RELEASE="-O1" -DCMAKE_C_FLAGS_RELEASE="-O1" \
  -DKEEL_BUILD_FUZZERS=ON -DKEEL_BUILD_TESTS=OFF -DKEEL_BUILD_BENCH=OFF -DKEEL_CUDA=OFF "${launcher[@]}" >/dev/null \
  || { echo "fuzz.sh: cmake failed" >&2; exit 1; }
build_targets=(keel_fuzz_make_seeds)
for t in "${targets[@]}"; do build_targets+=("keel_fuzz_$t"); done
[[ " ${targets[*]} " == *" onnx "* ]] && build_targets+=(keel_fuzz_onnx_seeds)
cmake --build $build -j"$(nproc)" $(printf -- '--target %s ' "${build_targets[@]}") >$build/fuzz-build.log 2>&1 \
  || { tail -30 $build/fuzz-build.log; echo "fuzz.sh: build failed (log: $build/fuzz-build.log)" >&2; exit 1; }
bin=$build/bin

# Seed corpora (regenerated each time; the fuzzers' own corpora are kept).
seeds=$build/seeds
rm -rf $seeds
mkdir -p $seeds/onnx $seeds/executable $seeds/plan $seeds/c_api
$bin/keel_fuzz_make_seeds $seeds/executable >/dev/null
if [ -x $bin/keel_fuzz_onnx_seeds ]; then
  $bin/keel_fuzz_onnx_seeds $seeds/onnx/hostile >/dev/null && mv $seeds/onnx/hostile/*.onnx $seeds/onnx/ && rm -rf $seeds/onnx/hostile
fi
models=${KEEL_SHARED_DIR:-../shared}/models
if [ -x .venv/bin/python ] && [ -d "$models" ]; then
  .venv/bin/python fuzz/zoo_seeds.py "$models" $seeds/onnx >/dev/null || echo "fuzz.sh: zoo seeds failed (continuing)"
  # The zoo windows compiled by keelc (when a normal build exists) seed the executable target.
  if [ -x build/bin/keelc ]; then
    n=0
    for m in $seeds/onnx/*_1.onnx $seeds/onnx/*_3.onnx; do
      [ $n -ge 40 ] && break
      out=$seeds/executable/$(basename "$m" .onnx).keel
      build/bin/keelc "$m" -o "$out" -q 2>/dev/null && rm -f "$out.so" && n=$((n + 1))
    done
  fi
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-allocator_may_return_null=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
limit=(-runs="$runs")
[ -n "$time_s" ] && limit=(-max_total_time="$time_s")
run_one() {
  local t=$1
  mkdir -p $build/corpus/$t $build/artifacts/$t
  # Inputs that once crashed (fuzz/regressions/<target>/) are replayed first.
  local regressions=""
  [ -d fuzz/regressions/$t ] && regressions=fuzz/regressions/$t
  $bin/keel_fuzz_$t "${limit[@]}" -timeout=20 -rss_limit_mb=3072 -max_len=262144 -print_final_stats=1 \
    -artifact_prefix=$build/artifacts/$t/ $build/corpus/$t $seeds/$t $regressions >$build/fuzz-$t.log 2>&1
}
pids=()
for t in "${targets[@]}"; do
  if [ $parallel -eq 1 ]; then run_one "$t" & pids+=($!); else run_one "$t"; fi
done
for p in "${pids[@]}"; do wait "$p"; done

failed=0
total=0
for t in "${targets[@]}"; do
  log=$build/fuzz-$t.log
  n=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  if grep -qE '^==[0-9]+==ERROR|runtime error:|deadly signal|ERROR: libFuzzer|Test unit written' "$log"; then
    echo "$t: FAILED after ${n:-?} iterations (log: $log, artifacts: $build/artifacts/$t/)"
    grep -m3 -E 'ERROR|runtime error|SUMMARY' "$log" | sed 's/^/  /'
    failed=1
  else
    echo "$t: ${n:-?} iterations, no crash ($(grep -o 'cov: [0-9]*' "$log" | tail -1), corpus $(ls $build/corpus/$t | wc -l) files)"
  fi
  total=$((total + ${n:-0}))
done
echo "total: $total iterations"
exit $failed
