"""onnxruntime cases for the signal and linear-algebra ops (compiler/ops/signal_window.cc,
signal_dft.cc, linalg.cc)."""
from onnx_ops_vs_onnxruntime import TensorProto, helper, model, np, numpy_helper, rnd


def ints(name, v):
    return (name, np.array(v, dtype=np.int64))


def dft(shape, opset=17, axis_input=None, dft_length=None, **attrs):
    """DFT of x (shape [..., 1 or 2]); dft_length / axis (opset 20) as constant inputs."""
    names, inits = ["x"], []
    if dft_length is not None or axis_input is not None:
        names.append("len" if dft_length is not None else "")
        if dft_length is not None:
            inits.append(ints("len", dft_length))
    if axis_input is not None:
        names.append("axis")
        inits.append(ints("axis", axis_input))
    node = helper.make_node("DFT", names, ["y"], **attrs)
    return model([node], [("x", shape)], ["y"], inits, opset=opset), {"x": rnd(*shape, seed=3)}


def stft(length, step, frame, window=True, onesided=1, channels=1):
    names = ["x", "step", "w" if window else "", "len"]
    inits = [ints("step", step), ints("len", frame)]
    inputs = [("x", (2, length, channels))]
    feeds = {"x": rnd(2, length, channels, seed=4)}
    if window:
        inputs.append(("w", (frame,)))
        feeds["w"] = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(frame) / frame)).astype(np.float32)
    node = helper.make_node("STFT", names, ["y"], onesided=onesided)
    return model([node], inputs, ["y"], inits), feeds


def window(op, size, **attrs):
    """x * op(size): the window as a constant-size generator feeding a runtime op."""
    nodes = [helper.make_node(op, ["n"], ["w"], **attrs), helper.make_node("Mul", ["x", "w"], ["y"])]
    return model(nodes, [("x", (3, size))], ["y"], [ints("n", size)]), {"x": rnd(3, size, seed=5, lo=0.5, hi=2)}


def mel():
    f32 = lambda n, v: (n, np.array(v, dtype=np.float32))
    nodes = [helper.make_node("MelWeightMatrix", ["bins", "dft", "rate", "lo", "hi"], ["m"]),
             helper.make_node("MatMul", ["x", "m"], ["y"])]
    inits = [ints("bins", 8), ints("dft", 64), ints("rate", 16000), f32("lo", 20.0), f32("hi", 8000.0)]
    return model(nodes, [("x", (4, 33))], ["y"], inits), {"x": rnd(4, 33, seed=6, lo=0, hi=1)}


def det(shape):
    return model([helper.make_node("Det", ["x"], ["y"])], [("x", shape)], ["y"]), {"x": rnd(*shape, seed=7, lo=-2, hi=2)}


def typed(node, x, out_type, inits=(), opset=26):
    """One node over input x (any dtype) with output y of ONNX type out_type (opset 26: IR 10)."""
    from onnx import helper as h
    in_type = h.np_dtype_to_tensor_dtype(x.dtype)
    g = h.make_graph([node], "g", [h.make_tensor_value_info("x", in_type, x.shape)],
                     [h.make_tensor_value_info("y", out_type, None)],
                     initializer=[numpy_helper.from_array(v, n) for n, v in inits])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 10
    return m, {"x": x}


def cumprod(x, axis, **attrs):
    node = helper.make_node("CumProd", ["x", "axis"], ["y"], **attrs)
    return typed(node, x, helper.np_dtype_to_tensor_dtype(x.dtype), [ints("axis", axis)])


def bitcast(x, to):
    return typed(helper.make_node("BitCast", ["x"], ["y"], to=to), x, to)


CASES = {
    "cumprod_axis1_reverse_exclusive": lambda: cumprod(rnd(3, 7, 5, seed=8, lo=0.5, hi=1.5), 1, reverse=1, exclusive=1),
    "cumprod_int32_last": lambda: cumprod(np.arange(-6, 18, dtype=np.int32).reshape(4, 6) % 5 - 2, -1),
    "bitcast_f32_to_i32": lambda: bitcast(rnd(4, 9, seed=9, lo=-100, hi=100), TensorProto.INT32),
    "bitcast_i64_to_f64": lambda: bitcast(rnd(3, 8, seed=10).astype(np.float64).view(np.int64), TensorProto.DOUBLE),
    "bitcast_u16_to_f16": lambda: bitcast(np.arange(0, 30000, 1001, dtype=np.uint16), TensorProto.FLOAT16),
    "dft_real_axis1": lambda: dft((2, 12, 3, 1), axis=1),
    "dft_complex_inverse_axis2": lambda: dft((2, 3, 8, 2), axis=2, inverse=1),
    "dft_rfft_padded": lambda: dft((3, 7, 1), axis=1, onesided=1, dft_length=10),
    "dft_truncated_complex": lambda: dft((2, 9, 4, 2), axis=1, dft_length=5),
    "dft20_axis_input_last": lambda: dft((3, 4, 16, 1), opset=20, axis_input=-2),
    "dft20_irfft": lambda: dft((2, 9, 2), opset=20, axis_input=1, inverse=1, onesided=1),
    "stft_hann_window": lambda: stft(64, 6, 16),
    "stft_no_window_full": lambda: stft(40, 8, 10, window=False, onesided=0),
    "hann_window": lambda: window("HannWindow", 10),
    "hamming_window_symmetric": lambda: window("HammingWindow", 9, periodic=0),
    "blackman_window": lambda: window("BlackmanWindow", 12),
    "mel_weight_matrix": mel,
    "det_batch": lambda: det((3, 4, 4)),
    "det_single_5x5": lambda: det((5, 5)),
}
