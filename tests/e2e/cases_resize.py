"""Resize / Upsample vs onnxruntime: the interpolation modes, coordinate transforms,
scales vs sizes inputs, older opsets (Resize-10/11/13, Upsample-7/9) and non-float data.

Scales here give whole output lengths: where scale * length is fractional, align_corners
and half_pixel_symmetric divide by that fractional length in the ONNX reference (which Keel
follows, as the conformance cases require) but by the rounded length in onnxruntime."""
from onnx_ops_vs_onnxruntime import model, rnd, helper, np, numpy_helper, TensorProto


def resize(shape, opset=19, scales=None, sizes=None, roi=None, seed=0, **attrs):
    """X -> Resize(X, roi, scales, sizes) with the parameters as initializers ('' when absent)."""
    inits, names = [], []
    for name, value, dtype in (("roi", roi, np.float32), ("scales", scales, np.float32), ("sizes", sizes, np.int64)):
        if value is None:
            names.append("")
        else:
            inits.append((name, np.array(value, dtype)))
            names.append(name)
    while names and names[-1] == "":
        names.pop()
    node = helper.make_node("Resize", ["x"] + names, ["y"], **attrs)
    return model([node], [("x", shape)], ["y"], inits, opset=opset), {"x": rnd(*shape, seed=seed)}


def legacy(op, shape, scales, opset, **attrs):
    """Resize-10 / Upsample-9 (scales as input 1) or Upsample-7 (scales attribute)."""
    if opset < 9:
        node = helper.make_node(op, ["x"], ["y"], scales=[float(s) for s in scales], **attrs)
        return model([node], [("x", shape)], ["y"], opset=opset), {"x": rnd(*shape)}
    node = helper.make_node(op, ["x", "scales"], ["y"], **attrs)
    return (model([node], [("x", shape)], ["y"], [("scales", np.array(scales, np.float32))], opset=opset),
            {"x": rnd(*shape)})


def resize_u8(shape, scales, **attrs):
    """Nearest resize of uint8 data (an index map: any dtype)."""
    node = helper.make_node("Resize", ["x", "", "scales"], ["y"], **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
                          initializer=[numpy_helper.from_array(np.array(scales, np.float32), "scales")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    m.ir_version = 8
    x = np.random.default_rng(3).integers(0, 256, shape).astype(np.uint8)
    return m, {"x": x}


CASES = {
    "resize_bilinear_half_pixel_up2x": lambda: resize((1, 3, 5, 7), scales=[1, 1, 2, 2], mode="linear"),
    "resize_nearest_asymmetric_floor": lambda: resize((2, 3, 4, 6), opset=13, scales=[1, 1, 2.5, 1.5], mode="nearest",
                                                      coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    "resize_cubic_align_corners": lambda: resize((1, 2, 6, 5), opset=13, scales=[1, 1, 1.5, 2], mode="cubic",
                                                 coordinate_transformation_mode="align_corners"),
    "resize_sizes_linear": lambda: resize((1, 2, 9, 8), opset=11, roi=[], scales=[], sizes=[1, 2, 5, 13], mode="linear"),
    "resize_sizes_nearest_ceil_half_pixel": lambda: resize((1, 1, 7, 9), sizes=[1, 1, 12, 4], mode="nearest",
                                                           nearest_mode="ceil"),
    "resize_trilinear_sizes": lambda: resize((1, 2, 4, 5, 6), opset=13, sizes=[1, 2, 7, 3, 9], mode="linear"),
    "resize_cubic_exclude_outside_down": lambda: resize((1, 2, 11, 13), scales=[1, 1, 0.6, 0.7], mode="cubic",
                                                        cubic_coeff_a=-0.5, exclude_outside=1),
    "resize_linear_pytorch_half_pixel": lambda: resize((2, 3, 8, 1), sizes=[2, 3, 3, 1], mode="linear",
                                                       coordinate_transformation_mode="pytorch_half_pixel"),
    "resize_tf_crop_and_resize": lambda: resize((1, 1, 8, 8), roi=[0, 0, 0.2, 0.1, 1, 1, 1.1, 0.7], sizes=[1, 1, 5, 6],
                                                mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
                                                extrapolation_value=-3.0),
    "resize_axes_not_smaller": lambda: resize((1, 3, 6, 9), sizes=[10, 10], axes=[2, 3], mode="linear",
                                              keep_aspect_ratio_policy="not_smaller"),
    "resize_linear_antialias_down": lambda: resize((1, 2, 16, 12), scales=[1, 1, 0.4, 0.55], mode="linear", antialias=1),
    "resize_nearest_u8": lambda: resize_u8((1, 3, 4, 5), [1, 1, 2, 3], mode="nearest"),
    "resize10_nearest": lambda: legacy("Resize", (1, 2, 3, 4), [1, 1, 2, 3], 10, mode="nearest"),
    "resize10_linear": lambda: legacy("Resize", (1, 2, 3, 4), [1, 1, 2.5, 1.5], 10, mode="linear"),
    "upsample7_nearest": lambda: legacy("Upsample", (1, 2, 3, 4), [1, 1, 2, 3], 7, mode="nearest"),
    "upsample9_linear": lambda: legacy("Upsample", (1, 2, 3, 4), [1, 1, 2, 2], 9, mode="linear"),
}


def fused_chain():
    """Sigmoid -> Resize (linear) -> Add: the resize is inlined between elementwise ops."""
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]),
             helper.make_node("Resize", ["s", "", "scales"], ["r"], mode="linear"),
             helper.make_node("Add", ["r", "b"], ["y"])]
    return (model(nodes, [("x", (1, 4, 6, 5)), ("b", (1, 4, 12, 10))], ["y"],
                  [("scales", np.array([1, 1, 2, 2], np.float32))], opset=19),
            {"x": rnd(1, 4, 6, 5, seed=5), "b": rnd(1, 4, 12, 10, seed=6)})


CASES["resize_fused_between_elementwise"] = fused_chain


def conv_around():
    """Conv -> Resize (nearest 2x) -> Conv: a resize between two anchors (FPN-style)."""
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Resize", ["c", "", "scales"], ["r"], mode="nearest"),
             helper.make_node("Conv", ["r", "w2"], ["y"], pads=[1, 1, 1, 1])]
    return (model(nodes, [("x", (1, 3, 7, 6))], ["y"],
                  [("w1", rnd(4, 3, 3, 3, seed=7)), ("scales", np.array([1, 1, 2, 2], np.float32)),
                   ("w2", rnd(5, 4, 3, 3, seed=8))], opset=19),
            {"x": rnd(1, 3, 7, 6, seed=9)})


CASES["resize_between_convs"] = conv_around
