#!/usr/bin/env bash
# The GPU round, in two halves (the GPU machine has no LLVM, so models are
# compiled here and shipped):
#
#   scripts/gpu-check.sh prepare [MODELS] [BATCHES]   # here: build, compile for CUDA, stage .gpu/round
#   (device) bash .gpu/round/run.sh                   # there: tests, end-to-end checks, benchmarks
#
# MODELS: comma list (default: squeezenet1_1,mobilenet_v2,tiny_bert); BATCHES: comma list
# (default: 1). The round also stages scripts/cuda-host-check.sh's default cases (the host program
# against the VM) for a second call (KEEL_ROUND_HOST=0 skips them). A call's carry is limited to 64 MiB, so ResNet-18 (45 MB of weights)
# goes in a round of its own. run.sh writes everything under $OUT (results.txt: the
# summary table; *.log: full outputs) and prints the table.
#
# Batch B > 1 inputs are B copies of the model's bundled input, so every batch row
# must match the single-input PyTorch reference.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" = prepare ] || { echo "usage: scripts/gpu-check.sh prepare [MODELS] [BATCHES]"; exit 2; }
models=${2:-squeezenet1_1,mobilenet_v2,tiny_bert}
batches=${3:-1}
shared=${KEEL_SHARED_DIR:-../shared}
stage=.gpu/round
rm -rf "$stage"; mkdir -p "$stage/bin" "$stage/lib" "$stage/models"

scripts/setup.sh
scripts/build.sh -DKEEL_CUDA=ON -DKEEL_BUILD_TESTS=ON -DKEEL_BUILD_BENCH=ON
# The tests that need a GPU (each skips without one); run.sh runs every keel_*_test it finds.
gpu_tests="keel_cuda_vm_test keel_cuda_library_kernels_test keel_cudnn_engine_conv_test keel_tuning_file_test
  keel_device_alloc_failure_test keel_cuda_half_library_kernels_test keel_cuda_attention_test keel_cuda_keel_conv_test keel_graph_rewrite_test
  keel_autotune_timing_test"
cmake --build build --target keelc keel-run keel-cuda-time $gpu_tests -j"$(nproc)"
for t in keel-run keel-cuda-time $gpu_tests; do cp "build/bin/$t" "$stage/bin/"; done
strip "$stage"/bin/* 2>/dev/null || true  # symbols are not needed there; the carry is 64 MiB
# The test programs each hold the whole VM: compressed together they take a fifth (run.sh unpacks).
(cd "$stage/bin" && tar -cJf ../tests.tar.xz keel_*_test && rm keel_*_test)
cp build/lib/libkeel_cuda_test_kernels*.so "$stage/lib/"
cp "$shared/anchors/torch_latency.py" "$stage/"
cp scripts/gpu-run.sh "$stage/run.sh"

: >"$stage/models.txt"
for m in ${models//,/ }; do
  cp "$shared/models/$m.input.bin" "$shared/models/$m.output.bin" "$shared/models/$m.json" "$stage/models/"
  shape=$(python3 -c "import json,sys; print(','.join(map(str, json.load(open(sys.argv[1]))['inputs'][0]['shape'][1:])))" "$shared/models/$m.json")
  for b in ${batches//,/ }; do
    build/bin/keelc "$shared/models/$m.onnx" -o "$stage/models/$m.b$b.keel" --target cuda \
      --input-shape "input=$b,$shape" | tee "$stage/models/$m.b$b.keelc.txt"
    echo "$m $b" >>"$stage/models.txt"
  done
done
# A call carries at most 64 MiB: batch variants of a model share their weights, so
# each later variant keeps only the bytes before its longest common suffix with the
# first one (run.sh rebuilds it). Format-agnostic: it is a plain byte suffix.
for m in ${models//,/ }; do
  first=""
  for b in ${batches//,/ }; do
    f="$stage/models/$m.b$b.keel"
    [ -f "$f" ] || continue
    if [ -z "$first" ]; then first=$f; continue; fi
    python3 - "$first" "$f" <<'PY'
import os, sys
a, b = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
n = 0
while n < min(len(a), len(b)) and a[len(a) - 1 - n] == b[len(b) - 1 - n]:
    n += 1
if n > (1 << 20):
    open(sys.argv[2] + ".head", "wb").write(b[:len(b) - n])
    open(sys.argv[2] + ".tail", "w").write("%s %d\n" % (os.path.basename(sys.argv[1]), n))
    os.remove(sys.argv[2])
PY
  done
done
du -sh "$stage"
# The emitted host program against the VM belongs to every round too: scripts/cuda-host-check.sh's
# default cases, staged as .gpu/hostsync for a second device call (together they pass the 64 MiB
# carry); KEEL_ROUND_HOST=0 skips it.
if [ "${KEEL_ROUND_HOST:-1}" != 0 ]; then
  scripts/cuda-host-check.sh prepare >/dev/null
  echo "device calls: carry [\"$stage\"] OUT=\$OUT/round bash $stage/run.sh; then carry [\".gpu/hostsync\"] OUT=\$OUT/host bash .gpu/hostsync/run.sh"
fi
