#!/bin/bash
# Per-kernel device times of one PyTorch fp16 forward pass (eager, the model torch_latency.py builds),
# from Nsight Compute: the counterpart of half-gpu.sh's KEEL_HALF_NCU table, to see which of
# PyTorch's kernels Keel's stand against. On the GPU machine, with torch_latency.py beside this file:
#   bash torch_kernels.sh MODEL BATCH OUTDIR     (writes OUTDIR/torch_ncu_MODEL.bBATCH.{csv,err,txt})
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
m=$1 b=$2 o=$3
py=$(mktemp /tmp/torch_kernels.XXXXXX.py)
cat >"$py" <<PY
import sys, torch
sys.path.insert(0, "$here")
import torch_latency as T
make, shape = T.MODELS["$m"]
torch.manual_seed(0)
model = make().eval().cuda().half()
x = torch.randn($b, *shape, device="cuda", dtype=torch.float16)
with torch.inference_mode():
    for _ in range(3): model(x)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()   # only this pass is profiled
    model(x); torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
PY
timeout 300 ncu --profile-from-start off --cache-control none --clock-control none --metrics gpu__time_duration.sum \
  --csv python3 "$py" >"$o/torch_ncu_$m.b$b.csv" 2>"$o/torch_ncu_$m.b$b.err"
rm -f "$py"
python3 - "$o/torch_ncu_$m.b$b.csv" >"$o/torch_ncu_$m.b$b.txt" <<'PY'
import collections, csv, re, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]).read().splitlines() if l.startswith('"')))
agg = collections.defaultdict(lambda: [0, 0.0])
for r in rows:
    key = re.sub(r"\(.*", "", r["Kernel Name"])[:90] + " grid=" + r["Grid Size"].replace(" ", "")
    agg[key][0] += 1
    agg[key][1] += float(r["Metric Value"].replace(",", "")) / 1000
print(f"{sum(v[1] for v in agg.values()):.1f} us in {len(rows)} kernels")
for key, (c, us) in sorted(agg.items(), key=lambda x: -x[1][1]):
    print(f"{us:9.1f} us {c:4d} x {us / c:7.2f}  {key}")
PY
