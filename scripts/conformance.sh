#!/usr/bin/env bash
# ONNX conformance: ONNX's node test cases (from the test virtualenv's onnx)
# through keel's compiler and VM; prints the per-op table and writes
# conformance_report.{json,md}. See docs/CONFORMANCE.md.
#
#   scripts/conformance.sh [--target cpu|cuda] [--out DIR] [--build DIR] [-j N]
#                          [--filter REGEX] [--update-baseline] [--no-baseline] [-v]
#   scripts/conformance.sh --target cuda --prepare [--stage DIR]
#
#   --target      cpu (default) or cuda: compiles and runs here (a machine with both
#                 LLVM and a GPU; exits 77 "skipped" without a usable GPU or a CUDA build)
#   --prepare     cuda, for the GPU machine (no LLVM there): builds with CUDA, compiles
#                 every case for cuda here (keel_conformance --phase compile) and stages
#                 the run-only runner, the cases and the artifacts in DIR (default
#                 .gpu/conformance); then on the device: `bash .gpu/conformance/run.sh`
#                 (carry .gpu/conformance) prints the same table and writes the reports
#                 under $OUT
#   --out         dump + reports folder (default: BUILD/conformance-TARGET)
#   --build       the build folder holding bin/keel_conformance (default: build, where
#                 keel_conformance is rebuilt first unless --no-build; another folder
#                 is used as it is)
#   --update-baseline  rewrite the target's baseline with the cases passing now
#                 (cpu: tests/conformance/baseline.txt, cuda: baseline-cuda.txt; for the
#                 GPU machine, copy its $OUT/… back: see docs/CONFORMANCE.md)
#   --no-baseline      report only
#   --no-build    use build/bin/keel_conformance as it is
#   -j N          worker processes (default 2); --filter REGEX: only matching cases;
#   -v            one line per case
# Exit status: 0 ok, 1 a baseline regression (or a failure), 77 skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
target=cpu out="" build=build nobuild=0 jobs=2 filter="" update=0 check=1 verbose=() prepare=0 stage=.gpu/conformance
while [ $# -gt 0 ]; do
  case "$1" in
    --target) target="$2"; shift 2 ;;
    --target=*) target="${1#*=}"; shift ;;
    --out) out="$2"; shift 2 ;;
    --out=*) out="${1#*=}"; shift ;;
    --build) build="$2"; shift 2 ;;
    --build=*) build="${1#*=}"; shift ;;
    -j) jobs="$2"; shift 2 ;;
    -j*) jobs="${1#-j}"; shift ;;
    --filter) filter="$2"; shift 2 ;;
    --filter=*) filter="${1#*=}"; shift ;;
    --update-baseline) update=1; shift ;;
    --no-baseline) check=0; shift ;;
    --prepare) prepare=1; shift ;;
    --no-build) nobuild=1; shift ;;
    --stage) stage="$2"; shift 2 ;;
    --stage=*) stage="${1#*=}"; shift ;;
    -v|--verbose) verbose=(-v); shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "conformance.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$target" in cpu|cuda) ;; *) echo "conformance.sh: --target expects cpu or cuda" >&2; exit 2 ;; esac
out="${out:-$build/conformance-$target}"
python=.venv/bin/python
if [ ! -x "$python" ]; then echo "skipped: $python not found (run scripts/setup.sh)"; exit 77; fi
baseline=tests/conformance/baseline.txt
[ "$target" = cuda ] && baseline=tests/conformance/baseline-cuda.txt
if [ "$prepare" = 1 ]; then
  [ "$target" = cuda ] || { echo "conformance.sh: --prepare is for --target cuda" >&2; exit 2; }
  [ "$build" = build ] || { echo "conformance.sh: --prepare builds into build/ (no --build)" >&2; exit 2; }
  KEEL_BUILD_TARGETS="keel_conformance keel_conformance_run" scripts/build.sh -DKEEL_CUDA=ON -DKEEL_BUILD_TESTS=ON
  "$python" tests/conformance/dump_cases.py --out "$out" ${filter:+--filter "$filter"}
  rm -rf "$out/artifacts"
  "$build/bin/keel_conformance" --cases "$out" --target cuda --phase compile --artifacts "$out/artifacts" \
    -j "$jobs" ${filter:+--filter "$filter"}
  rm -rf "$stage"; mkdir -p "$stage"
  cp "$build/bin/keel_conformance_run" "$stage/"
  if [ -n "$filter" ]; then  # a partial run cannot write a baseline
    sed 's/^set -u$/set -u; export FILTERED=1/' scripts/conformance-gpu-run.sh >"$stage/run.sh"
  else
    cp scripts/conformance-gpu-run.sh "$stage/run.sh"
  fi
  [ "$check" = 1 ] && [ -f "$baseline" ] && [ -z "$filter" ] && cp "$baseline" "$stage/baseline.txt"
  # The device needs the manifest, the inputs and expected outputs (not the models)
  # and the compiled cases; one archive keeps it under the 64 MiB a call carries.
  (cd "$out" && find cases -name '*.bin' | LC_ALL=C sort >.stage-files)
  tar -czf "$stage/cases.tar.gz" --transform 's,^\(manifest.tsv\|cases\),dump/\1,' \
    -C "$out" manifest.tsv -T "$out/.stage-files" artifacts
  rm -f "$out/.stage-files"
  du -sh "$stage"
  echo "staged: carry $stage to the GPU machine and run: bash $stage/run.sh"
  exit 0
fi
if [ "$target" = cuda ] && ! { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }; then
  echo "skipped: --target cuda needs an NVIDIA GPU (nvidia-smi -L failed)"; exit 77
fi
runner="$build/bin/keel_conformance"
# Always (re)build into build/: a stale runner would report (or record as the
# baseline) the compiler of an older checkout. A no-op build takes seconds.
if [ "$build" = build ] && [ "$nobuild" = 0 ]; then
  KEEL_BUILD_TARGETS="keel_conformance" scripts/build.sh -DKEEL_BUILD_TESTS=ON >/dev/null
fi
[ -x "$runner" ] || { echo "conformance.sh: $runner not found" >&2; exit 1; }
args=(--cases "$out" --target "$target" -j "$jobs" --all-ops "${verbose[@]}")
[ -n "$filter" ] && args+=(--filter "$filter")
if [ "$update" = 1 ]; then
  [ -n "$filter" ] && { echo "conformance.sh: --update-baseline runs every case (no --filter)" >&2; exit 2; }
  args+=(--baseline "$baseline" --update-baseline)
elif [ "$check" = 1 ] && [ -f "$baseline" ]; then
  args+=(--baseline "$baseline")
fi
"$python" tests/conformance/dump_cases.py --out "$out" ${filter:+--filter "$filter"}
exec "$runner" "${args[@]}"
