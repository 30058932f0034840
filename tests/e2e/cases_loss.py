"""onnxruntime cases for the losses (compiler/ops/loss.cc): NegativeLogLikelihoodLoss and
SoftmaxCrossEntropyLoss with every reduction, weights, ignore_index (in and out of [0, C)),
N-D inputs, int32/int64 targets, f64/f16 inputs and SCE's log_prob output."""
from onnx_ops_vs_onnxruntime import TensorProto, helper, np, rnd

_NP_TO_ONNX = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE, np.float16: TensorProto.FLOAT16,
               np.int32: TensorProto.INT32, np.int64: TensorProto.INT64}


def loss(op, shape, reduction="mean", weight=False, ignore_index=None, tdtype=np.int64, xdtype=np.float32,
         log_prob=False, opset=13, seed=0):
    """x [N, C, d...] random logits, targets in [0, C) with about a quarter set to
    ignore_index (when given); the compared output "y" is the loss, or SCE's log_prob."""
    rng = np.random.default_rng(seed)
    c = shape[1]
    x = rnd(*shape, seed=seed + 1, lo=-3, hi=3).astype(xdtype)
    if op == "NegativeLogLikelihoodLoss":  # NLL takes log-probabilities
        e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
        x = np.log(e / e.sum(axis=1, keepdims=True)).astype(xdtype)
    tshape = (shape[0],) + tuple(shape[2:])
    t = rng.integers(0, c, tshape)
    if ignore_index is not None:
        t = np.where(rng.random(tshape) < 0.25, ignore_index, t)
    feeds = {"x": x, "t": t.astype(tdtype)}
    if weight:
        feeds["w"] = rng.uniform(0.2, 2.0, (c,)).astype(xdtype)
    attrs = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    outs = ["loss", "y"] if log_prob else ["y"]
    node = helper.make_node(op, list(feeds), outs, **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, _NP_TO_ONNX[v.dtype.type], v.shape)
                                        for n, v in feeds.items()],
                          [helper.make_tensor_value_info(n, _NP_TO_ONNX[np.dtype(xdtype).type], None) for n in outs])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m, feeds


NLL = "NegativeLogLikelihoodLoss"
SCE = "SoftmaxCrossEntropyLoss"

CASES = {
    "nll_2d_mean": lambda: loss(NLL, (7, 5)),
    "nll_2d_none_i32": lambda: loss(NLL, (7, 5), "none", tdtype=np.int32),
    "nll_3d_sum_weight": lambda: loss(NLL, (3, 6, 9), "sum", weight=True, opset=12),
    "nll_4d_mean_weight_ii": lambda: loss(NLL, (2, 5, 4, 3), weight=True, ignore_index=2, opset=22),
    "nll_3d_mean_ii_negative": lambda: loss(NLL, (3, 4, 8), ignore_index=-1),
    "nll_3d_none_weight_ii_high": lambda: loss(NLL, (3, 4, 8), "none", weight=True, ignore_index=10),
    "nll_2d_mean_f64": lambda: loss(NLL, (6, 11), weight=True, ignore_index=0, xdtype=np.float64),
    "sce_2d_mean": lambda: loss(SCE, (8, 10)),
    "sce_2d_sum_i32": lambda: loss(SCE, (8, 10), "sum", tdtype=np.int32, opset=12),
    "sce_3d_none_weight": lambda: loss(SCE, (3, 7, 5), "none", weight=True),
    "sce_4d_mean_weight_ii": lambda: loss(SCE, (2, 6, 3, 4), weight=True, ignore_index=-100),
    "sce_3d_mean_ii_in_range": lambda: loss(SCE, (4, 5, 6), ignore_index=3),
    "sce_3d_log_prob": lambda: loss(SCE, (3, 7, 5), "sum", weight=True, ignore_index=1, log_prob=True),
    "sce_2d_mean_f64": lambda: loss(SCE, (5, 9), weight=True, xdtype=np.float64),
    "nll_3d_mean_weight_ii_f16": lambda: loss(NLL, (4, 5, 6), weight=True, ignore_index=1, xdtype=np.float16),
    "sce_3d_log_prob_f16": lambda: loss(SCE, (4, 5, 6), "none", xdtype=np.float16, log_prob=True),
}
