#!/usr/bin/env bash
# cuda-perf device round (staged by bench/cuda/perf_round/stage.sh): CUDA tests, end-to-end
# correctness, Keel compute-only/e2e time vs PyTorch CUDA-graph replay, autotune logs, bandwidth.
set -u
R=$(cd "$(dirname "$0")" && pwd)
FINAL=${OUT:-/tmp/cp-out}; mkdir -p "$FINAL"
W=$(mktemp -d /tmp/cp.XXXXXX)
trap 'cp "$W/summary.txt" "$FINAL/" 2>/dev/null; tar -czf "$FINAL/logs.tar.gz" -C "$W" --exclude="*.bin" . 2>/dev/null' EXIT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:$R/lib:${LD_LIBRARY_PATH:-}
export KEEL_CUDA_TEST_LIB_DIR=$R/lib PYTHONUNBUFFERED=1
S=$W/summary.txt; : >"$S"
say() { echo "$*" | tee -a "$S"; }
[ -f "$R/pack.tar.gz" ] && bash "$R/unpack.sh" >/dev/null
B=$R/bin
MODELS=${MODELS:-$(cat $R/models.txt | tr '\n' ';')}
if [ "${TESTS:-1}" = 1 ]; then
  for t in keel_cuda_vm_test keel_cuda_library_kernels_test; do
    timeout 120 "$B/$t" >"$W/$t.log" 2>&1; say "$t: exit $? $(grep -E '^\[  (PASSED|FAILED) ' "$W/$t.log" | tr '\n' ' ')"
  done
fi
while read -r m b; do
  [ -z "$m" ] && continue
  k=$R/models/$m.b$b.keel
  [ -f "$k" ] || { say "$m b$b: missing $k"; continue; }
  python3 -c "import numpy as np,sys; np.tile(np.fromfile(sys.argv[1],dtype=np.float32),int(sys.argv[2])).tofile(sys.argv[3])" \
    "$R/models/$m.input.bin" "$b" "$W/$m.b$b.input.bin"
  for mode in graph nograph; do
    fl=""; [ $mode = nograph ] && fl=--no-cuda-graph
    timeout 120 "$B/keel-run" "$k" --device cuda $fl --iterations 2 --input "input=$W/$m.b$b.input.bin" --output-dir "$W/o_${m}_${b}_$mode" >"$W/run_${m}_${b}_$mode.log" 2>&1 || say "$m b$b $mode FAILED: $(tail -1 "$W/run_${m}_${b}_$mode.log")"
  done
  python3 - "$W" "$R/models/$m.output.bin" "$m" "$b" <<'PY' | tee -a "$S"
import sys, os, numpy as np
w, ref, m, b = sys.argv[1], np.fromfile(sys.argv[2], dtype=np.float32), sys.argv[3], int(sys.argv[4])
def load(mode):
    p = "%s/o_%s_%d_%s/output.bin" % (w, m, b, mode)
    return np.fromfile(p, dtype=np.float32).reshape(b, -1) if os.path.exists(p) else None
g, n = load("graph"), load("nograph")
err = lambda o: max(np.linalg.norm(r - ref) / np.linalg.norm(ref) for r in o)
print("%-14s b%-3d rel L2 graph %s nograph %s  graph-vs-nograph max|d| %s" % (m, b,
      "%.3g" % err(g) if g is not None else "n/a", "%.3g" % err(n) if n is not None else "n/a",
      "%.3g" % float(np.abs(g - n).max()) if g is not None and n is not None else "n/a"))
PY
  KEEL_CUDA_AUTOTUNE_LOG=1 timeout 200 "$B/keel-cuda-time" "$k" --name "$m" --kernels --input "input=$W/$m.b$b.input.bin" >"$W/time_${m}_$b.txt" 2>"$W/tune_${m}_$b.log"
  say "keel $m b$b: $(head -1 "$W/time_${m}_$b.txt")"
  if [ "${AB:-1}" = 1 ]; then
    env ${AB_ENV:-KEEL_CUDA_AUTOTUNE=0} timeout 100 "$B/keel-cuda-time" "$k" --name "$m" --input "input=$W/$m.b$b.input.bin" >"$W/time0_${m}_$b.txt" 2>&1
    say "keel(${AB_ENV:-KEEL_CUDA_AUTOTUNE=0}) $m b$b: $(head -1 "$W/time0_${m}_$b.txt")"
  fi
  timeout 100 "$B/keel-bench" "$k" --device cuda --name "$m" --json --warmup 10 --iterations 200 --input "input=$W/$m.b$b.input.bin" >"$W/bench_${m}_$b.json" 2>&1
  timeout 150 python3 "$R/torch_latency.py" --models "$m" --batch "$b" --iters 200 --out "$W/torch_${m}_$b.json" >/dev/null 2>"$W/torch_${m}_$b.err"
  say "torch $m b$b: $(cat "$W/torch_${m}_$b.json" 2>/dev/null | tr -d '\n ' )"
  [ "${PROF:-1}" = 1 ] && timeout 100 python3 "$R/torch_prof.py" "$R" "$m" "$b" >"$W/prof_${m}_$b.txt" 2>&1
done < <(echo "$MODELS" | tr ';' '\n')
python3 - "$W" <<'PY' | tee -a "$S"
import json, glob, os, sys
w = sys.argv[1]
print("%-14s %5s %9s %9s %9s %9s %11s %7s %7s" % ("model", "batch", "keel e2e", "keel cmp", "copies", "kbench", "torch graph", "r(cmp)", "r(e2e)"))
for f in sorted(glob.glob(w + "/time_*.txt")):
    base = os.path.basename(f)[5:-4]; m, b = base.rsplit("_", 1)
    try:
        k = json.loads(open(f).readline()); t = json.load(open("%s/torch_%s_%s.json" % (w, m, b)))[0]
        kb = json.loads(open("%s/bench_%s_%s.json" % (w, m, b)).read())["median_ms"]
    except Exception as e:
        print(m, b, "missing", e); continue
    tg = t["cudagraph_ms"]
    print("%-14s %5s %9.3f %9.3f %9.3f %9.3f %11.3f %7.2f %7.2f" % (m, b, k["e2e_ms"], k["compute_ms"], k["copies_ms"], kb, tg, k["compute_ms"] / tg, kb / tg))
PY
if [ -d "$R/bw" ] && [ "${BW:-1}" = 1 ]; then
  say "== generated kernel bandwidth"
  timeout 120 python3 "$R/bw/kernel_bandwidth.py" run "$R/bw" --time-bin "$B/keel-cuda-time" 2>&1 | tee -a "$S"
fi
