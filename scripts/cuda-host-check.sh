#!/usr/bin/env bash
# keelc --emit=cuda-host against keel-run, in two halves (the GPU machine has no LLVM,
# so models and host programs are compiled here and shipped):
#
#   scripts/cuda-host-check.sh prepare [MODEL:PLAN[:PRECISION],...]   # here: build, keelc --emit=cuda-host, nvcc, stage
#   (device) bash .gpu/hostsync/run.sh                      # there: run both, compare
#
# For every MODEL:PLAN (default squeezenet1_1:greedy-size,squeezenet1_1:naive,
# squeezenet1_1:dynamic,tiny_bert:greedy-size,mobilenet_v2:dynamic, squeezenet1_1:greedy-size:fp16,
# tiny_bert:greedy-size:bf16,resnext:greedy-size:fp16; PRECISION, when given, is keelc --precision's:
# the fp16 / bf16 cases check the half library kernels: cuDNN convolutions and pools, cuBLASLt
# GEMMs; resnext's grouped fp16 convolutions, NHWC 3x3 and NCHW 5x5, take the cuDNN backend-API
# engines, which the VM tries for them by default) run.sh runs keel-run --device cuda
# --no-cuda-graph --trace and the generated host program --trace on the model's input, in four modes:
#   tuned    keel-run --tuning-file T first tunes (times cuDNN/cuBLASLt candidates and, for
#            the convolutions VmOptions::cudnn_engines names, the backend-API engines against
#            them) and records its choices in T (one file shared by all cases; an engine by
#            identity); then keel-run and the host program both run with --tuning-file T (read
#            only: T must not change, and the host must find every library problem in it);
#   heur     KEEL_CUDA_AUTOTUNE=0 for keel-run, no tuning file for either (heuristics; no
#            engine competition without timing: the legacy calls);
#   plain    heur with KEEL_CUDA_PDL=0 on both sides (no programmatic dependent launches);
#   engines  heur with KEEL_CUDNN_ENGINES=force on both sides, half-precision cases only: every
#            convolution runs the engine heuristics' first configuration (the candidate list
#            both build with the same shared calls, vm/cuda/library_calls_cudnn_engine.h);
# and compares, per mode:
#   * cmp: every output file byte for byte (bit-identical outputs);
#   * trace: keel-run's trace lines (set-up and instructions), less times and addresses,
#     equal the host program's, line for line (the same call for every instruction,
#     including the cuBLASLt/cuDNN algorithm, the conv mode, programmatic launches);
#   * cudaMalloc during the run: keel-run's traced count and bytes equal the host
#     program's summary (and cudaFree counts); the set-up's too.
# In tuned mode the tuning run's trace must also equal the reading run's (same choices).
# Results go to $OUT/cuda-host-results.txt (one line per check) and $OUT/cuda-host-logs.tar.gz.
# Env: KEEL_BUILD_DIR (default build), KEEL_SHARED_DIR (default ../shared; scripts/cuda_host_models.py
# makes one that adds a pre-norm encoder and a UNet to bundled models), KEEL_RUN (a keel-run
# binary to compare with; default: the build dir's). Models missing from KEEL_SHARED_DIR that
# scripts/cuda_host_models.py makes (resnext, prenorm, unet, video) are made into
# $KEEL_BUILD_DIR/cuda-host-models first (needs /usr/bin/python3 with PyTorch).
# Both sides read KEEL_CUDNN_ENGINES (0|1|force|auto; unset: auto, the VM's default) from run.sh's
# environment: `KEEL_CUDNN_ENGINES=0 bash .gpu/hostsync/run.sh` compares with the engines off.
# The host programs are built with the VM's runtime-kernel flags (vm/cuda/CMakeLists.txt: sm_90
# code + compute_80 PTX), so the runtime kernels wait for their predecessor exactly where the
# VM's do. Their arithmetic (adds, min/max) is exactly rounded, so the epilogue's results do not
# depend on the SASS either way.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" = prepare ] || { echo "usage: scripts/cuda-host-check.sh prepare [MODEL:PLAN[:PRECISION],...]"; exit 2; }
cases=${2:-squeezenet1_1:greedy-size,squeezenet1_1:naive,squeezenet1_1:dynamic,tiny_bert:greedy-size,mobilenet_v2:dynamic,squeezenet1_1:greedy-size:fp16,tiny_bert:greedy-size:bf16,resnext:greedy-size:fp16}
build=${KEEL_BUILD_DIR:-build}
shared=${KEEL_SHARED_DIR:-../shared}
stage=.gpu/hostsync
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKEEL_CUDA=ON
fi
if [ -n "${KEEL_RUN:-}" ]; then
  cmake --build "$build" --target keelc -j2
else
  cmake --build "$build" --target keelc keel-run -j2
fi
cudnn_lib=$(sed -n 's/^KEEL_CUDNN_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt")
cudnn_dir=$(dirname "${cudnn_lib:-/usr/local/cuda/lib64/libcudnn.so}")

# Models the shared folder lacks come from scripts/cuda_host_models.py (made once).
extra=$build/cuda-host-models
for c in ${cases//,/ }; do
  m=${c%%:*}
  if [ ! -f "$shared/models/$m.onnx" ] && [ ! -f "$extra/models/$m.onnx" ]; then
    /usr/bin/python3 scripts/cuda_host_models.py "$extra" >/dev/null 2>&1 ||
      { echo "cannot make $extra (scripts/cuda_host_models.py needs /usr/bin/python3 with PyTorch)"; exit 1; }
    [ -f "$extra/models/$m.onnx" ] || { echo "no model $m in $shared/models or $extra/models"; exit 1; }
  fi
done
models_of() { if [ -f "$shared/models/$1.onnx" ]; then echo "$shared/models"; else echo "$extra/models"; fi; }

rm -rf "$stage"; mkdir -p "$stage/bin" "$stage/models"
cp "${KEEL_RUN:-$build/bin/keel-run}" "$stage/bin/keel-run"
: >"$stage/cases.txt"
for c in ${cases//,/ }; do
  m=${c%%:*}; rest=${c#*:}; plan=${rest%%:*}; precision=fp32; tag="$m.$plan"
  if [ "$rest" != "$plan" ]; then precision=${rest#*:}; tag="$tag.$precision"; fi
  dir=$(models_of "$m")
  cp -n "$dir/$m.input.bin" "$stage/models/" 2>/dev/null || true
  input=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['inputs'][0]['name'])" "$dir/$m.json")
  "$build/bin/keelc" --emit=cuda-host "$dir/$m.onnx" -o "$stage/models/$tag.cu" --memory-plan "$plan" \
    --precision "$precision" -q
  "$nvcc" -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=compute_80 \
    "$stage/models/$tag.cu" -o "$stage/bin/$tag.host" -L"$cudnn_dir" \
    -L/usr/local/cuda/lib64/stubs -lcublasLt -lcudnn -lcuda -ldl
  rm "$stage/models/$tag.cu"  # keep the carry small; the source is reproducible with keelc
  echo "$tag $m $input $precision" >>"$stage/cases.txt"
done

cat >"$stage/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs on the GPU machine from the staged folder (see scripts/cuda-host-check.sh).
set -uo pipefail
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
unset KEEL_CUDA_AUTOTUNE KEEL_CUDA_PDL
# KEEL_CUDNN_ENGINES stays as the caller set it (unset: auto): both sides read it.
out=${OUT:-/tmp/cuda-host-out}
mkdir -p "$out" logs
results="$out/cuda-host-results.txt"
: >"$results"
fail=0
tuning=$PWD/logs/tuning.txt
rm -f "$tuning"
note() { echo "$*" | tee -a "$results"; }
# keel-run --trace lines (set-up and instructions) less times and addresses.
normalize() { grep '^trace ' "$1" | sed -E 's/ at (0x[0-9a-f]+|\(nil\))//; s/ \(device [0-9]+ ns\)$//; s/ [0-9]+ ns$//'; }
compare() {  # tag mode: outputs, traces, cudaMalloc counts of logs/$tag.$mode.{vm,host}
  local tag=$1 mode=$2 t="$1 [$2]" v="logs/$1.$2.vm" h="logs/$1.$2.host"
  local n=0 bad=0
  for f in "out.$tag.$mode.vm"/*.bin; do
    n=$((n + 1))
    cmp -s "$f" "out.$tag.$mode.host/$(basename "$f")" || { bad=$((bad + 1)); note "FAIL $t output $(basename "$f") differs"; }
  done
  if [ "$n" -gt 0 ] && [ "$bad" -eq 0 ]; then note "PASS $t outputs bit-identical ($n file(s))"; else fail=1; fi
  normalize "$v.txt" >"$v.trace"; normalize "$h.txt" >"$h.trace"
  if [ -s "$v.trace" ] && diff -q "$v.trace" "$h.trace" >/dev/null; then
    note "PASS $t trace identical ($(grep -c '^trace #' "$v.trace") instruction lines, $(grep -c '^trace setup' "$v.trace") set-up lines, $(grep -c 'programmatic' "$v.trace") programmatic launches, $(grep -c 'keel_bias_act' "$v.trace") conv+epilogue calls, $(grep -c 'cudnnBackendExecute' "$v.trace") cuDNN engine calls)"
  else
    note "FAIL $t trace differs:"; diff "$v.trace" "$h.trace" | head -8 | tee -a "$results"; fail=1
  fi
  local vm_n vm_b vm_f line host_n host_b host_f su_n su_b
  vm_n=$(grep -c '^trace #.* allocate cudaMalloc ' "$v.trace" || true)
  vm_b=$(grep '^trace #' "$v.trace" | grep -o ' allocate cudaMalloc [0-9]* bytes' | awk '{s += $3} END {print s + 0}')
  vm_f=$(grep -c '^trace #.* free cudaFree ' "$v.trace" || true)
  line=$(grep '^cudaMalloc during the run:' "$h.txt")
  host_n=$(echo "$line" | sed -E 's/.*run: ([0-9]+) calls, ([0-9]+) bytes; cudaFree during the run: ([0-9]+) calls/\1/')
  host_b=$(echo "$line" | sed -E 's/.*run: ([0-9]+) calls, ([0-9]+) bytes; cudaFree during the run: ([0-9]+) calls/\2/')
  host_f=$(echo "$line" | sed -E 's/.*run: ([0-9]+) calls, ([0-9]+) bytes; cudaFree during the run: ([0-9]+) calls/\3/')
  if [ "$vm_n" = "$host_n" ] && [ "$vm_b" = "$host_b" ] && [ "$vm_f" = "$host_f" ]; then
    note "PASS $t run-time cudaMalloc $vm_n calls $vm_b bytes, cudaFree $vm_f (keel-run trace = host summary)"
  else
    note "FAIL $t run-time cudaMalloc keel-run $vm_n/$vm_b/$vm_f vs host $host_n/$host_b/$host_f"; fail=1
  fi
  su_n=$(grep -c '^trace setup .* allocate cudaMalloc ' "$v.trace" || true)
  su_b=$(grep '^trace setup ' "$v.trace" | grep -o ' allocate cudaMalloc [0-9]* bytes' | awk '{s += $3} END {print s + 0}')
  line=$(grep '^cudaMalloc at load (set-up' "$h.txt")
  if [ "$line" = "cudaMalloc at load (set-up: zero biases, arenas, constants, inputs): $su_n calls, $su_b bytes" ]; then
    note "PASS $t set-up cudaMalloc $su_n calls $su_b bytes (keel-run trace = host summary); host $(grep '^cudaMalloc at load (library' "$h.txt")"
  else
    note "FAIL $t set-up cudaMalloc keel-run $su_n/$su_b vs host: $line"; fail=1
  fi
}
run_pair() {  # tag model input mode [env for both...] -- [arguments for both...]
  local tag=$1 model=$2 input=$3 mode=$4; shift 4
  local vm_env=() args=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do vm_env+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  args=("$@")
  rm -rf "out.$tag.$mode.vm" "out.$tag.$mode.host"
  env "${vm_env[@]}" bin/keel-run "models/$tag.keel" --device cuda --no-cuda-graph --trace \
    --input "$input=models/$model.input.bin" --output-dir "out.$tag.$mode.vm" "${args[@]}" \
    >"logs/$tag.$mode.vm.txt" 2>&1 ||
    { note "FAIL $tag [$mode] keel-run exited $?"; tail -3 "logs/$tag.$mode.vm.txt" | tee -a "$results"; fail=1; return; }
  env "${vm_env[@]}" "bin/$tag.host" --keel "models/$tag.keel" --library "models/$tag.keel.so" --trace \
    --input "$input=models/$model.input.bin" --output-dir "out.$tag.$mode.host" "${args[@]}" \
    >"logs/$tag.$mode.host.txt" 2>&1 ||
    { note "FAIL $tag [$mode] host program exited $?"; tail -5 "logs/$tag.$mode.host.txt" | tee -a "$results"; fail=1; return; }
  compare "$tag" "$mode"
}
while read -r tag model input precision; do
  # tuned: keel-run tunes and records, then both read the file.
  bin/keel-run "models/$tag.keel" --device cuda --no-cuda-graph --trace --tuning-file "$tuning" \
    --input "$input=models/$model.input.bin" >"logs/$tag.tuning-run.txt" 2>&1 ||
    { note "FAIL $tag tuning run exited $?"; tail -3 "logs/$tag.tuning-run.txt" | tee -a "$results"; fail=1; continue; }
  sum_before=$(md5sum <"$tuning")
  run_pair "$tag" "$model" "$input" tuned KEEL_CUDA_AUTOTUNE_LOG=1 -- --tuning-file "$tuning"
  # A timing reports microseconds ("keel autotune K ...: 4.1 us", "keel engines K ...: 3.2 us");
  # other autotune-log lines (a kernel sharing an earlier kernel's plan) are no timing.
  if [ "$(md5sum <"$tuning")" = "$sum_before" ] && ! grep -qE '^keel (autotune|engines) .*[0-9] us' "logs/$tag.tuned.vm.txt"; then
    note "PASS $tag [tuned] keel-run reading the file timed nothing and left it unchanged ($(grep -vc '^#' "$tuning") entries)"
  else
    note "FAIL $tag [tuned] keel-run reading the file timed candidates or rewrote it"; fail=1
  fi
  normalize "logs/$tag.tuning-run.txt" >"logs/$tag.tuning-run.trace"
  if diff -q "logs/$tag.tuning-run.trace" "logs/$tag.tuned.vm.trace" >/dev/null 2>&1; then
    note "PASS $tag [tuned] the tuning run's trace equals the file-reading run's (same choices)"
  else
    note "FAIL $tag [tuned] the tuning run chose differently:"; diff "logs/$tag.tuning-run.trace" "logs/$tag.tuned.vm.trace" | head -4 | tee -a "$results"; fail=1
  fi
  found=$(grep '^tuning file:' "logs/$tag.tuned.host.txt" || true)
  if echo "$found" | grep -qE '^tuning file: ([0-9]+) of \1 library problems found \(([0-9]+) in this model\)$' &&
     [ "$(echo "$found" | sed -E 's/^tuning file: ([0-9]+) of.*/\1/')" = "$(echo "$found" | sed -E 's/.*\(([0-9]+) in this model\)$/\1/')" ]; then
    note "PASS $tag [tuned] host: $found"
  else
    note "FAIL $tag [tuned] host: ${found:-no tuning summary}"; fail=1
  fi
  run_pair "$tag" "$model" "$input" heur KEEL_CUDA_AUTOTUNE=0 --
  run_pair "$tag" "$model" "$input" plain KEEL_CUDA_AUTOTUNE=0 KEEL_CUDA_PDL=0 --
  if [ "$precision" != fp32 ]; then
    run_pair "$tag" "$model" "$input" engines KEEL_CUDA_AUTOTUNE=0 KEEL_CUDNN_ENGINES=force --
  fi
done <cases.txt
[ -f "$tuning" ] && note "tuning file: $(grep -c ' engine=[0-9]' "$tuning") convolutions recorded a cuDNN engine, $(grep -c ' engine=legacy' "$tuning") the legacy call won"
cp "$tuning" "$out/tuning.txt" 2>/dev/null
tar czf "$out/cuda-host-logs.tar.gz" logs
echo "overall: $([ $fail = 0 ] && echo PASS || echo FAIL)" | tee -a "$results"
exit $fail
RUN
chmod +x "$stage/run.sh"
du -sh "$stage"
