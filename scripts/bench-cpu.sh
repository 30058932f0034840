#!/usr/bin/env bash
# CPU latency of every zoo model, Keel beside PyTorch, measured in the same run.
#
#   scripts/bench-cpu.sh [THREADS]      (default: 2)
#
# Builds keelc and keel-bench, compiles each model with keelc,
# times it with keel-bench, times the same architecture with PyTorch on the CPU
# (Debian's python3-torch under /usr/bin/python3, installed if missing) through
# ../shared/anchors/torch_latency.py, and prints one table with the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}
shared=${KEEL_SHARED_DIR:-../shared}
models=(squeezenet1_1 resnet18 mobilenet_v2 tiny_bert)
out=build/bench-cpu
mkdir -p "$out"
KEEL_SKIP_VENV=1 scripts/setup.sh
KEEL_BUILD_TARGETS="keelc keel-bench" scripts/build.sh

if ! /usr/bin/python3 -c "import torch, torchvision" 2>/dev/null; then
  echo "bench-cpu: installing python3-torch python3-torchvision" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-torch python3-torchvision >/dev/null
fi

for m in "${models[@]}"; do
  build/bin/keelc "$shared/models/$m.onnx" -o "$out/$m.keel" >"$out/$m.keelc.txt"
  build/bin/keel-bench "$out/$m.keel" --threads "$threads" --input "input=$shared/models/$m.input.bin" \
    --name "$m" --json --warmup 3 --iterations 20 --min-seconds 1 >"$out/$m.keel.json"
done
(IFS=,; /usr/bin/python3 "$shared/anchors/torch_latency.py" --device cpu --threads "$threads" \
   --models "${models[*]}" --iters 20 --out "$out/torch.json" >/dev/null)

/usr/bin/python3 - "$out" "${models[@]}" <<'PY'
import json, sys
out, models = sys.argv[1], sys.argv[2:]
torch = {r["model"]: r for r in json.load(open(out + "/torch.json"))}
import re
print("%-14s %10s %8s %12s %12s %10s" % ("model", "compile s", "threads", "keel ms", "torch ms", "keel/torch"))
for m in models:
    k = json.load(open("%s/%s.keel.json" % (out, m)))
    t = torch[m]
    compile_s = float(re.search(r"compiled in ([\d.]+) s", open("%s/%s.keelc.txt" % (out, m)).read()).group(1))
    print("%-14s %10.2f %8d %12.3f %12.3f %10.2f" % (m, compile_s, k["threads"], k["median_ms"], t["eager_ms"],
                                                   k["median_ms"] / t["eager_ms"]))
PY
