"""onnxruntime comparisons for the quantization ops (compiler/ops/quantize*.cc): Quantize/
DequantizeLinear per tensor, per axis and blocked, 8/16-bit types, DynamicQuantizeLinear,
MatMulInteger / ConvInteger with sums beyond f32's exact range (2^24), QLinearMatMul /
QLinearConv with per-channel scales and bias, and a fused QDQ chain."""
import numpy as np
from onnx_ops_vs_onnxruntime import helper, numpy_helper, TensorProto

_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
          np.dtype(np.int32): TensorProto.INT32, np.dtype(np.int8): TensorProto.INT8,
          np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int16): TensorProto.INT16,
          np.dtype(np.uint16): TensorProto.UINT16}
N = helper.make_node


# Ops whose u8 x s8 sums onnxruntime's AVX2 kernels saturate: compared with onnx's reference.
_EXACT_REFERENCE = {"MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv"}


def mk(nodes, feeds, inits=(), opset=21, out=TensorProto.UINT8):
    """A model whose graph inputs are typed after `feeds` (name -> array) and whose output is "y"."""
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, _TYPES[v.dtype], v.shape) for n, v in feeds.items()],
                          [helper.make_tensor_value_info("y", out, None)],
                          initializer=[numpy_helper.from_array(v, n) for n, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10 if opset >= 21 else 8
    if any(n.op_type in _EXACT_REFERENCE for n in nodes):
        return m, feeds, "onnx"
    return m, feeds


def f32(*shape, lo=-10.0, hi=10.0, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(np.float32)


def ints(*shape, dtype=np.uint8, seed=0):
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, int(info.max) + 1, shape).astype(dtype)


def quantize(x, scale, zp=None, opset=21, out=TensorProto.UINT8, **attrs):
    inits = [("s", scale)] + ([("z", zp)] if zp is not None else [])
    ins = ["x", "s"] + (["z"] if zp is not None else [])
    return mk([N("QuantizeLinear", ins, ["y"], **attrs)], {"x": x}, inits, opset=opset, out=out)


def dequantize(x, scale, zp=None, opset=21, out=TensorProto.FLOAT, **attrs):
    inits = [("s", scale)] + ([("z", zp)] if zp is not None else [])
    ins = ["x", "s"] + (["z"] if zp is not None else [])
    return mk([N("DequantizeLinear", ins, ["y"], **attrs)], {"x": x}, inits, opset=opset, out=out)


def scales(*shape, seed=1):
    return np.random.default_rng(seed).uniform(0.05, 0.5, shape).astype(np.float32)


CASES = {
    # Values at exact .5 multiples of the scale check round-half-to-even.
    "quant_u8_ties_opset10": lambda: quantize(np.arange(-40, 40, 0.5, dtype=np.float32).reshape(4, 40),
                                              np.float32(0.5 * 2), np.uint8(128), opset=10),
    "quant_i8_per_axis": lambda: quantize(f32(2, 3, 5, 4), scales(3), ints(3, dtype=np.int8), opset=13,
                                          out=TensorProto.INT8),
    "quant_i8_per_axis_neg": lambda: quantize(f32(2, 3, 5, 4), scales(5), ints(5, dtype=np.int8), opset=13,
                                              out=TensorProto.INT8, axis=-2),
    "quant_u8_no_zero_point": lambda: quantize(f32(6, 7, lo=-1, hi=60), np.float32(0.25), opset=13),
    "quant_i8_output_dtype": lambda: quantize(f32(6, 7), np.float32(0.1), out=TensorProto.INT8,
                                              output_dtype=TensorProto.INT8),
    "quant_u16": lambda: quantize(f32(5, 9, lo=-3000, hi=3000), np.float32(0.07), np.uint16(30000),
                                  out=TensorProto.UINT16),
    "quant_i16_per_axis": lambda: quantize(f32(4, 9, lo=-3000, hi=3000), scales(4), ints(4, dtype=np.int16), axis=0,
                                           out=TensorProto.INT16),
    "quant_blocked": lambda: quantize(f32(3, 10, 4), scales(3, 4, 4), ints(3, 4, 4, dtype=np.uint8), axis=1,
                                      block_size=3),
    "dequant_u8": lambda: dequantize(ints(5, 8), np.float32(0.3), np.uint8(100), opset=10),
    "dequant_i8_per_axis": lambda: dequantize(ints(2, 6, 3, dtype=np.int8), scales(6), ints(6, dtype=np.int8),
                                              opset=13),
    "dequant_i32": lambda: dequantize(ints(4, 7, dtype=np.int32) // 1024, np.float32(0.001), opset=13),
    "dequant_u16_blocked": lambda: dequantize(ints(4, 9, dtype=np.uint16), scales(2, 9), ints(2, 9, dtype=np.uint16),
                                              axis=0, block_size=2),
    "dequant_f16_scale": lambda: dequantize(ints(3, 8), np.float16(0.125), np.uint8(3), opset=19,
                                            out=TensorProto.FLOAT16),
    "dynamic_quant": lambda: mk([N("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])], {"x": f32(7, 13, lo=-3, hi=9)},
                                opset=11),
    "dynamic_quant_scale_positive": lambda: mk([N("DynamicQuantizeLinear", ["x"], ["q", "y", "z"])],
                                               {"x": f32(4, 9, lo=0.5, hi=7)}, opset=11, out=TensorProto.FLOAT),
    # K = 640: sums of u8 x i8 products pass 2^24, where f32 accumulation stops being exact.
    "matmulinteger_long_k": lambda: mk([N("MatMulInteger", ["a", "b", "az", "bz"], ["y"])],
                                       {"a": np.full((3, 640), 255, np.uint8), "b": ints(640, 5, dtype=np.int8)},
                                       [("az", np.uint8(0)), ("bz", np.zeros(5, np.int8))], opset=10,
                                       out=TensorProto.INT32),
    "matmulinteger_batched_zp": lambda: mk([N("MatMulInteger", ["a", "b", "az", "bz"], ["y"])],
                                           {"a": ints(2, 4, 33), "b": ints(33, 6, seed=1)},
                                           [("az", np.uint8(77)), ("bz", ints(6, seed=2))], opset=10,
                                           out=TensorProto.INT32),
    "qlinearmatmul_u8": lambda: mk([N("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])],
                                   {"a": ints(5, 16), "b": ints(16, 7, seed=1)},
                                   [("as", np.float32(0.02)), ("az", np.uint8(120)), ("bs", np.float32(0.03)),
                                    ("bz", np.uint8(130)), ("ys", np.float32(0.5)), ("yz", np.uint8(128))], opset=10),
    "qlinearmatmul_i8_batched_per_column": lambda: mk(
        [N("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])],
        {"a": ints(2, 3, 24, dtype=np.int8), "b": ints(24, 5, dtype=np.int8, seed=1)},
        [("as", np.float32(0.05)), ("az", np.int8(3)), ("bs", scales(5) / 10), ("bz", np.zeros(5, np.int8)),
         ("ys", np.float32(0.7)), ("yz", np.int8(-5))], out=TensorProto.INT8),
    "convinteger_pad_stride_group": lambda: mk(
        [N("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 2, 1, 0], strides=[2, 1], group=2)],
        {"x": ints(2, 4, 9, 7)}, [("w", ints(6, 2, 3, 3, seed=1)), ("xz", np.uint8(101)), ("wz", np.uint8(90))],
        opset=10, out=TensorProto.INT32),
    # 64 channels x 3 x 3 taps of 255 * 255: 37M, beyond 2^24.
    "convinteger_large_sums": lambda: mk([N("ConvInteger", ["x", "w"], ["y"], pads=[1, 1, 1, 1])],
                                         {"x": np.full((1, 64, 5, 5), 255, np.uint8)},
                                         [("w", np.full((2, 64, 3, 3), 255, np.uint8))], opset=10,
                                         out=TensorProto.INT32),
    "qlinearconv_u8_bias_per_channel": lambda: mk(
        [N("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"], pads=[1, 1, 1, 1], dilations=[2, 1])],
        {"x": ints(1, 3, 8, 8)},
        [("xs", np.float32(0.02)), ("xz", np.uint8(128)), ("w", ints(5, 3, 3, 3, dtype=np.int8, seed=1)),
         ("ws", scales(5) / 20), ("wz", np.int8(0)), ("ys", np.float32(0.1)), ("yz", np.uint8(100)),
         ("b", np.random.default_rng(3).integers(-500, 500, 5).astype(np.int32))], opset=10),
    # A QDQ chain: Dequantize -> Relu -> Quantize fused into one elementwise kernel.
    "qdq_relu_chain": lambda: mk([N("DequantizeLinear", ["x", "s", "z"], ["d"]), N("Relu", ["d"], ["r"]),
                                  N("QuantizeLinear", ["r", "s2", "z2"], ["y"])],
                                 {"x": ints(4, 3, 6)}, [("s", np.float32(0.1)), ("z", np.uint8(128)),
                                                        ("s2", np.float32(0.05)), ("z2", np.uint8(10))], opset=13),
}
