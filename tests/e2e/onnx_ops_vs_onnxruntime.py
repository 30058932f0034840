"""Keel vs onnxruntime, op by op: an independent reference for the ONNX semantics.

For each case a one- or two-node ONNX model is built with onnx.helper, compiled with keelc,
run with keel-run on seeded random inputs, and compared with onnxruntime's output
(relative L2 <= 1e-5). Covers broadcasting, attribute variants and odd shapes that the
model zoo does not exercise.

    python onnx_ops_vs_onnxruntime.py --bin BUILD/bin [--keep DIR] [-k FILTER]
Exit status 0 when every case passes; prints "N passed, M failed".
"""
import argparse, os, subprocess, sys, tempfile
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import onnxruntime as ort

F = TensorProto.FLOAT


def model(nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, F, None) for n in outputs],
                          initializer=[numpy_helper.from_array(v, n) for n, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def rnd(*shape, seed=0, lo=-1.0, hi=1.0):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(np.float32)


def unary(op, shape=(3, 17, 5), lo=-2.0, hi=2.0, **attrs):
    return model([helper.make_node(op, ["x"], ["y"], **attrs)], [("x", shape)], ["y"]), {"x": rnd(*shape, lo=lo, hi=hi)}


def binary(op, a, b, a_lo=-1.0):
    return (model([helper.make_node(op, ["a", "b"], ["y"])], [("a", a), ("b", b)], ["y"]),
            {"a": rnd(*a, seed=1, lo=a_lo), "b": rnd(*b, seed=2, lo=0.5, hi=2.0)})


def with_weights(node, inputs, inits, feeds):
    return model([node], inputs, ["y"], inits), feeds


CASES = {
    "add_broadcast": lambda: binary("Add", (2, 3, 4, 5), (4, 1)),
    "sub_broadcast_lhs": lambda: binary("Sub", (1, 5), (3, 1, 5)),
    "mul_scalar_like": lambda: binary("Mul", (7, 9), (1,)),
    "div_same": lambda: binary("Div", (4, 33), (4, 33)),
    "pow": lambda: binary("Pow", (6, 7), (7,), a_lo=0.1),  # fractional exponents need positive bases
    "relu": lambda: unary("Relu"),
    "sigmoid": lambda: unary("Sigmoid"),
    "tanh": lambda: unary("Tanh"),
    "erf": lambda: unary("Erf", lo=-3, hi=3),
    "sqrt": lambda: unary("Sqrt", lo=0.01, hi=4),
    "softmax_last": lambda: unary("Softmax", shape=(4, 6, 37), axis=-1),
    "flatten_axis2": lambda: unary("Flatten", shape=(2, 3, 4, 5), axis=2),
    "transpose": lambda: unary("Transpose", shape=(2, 3, 4, 5), perm=[0, 2, 3, 1]),
    "reduce_mean_keep": lambda: (model([helper.make_node("ReduceMean", ["x"], ["y"], axes=[-1], keepdims=1)],
                                       [("x", (3, 4, 10))], ["y"], opset=13), {"x": rnd(3, 4, 10)}),
    "global_avg_pool": lambda: unary("GlobalAveragePool", shape=(2, 8, 7, 9)),
    "maxpool_ceil": lambda: unary("MaxPool", shape=(1, 4, 11, 11), kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    "maxpool_pad": lambda: unary("MaxPool", shape=(2, 3, 10, 9), kernel_shape=[3, 3], strides=[1, 2], pads=[1, 1, 1, 1]),
    "avgpool_include_pad": lambda: unary("AveragePool", shape=(1, 3, 9, 9), kernel_shape=[3, 3], strides=[2, 2],
                                         pads=[1, 1, 1, 1], count_include_pad=1),
    "avgpool_exclude_pad": lambda: unary("AveragePool", shape=(1, 3, 9, 9), kernel_shape=[3, 3], strides=[2, 2],
                                         pads=[1, 1, 1, 1]),
    "clip_inputs": lambda: with_weights(helper.make_node("Clip", ["x", "lo", "hi"], ["y"]), [("x", (5, 13))],
                                        [("lo", np.array(-0.3, np.float32)), ("hi", np.array(0.6, np.float32))],
                                        {"x": rnd(5, 13)}),
    "gemm_transb_alpha_beta": lambda: with_weights(
        helper.make_node("Gemm", ["x", "w", "c"], ["y"], transB=1, alpha=0.7, beta=1.3), [("x", (5, 19))],
        [("w", rnd(11, 19, seed=3)), ("c", rnd(11, seed=4))], {"x": rnd(5, 19)}),
    "gemm_transa": lambda: with_weights(helper.make_node("Gemm", ["x", "w"], ["y"], transA=1), [("x", (19, 5))],
                                        [("w", rnd(19, 23, seed=3))], {"x": rnd(19, 5)}),
    "matmul_batched_broadcast": lambda: with_weights(helper.make_node("MatMul", ["x", "w"], ["y"]),
                                                     [("x", (2, 3, 7, 13))], [("w", rnd(13, 6, seed=5))],
                                                     {"x": rnd(2, 3, 7, 13)}),
    "matmul_two_inputs": lambda: (model([helper.make_node("MatMul", ["a", "b"], ["y"])],
                                        [("a", (4, 5, 9)), ("b", (4, 9, 3))], ["y"]),
                                  {"a": rnd(4, 5, 9, seed=1), "b": rnd(4, 9, 3, seed=2)}),
    "conv_pads_strides_bias": lambda: with_weights(
        helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 2, 1, 2], strides=[2, 1]), [("x", (2, 3, 13, 11))],
        [("w", rnd(8, 3, 3, 5, seed=6)), ("b", rnd(8, seed=7))], {"x": rnd(2, 3, 13, 11)}),
    "conv_grouped_dilated": lambda: with_weights(
        helper.make_node("Conv", ["x", "w"], ["y"], group=2, dilations=[2, 2], pads=[2, 2, 2, 2]),
        [("x", (1, 6, 12, 12))], [("w", rnd(4, 3, 3, 3, seed=8))], {"x": rnd(1, 6, 12, 12)}),
    "conv_depthwise": lambda: with_weights(
        helper.make_node("Conv", ["x", "w"], ["y"], group=16, pads=[1, 1, 1, 1], strides=[2, 2]),
        [("x", (1, 16, 15, 15))], [("w", rnd(16, 1, 3, 3, seed=9))], {"x": rnd(1, 16, 15, 15)}),
    "batchnorm_alone": lambda: with_weights(
        helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3), [("x", (2, 4, 5, 5))],
        [("s", rnd(4, seed=1)), ("b", rnd(4, seed=2)), ("m", rnd(4, seed=3)), ("v", rnd(4, seed=4, lo=0.5, hi=2))],
        {"x": rnd(2, 4, 5, 5)}),
    "layernorm": lambda: with_weights(
        helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-5), [("x", (3, 7, 48))],
        [("g", rnd(48, seed=1)), ("b", rnd(48, seed=2))], {"x": rnd(3, 7, 48)}),
    "concat_axis1": lambda: (model([helper.make_node("Concat", ["a", "b"], ["y"], axis=1)],
                                   [("a", (2, 3, 4)), ("b", (2, 5, 4))], ["y"]),
                             {"a": rnd(2, 3, 4, seed=1), "b": rnd(2, 5, 4, seed=2)}),
    "slice_steps": lambda: with_weights(
        helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"]), [("x", (6, 20))],
        [("st", np.array([1, 2], np.int64)), ("en", np.array([5, 19], np.int64)),
         ("ax", np.array([0, 1], np.int64)), ("sp", np.array([2, 3], np.int64))], {"x": rnd(6, 20)}),
    "gather_axis0": lambda: with_weights(helper.make_node("Gather", ["x", "i"], ["y"], axis=0), [("x", (7, 6))],
                                         [("i", np.array([[0, 3], [6, 1]], np.int64))], {"x": rnd(7, 6)}),
    "reshape_then_relu": lambda: (model([helper.make_node("Reshape", ["x", "s"], ["r"]),
                                         helper.make_node("Relu", ["r"], ["y"])], [("x", (2, 3, 8))], ["y"],
                                        [("s", np.array([6, -1], np.int64))]), {"x": rnd(2, 3, 8)}),
    "unsqueeze_squeeze": lambda: (model([helper.make_node("Unsqueeze", ["x", "a"], ["u"]),
                                         helper.make_node("Sigmoid", ["u"], ["s"]),
                                         helper.make_node("Squeeze", ["s", "a"], ["y"])], [("x", (3, 5))], ["y"],
                                        [("a", np.array([1], np.int64))]), {"x": rnd(3, 5)}),
    "gelu_chain": lambda: (model([helper.make_node("Div", ["x", "c"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
                                  helper.make_node("Add", ["e", "one"], ["p"]), helper.make_node("Mul", ["x", "p"], ["m"]),
                                  helper.make_node("Mul", ["m", "half"], ["y"])], [("x", (4, 64))], ["y"],
                                 [("c", np.array(1.4142135, np.float32)), ("one", np.array(1.0, np.float32)),
                                  ("half", np.array(0.5, np.float32))]), {"x": rnd(4, 64, lo=-3, hi=3)}),
}


def load_family_cases():
    """Op families add their cases in cases_<family>.py beside this file (a CASES dict built
    with the helpers above), so each family's tests live in its own file."""
    import glob, importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    for path in sorted(glob.glob(os.path.join(here, "cases_*.py"))):
        spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for name, build in module.CASES.items():
            if name in CASES:
                raise SystemExit("%s: case %s is defined twice" % (path, name))
            CASES[name] = build


def run_case(name, build, binary_dir, work):
    # A case is (model, feeds) or (model, feeds, "onnx"): the latter is compared with onnx's own
    # reference evaluator instead of onnxruntime. The integer-accumulating quantized ops need it:
    # onnxruntime's x86 kernels for u8 x s8 products sum pairs with vpmaddubsw, which saturates
    # at int16, so on an AVX2 machine without VNNI its results are not exact (MatMulInteger with
    # a = 255 over k = 640 is off by 15%).
    built = build()
    m, feeds = built[0], built[1]
    path = os.path.join(work, name + ".onnx")
    onnx.save(m, path)
    if len(built) > 2 and built[2] == "onnx":
        from onnx.reference import ReferenceEvaluator
        ref = np.asarray(ReferenceEvaluator(m).run(["y"], feeds)[0])
    else:
        ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(["y"], feeds)[0]
    exe = os.path.join(work, name + ".keel")
    r = subprocess.run([os.path.join(binary_dir, "keelc"), path, "-o", exe, "-q"], capture_output=True, text=True)
    if r.returncode != 0:
        return "keelc failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]
    args = [os.path.join(binary_dir, "keel-run"), exe, "--threads", "2", "--output-dir", os.path.join(work, name)]
    for k, v in feeds.items():
        f = os.path.join(work, "%s.%s.bin" % (name, k))
        v.tofile(f)
        args += ["--input", "%s=%s" % (k, f)]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        return "keel-run failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]
    out = np.fromfile(os.path.join(work, name, "y.bin"), dtype=ref.dtype)
    if out.size != ref.size:
        return "output has %d elements, onnxruntime %d" % (out.size, ref.size)
    if ref.dtype.kind not in "fc":
        return None if np.array_equal(out, ref.ravel()) else "%s values differ" % ref.dtype
    out, ref = out.astype(np.float64), ref.astype(np.float64)
    err = np.linalg.norm(out - ref.ravel()) / max(np.linalg.norm(ref), 1e-30)
    return None if err <= 1e-5 else "relative L2 error %.3g" % err


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True, help="folder with keelc and keel-run")
    p.add_argument("--keep", help="keep the models and outputs in this folder")
    p.add_argument("-k", default="", help="only cases whose name contains this")
    a = p.parse_args()
    load_family_cases()
    work = a.keep or tempfile.mkdtemp(prefix="keel_ort_")
    os.makedirs(work, exist_ok=True)
    passed = failed = 0
    for name, build in CASES.items():
        if a.k not in name:
            continue
        problem = run_case(name, build, a.bin, work)
        print("%-28s %s" % (name, "ok" if problem is None else "FAILED: " + problem), flush=True)
        passed += problem is None
        failed += problem is not None
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed or not passed else 0)


if __name__ == "__main__":
    main()
