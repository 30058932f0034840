"""Per-kernel device time of the PyTorch reference models (eager, cudnn.benchmark), top N."""
import sys, torch, torchvision
sys.path.insert(0, sys.argv[1])
from torch_latency import MODELS
from torch.profiler import profile, ProfilerActivity
name, batch = sys.argv[2], int(sys.argv[3])
torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
make, shape = MODELS[name]
torch.manual_seed(0)
m = make().eval().cuda()
x = torch.randn(batch, *shape, device="cuda")
with torch.inference_mode():
    for _ in range(10):
        m(x)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            m(x)
        torch.cuda.synchronize()
ev = prof.key_averages()
tot = sum(e.device_time_total for e in ev) / 5
print("%s b%d: torch kernels total %.1f us per forward" % (name, batch, tot))
for e in sorted(ev, key=lambda e: -e.device_time_total)[:25]:
    print("  %9.1f us  x%-4d %s" % (e.device_time_total / 5, e.count // 5, e.key[:110]))
