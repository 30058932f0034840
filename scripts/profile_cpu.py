"""Where a compiled model's CPU time goes: keel-bench --profile joined with each node's FLOPs.

    .venv/bin/python scripts/profile_cpu.py MODEL.onnx MODEL.keel [--threads T] [--runs N]
        [--keel-bench build/bin/keel-bench] [--input name=file.bin ...] [--top K]

Runs `keel-bench MODEL.keel --profile-all` (median wall time per instruction over N traced runs) and,
for every invoke whose source node is a Conv, Gemm or MatMul of MODEL.onnx (the trace names the
kernel's first node; fused epilogues add "+N"), its multiply-adds from ONNX shape inference, so each
line shows GFLOP/s (2 FLOPs per multiply-add) to compare with the machine's FMA peak.
"""
import argparse, os, re, subprocess, sys

import numpy as np
import onnx
from onnx import shape_inference

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_cpu_scaling import add_profile_arguments  # noqa: E402


def tensor_shapes(model):
    """Every tensor's shape from ONNX shape inference, initializers included, by name."""
    g = shape_inference.infer_shapes(model).graph
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(g.value_info) + list(g.input) + list(g.output)}
    shapes.update({t.name: list(t.dims) for t in g.initializer})
    return shapes


def node_macs(model, shapes=None):
    """Multiply-adds of each Conv / Gemm / MatMul node, by node name (`shapes`: tensor_shapes(model))."""
    shapes = shapes if shapes is not None else tensor_shapes(model)
    macs = {}
    for n in model.graph.node:
        out = shapes.get(n.output[0])
        if not out:
            continue
        if n.op_type == "Conv":
            w = shapes.get(n.input[1])
            if w:
                macs[n.name] = int(np.prod(out)) * int(np.prod(w[1:]))
        elif n.op_type in ("Gemm", "MatMul"):
            a = shapes.get(n.input[0])
            if a:
                transa = any(at.name == "transA" and at.i for at in n.attribute)
                macs[n.name] = int(np.prod(out)) * (a[-2] if transa else a[-1])
    return macs


def main():
    p = argparse.ArgumentParser()
    p.add_argument("onnx")
    p.add_argument("keel")
    add_profile_arguments(p, threads=2)
    p.add_argument("--top", type=int, default=25)
    a = p.parse_args()
    macs = node_macs(onnx.load(a.onnx))
    cmd = [a.keel_bench, a.keel, "--threads", str(a.threads), "--iterations", str(a.runs), "--warmup", "3",
           "--profile-all"]
    for i in a.input:
        cmd += ["--input", i]
    text = subprocess.check_output(cmd, text=True)
    lines = text.splitlines()
    print(lines[0])
    print(lines[1])
    total_macs, total_ms, shown = 0, 0.0, 0
    for line in lines[2:]:
        m = re.match(r"\s*([\d.]+) ms\s+([\d.]+)%\s+#(\d+)\s+(\S+)\s+(.*)", line)
        if not m:
            continue
        ms, share, op, name = float(m.group(1)), m.group(2), m.group(4), m.group(5).strip()
        node = re.sub(r"\+\d+$", "", name.strip("[]"))
        mac = macs.get(node) if ms > 0 else None  # --profile-all lists instructions under 0.05 us as 0
        rate = "%7.1f GFLOP/s" % (2 * mac / ms / 1e6) if mac else ""
        if mac:
            total_macs += mac
            total_ms += ms
        if shown < a.top:
            print("%9.4f ms %5s%%  %-7s %-48s %s" % (ms, share, op, name[:48], rate))
            shown += 1
    if total_ms:
        print("convolutions/GEMMs: %.3f ms, %.2f GFLOP -> %.1f GFLOP/s" % (total_ms, 2 * total_macs / 1e9,
                                                                       2 * total_macs / total_ms / 1e6))


if __name__ == "__main__":
    main()
