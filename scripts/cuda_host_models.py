"""Extra models for scripts/cuda-host-check.sh: a folder to pass as KEEL_SHARED_DIR.

The bundled models (../shared/models) are all channels-first fp32 classifiers or encoders; these add
what they lack, exported with fixed seeds (batch 1 unless said):
  prenorm  a 2-layer pre-norm Transformer encoder (bf16 keeps its residual stream in f32,
           passes/mixed_precision.h: a half GEMM writing f32);
  unet     the zoo's UNet (tests/models/zoo_models.py: ConvTranspose, Resize, skip Concats);
  unet8    the same at batch 8, where its full-resolution half convolutions run Keel's own
           kernel (keel.conv2d: 2^17 output pixels, compiler/driver/cuda_backend_conv.h);
  video    a small 3-D ResNet on an 8-frame clip (3-D convolutions: NDHWC at half precision);
  resnext  ResNeXt bottlenecks (grouped 3x3 convolutions, NHWC at fp16, and a grouped 5x5, which
           stays NCHW): the convolutions the VM runs as cuDNN backend-API engines by default.
The bundled models named on the command line are linked in beside them.

    /usr/bin/python3 scripts/cuda_host_models.py OUT_DIR [SHARED_MODEL ...]
    KEEL_SHARED_DIR=OUT_DIR scripts/cuda-host-check.sh prepare unet:greedy-size:fp16,prenorm:greedy-size:bf16,...

Needs PyTorch (apt-get install python3-torch python3-torchvision, /usr/bin/python3).
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "tests", "models"))
import zoo_models  # noqa: E402


class PreNorm(nn.Module):
    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(64)

    def forward(self, x):
        return self.norm(self.enc(x))


class Video(nn.Module):
    """A stem and two residual blocks of 3-D convolutions (mc3_18's shapes, narrower), pooled and classified."""

    def __init__(self, width=32, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv3d(3, width, (3, 7, 7), (1, 2, 2), (1, 3, 3), bias=False),
                                  nn.BatchNorm3d(width), nn.ReLU())
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Conv3d(width, width, 3, padding=1, bias=False), nn.BatchNorm3d(width), nn.ReLU(),
                          nn.Conv3d(width, width, (1, 3, 3), padding=(0, 1, 1), bias=False), nn.BatchNorm3d(width))
            for _ in range(2))
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        x = self.stem(x)
        for b in self.blocks:
            x = torch.relu(b(x) + x)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool3d(x, 1), 1))


class ResNeXt(nn.Module):
    """A stem and three ResNeXt bottlenecks (cardinality 8, 4 channels per group: grouped, not depthwise,
    so cuDNN takes them), the last with a 5x5 grouped convolution; pooled and classified."""

    def __init__(self, width=32, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 2, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())

        def block(k):
            return nn.Sequential(nn.Conv2d(width, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                                 nn.Conv2d(width, width, k, padding=k // 2, groups=8, bias=False),
                                 nn.BatchNorm2d(width), nn.ReLU(),
                                 nn.Conv2d(width, width, 1, bias=False), nn.BatchNorm2d(width))
        self.blocks = nn.ModuleList([block(3), block(3), block(5)])
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        x = self.stem(x)
        for b in self.blocks:
            x = torch.relu(b(x) + x)
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def export(name, model, x, input_name, out_dir):
    torch.onnx.export(model.eval(), (x,), os.path.join(out_dir, name + ".onnx"), opset_version=17,
                      input_names=[input_name], output_names=["output"])
    x.numpy().astype(np.float32).tofile(os.path.join(out_dir, name + ".input.bin"))
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump({"inputs": [{"name": input_name, "shape": list(x.shape)}]}, f)


def main():
    out_dir = os.path.join(sys.argv[1], "models")
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    export("prenorm", PreNorm(), torch.rand(1, 16, 64) * 2 - 1, "x", out_dir)
    torch.manual_seed(0)
    build, make_input, _ = zoo_models.MODELS["unet"]
    export("unet", build(), make_input(), "input", out_dir)
    torch.manual_seed(0)
    export("unet8", build(), torch.cat([make_input() for _ in range(8)]), "input", out_dir)
    torch.manual_seed(0)
    export("video", Video(), torch.rand(1, 3, 8, 56, 56) * 2 - 1, "input", out_dir)
    torch.manual_seed(0)
    model = ResNeXt()
    for m in model.modules():  # non-trivial batch-norm statistics, so the folded weights are not identities
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    export("resnext", model, torch.rand(1, 3, 56, 56) * 2 - 1, "input", out_dir)
    shared = os.path.join(here, "..", "..", "shared", "models")
    for m in sys.argv[2:]:
        for ext in (".onnx", ".json", ".input.bin"):
            link = os.path.join(out_dir, m + ext)
            if not os.path.lexists(link):
                os.symlink(os.path.abspath(os.path.join(shared, m + ext)), link)


if __name__ == "__main__":
    main()
