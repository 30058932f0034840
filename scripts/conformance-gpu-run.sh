#!/usr/bin/env bash
# The device half of `scripts/conformance.sh --target cuda --prepare` (staged as
# .gpu/conformance/run.sh): runs on the GPU machine from the repository root.
# Unpacks the staged cases and their CUDA artifacts, runs them with
# keel_conformance_run (no compiler needed there), writes conformance_report.{json,md}
# and results.txt (the printed table) under $OUT, prints the table.
# Exit status: the runner's (0 ok, 1 baseline regression, 77 no usable GPU).
set -u
R=$(cd "$(dirname "$0")" && pwd)
FINAL=${OUT:-/tmp/keel-conformance-out}
mkdir -p "$FINAL"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:${LD_LIBRARY_PATH:-}
work=$(mktemp -d /tmp/keel-conformance.XXXXXX)
tar -xzf "$R/cases.tar.gz" -C "$work" || { echo "cannot unpack $R/cases.tar.gz"; exit 1; }
args=(--cases "$work/dump" --phase run --artifacts "$work/artifacts" --target cuda --out "$FINAL"
      -j "${JOBS:-4}" --all-ops)
# The passing cases of this run, in the baseline format (copy it to
# tests/conformance/baseline-cuda.txt to make it the CUDA baseline).
[ "${FILTERED:-0}" = 1 ] || args+=(--write-baseline "$FINAL/baseline-cuda.txt")
[ -f "$R/baseline.txt" ] && args+=(--baseline "$R/baseline.txt")
echo "== GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1)"
"$R/keel_conformance_run" "${args[@]}" 2>&1 | tee "$FINAL/results.txt"
rc=${PIPESTATUS[0]}
rm -rf "$work"
exit "$rc"
