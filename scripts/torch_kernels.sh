#!/bin/bash
# Per-kernel device times of one PyTorch fp16 forward pass (eager, the model torch_latency.py builds),
# from Nsight Compute: the counterpart of half-gpu.sh's KEEL_HALF_NCU table, to see which of
# PyTorch's kernels Keel's stand against. On the GPU machine, with torch_latency.py and
# ncu_summary.py beside this file:
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
python3 "$here/ncu_summary.py" "$o/torch_ncu_$m.b$b.csv" >"$o/torch_ncu_$m.b$b.txt"
