"""PyTorch CUDA-graph replay latency of one model with cuDNN TF32 off and on (cudnn.benchmark),
plus the heaviest kernels of an eager forward with TF32 off. The shared anchors/torch_latency.py
keeps PyTorch's default (torch.backends.cudnn.allow_tf32 = True), so its fp32 numbers may use TF32
tensor cores; Keel's default is TF32 off. Usage: torch_tf32.py DIR_WITH_torch_latency MODEL BATCH...
"""
import json, sys, torch
sys.path.insert(0, sys.argv[1])
from torch_latency import MODELS, timed, graphed
from torch.profiler import profile, ProfilerActivity

name = sys.argv[2]
torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = False
print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), "default cudnn.allow_tf32",
      torch.backends.cudnn.allow_tf32, flush=True)
for b in map(int, sys.argv[3:]):
    make, shape = MODELS[name]
    for tf32 in (False, True):
        torch.backends.cudnn.allow_tf32 = tf32
        torch.manual_seed(0)
        m = make().eval().cuda()
        x = torch.randn(b, *shape, device="cuda")
        with torch.inference_mode():
            ms = timed(graphed(m, x), 200)
            r = {"model": name, "batch": b, "cudnn_tf32": tf32, "cudagraph_ms": round(ms, 4)}
            print(json.dumps(r), flush=True)
            if not tf32:
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(5):
                        m(x)
                    torch.cuda.synchronize()
                ev = sorted(prof.key_averages(), key=lambda e: -e.device_time_total)
                for e in ev[:12]:
                    print("   %9.1f us x%-3d %s" % (e.device_time_total / 5, e.count // 5, e.key[:120]), flush=True)
