"""Normalization family vs onnxruntime: LayerNormalization (all outputs), RMSNormalization,
Instance/GroupNormalization, BatchNormalization (runtime parameters, f16, training mode),
LRN, MeanVarianceNormalization, LpNormalization. Only the graph output "y" is compared, so a
case checking a secondary output (LayerNorm's Mean, BN's running mean) names that one "y"."""
from onnx_ops_vs_onnxruntime import model, rnd, helper, np, numpy_helper, TensorProto

H = TensorProto.FLOAT16


def typed_model(nodes, inputs, outputs, inits=(), opset=17):
    """Like model(), with (name, elem_type, shape) inputs and (name, elem_type) outputs."""
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                          [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
                          initializer=[numpy_helper.from_array(v, n) for n, v in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10 if opset > 21 else 8
    return m


def one(op, inputs, feeds, outputs=("y",), opset=17, inits=(), **attrs):
    """One node; `inputs` are graph inputs named in `feeds` or initializers named in `inits`."""
    node = helper.make_node(op, inputs, list(outputs), **attrs)
    graph_inputs = [(n, feeds[n].shape) for n in inputs if n in feeds]
    return model([node], graph_inputs, ["y"], inits=inits, opset=opset), feeds


def layernorm(shape, axis, out_index=0, bias=True, runtime=False, **attrs):
    d = shape[axis:] if axis >= 0 else shape[len(shape) + axis:]
    params = {"g": rnd(*d, seed=1), "b": rnd(*d, seed=2)} if bias else {"g": rnd(*d, seed=1)}
    feeds = {"x": rnd(*shape, lo=-2, hi=3)}
    outs = ["o0", "o1", "o2"][:out_index + 1]
    outs[out_index] = "y"
    if runtime:
        feeds.update(params)
        return one("LayerNormalization", ["x"] + list(params), feeds, outs, axis=axis, **attrs)
    return one("LayerNormalization", ["x"] + list(params), feeds, outs, inits=list(params.items()), axis=axis, **attrs)


def batchnorm(shape, runtime=True, opset=15, out_index=0, training=0, f16=False):
    c = shape[1]
    params = {"s": rnd(c, seed=1), "b": rnd(c, seed=2), "m": rnd(c, seed=3), "v": rnd(c, seed=4, lo=0.2, hi=2)}
    x = rnd(*shape, lo=-2, hi=2)
    # Training nodes declare all three outputs (onnxruntime requires it).
    outs = ["o0", "o1", "o2"][:3 if training else out_index + 1]
    outs[out_index] = "y"
    attrs = {"epsilon": 1e-3}
    if training:
        attrs.update(training_mode=1, momentum=0.8)
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], outs, **attrs)
    if f16:
        x = x.astype(np.float16)
        params = {k: v.astype(np.float16) for k, v in params.items()}
    t = H if f16 else TensorProto.FLOAT
    if runtime:
        feeds = {"x": x, **params}
        return typed_model([node], [(k, t, v.shape) for k, v in feeds.items()], [("y", t)], opset=opset), feeds
    return typed_model([node], [("x", t, x.shape)], [("y", t)], inits=list(params.items()), opset=opset), {"x": x}


def groupnorm(shape, groups, opset=21, eps=1e-5):
    n_params = shape[1] if opset >= 21 else groups
    inits = [("s", rnd(n_params, seed=1)), ("b", rnd(n_params, seed=2))]
    return one("GroupNormalization", ["x", "s", "b"], {"x": rnd(*shape, lo=-1, hi=2)}, opset=opset, inits=inits,
               num_groups=groups, epsilon=eps)


CASES = {
    "layernorm_axis1_nobias": lambda: layernorm((3, 7, 20), 1, bias=False),
    "layernorm_runtime_params": lambda: layernorm((4, 5, 6), -2, runtime=True, epsilon=1e-3),
    "layernorm_mean_output": lambda: layernorm((3, 4, 10), 2, out_index=1),
    "layernorm_invstd_output": lambda: layernorm((2, 3, 4, 5), 1, out_index=2),
    "layernorm_f16": lambda: (typed_model([helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"])],
                                          [("x", H, (3, 33))], [("y", H)],
                                          inits=[("g", rnd(33, seed=1).astype(np.float16)),
                                                 ("b", rnd(33, seed=2).astype(np.float16))]),
                              {"x": rnd(3, 33).astype(np.float16)}),
    "rmsnorm_axis1": lambda: one("RMSNormalization", ["x", "g"], {"x": rnd(3, 5, 16)}, opset=23,
                                 inits=[("g", rnd(5, 16, seed=1))], axis=1, epsilon=1e-4),
    "rmsnorm_default": lambda: one("RMSNormalization", ["x", "g"], {"x": rnd(2, 3, 64)}, opset=23,
                                   inits=[("g", rnd(64, seed=1))]),
    "instancenorm_4d": lambda: one("InstanceNormalization", ["x", "s", "b"], {"x": rnd(2, 6, 7, 9, lo=0, hi=3)},
                                   inits=[("s", rnd(6, seed=1)), ("b", rnd(6, seed=2))], epsilon=1e-3),
    "instancenorm_3d_runtime": lambda: one("InstanceNormalization", ["x", "s", "b"],
                                           {"x": rnd(3, 4, 50), "s": rnd(4, seed=1), "b": rnd(4, seed=2)}),
    "groupnorm_21": lambda: groupnorm((2, 6, 5, 5), 3),
    "groupnorm_21_one_group": lambda: groupnorm((3, 4, 11), 1, eps=1e-3),
    "groupnorm_18_per_group": lambda: groupnorm((2, 8, 3, 3), 4, opset=18),
    "batchnorm_runtime_params": lambda: batchnorm((2, 5, 6, 7)),
    "batchnorm_runtime_opset9": lambda: batchnorm((3, 4, 10), opset=9),
    "batchnorm_const_f16": lambda: batchnorm((2, 3, 4, 4), runtime=False, f16=True),
    "batchnorm_training_y": lambda: batchnorm((4, 3, 5, 5), training=1),
    "batchnorm_training_mean": lambda: batchnorm((4, 3, 5, 5), training=1, out_index=1),
    "batchnorm_training_var": lambda: batchnorm((4, 3, 5, 5), training=1, out_index=2),
    "lrn_size5": lambda: one("LRN", ["x"], {"x": rnd(2, 10, 6, 6)}, size=5, alpha=1e-3, beta=0.75, bias=2.0),
    "lrn_wide_window": lambda: one("LRN", ["x"], {"x": rnd(1, 40, 3, 3)}, size=35, alpha=0.1),
    "mvn_default": lambda: one("MeanVarianceNormalization", ["x"], {"x": rnd(3, 4, 5, 6)}, opset=13),
    "mvn_axes": lambda: one("MeanVarianceNormalization", ["x"], {"x": rnd(2, 3, 4, 8)}, opset=13, axes=[1, 3]),
    "lpnorm_l1_axis0": lambda: one("LpNormalization", ["x"], {"x": rnd(6, 7)}, axis=0, p=1),
    "lpnorm_l2_axis1": lambda: one("LpNormalization", ["x"], {"x": rnd(3, 8, 5)}, axis=1, p=2),
}
