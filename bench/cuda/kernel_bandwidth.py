#!/usr/bin/env python3
"""Achieved memory bandwidth of Keel's generated CUDA kernels (elementwise and row
reductions) on large tensors, against the H200's measured 4.25 TB/s copy ceiling.

Two halves, because the GPU machine has no compiler:
    # build machine (needs python onnx + keelc):
    python3 bench/cuda/kernel_bandwidth.py prepare OUTDIR --keelc build-x/bin/keelc
    # GPU machine:
    python3 OUTDIR/kernel_bandwidth.py run OUTDIR --time-bin path/to/keel-cuda-time
prepare writes one single-op ONNX model per case and compiles it for CUDA; run
times each with keel-cuda-time --kernels (cudaEvent device time of the one
generated kernel, outside any graph) and prints a table: bytes moved (each input
read once + each output written once: the minimum traffic), time, GB/s and the
fraction of the copy ceiling.
"""
import argparse, json, os, subprocess, sys

CEILING_GBS = 4250.0
# name, op, shape, extra
CASES = [
    ("add_64M", "Add", [8192, 8192]),
    ("relu_64M", "Relu", [8192, 8192]),
    ("mul_add_relu_64M", "MulAddRelu", [8192, 8192]),
    ("softmax_16384x4096", "Softmax", [16384, 4096]),
    ("softmax_32768x2048", "Softmax", [32768, 2048]),
    ("softmax_65536x1024", "Softmax", [65536, 1024]),
    ("layernorm_16384x4096", "LayerNormalization", [16384, 4096]),
    ("layernorm_65536x1024", "LayerNormalization", [65536, 1024]),
]


def build_model(op, shape, path):
    import numpy as np
    import onnx
    from onnx import helper, TensorProto, numpy_helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
    inputs, inits, nodes = [x], [], []
    if op == "Add":
        inputs.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, shape))
        nodes.append(helper.make_node("Add", ["x", "b"], ["y"]))
    elif op == "Relu":
        nodes.append(helper.make_node("Relu", ["x"], ["y"]))
    elif op == "MulAddRelu":
        inputs.append(helper.make_tensor_value_info("b", TensorProto.FLOAT, shape))
        inits.append(numpy_helper.from_array(np.array(0.5, dtype=np.float32), "s"))
        nodes += [helper.make_node("Mul", ["x", "s"], ["t"]), helper.make_node("Add", ["t", "b"], ["u"]),
                  helper.make_node("Relu", ["u"], ["y"])]
    elif op == "Softmax":
        nodes.append(helper.make_node("Softmax", ["x"], ["y"], axis=-1))
    elif op == "LayerNormalization":
        d = shape[-1]
        inits.append(numpy_helper.from_array(np.linspace(0.5, 1.5, d).astype(np.float32), "g"))
        inits.append(numpy_helper.from_array(np.linspace(-0.1, 0.1, d).astype(np.float32), "beta"))
        nodes.append(helper.make_node("LayerNormalization", ["x", "g", "beta"], ["y"], axis=-1, epsilon=1e-5))
    g = helper.make_graph(nodes, op, inputs, [y], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, path)
    return sum(1 for i in inputs) + 1  # tensors of `shape` moved (inputs read + output written)


def prepare(a):
    os.makedirs(a.dir, exist_ok=True)
    meta = []
    for name, op, shape in CASES:
        onnx_path = os.path.join(a.dir, name + ".onnx")
        tensors = build_model(op, shape, onnx_path)
        subprocess.run([a.keelc, onnx_path, "-o", os.path.join(a.dir, name + ".keel"), "--target", "cuda"],
                       check=True, stdout=subprocess.DEVNULL)
        os.remove(onnx_path)
        elems = 1
        for d in shape:
            elems *= d
        meta.append({"name": name, "op": op, "shape": shape, "bytes": tensors * elems * 4})
    json.dump(meta, open(os.path.join(a.dir, "cases.json"), "w"), indent=1)
    subprocess.run(["cp", os.path.abspath(__file__), a.dir], check=True)


def run(a):
    meta = json.load(open(os.path.join(a.dir, "cases.json")))
    print("%-24s %-20s %10s %10s %9s %8s  %s" % ("case", "shape", "MB moved", "time us", "GB/s", "ceiling", "kernel"))
    for c in meta:
        out = subprocess.run([a.time_bin, os.path.join(a.dir, c["name"] + ".keel"), "--kernels", "--warmup", "2",
                              "--iterations", "5"], capture_output=True, text=True)
        if out.returncode != 0:
            print("%-24s FAILED: %s" % (c["name"], out.stderr.strip().splitlines()[-1:]))
            continue
        # The generated kernels' lines (not copies; not library calls).
        best = None
        for line in out.stdout.splitlines()[1:]:
            if "cuLaunchKernel" not in line:
                continue
            us = float(line.split()[0])
            kernel = line.split("|")[1].strip()
            best = (us, kernel) if best is None else (best[0] + us, best[1] + "+" + kernel)
        if best is None:
            print("%-24s no generated kernel in the trace" % c["name"])
            continue
        gbs = c["bytes"] / (best[0] * 1e-6) / 1e9
        print("%-24s %-20s %10.1f %10.1f %9.0f %7.0f%%  %s" % (c["name"], "x".join(map(str, c["shape"])),
              c["bytes"] / 1e6, best[0], gbs, 100 * gbs / CEILING_GBS, best[1]))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("prepare"); pp.add_argument("dir"); pp.add_argument("--keelc", required=True)
    pr = sub.add_parser("run"); pr.add_argument("dir"); pr.add_argument("--time-bin", required=True)
    a = p.parse_args()
    prepare(a) if a.cmd == "prepare" else run(a)


if __name__ == "__main__":
    main()
