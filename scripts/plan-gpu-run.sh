#!/usr/bin/env bash
# Device half of scripts/plan-gpu-check.sh (staged as .gpu/plans/run.sh).
set -u
R=$(cd "$(dirname "$0")" && pwd)
FINAL=${OUT:-/tmp/keel-plans-out}
mkdir -p "$FINAL"
W=$(mktemp -d /tmp/keel-plans.XXXXXX)
trap 'tar -czf "$FINAL/plan-traces.tar.gz" -C "$W" . 2>/dev/null' EXIT
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:${LD_LIBRARY_PATH:-}
export KEEL_CUDA_AUTOTUNE=0  # fixed algorithm choices: every plan must give the same output bytes
for s in $(cat "$R/strategies.txt"); do
  "$R/bin/keel-run" "$R/models/$s.keel" --device cuda --no-cuda-graph --trace --input "input=$R/input.bin" \
    --output-dir "$W/out_$s" >"$W/trace_$s.log" 2>&1 || echo "$s: keel-run FAILED: $(tail -1 "$W/trace_$s.log")"
done
python3 - "$R" "$W" <<'PY' | tee "$FINAL/plans.txt"
import json, os, re, sys, filecmp
root, work = sys.argv[1], sys.argv[2]
report = json.load(open(root + "/plan.json"))
print("model %s, target %s: planned CUDA memory (report) vs measured (keel-run --trace)" % (report["model"], report["target"]))
print("%-24s %14s %14s %8s %8s %6s %s" % ("strategy", "report bytes", "run bytes", "report n", "run n", "equal", "output"))
ref = None
for s in open(root + "/strategies.txt").read().split():
    plan = next(p for p in report["strategies"] if p["name"] == s)
    arenas = [a for a in plan["arenas"] if a["device"] == "cuda"]
    dynamic = [st for st in plan["storages"] if st["device"] == "cuda" and st["arena"] < 0]
    want_n = len(arenas) + len(dynamic)
    want_b = sum(a["size"] for a in arenas) + sum(st["size"] for st in dynamic)
    got_n = got_b = 0
    for line in open("%s/trace_%s.log" % (work, s)):
        m = re.search(r"(setup \[arena \d+\]|alloc_storage .*?) allocate cudaMalloc (\d+) bytes", line)
        if m:
            got_n += 1; got_b += int(m.group(2))
    out = "%s/out_%s/output.bin" % (work, s)
    same = "missing"
    if os.path.exists(out):
        ref = ref or out
        same = "same" if filecmp.cmp(ref, out, shallow=False) else "DIFFERENT"
    ok = want_n == got_n and want_b == got_b
    print("%-24s %14d %14d %8d %8d %6s %s" % (s, want_b, got_b, want_n, got_n, "yes" if ok else "NO", same))
PY
