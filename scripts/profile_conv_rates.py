"""How close each convolution of a compiled model runs to the core's FMA rate, and what it moves.

    .venv/bin/python scripts/profile_conv_rates.py MODEL.onnx MODEL.keel [--threads T] [--runs N]
        [--keel-bench build/bin/keel-bench] [--input name=file.bin ...]

Takes Keel's median time per kernel from `keel-bench --profile-all` (profile_cpu_scaling.profile),
charges it to the model's Conv nodes as profile_vs_ort.py does (a fused Relu, Add or Clip goes to the
Conv in front of it), and prints per Conv its form (dw: grouped, pw: 1x1, dense: the rest), output
size, channels and window, its time, its multiply-adds (output elements x C/group x KH x KW), the bytes
of its input and output (fp32), and from those its rate in GFMA/s and GB/s; then the same summed per
form and input resolution. Why: comparing the rate of one kernel form at resolutions whose
activations fit the L2 with those that do not separates a kernel bound by its own instruction mix
from one bound by where its data comes from (docs/MEASUREMENTS.md, cpu39).
"""
import argparse, collections, os, re, sys

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_cpu import node_macs, tensor_shapes  # noqa: E402
from profile_cpu_scaling import add_profile_arguments, profile  # noqa: E402
from profile_vs_ort import Graph  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("onnx")
    p.add_argument("keel")
    add_profile_arguments(p, threads=1, runs=40)
    a = p.parse_args()
    model = onnx.load(a.onnx)
    g = Graph(model)
    shapes = tensor_shapes(model)
    macs = node_macs(model, shapes)

    ms_at = collections.defaultdict(float)
    for ms, op, name in profile(a.keel_bench, a.keel, a.threads, a.runs, a.input).values():
        node = g.node_of(re.sub(r"\+\d+$", "", name.strip("[]"))) if op == "invoke" else None
        if node is not None:
            ms_at[g.anchor(node).name] += ms

    print("%s, %d thread(s), load %.1f" % (a.keel, a.threads, os.getloadavg()[0]))
    print("%-40s %-26s %8s %7s %7s %7s %6s" % ("conv", "form", "ms", "MFMA", "MB", "GFMA/s", "GB/s"))
    per_form = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    for n in model.graph.node:
        if n.op_type != "Conv" or n.name not in ms_at:
            continue
        w, x, y = shapes[n.input[1]], shapes[n.input[0]], shapes[n.output[0]]
        group = next((at.i for at in n.attribute if at.name == "group"), 1)
        stride = next((at.ints[0] for at in n.attribute if at.name == "strides"), 1)
        form = "dw" if group > 1 else ("pw" if w[2] == w[3] == 1 else "dense")
        fma = float(macs[n.name])
        mb = float(np.prod(x) + np.prod(y)) * 4 / 1e6
        ms = ms_at[n.name]
        desc = "%s %dx%d %d->%d k%d s%d" % (form, y[2], y[3], x[1], y[1], w[2], stride)
        print("%-40s %-26s %8.4f %7.2f %7.2f %7.1f %6.1f" % (n.name[-40:], desc, ms, fma / 1e6, mb,
                                                            fma / ms / 1e6, mb / ms))
        key = "%s s%d, input %dx%d" % (form, stride, x[2], x[3])
        per_form[key][0] += ms
        per_form[key][1] += fma
        per_form[key][2] += mb
    print()
    for key, (ms, fma, mb) in sorted(per_form.items()):
        print("%-30s %8.4f ms %7.1f GFMA/s %6.1f GB/s" % (key, ms, fma / ms / 1e6, mb / ms))


if __name__ == "__main__":
    main()
