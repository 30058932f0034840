#!/usr/bin/env bash
# The device half of scripts/gpu-check.sh (staged as .gpu/round/run.sh): runs on the
# GPU machine from the repository root, writes under $OUT, prints the summary.
set -u
R=$(cd "$(dirname "$0")" && pwd)
FINAL=${OUT:-/tmp/keel-gpu-out}
mkdir -p "$FINAL"
# Work in a scratch folder; only results.txt and one archive of the logs go back
# (the device tool returns at most 8 files).
OUT=$(mktemp -d /tmp/keel-gpu.XXXXXX)
trap 'cp "$OUT/results.txt" "$FINAL/" 2>/dev/null; tar -czf "$FINAL/logs.tar.gz" -C "$OUT" --exclude="*.bin" . 2>/dev/null' EXIT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:$R/lib:${LD_LIBRARY_PATH:-}
export KEEL_CUDA_TEST_LIB_DIR=$R/lib PYTHONUNBUFFERED=1
res=$OUT/results.txt
: >"$res"
say() { echo "$*" | tee -a "$res"; }

say "== GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)"
say "== CUDA tests"
for t in keel_cuda_vm_test keel_cuda_library_kernels_test; do
  "$R/bin/$t" >"$OUT/$t.log" 2>&1; rc=$?
  say "$t: exit $rc; $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/$t.log" | tr '\n' ' ')"
done

say "== end to end (relative L2 vs PyTorch reference; graph vs no-graph must be identical)"
while read -r m b; do
  k=$R/models/$m.b$b.keel
  python3 - "$R/models/$m.input.bin" "$b" "$OUT/$m.b$b.input.bin" <<'PY'
import sys, numpy as np
x = np.fromfile(sys.argv[1], dtype=np.float32)
np.tile(x, int(sys.argv[2])).tofile(sys.argv[3])
PY
  for mode in graph nograph tf32; do
    flags=""; [ $mode = nograph ] && flags=--no-cuda-graph; [ $mode = tf32 ] && flags=--allow-tf32
    "$R/bin/keel-run" "$k" --device cuda $flags --iterations 3 --input "input=$OUT/$m.b$b.input.bin" \
      --output-dir "$OUT/out_${m}_b${b}_$mode" >"$OUT/run_${m}_b${b}_$mode.log" 2>&1 || say "$m b$b $mode: keel-run FAILED: $(tail -1 "$OUT/run_${m}_b${b}_$mode.log")"
  done
  python3 - "$OUT" "$R/models/$m.output.bin" "$m" "$b" <<'PY' | tee -a "$res"
import sys, os, numpy as np
out, ref_path, m, b = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ref = np.fromfile(ref_path, dtype=np.float32)
def load(mode):
    p = "%s/out_%s_b%d_%s/output.bin" % (out, m, b, mode)
    return np.fromfile(p, dtype=np.float32).reshape(b, -1) if os.path.exists(p) else None
def err(o):
    return max(np.linalg.norm(row - ref) / np.linalg.norm(ref) for row in o)
g, n, t = load("graph"), load("nograph"), load("tf32")
line = "%-14s b%-3d" % (m, b)
line += " fp32 rel L2 %s" % ("%.3g" % err(g) if g is not None else "n/a")
line += "  graph==nograph %s" % ((g is not None and n is not None and np.array_equal(g, n)))
line += "  tf32 rel L2 %s" % ("%.3g" % err(t) if t is not None else "n/a")
print(line)
PY
done <"$R/models.txt"

say "== trace of one run (first model): device operations during Run"
read -r m b <"$R/models.txt"
"$R/bin/keel-run" "$R/models/$m.b$b.keel" --device cuda --no-cuda-graph --trace >"$OUT/trace_${m}.log" 2>&1
say "$m: $(grep -c cudaMalloc "$OUT/trace_${m}.log") cudaMalloc lines, $(grep -c 'launch' "$OUT/trace_${m}.log") launches, $(grep -c cudaMemcpy "$OUT/trace_${m}.log") copies in the traced run"

say "== latency: Keel (CUDA graph) vs PyTorch CUDA-graph replay, same run"
while read -r m b; do
  "$R/bin/keel-bench" "$R/models/$m.b$b.keel" --device cuda --name "$m" --json --warmup 10 --iterations 200 \
    >"$OUT/bench_${m}_b$b.json" 2>"$OUT/bench_${m}_b$b.err" || say "$m b$b: keel-bench FAILED: $(tail -1 "$OUT/bench_${m}_b$b.err")"
  python3 "$R/torch_latency.py" --models "$m" --batch "$b" --iters 200 --out "$OUT/torch_${m}_b$b.json" >/dev/null 2>"$OUT/torch_${m}_b$b.err" \
    || say "$m b$b: torch FAILED: $(tail -1 "$OUT/torch_${m}_b$b.err")"
done <"$R/models.txt"
python3 - "$OUT" "$R" <<'PY' | tee -a "$res"
import json, os, re, sys
out, root = sys.argv[1], sys.argv[2]
print("%-14s %5s %10s %12s %12s %8s %14s %14s" % ("model", "batch", "keel ms", "torch graph", "torch eager", "ratio", "keel act MiB", "torch act MiB"))
for line in open(root + "/models.txt"):
    m, b = line.split(); b = int(b)
    try:
        k = json.load(open("%s/bench_%s_b%d.json" % (out, m, b)))
        t = json.load(open("%s/torch_%s_b%d.json" % (out, m, b)))[0]
    except Exception as e:
        print("%-14s %5d missing (%s)" % (m, b, e)); continue
    summary = open("%s/models/%s.b%d.keelc.txt" % (root, m, b)).read()
    arena = re.search(r"memory plan \S+: ([\d.]+) (MiB|KiB|B)", summary)
    scale = {"MiB": 1, "KiB": 1 / 1024, "B": 1 / 1048576}
    keel_mib = float(arena.group(1)) * scale[arena.group(2)] if arena else float("nan")
    print("%-14s %5d %10.3f %12.3f %12.3f %8.2f %14.2f %14.2f" % (m, b, k["median_ms"], t["cudagraph_ms"], t["eager_ms"],
          k["median_ms"] / t["cudagraph_ms"], keel_mib, t["peak_activation_bytes"] / 1048576))
PY
echo "(logs: logs.tar.gz under \$OUT)"
