"""onnxruntime comparisons for the data-movement ops (compiler/ops/movement_*.cc, einsum.cc):
older opset forms (attributes before inputs), run-time index/value operands, integer and
bool data, unused Split outputs and fusion with elementwise consumers."""
import numpy as np
from onnx_ops_vs_onnxruntime import helper, numpy_helper, TensorProto, rnd

_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
          np.dtype(np.int32): TensorProto.INT32, np.dtype(np.bool_): TensorProto.BOOL,
          np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.float16): TensorProto.FLOAT16}


def mk(nodes, feeds, inits=(), opset=17, out=TensorProto.FLOAT):
    """A model whose graph inputs are typed after `feeds` (name -> array) and whose output is "y"."""
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, _TYPES[v.dtype], v.shape) for n, v in feeds.items()],
                          [helper.make_tensor_value_info("y", out, None)],
                          initializer=[numpy_helper.from_array(v, n) for n, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m, feeds


def i64(*v):
    return np.array(v, np.int64)


def ints(*shape, lo=-5, hi=5, seed=0, dtype=np.int64):
    return np.random.default_rng(seed).integers(lo, hi, shape).astype(dtype)


N = helper.make_node
I64, I32, BOOL = TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL

CASES = {
    # Pad: attribute form (opset 10), inputs (11+), axes (18+), every mode, negative pads.
    "pad_reflect_attr_v10": lambda: mk([N("Pad", ["x"], ["y"], mode="reflect", pads=[0, 2, 1, 0, 3, 2])],
                                       {"x": rnd(2, 5, 4)}, opset=10),
    "pad_edge_negative": lambda: mk([N("Pad", ["x", "p"], ["y"], mode="edge")], {"x": rnd(3, 6)},
                                    [("p", i64(2, -1, 1, 3))], opset=13),
    "pad_wrap_axes_v19": lambda: mk([N("Pad", ["x", "p", "", "a"], ["y"], mode="wrap")], {"x": rnd(2, 3, 4)},
                                    [("p", i64(1, 3, 2, 1)), ("a", i64(-1, 1))], opset=19),
    "pad_constant_runtime_value": lambda: mk([N("Pad", ["x", "p", "v"], ["t"]), N("Relu", ["t"], ["y"])],
                                             {"x": rnd(3, 4), "v": np.array(0.75, np.float32)},
                                             [("p", i64(1, 0, 2, 3))], opset=13),
    "pad_int64_constant": lambda: mk([N("Pad", ["x", "p", "v"], ["y"])], {"x": ints(3, 4)},
                                     [("p", i64(1, 1, 1, 1)), ("v", np.array(-7, np.int64))], opset=18, out=I64),
    "pad_reflect_max": lambda: mk([N("Pad", ["x", "p"], ["y"], mode="reflect")], {"x": rnd(1, 3)},
                                   [("p", i64(0, 2, 0, 2))], opset=13),
    # Expand / Tile.
    "expand_int32": lambda: mk([N("Expand", ["x", "s"], ["y"])], {"x": ints(3, 1, dtype=np.int32)},
                               [("s", i64(2, 1, 4))], out=I32),
    "expand_then_add": lambda: mk([N("Expand", ["x", "s"], ["e"]), N("Add", ["e", "z"], ["y"])],
                                  {"x": rnd(1, 5), "z": rnd(4, 5, seed=3)}, [("s", i64(4, 1))]),
    "tile_bool": lambda: mk([N("Tile", ["x", "r"], ["y"])], {"x": ints(2, 3, lo=0, hi=2).astype(np.bool_)},
                            [("r", i64(2, 3))], out=BOOL),
    "tile_float_v6": lambda: mk([N("Tile", ["x", "r"], ["y"])], {"x": rnd(2, 1, 3)}, [("r", i64(1, 4, 2))], opset=7),
    # Split: attribute (11), input (13), num_outputs uneven (18); only output 1 is read.
    "split_attr_v11": lambda: mk([N("Split", ["x"], ["a", "y", "c"], axis=1, split=[1, 4, 2])], {"x": rnd(3, 7)},
                                 opset=11),
    "split_input_v13": lambda: mk([N("Split", ["x", "s"], ["a", "y"], axis=-1)], {"x": rnd(2, 3, 9)},
                                  [("s", i64(4, 5))], opset=13),
    "split_uneven_v18": lambda: mk([N("Split", ["x"], ["a", "b", "y"], axis=0, num_outputs=3)], {"x": rnd(8, 3)},
                                   opset=18),
    "split_equal_default": lambda: mk([N("Split", ["x"], ["y", "b"])], {"x": ints(6, 2)}, opset=13, out=I64),
    # DepthToSpace / SpaceToDepth.
    "depthtospace_crd": lambda: mk([N("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD")], {"x": rnd(2, 8, 3, 5)}),
    "depthtospace_dcr": lambda: mk([N("DepthToSpace", ["x"], ["y"], blocksize=3)], {"x": rnd(1, 18, 2, 3)}),
    "spacetodepth": lambda: mk([N("SpaceToDepth", ["x"], ["y"], blocksize=2)], {"x": rnd(2, 3, 4, 6)}),
    # Generators.
    "constantofshape_int64": lambda: mk(
        [N("ConstantOfShape", ["s"], ["c"], value=numpy_helper.from_array(i64(3))), N("Add", ["c", "x"], ["y"])],
        {"x": ints(2, 3)}, [("s", i64(2, 3))], out=I64),
    "range_int_folded": lambda: mk([N("Range", ["a", "b", "d"], ["r"]), N("Add", ["r", "x"], ["y"])], {"x": ints(5)},
                                   [("a", np.array(10, np.int64)), ("b", np.array(0, np.int64)),
                                    ("d", np.array(-2, np.int64))], out=I64),
    "range_float_output": lambda: mk([N("Range", ["a", "b", "d"], ["y"])], {"x": rnd(1)},
                                     [("a", np.array(0.5, np.float32)), ("b", np.array(3.2, np.float32)),
                                      ("d", np.array(0.3, np.float32))]),
    "eyelike_int32_k": lambda: mk([N("EyeLike", ["x"], ["y"], k=-1, dtype=TensorProto.INT32)], {"x": rnd(4, 6)},
                                  out=I32),
    "onehot_runtime_axis0": lambda: mk([N("OneHot", ["i", "d", "v"], ["y"], axis=0)],
                                       {"i": ints(2, 3, lo=-6, hi=8), "v": np.array([-1.5, 2.0], np.float32)},
                                       [("d", np.array(6, np.int64))], opset=11),
    "onehot_float_indices": lambda: mk([N("OneHot", ["i", "d", "v"], ["y"])],
                                       {"i": np.array([0.0, 2.7, -1.0, 4.0], np.float32)},
                                       [("d", np.array(4.0, np.float32)), ("v", np.array([0.0, 1.0], np.float32))],
                                       opset=11),
    "shape_start_end": lambda: mk([N("Shape", ["x"], ["y"], start=1, end=-1)], {"x": rnd(2, 3, 4, 5)}, opset=15,
                                  out=I64),
    # Trilu / ReverseSequence / Compress.
    "triu_runtime_k": lambda: mk([N("Trilu", ["x", "k"], ["y"])], {"x": rnd(2, 4, 5), "k": np.array(1, np.int64)},
                                 opset=14),
    "tril_negative_k": lambda: mk([N("Trilu", ["x", "k"], ["y"], upper=0)], {"x": ints(5, 3)},
                                  [("k", np.array(-1, np.int64))], opset=14, out=I64),
    "reversesequence_batch0": lambda: mk([N("ReverseSequence", ["x", "l"], ["y"], batch_axis=0, time_axis=1)],
                                         {"x": rnd(3, 5, 2), "l": i64(5, 1, 3)}),
    "compress_axis1": lambda: mk([N("Compress", ["x", "c"], ["y"], axis=1)], {"x": rnd(3, 5)},
                                 [("c", np.array([1, 0, 1, 1], np.bool_))]),
    "compress_flat": lambda: mk([N("Compress", ["x", "c"], ["y"])], {"x": ints(2, 3)},
                                [("c", np.array([0, 1, 1, 0, 1], np.bool_))], out=I64),
    # Gathers with run-time indices (negative ones included).
    "gather_elements_runtime": lambda: mk([N("GatherElements", ["x", "i"], ["g"], axis=1), N("Neg", ["g"], ["y"])],
                                          {"x": rnd(3, 6), "i": ints(3, 4, lo=-6, hi=6)}),
    "gathernd_batch1": lambda: mk([N("GatherND", ["x", "i"], ["y"], batch_dims=1)],
                                  {"x": rnd(2, 4, 3, 5), "i": ints(2, 6, 2, lo=-3, hi=3, seed=4)}, opset=13),
    "gathernd_int32_slices": lambda: mk([N("GatherND", ["x", "i"], ["y"])],
                                        {"x": ints(4, 3, 2, dtype=np.int32), "i": ints(5, 1, lo=0, hi=4)},
                                        opset=12, out=I32),
    # Scatters: run-time indices with duplicates, reductions, the deprecated Scatter.
    "scatter_elements_add_dup": lambda: mk([N("ScatterElements", ["x", "i", "u"], ["y"], axis=0, reduction="add")],
                                           {"x": rnd(4, 3), "i": ints(5, 3, lo=-4, hi=4, seed=2),
                                            "u": rnd(5, 3, seed=5)}, opset=16),
    "scatter_elements_none": lambda: mk([N("ScatterElements", ["x", "i", "u"], ["y"], axis=1)],
                                        {"x": ints(3, 5), "i": i64([4, 0], [1, 2], [3, 0]),
                                         "u": ints(3, 2, seed=8)}, opset=13, out=I64),
    "scatter_v10": lambda: mk([N("Scatter", ["x", "i", "u"], ["y"], axis=1)],
                              {"x": rnd(2, 6), "i": i64([0, 5, 2], [1, 3, 4]), "u": rnd(2, 3, seed=6)}, opset=10),
    "scatternd_mul": lambda: mk([N("ScatterND", ["x", "i", "u"], ["y"], reduction="mul")],
                                {"x": rnd(4, 3, 2), "i": i64([1], [3], [1]), "u": rnd(3, 3, 2, seed=7)}, opset=16),
    "scatternd_max_elements": lambda: mk([N("ScatterND", ["x", "i", "u"], ["y"], reduction="max")],
                                         {"x": rnd(3, 4), "i": i64([0, 1], [2, 3], [0, 1]), "u": rnd(3, seed=9)},
                                         opset=18),
    "scatternd_kv_update": lambda: mk([N("ScatterND", ["x", "i", "u"], ["s"]), N("Relu", ["s"], ["y"])],
                                      {"x": rnd(2, 5, 4), "i": i64([[0, 3]], [[1, 0]]).reshape(2, 1, 2),
                                       "u": rnd(2, 1, 4, seed=3)}, opset=13),
    # Einsum.
    "einsum_attention": lambda: mk([N("Einsum", ["q", "k"], ["y"], equation="bhid,bhjd->bhij")],
                                   {"q": rnd(2, 3, 5, 8), "k": rnd(2, 3, 7, 8, seed=1)}, opset=12),
    "einsum_diag_sum": lambda: mk([N("Einsum", ["x"], ["y"], equation="ii->i")], {"x": rnd(5, 5)}, opset=12),
    "einsum_total": lambda: mk([N("Einsum", ["x"], ["y"], equation="ij->")], {"x": rnd(4, 6)}, opset=12),
    "einsum_outer_implicit": lambda: mk([N("Einsum", ["a", "b"], ["y"], equation="i,j")],
                                        {"a": rnd(3), "b": rnd(4, seed=2)}, opset=12),
    "einsum_ellipsis_bcast": lambda: mk([N("Einsum", ["a", "b"], ["y"], equation="...ij,...jk->...ik")],
                                        {"a": rnd(2, 3, 4), "b": rnd(1, 4, 2, seed=2)}, opset=12),
    "einsum_int64": lambda: mk([N("Einsum", ["a", "b"], ["y"], equation="ij,jk->ki")],
                               {"a": ints(3, 4), "b": ints(4, 2, seed=1)}, opset=12, out=I64),
}
