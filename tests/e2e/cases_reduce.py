"""Reduction family vs onnxruntime: Reduce* (attribute and input axes, keepdims, noop, empty axes),
ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax (opset 13 and the legacy flatten form), CumSum, TopK,
across opsets and dtypes."""
from onnx_ops_vs_onnxruntime import model, rnd, unary, binary, helper, np, numpy_helper, TensorProto

ONNX_TYPE = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.float16: TensorProto.FLOAT16,
             np.int32: TensorProto.INT32, np.int64: TensorProto.INT64, np.uint8: TensorProto.UINT8,
             np.bool_: TensorProto.BOOL}


def data(shape, dtype, seed=0):
    g = np.random.default_rng(seed)
    if dtype == np.bool_:
        return g.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        return g.integers(-50 if dtype != np.uint8 else 0, 50, shape).astype(dtype)
    return g.uniform(-2, 2, shape).astype(dtype)


def one(op, shape, dtype=np.float32, opset=17, inits=(), extra_inputs=(), outputs=("y",), x=None, **attrs):
    """One node `op` on input x (+ constant inputs `inits` as (name, array)); output y (and others)."""
    x = data(shape, dtype) if x is None else x
    names = ["x"] + list(extra_inputs)
    node = helper.make_node(op, names, list(outputs), **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", ONNX_TYPE[dtype], x.shape)],
                          [helper.make_tensor_value_info(o, TensorProto.INT64 if op in ("ArgMax", "ArgMin") or i == 1
                                                         else ONNX_TYPE[dtype], None) for i, o in enumerate(outputs)],
                          initializer=[numpy_helper.from_array(v, n) for n, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m, {"x": x}


def axes_in(axes):
    return dict(inits=[("axes", np.array(axes, np.int64))], extra_inputs=["axes"])


REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]
INPUT_SINCE = {op: (13 if op == "ReduceSum" else 18) for op in REDUCE}

CASES = {}
for op in REDUCE:
    low = op[6:].lower()
    pos = op == "ReduceLogSum"  # log of a sum needs positive elements
    xs = lambda shape, op=op, pos=pos: None if not pos else np.abs(data(shape, np.float32)) + 0.1
    # The attribute form (opset 11) and the input form (newest opset), keepdims on and off, negative axes.
    CASES["%s_attr_opset11" % low] = (lambda op=op, xs=xs: one(op, (3, 4, 5), opset=11, axes=[0, -1], keepdims=0,
                                                                  x=xs((3, 4, 5))))
    CASES["%s_attr_default_axes_opset9" % low] = (lambda op=op, xs=xs: one(op, (2, 3, 4), opset=9, x=xs((2, 3, 4))))
    CASES["%s_input_axes" % low] = (lambda op=op, xs=xs: one(op, (2, 3, 4, 5), opset=INPUT_SINCE[op], keepdims=1,
                                                             x=xs((2, 3, 4, 5)), **axes_in([1, 3])))
    CASES["%s_input_axes_middle_nokeep" % low] = (
        lambda op=op, xs=xs: one(op, (4, 6, 7), opset=max(INPUT_SINCE[op], 18), keepdims=0, x=xs((4, 6, 7)),
                                 **axes_in([-2])))
    CASES["%s_empty_axes_all" % low] = (lambda op=op, xs=xs: one(op, (3, 5), opset=INPUT_SINCE[op], keepdims=0,
                                                                 x=xs((3, 5)), **axes_in(np.zeros(0, np.int64))))
    CASES["%s_noop_empty_axes" % low] = (lambda op=op, xs=xs: one(op, (3, 5), opset=INPUT_SINCE[op],
                                                                  noop_with_empty_axes=1, x=xs((3, 5))))
    CASES["%s_f64" % low] = (lambda op=op: one(op, (3, 4, 5), np.float64, opset=13 if op == "ReduceSum" else 13,
                                               **({"axes": [1]} if op != "ReduceSum" else axes_in([1])),
                                               x=np.abs(data((3, 4, 5), np.float64)) + 0.1))
    CASES["%s_rank0" % low] = (lambda op=op: one(op, (), opset=INPUT_SINCE[op], x=np.array(1.5, np.float32)))
for op in ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1"]:
    for dt in [np.int32, np.int64]:
        CASES["%s_%s" % (op[6:].lower(), np.dtype(dt).name)] = (
            lambda op=op, dt=dt: one(op, (3, 4, 5), dt, opset=13,
                                     x=(data((3, 4, 5), dt) % (5 if op == "ReduceProd" else 100)),
                                     **({"axes": [0, 2]} if op != "ReduceSum" else axes_in([0, 2]))))
CASES.update({
    "reducemax_u8_opset12": lambda: one("ReduceMax", (4, 6), np.uint8, opset=12, axes=[1]),
    "reducemin_bool_opset20": lambda: one("ReduceMin", (4, 6), np.bool_, opset=20, keepdims=0, **axes_in([1])),
    "reducemax_bool_opset20": lambda: one("ReduceMax", (4, 6), np.bool_, opset=20, **axes_in([0])),
    "reducesum_f16": lambda: one("ReduceSum", (8, 33), np.float16, opset=13, **axes_in([1])),
    "reducesum_empty_set": lambda: one("ReduceSum", (2, 0, 4), opset=13, **axes_in([1])),
    "reduceprod_empty_set": lambda: one("ReduceProd", (2, 0, 4), opset=18, **axes_in([1])),
    "reducesum_big_parallel": lambda: one("ReduceSum", (64, 3, 200), opset=13, keepdims=0, **axes_in([1, 2])),
    "reducelogsumexp_large": lambda: one("ReduceLogSumExp", (5, 40), opset=18, x=data((5, 40), np.float32) * 200,
                                         **axes_in([1])),
})

for op in ["ArgMax", "ArgMin"]:
    low = op.lower()
    ties = np.array([[1, 3, 3, 0], [2, 2, 1, 2], [0, 0, 0, 0]], np.float32)
    CASES["%s_opset11_negative_axis" % low] = lambda op=op: one(op, (3, 4, 5), opset=11, axis=-2)
    CASES["%s_opset7_default" % low] = lambda op=op: one(op, (3, 4, 5), opset=7)
    CASES["%s_nokeep_axis2" % low] = lambda op=op: one(op, (3, 4, 5), opset=13, axis=2, keepdims=0)
    CASES["%s_ties_first" % low] = lambda op=op, t=ties: one(op, t.shape, opset=13, axis=1, x=t)
    CASES["%s_ties_last" % low] = lambda op=op, t=ties: one(op, t.shape, opset=13, axis=1, select_last_index=1, x=t)
    CASES["%s_int32" % low] = lambda op=op: one(op, (6, 7), np.int32, opset=13, axis=0, select_last_index=1)
    CASES["%s_int64" % low] = lambda op=op: one(op, (6, 7), np.int64, opset=13, axis=1)
    CASES["%s_f64" % low] = lambda op=op: one(op, (6, 7), np.float64, opset=13, axis=1)

for op in ["Softmax", "LogSoftmax", "Hardmax"]:
    low = op.lower()
    CASES["%s_opset13_middle" % low] = lambda op=op: one(op, (3, 4, 5), opset=13, axis=1)
    CASES["%s_opset13_default" % low] = lambda op=op: one(op, (3, 4, 5), opset=13)
    CASES["%s_opset11_flatten_default" % low] = lambda op=op: one(op, (2, 3, 4, 5), opset=11)
    CASES["%s_opset11_flatten_axis0" % low] = lambda op=op: one(op, (2, 3, 4), opset=11, axis=0)
    CASES["%s_opset9_flatten_negative" % low] = lambda op=op: one(op, (2, 3, 4, 5), opset=9, axis=-3)
    CASES["%s_opset11_last" % low] = lambda op=op: one(op, (2, 3, 7), opset=11, axis=2)
    if op != "Hardmax":  # onnxruntime has no f64 Hardmax
        CASES["%s_f64" % low] = lambda op=op: one(op, (4, 9), np.float64, opset=13)
    CASES["%s_big_parallel" % low] = lambda op=op: one(op, (128, 257), opset=13)
CASES["hardmax_ties"] = lambda: one("Hardmax", (3, 4), opset=13,
                                    x=np.array([[1, 3, 3, 0], [2, 2, 1, 2], [0, 0, 0, 0]], np.float32))

for opset in [11, 14]:
    CASES["cumsum_opset%d" % opset] = lambda opset=opset: one("CumSum", (3, 4, 5), opset=opset,
                                                              inits=[("ax", np.array(1, np.int64))], extra_inputs=["ax"])
CASES.update({
    "cumsum_exclusive_reverse": lambda: one("CumSum", (3, 4, 5), opset=14, exclusive=1, reverse=1,
                                            inits=[("ax", np.array(-1, np.int32))], extra_inputs=["ax"]),
    "cumsum_exclusive": lambda: one("CumSum", (6, 5), opset=14, exclusive=1,
                                    inits=[("ax", np.array([0], np.int64))], extra_inputs=["ax"]),
    "cumsum_reverse_int32": lambda: one("CumSum", (6, 5), np.int32, opset=14, reverse=1,
                                        inits=[("ax", np.array(0, np.int32))], extra_inputs=["ax"]),
    "cumsum_int64": lambda: one("CumSum", (4, 9), np.int64, opset=14,
                                inits=[("ax", np.array(1, np.int64))], extra_inputs=["ax"]),
    "cumsum_f64": lambda: one("CumSum", (4, 9), np.float64, opset=14,
                              inits=[("ax", np.array(1, np.int64))], extra_inputs=["ax"]),
})


def topk(shape, k, dtype=np.float32, opset=11, out="y", x=None, **attrs):
    outs = ["y", "i"] if out == "y" else ["v", "y"]
    if opset < 10:
        return one("TopK", shape, dtype, opset=opset, outputs=outs, k=k, x=x, **attrs)
    return one("TopK", shape, dtype, opset=opset, outputs=outs, x=x, inits=[("k", np.array([k], np.int64))],
               extra_inputs=["k"], **attrs)


TIES = np.array([[3, 1, 3, 2, 1, 3], [0, 0, 0, 0, 0, 0], [5, 4, 5, 4, 5, 4]], np.float32)
CASES.update({
    "topk_opset1_values": lambda: topk((3, 4, 5), 2, opset=9),
    "topk_opset1_indices": lambda: topk((3, 4, 5), 2, opset=9, out="i"),
    "topk_opset10_axis0": lambda: topk((5, 4), 3, opset=10, axis=0, out="i"),
    "topk_smallest_values": lambda: topk((3, 11), 4, largest=0),
    "topk_smallest_indices": lambda: topk((3, 11), 4, largest=0, out="i"),
    "topk_middle_axis_indices": lambda: topk((3, 7, 4), 7, axis=1, out="i"),
    "topk_ties_largest": lambda: topk(TIES.shape, 4, x=TIES, out="i"),
    "topk_ties_smallest": lambda: topk(TIES.shape, 5, x=TIES, largest=0, out="i"),
    "topk_int64": lambda: topk((4, 9), 3, np.int64, out="i"),
    "topk_int32_values": lambda: topk((4, 9), 3, np.int32, largest=0),
    "topk_f64_opset24": lambda: topk((4, 9), 9, np.float64, opset=24),
    "topk_k0": lambda: topk((4, 9), 0),
})
