"""The model zoo's architectures: torchvision models with random weights, and small models
written here in plain torch (a UNet, a T5-style encoder, a BERT-shaped Transformer encoder, and the GRU
model of export_gru.py).

Every entry of MODELS maps a name to (builder, input maker, size class). A builder returns an
eval-mode torch.nn.Module whose forward takes one tensor and returns one tensor; the input maker
returns that tensor. Both are called after torch.manual_seed, so they are deterministic.
Size class "small" models run in CI (ctest); "large" ones only with KEEL_ZOO_ALL=1.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


def randomize(model):
    """Random values where an initializer leaves a constant, then random BatchNorm statistics.

    torchvision zero-initializes many biases, ViT's class token and classification head (a zero
    head makes the whole output zero: a vacuous comparison), and sets norm weights to one: all
    of these would hide bugs (a dropped bias add, a wrong scale). A constant parameter with 2+
    dimensions gets N(0, 1/fan_in); a constant vector c gets c + N(0, 0.1^2).
    """
    with torch.no_grad():
        for p in model.parameters():
            flat = p.reshape(-1)
            if flat.numel() > 1 and bool((flat == flat[0]).all()):
                if p.dim() >= 2:
                    p.copy_(torch.randn_like(p) / math.sqrt(p[0].numel()))
                else:
                    p.add_(torch.randn_like(p) * 0.1)
    calibration_input = getattr(model, "keel_calibrate_bn", None)
    if calibration_input is not None:
        return calibrate_batchnorm(model, calibration_input)
    return randomize_batchnorm(model)


def with_bn_calibration(builder, make_input):
    """`builder`'s model, marked for calibrate_batchnorm (randomize runs it) on `make_input`'s inputs."""
    def build():
        model = builder()
        model.keel_calibrate_bn = make_input
        return model
    return build


def calibrate_batchnorm(model, make_input):
    """BatchNorm running statistics measured on random inputs (training mode's batch estimate, a
    cumulative average), so that activations keep a trained network's scale. Inception-v3's
    initializer (truncated normal, std 0.1 whatever the fan-in) multiplies the scale at every
    layer; with random statistics its logits reach 3e13, beyond f16's range (65504)."""
    torch.manual_seed(2)
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        model(torch.cat([make_input() for _ in range(4)]))
    return model.eval()


def randomize_batchnorm(model):
    """Random running statistics and affine parameters, so that folding BN is not a no-op."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            n = m.num_features
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(n) * 0.1)
                m.running_var.copy_(torch.rand(n) + 0.5)
                if m.affine:
                    m.weight.copy_(torch.rand(n) + 0.5)
                    m.bias.copy_(torch.randn(n) * 0.1)
    return model


class OutputOf(nn.Module):
    """Segmentation models return a dict; the zoo wants the one tensor under `key`."""

    def __init__(self, model, key="out"):
        super().__init__()
        self.model, self.key = model, key

    def forward(self, x):
        return self.model(x)[self.key]


# ---- UNet: ConvTranspose upsampling on one level, bilinear Resize (nn.Upsample) on another ----

def double_conv(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, cin=3, classes=2, base=16):
        super().__init__()
        c1, c2, c3, c4 = base, base * 2, base * 4, base * 8
        self.enc1, self.enc2, self.enc3 = double_conv(cin, c1), double_conv(c1, c2), double_conv(c2, c3)
        self.bottom = double_conv(c3, c4)
        self.pool = nn.MaxPool2d(2)
        # Level 3: learned upsampling (ConvTranspose 2x2 stride 2).
        self.up3 = nn.ConvTranspose2d(c4, c3, 2, stride=2)
        self.dec3 = double_conv(c3 * 2, c3)
        # Level 2: bilinear resize (ONNX Resize, linear, half_pixel) then a 1x1 conv.
        self.up2 = nn.Sequential(nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False), nn.Conv2d(c3, c2, 1))
        self.dec2 = double_conv(c2 * 2, c2)
        # Level 1: ConvTranspose again, with a 3x3 kernel, padding and output_padding.
        self.up1 = nn.ConvTranspose2d(c2, c1, 3, stride=2, padding=1, output_padding=1)
        self.dec1 = double_conv(c1 * 2, c1)
        self.head = nn.Conv2d(c1, classes, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        e3 = self.enc3(self.pool(e2))
        b = self.bottom(self.pool(e3))
        d3 = self.dec3(torch.cat([self.up3(b), e3], 1))
        d2 = self.dec2(torch.cat([self.up2(d3), e2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
        return self.head(d1)


# ---- T5-style encoder: relative position bias (bucketed), RMS LayerNorm, ReLU and GeGLU FFNs ----

class T5LayerNorm(nn.Module):
    """T5's LayerNorm: no mean subtraction, no bias (RMS norm)."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(d) + 0.5)
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


def relative_position_bucket(rel, num_buckets=32, max_distance=128):
    """T5's bidirectional bucketing: exact buckets for small distances, log-spaced beyond."""
    num_buckets //= 2
    buckets = (rel > 0).to(torch.long) * num_buckets
    rel = torch.abs(rel)
    max_exact = num_buckets // 2
    is_small = rel < max_exact
    large = max_exact + (torch.log(rel.float() / max_exact) / math.log(max_distance / max_exact) *
                         (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    return buckets + torch.where(is_small, rel, large)


class T5Attention(nn.Module):
    def __init__(self, d_model, heads, has_bias, num_buckets=32):
        super().__init__()
        self.h, self.dk = heads, d_model // heads
        self.q = nn.Linear(d_model, d_model, bias=False)
        self.k = nn.Linear(d_model, d_model, bias=False)
        self.v = nn.Linear(d_model, d_model, bias=False)
        self.o = nn.Linear(d_model, d_model, bias=False)
        self.num_buckets = num_buckets
        self.rel_bias = nn.Embedding(num_buckets, heads) if has_bias else None

    def position_bias(self, n):
        pos = torch.arange(n, dtype=torch.long, device=self.rel_bias.weight.device)
        bucket = relative_position_bucket(pos[None, :] - pos[:, None], self.num_buckets)
        return self.rel_bias(bucket).permute(2, 0, 1).unsqueeze(0)  # [1, heads, n, n]

    def forward(self, x, bias):
        b, n, _ = x.shape
        split = lambda t: t.view(b, n, self.h, self.dk).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) + bias  # T5 does not scale by 1/sqrt(dk)
        y = torch.matmul(F.softmax(scores.float(), dim=-1), v)
        return self.o(y.transpose(1, 2).reshape(b, n, self.h * self.dk))


class T5Block(nn.Module):
    def __init__(self, d_model, heads, d_ff, gated, has_bias):
        super().__init__()
        self.ln1, self.attn = T5LayerNorm(d_model), T5Attention(d_model, heads, has_bias)
        self.ln2, self.gated = T5LayerNorm(d_model), gated
        self.wi0 = nn.Linear(d_model, d_ff, bias=False)
        self.wi1 = nn.Linear(d_model, d_ff, bias=False) if gated else None
        self.wo = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x, bias):
        x = x + self.attn(self.ln1(x), bias)
        h = self.ln2(x)
        if self.gated:  # GeGLU (T5 v1.1): gelu(tanh approximation) gate times a linear branch
            h = F.gelu(self.wi0(h), approximate="tanh") * self.wi1(h)
        else:
            h = F.relu(self.wi0(h))
        return x + self.wo(h)


class T5Encoder(nn.Module):
    def __init__(self, vocab=512, d_model=256, heads=4, d_ff=512, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        # Layer 0 owns the position bias (as in T5); layer 0 has a ReLU FFN, later layers GeGLU.
        self.blocks = nn.ModuleList([T5Block(d_model, heads, d_ff, gated=i > 0, has_bias=i == 0) for i in range(layers)])
        self.ln = T5LayerNorm(d_model)

    def forward(self, ids):
        x = self.embed(ids)
        bias = self.blocks[0].attn.position_bias(ids.shape[1])
        for blk in self.blocks:
            x = blk(x, bias)
        return self.ln(x)


# ---- the zoo ----

def tv(name, **kw):
    def build():
        import torchvision.models as tvm
        return getattr(tvm, name)(weights=None, **kw)
    return build


def tv_seg(name):
    def build():
        import torchvision.models.segmentation as seg
        return OutputOf(getattr(seg, name)(weights=None, weights_backbone=None))
    return build


def tv_video(name):
    def build():
        import torchvision.models.video as vid
        return getattr(vid, name)(weights=None)
    return build


def gru():
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from export_gru import GruModel
    return GruModel()


class Encoder(nn.Module):
    """A pre-built Transformer encoder stack on a [batch, sequence, width] input (BERT-base's shape
    with 12 layers, 768 wide, 12 heads, 3072 feed-forward; no embedding), as
    ../shared/anchors/torch_latency.py builds it."""

    def __init__(self, layers, d, heads, ff):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.0, activation="gelu", batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        # TransformerEncoder deep-copies one layer, so every layer starts with the same weights;
        # a compiler merges identical constants, and 12 identical layers would time a model whose
        # weights fit the GPU's L2 cache. A trained model's layers differ: draw each layer's own.
        with torch.no_grad():
            for p in self.enc.parameters():
                if p.dim() > 1:
                    nn.init.xavier_uniform_(p)

    def forward(self, x):
        return self.norm(self.enc(x))


def image(h, w=None):
    return lambda: torch.rand(1, 3, h, w or h) * 2 - 1


# name: (builder, input maker, size class). Sizes are batch 1 at the models' standard resolutions.
MODELS = {
    "resnet50": (tv("resnet50"), image(224), "large"),
    # ../shared/models has MobileNetV2 too (tested in CI); this copy is for the half-precision GPU runs.
    "mobilenet_v2": (tv("mobilenet_v2"), image(224), "large"),
    "convnext_tiny": (tv("convnext_tiny"), image(224), "large"),
    "bert_base": (lambda: Encoder(12, 768, 12, 3072), lambda: torch.rand(1, 128, 768) * 2 - 1, "large"),
    "resnext50_32x4d": (tv("resnext50_32x4d"), image(224), "large"),
    "wide_resnet50_2": (tv("wide_resnet50_2"), image(224), "large"),
    "efficientnet_v2_s": (tv("efficientnet_v2_s"), image(224), "large"),
    "inception_v3": (with_bn_calibration(tv("inception_v3", aux_logits=False, init_weights=True), image(299)),
                     image(299), "large"),
    "vgg11": (tv("vgg11"), image(224), "large"),
    "alexnet": (tv("alexnet"), image(224), "large"),
    "vit_b_16": (tv("vit_b_16"), image(224), "large"),
    "mobilenet_v3_large": (tv("mobilenet_v3_large"), image(224), "small"),
    "fcn_resnet50": (tv_seg("fcn_resnet50"), image(224), "large"),
    "lraspp_mobilenet_v3_large": (tv_seg("lraspp_mobilenet_v3_large"), image(224), "small"),
    "mc3_18": (tv_video("mc3_18"), lambda: torch.rand(1, 3, 8, 112, 112) * 2 - 1, "large"),
    "r2plus1d_18": (tv_video("r2plus1d_18"), lambda: torch.rand(1, 3, 8, 112, 112) * 2 - 1, "large"),
    "unet": (UNet, image(128), "small"),
    "gru": (gru, lambda: torch.rand(3, 9, 12) * 2 - 1, "small"),
    "t5_encoder": (T5Encoder, lambda: torch.randint(0, 512, (1, 64), dtype=torch.long), "small"),
}
