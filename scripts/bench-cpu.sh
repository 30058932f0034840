#!/usr/bin/env bash
# CPU latency of the bundled models: Keel beside ONNX Runtime (and PyTorch), measured in one run.
#
#   scripts/bench-cpu.sh [THREADS] [MODEL...]     (default: 2 threads, the 4 bundled models)
#   scripts/bench-cpu.sh [THREADS] zoo            (every architecture of tests/models/zoo_models.py)
#
# MODEL is a bundled model (../shared/models), one of the extra architectures of
# scripts/export_cpu_bench_models.py (mnasnet1_0, shufflenet_v2, resnet50, convnext_tiny,
# bert_base), or any architecture of the test set's zoo (tests/models/zoo_models.py: vit_b_16,
# mc3_18, t5_encoder, ...; exported by tests/models/export_zoo.py as keel_e2e.zoo_pytorch exports
# it, cached in build/tests/e2e/zoo). Missing ones are exported into build/bench-models with
# /usr/bin/python3 + torch. The word `zoo` stands for all of the zoo's names (its mobilenet_v2 is
# the bundled one: same architecture). KEEL_BENCH_RUNS (default 20) sets the timed runs per side
# and round (fewer for the 3-D video models, whose runs take 0.1-0.5 s).
#
# Builds keelc and keel-bench, compiles each model with keelc (the compile time is reported), then
# scripts/bench_cpu_compare.py (the test virtualenv's python, onnxruntime) alternates keel-bench and
# ONNX Runtime's CPU provider (intra-op threads = THREADS, inter-op 1, ORT_ENABLE_ALL) for
# KEEL_BENCH_ROUNDS rounds (default 5) and prints a table plus its JSON form (also written to
# build/bench-cpu/compare-tTHREADS.json). PyTorch eager (Debian's python3-torch under
# /usr/bin/python3, through ../shared/anchors/torch_latency.py) is a second column; set
# KEEL_BENCH_TORCH=0 to skip it. The build machine is shared: the load average is printed
# with the numbers, and only the ratios measured in one run mean much.
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}
shift || true
shared=${KEEL_SHARED_DIR:-../shared}
models=()
for m in "$@"; do
  if [ "$m" = zoo ]; then
    read -r -a zoo <<<"$(/usr/bin/python3 scripts/export_cpu_bench_models.py --list-zoo)"
    models+=("${zoo[@]}")
  else
    models+=("$m")
  fi
done
[ ${#models[@]} -gt 0 ] || models=(squeezenet1_1 resnet18 mobilenet_v2 tiny_bert)
out=build/bench-cpu
mkdir -p "$out"
scripts/setup.sh >/dev/null
KEEL_BUILD_TARGETS="keelc keel-bench" scripts/build.sh

# One models folder for bench_cpu_compare.py: links to the bundled models and the exported ones.
mkdir -p "$out/models"
compiled=() failed=()
for m in "${models[@]}"; do
  src="$shared/models"
  if [ ! -f "$src/$m.onnx" ]; then
    src=build/bench-models
    [ -f "$src/$m.onnx" ] || /usr/bin/python3 scripts/export_cpu_bench_models.py --out "$src" --models "$m"
  fi
  for f in "$src/$m".*; do ln -sf "$(realpath "$f")" "$out/models/"; done
  # A model keelc cannot compile is reported and left out of the table; the others still run.
  if build/bin/keelc "$out/models/$m.onnx" -o "$out/$m.keel" >"$out/$m.keelc.txt" 2>&1; then
    compiled+=("$m")
  else
    echo "bench-cpu: keelc failed on $m (see $out/$m.keelc.txt)" >&2
    failed+=("$m")
  fi
done
[ ${#compiled[@]} -gt 0 ] || exit 1
models=("${compiled[@]}")
torch_json=""
if [ "${KEEL_BENCH_TORCH:-1}" != 0 ]; then
  if ! /usr/bin/python3 -c "import torch, torchvision" 2>/dev/null; then
    echo "bench-cpu: installing python3-torch python3-torchvision" >&2
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-torch python3-torchvision >/dev/null
  fi
  # Only the models torch_latency.py builds (it has no MnasNet): the others get no PyTorch column.
  torch_models=()
  for m in "${models[@]}"; do
    grep -q "^    \"$m\":" "$shared/anchors/torch_latency.py" && torch_models+=("$m")
  done
  if [ ${#torch_models[@]} -gt 0 ]; then
    (IFS=,; /usr/bin/python3 "$shared/anchors/torch_latency.py" --device cpu --threads "$threads" \
       --models "${torch_models[*]}" --iters 20 --out "$out/torch-t$threads.json" >/dev/null)
    torch_json="$out/torch-t$threads.json"
  fi
fi
.venv/bin/python scripts/bench_cpu_compare.py --out "$out" --threads "$threads" --rounds "${KEEL_BENCH_ROUNDS:-5}" \
  --runs "${KEEL_BENCH_RUNS:-20}" \
  --models-dir "$out/models" --keel-bench build/bin/keel-bench --torch "$torch_json" "${models[@]}"
[ ${#failed[@]} -eq 0 ] || { echo "bench-cpu: not compiled: ${failed[*]}" >&2; exit 1; }
