#!/usr/bin/env bash
# Memory plans on the GPU: for every planner, the device bytes and cudaMalloc count
# a compiled model really makes must equal what keel-plan's report claims.
#
#   scripts/plan-gpu-check.sh prepare [MODEL]   # here: keel-plan JSON + one executable per strategy
#   (device) bash .gpu/plans/run.sh             # there: keel-run --trace per strategy, compare
#
# MODEL defaults to tiny_bert (3 MB of weights, so every strategy fits in one call).
# "Planned" memory is the CUDA arenas (allocated when the VM is created) plus the
# dynamic storages (allocated by alloc_storage during the run); weights and library
# workspaces are reported separately and are not part of a plan.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" = prepare ] || { echo "usage: scripts/plan-gpu-check.sh prepare [MODEL]"; exit 2; }
model=${2:-tiny_bert}
shared=${KEEL_SHARED_DIR:-../shared}
stage=.gpu/plans
rm -rf "$stage"; mkdir -p "$stage/bin" "$stage/models"
scripts/setup.sh
scripts/build.sh -DKEEL_CUDA=ON
cp build/bin/keel-run "$stage/bin/"
cp scripts/plan-gpu-run.sh "$stage/run.sh"
build/bin/keel-plan "$shared/models/$model.onnx" --target cuda --strategies all --time-limit 5 \
  --json "$stage/plan.json" --no-timings -q
strategies=$(python3 -c "import json,sys; print(' '.join(s['name'] for s in json.load(open(sys.argv[1]))['strategies'] if s['ok']))" "$stage/plan.json")
for s in $strategies; do
  build/bin/keelc "$shared/models/$model.onnx" -o "$stage/models/$s.keel" --target cuda --memory-plan "$s" \
    --plan-time-limit 5 -q
done
cp "$shared/models/$model.input.bin" "$stage/input.bin"
echo "$strategies" >"$stage/strategies.txt"
du -sh "$stage"
