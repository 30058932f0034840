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

[ -f "$R/tests.tar.xz" ] && tar -xJf "$R/tests.tar.xz" -C "$R/bin"  # staged compressed (gpu-check.sh)

# Rebuild batch variants staged as a head plus the shared suffix of another file.
for t in "$R"/models/*.keel.tail; do
  [ -e "$t" ] || continue
  read -r src n <"$t"
  k=${t%.tail}
  cat "$k.head" >"$k" && tail -c "$n" "$R/models/$src" >>"$k"
done

say "== GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)"
say "== CUDA tests"
for b in "$R"/bin/keel_*_test; do
  t=$(basename "$b")
  "$b" >"$OUT/$t.log" 2>&1; rc=$?
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
  # The first run times the library kernels' candidates and writes the tuning file;
  # the no-graph run reads it, so both make the same algorithm choices.
  for mode in graph nograph tf32; do
    flags="--tuning-file $OUT/$m.b$b.tuning"; [ $mode = nograph ] && flags="$flags --no-cuda-graph"
    [ $mode = tf32 ] && flags=--allow-tf32
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

say "== latency: Keel vs PyTorch CUDA-graph replay, same run, at matched precision"
# PyTorch's default runs cuDNN convolutions in TF32 (torch.backends.cudnn.allow_tf32 = True);
# Keel's default is TF32 off. So both are measured both ways: fp32 (TF32 off on both sides)
# and tf32 (allowed on both sides). The anchor script is run as is for the second, and with
# TF32 switched off before it starts for the first.
torch_run() {  # torch_run OUTFILE TF32(0|1) MODEL BATCH
  python3 - "$R/torch_latency.py" "$1" "$2" "$3" "$4" <<'PY'
import runpy, sys, torch
anchor, out, tf32, model, batch = sys.argv[1:6]
torch.backends.cudnn.allow_tf32 = tf32 == "1"
torch.backends.cuda.matmul.allow_tf32 = False  # PyTorch's default for matmul
sys.argv = [anchor, "--models", model, "--batch", batch, "--iters", "200", "--out", out]
runpy.run_path(anchor, run_name="__main__")
PY
}
while read -r m b; do
  k=$R/models/$m.b$b.keel
  in="--input input=$OUT/$m.b$b.input.bin"
  "$R/bin/keel-cuda-time" "$k" $in --name "$m" >"$OUT/time_${m}_b$b.json" 2>"$OUT/time_${m}_b$b.err" \
    || say "$m b$b: keel-cuda-time FAILED: $(tail -1 "$OUT/time_${m}_b$b.err")"
  "$R/bin/keel-cuda-time" "$k" $in --name "$m" --allow-tf32 >"$OUT/time_${m}_b${b}_tf32.json" 2>>"$OUT/time_${m}_b$b.err"
  torch_run "$OUT/torch_${m}_b$b.json" 0 "$m" "$b" >/dev/null 2>"$OUT/torch_${m}_b$b.err" \
    || say "$m b$b: torch FAILED: $(tail -1 "$OUT/torch_${m}_b$b.err")"
  torch_run "$OUT/torch_${m}_b${b}_tf32.json" 1 "$m" "$b" >/dev/null 2>>"$OUT/torch_${m}_b$b.err"
done <"$R/models.txt"
python3 - "$OUT" "$R" <<'PY' | tee -a "$res"
import json, re, sys
out, root = sys.argv[1], sys.argv[2]
def load(path):
    try:
        d = json.load(open(path))
        return d[0] if isinstance(d, list) else d
    except Exception:
        return None
print("fp32 = TF32 off on both sides; tf32 = allowed on both; compute = device time without the")
print("program's own host<->device copies (PyTorch's replay has its input on the GPU); e2e = Run() wall time")
print("%-14s %5s | %9s %9s %9s %7s | %9s %9s %7s | %8s %8s" % ("model", "batch", "keel fp32", "keel e2e", "torch fp32", "ratio",
      "keel tf32", "torch tf32", "ratio", "keel MiB", "torch MiB"))
for line in open(root + "/models.txt"):
    m, b = line.split(); b = int(b)
    k, kt = load("%s/time_%s_b%d.json" % (out, m, b)), load("%s/time_%s_b%d_tf32.json" % (out, m, b))
    t, tt = load("%s/torch_%s_b%d.json" % (out, m, b)), load("%s/torch_%s_b%d_tf32.json" % (out, m, b))
    if not (k and kt and t and tt):
        print("%-14s %5d missing results" % (m, b)); continue
    summary = open("%s/models/%s.b%d.keelc.txt" % (root, m, b)).read()
    arena = re.search(r"memory plan \S+: ([\d.]+) (MiB|KiB|B)", summary)
    scale = {"MiB": 1, "KiB": 1 / 1024, "B": 1 / 1048576}
    keel_mib = float(arena.group(1)) * scale[arena.group(2)] if arena else float("nan")
    print("%-14s %5d | %9.3f %9.3f %9.3f %7.2f | %9.3f %9.3f %7.2f | %8.2f %8.2f" % (
        m, b, k["compute_ms"], k["e2e_ms"], t["cudagraph_ms"], k["compute_ms"] / t["cudagraph_ms"],
        kt["compute_ms"], tt["cudagraph_ms"], kt["compute_ms"] / tt["cudagraph_ms"],
        keel_mib, t["peak_activation_bytes"] / 1048576))
PY
echo "(logs: logs.tar.gz under \$OUT)"
