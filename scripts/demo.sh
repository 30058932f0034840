#!/usr/bin/env bash
# The main job, end to end on a bundled model: installs dependencies, builds Keel,
# compiles an ONNX model with keelc and runs it with keel-run, then compares the
# output with PyTorch's reference.
#
#   scripts/demo.sh [MODEL]   MODEL: squeezenet1_1 (default), resnet18, mobilenet_v2, tiny_bert
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-squeezenet1_1}
models=${KEEL_SHARED_DIR:-../shared}/models
[ -f "$models/$model.onnx" ] || { echo "demo: $models/$model.onnx not found (set KEEL_SHARED_DIR)"; exit 1; }

KEEL_SKIP_VENV=1 scripts/setup.sh
KEEL_BUILD_TARGETS="keelc keel-run" scripts/build.sh
out=build/demo
mkdir -p "$out"

echo "== keelc: $model.onnx -> $out/$model.keel (+ .so)"
build/bin/keelc "$models/$model.onnx" -o "$out/$model.keel"

echo "== keel-run (first run traced: every instruction and the device operation it made)"
build/bin/keel-run "$out/$model.keel" --input "input=$models/$model.input.bin" --trace >"$out/trace.txt"
head -n 30 "$out/trace.txt"
echo "   ... ($(grep -c '^trace ' "$out/trace.txt") trace lines in all: $out/trace.txt)"
echo "== keel-run (timed)"
build/bin/keel-run "$out/$model.keel" --input "input=$models/$model.input.bin" \
  --output-dir "$out/outputs" --iterations 20

echo "== compare with PyTorch's reference output"
python3 - "$out/outputs/output.bin" "$models/$model.output.bin" <<'PY'
import math, struct, sys
def floats(path):
    data = open(path, "rb").read()
    return struct.unpack("<%df" % (len(data) // 4), data)
out, ref = floats(sys.argv[1]), floats(sys.argv[2])
assert len(out) == len(ref), (len(out), len(ref))
err = math.sqrt(sum((a - b) ** 2 for a, b in zip(out, ref))) / math.sqrt(sum(b * b for b in ref))
print("relative L2 error vs PyTorch: %.3g (%s)" % (err, "ok" if err <= 1e-4 else "TOO LARGE"))
sys.exit(0 if err <= 1e-4 else 1)
PY
