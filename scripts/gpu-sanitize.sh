#!/usr/bin/env bash
# compute-sanitizer memcheck on the generated CUDA kernels of whole models, in two halves (the GPU
# machine has no LLVM, so models are compiled here and shipped):
#
#   scripts/gpu-sanitize.sh prepare [MODEL:PRECISION,...]   # here: build, compile, stage .gpu/sanitize
#   (device) bash .gpu/sanitize/run.sh                       # there: keel-run under memcheck
#
# MODEL: a bundled model (../shared/models), or an architecture the test set exports
# (build/tests/e2e/zoo, with a random input). Default cases: squeezenet1_1:fp16 and mobilenet_v2:bf16 (their stems run as keel.Im2Col
# gathers and a GEMM; MobileNetV2's generated depthwise and row kernels), tiny_bert:fp16 (the
# 128-bit LayerNorm/Softmax row kernels, the fused attention). run.sh runs keel-run --device
# cuda on each model's bundled input under `compute-sanitizer --tool memcheck`, with the CUDA
# graph and without it (--no-cuda-graph), and prints one line per run with memcheck's error
# summary; it exits non-zero when any run reports an error. Logs go to $OUT (default .).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" = prepare ] || { echo "usage: scripts/gpu-sanitize.sh prepare [MODEL:PRECISION,...]"; exit 2; }
cases=${2:-squeezenet1_1:fp16,mobilenet_v2:bf16,tiny_bert:fp16}
shared=${KEEL_SHARED_DIR:-../shared}
stage=.gpu/sanitize
rm -rf "$stage"; mkdir -p "$stage"
scripts/setup.sh
scripts/build.sh -DKEEL_CUDA=ON -DKEEL_BUILD_TESTS=ON -DKEEL_BUILD_BENCH=ON
cp build/bin/keel-run "$stage/"
for c in ${cases//,/ }; do
  m=${c%%:*} p=${c#*:}
  if [ -f "$shared/models/$m.onnx" ]; then
    build/bin/keelc "$shared/models/$m.onnx" -o "$stage/$m.$p.keel" --target cuda --precision "$p" >/dev/null
    cp "$shared/models/$m.input.bin" "$stage/$m.input.bin"
  else  # a test-set architecture (ctest exports build/tests/e2e/zoo): a random input of its shape
    onnx=build/tests/e2e/zoo/$m.onnx
    [ -f "$onnx" ] || { echo "gpu-sanitize: no model $m (neither $shared/models nor $onnx)"; exit 2; }
    # --batch 1: the zoo's dynamic-batch exports (Inception-v3, EfficientNetV2) at batch 1.
    build/bin/keelc "$onnx" -o "$stage/$m.$p.keel" --target cuda --precision "$p" --batch 1 >/dev/null
    .venv/bin/python -c "import onnx, numpy as np, sys
m = onnx.load(sys.argv[1]); d = [x.dim_value or 1 for x in m.graph.input[0].type.tensor_type.shape.dim]
np.random.default_rng(0).standard_normal(d).astype(np.float32).tofile(sys.argv[2])" "$onnx" "$stage/$m.input.bin"
  fi
done
# The executables travel xz-compressed (a call's carry is 64 MiB; the zoo's compact-weight exports
# shrink twenty-fold); run.sh unpacks them.
xz -T0 "$stage"/*.keel
cat >"$stage/run.sh" <<'RUN'
#!/usr/bin/env bash
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
out=${OUT:-.}; mkdir -p "$out"
status=0
xz -d *.keel.xz 2>/dev/null
for k in *.keel; do
  m=${k%%.*}
  for graph in graph --no-cuda-graph; do
    flag=(); [ "$graph" = graph ] || flag=("$graph")
    log=$out/memcheck_${k%.keel}_$graph.log
    timeout 300 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 9 ./keel-run "$k" \
      --device cuda --input "input=$m.input.bin" "${flag[@]}" >"$log" 2>&1
    rc=$?; [ $rc = 0 ] || status=1
    echo "$k $graph rc=$rc $(grep -E 'ERROR SUMMARY' "$log")"
  done
done
exit $status
RUN
chmod +x "$stage/run.sh"
echo "device call: carry [\"$stage\"]  command: OUT=\$OUT/sanitize bash $stage/run.sh"
