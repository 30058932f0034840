#!/usr/bin/env python3
"""keelc --freeze-input: a Reshape whose shape is a graph input is refused with the
fixed "must be a compile-time constant" message, and compiles and runs correctly
once that input is frozen (the input disappears from the executable).
Usage: keelc_freeze_input_test.py --bin BUILD/bin"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
a = ap.parse_args()

g = helper.make_graph([helper.make_node("Reshape", ["x", "shape"], ["y"])], "g",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                       helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
x = np.arange(6, dtype=np.float32).reshape(2, 3)
with tempfile.TemporaryDirectory() as d:
    onnx.save(model, f"{d}/m.onnx")
    np.array([3, 2], dtype=np.int64).tofile(f"{d}/shape.bin")
    x.tofile(f"{d}/x.bin")
    keelc = os.path.join(a.bin, "keelc")
    r = subprocess.run([keelc, f"{d}/m.onnx", "-o", f"{d}/m.keel", "-q"], capture_output=True, text=True)
    assert r.returncode == 1 and "input 1 ('shape') must be a compile-time constant" in r.stderr, r.stderr
    r = subprocess.run([keelc, f"{d}/m.onnx", "-o", f"{d}/m.keel", "-q", "--freeze-input", f"shape={d}/shape.bin"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([os.path.join(a.bin, "keel-run"), f"{d}/m.keel", "--input", f"x={d}/x.bin",
                        "--output-dir", f"{d}/out", "--threads", "1"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    y = np.fromfile(f"{d}/out/y.bin", dtype=np.float32)
    assert np.array_equal(y, x.reshape(-1)), y
    # A wrong byte count and an unknown name are one-line errors.
    r = subprocess.run([keelc, f"{d}/m.onnx", "-o", f"{d}/m.keel", "-q", "--freeze-input", f"shape={d}/x.bin"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "the frozen value has 24 bytes" in r.stderr, r.stderr
    r = subprocess.run([keelc, f"{d}/m.onnx", "-o", f"{d}/m.keel", "-q", "--freeze-input", f"nope={d}/x.bin"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "frozen input 'nope' is not a graph input" in r.stderr, r.stderr
print("keelc --freeze-input: OK")
