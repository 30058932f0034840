"""PyTorch latency of every zoo architecture (tests/models/zoo_models.py), through the shared anchor.

../shared/anchors/torch_latency.py times a fixed list of models; this wrapper adds the zoo's other
architectures (same torchvision builders with weights=None, the zoo's own UNet and so on) to that
list and runs the anchor unchanged, so every model is timed by the same code (eager, CUDA-graph
replay, torch.compile). Both files must sit beside this one (half-gpu.sh stages them so).
Arguments: those of torch_latency.py, e.g.
    python3 torch_zoo_latency.py --models inception_v3 --batch 32 --dtype float16 --channels-last
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_latency  # noqa: E402
import zoo_models  # noqa: E402

for name, (build, make_input, _) in zoo_models.MODELS.items():
    # The anchor's own entries win: its numbers stay comparable with earlier runs.
    if name not in torch_latency.MODELS:
        torch_latency.MODELS[name] = (build, tuple(make_input().shape[1:]))

if __name__ == "__main__":
    torch_latency.main()
