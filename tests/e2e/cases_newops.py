"""CenterCropPad, Col2Im, RoiAlign and the decoder ops TensorScatter and CausalConvWithState vs
onnxruntime (SwiGLU is left to the conformance cases: onnxruntime 1.32 expands it into Swish-24,
which it does not implement): crops and pads on several axes, Col2Im with strides, pads
and dilations in 2-D and 3-D, RoiAlign in both modes, both coordinate transforms, fixed and
adaptive sampling (and constant-folded, which runs the reference evaluator)."""
from onnx_ops_vs_onnxruntime import model, rnd, helper, np, numpy_helper, TensorProto


def center_crop_pad(shape, target, axes=None):
    attrs = {} if axes is None else {"axes": axes}
    node = helper.make_node("CenterCropPad", ["x", "shape"], ["y"], **attrs)
    return (model([node], [("x", shape)], ["y"], [("shape", np.array(target, np.int64))], opset=18),
            {"x": rnd(*shape)})


def col2im(n, c, image, block, seed=0, **attrs):
    r = len(image)
    dil = attrs.get("dilations", [1] * r)
    pads = attrs.get("pads", [0] * 2 * r)
    strides = attrs.get("strides", [1] * r)
    blocks = [(image[i] + pads[i] + pads[i + r] - dil[i] * (block[i] - 1) - 1) // strides[i] + 1 for i in range(r)]
    shape = (n, c * int(np.prod(block)), int(np.prod(blocks)))
    node = helper.make_node("Col2Im", ["x", "image_shape", "block_shape"], ["y"], **attrs)
    inits = [("image_shape", np.array(image, np.int64)), ("block_shape", np.array(block, np.int64))]
    return model([node], [("x", shape)], ["y"], inits, opset=18), {"x": rnd(*shape, seed=seed)}


ROIS = np.array([[0.0, 0.0, 7.0, 5.0], [1.3, 2.2, 6.1, 9.4], [-1.5, 3.0, 4.0, 12.5], [5.0, 5.0, 5.5, 5.2],
                 [2.0, 1.0, 14.0, 11.0]], np.float32)
BATCH = np.array([0, 1, 1, 0, 1], np.int64)


def roi_align(opset=16, folded=False, **attrs):
    """RoiAlign on X [2, 3, 10, 12] with ROIS; `folded`: every input constant and the result added
    to a graph input, so keelc folds RoiAlign with its reference evaluator."""
    x = rnd(2, 3, 10, 12, seed=3, lo=-2, hi=2)
    node = helper.make_node("RoiAlign", ["x", "rois", "batch"], ["r" if folded else "y"], **attrs)
    inits = [("rois", ROIS), ("batch", BATCH)]
    if not folded:
        return model([node], [("x", x.shape)], ["y"], inits, opset=opset), {"x": x}
    h, w = attrs.get("output_height", 1), attrs.get("output_width", 1)
    add = helper.make_node("Add", ["r", "z"], ["y"])
    z = rnd(len(BATCH), 3, h, w, seed=4)
    return model([node, add], [("z", z.shape)], ["y"], inits + [("x", x)], opset=opset), {"z": z}


def tensor_scatter(past, upd, write, axis=-2, **attrs):
    node = helper.make_node("TensorScatter", ["past", "upd", "w"], ["y"], axis=axis, **attrs)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("past", TensorProto.FLOAT, past),
                                        helper.make_tensor_value_info("upd", TensorProto.FLOAT, upd),
                                        helper.make_tensor_value_info("w", TensorProto.INT64, [len(write)])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 24)])
    m.ir_version = 10
    return m, {"past": rnd(*past, seed=1), "upd": rnd(*upd, seed=2), "w": np.array(write, np.int64)}


def causal_conv(b, c, length, k, bias=False, past=False, **attrs):
    names = ["x", "w", "bias" if bias else "", "past" if past else ""]
    while names[-1] == "":
        names.pop()
    node = helper.make_node("CausalConvWithState", names, ["y", "state"], **attrs)
    inputs = [("x", (b, c, length))] + ([("past", (b, c, k - 1))] if past else [])
    inits = [("w", rnd(c, 1, k, seed=5))] + ([("bias", rnd(c, seed=6))] if bias else [])
    feeds = {"x": rnd(b, c, length, seed=7)}
    if past:
        feeds["past"] = rnd(b, c, k - 1, seed=8)
    m = model([node], inputs, ["y"], inits, opset=27)
    m.ir_version = 10
    return m, feeds


CASES = {
    "center_crop_pad_all": lambda: center_crop_pad((5, 8, 3), [3, 11, 3]),
    "center_crop_pad_axes": lambda: center_crop_pad((2, 9, 6, 4), [4, 9], axes=[1, -2]),
    "col2im_basic": lambda: col2im(2, 3, [5, 6], [2, 3]),
    "col2im_strided_padded": lambda: col2im(1, 2, [7, 9], [3, 2], strides=[2, 3], pads=[1, 0, 2, 1]),
    "col2im_dilated": lambda: col2im(2, 1, [8, 7], [2, 2], dilations=[3, 2], strides=[1, 2]),
    "col2im_3d": lambda: col2im(1, 2, [4, 5, 3], [2, 3, 2], strides=[1, 2, 1], pads=[0, 1, 1, 1, 0, 0]),
    "roialign_avg_half_pixel": lambda: roi_align(output_height=3, output_width=4, spatial_scale=0.9),
    "roialign_avg_sampling2": lambda: roi_align(output_height=2, output_width=2, sampling_ratio=2),
    "roialign_output_half_pixel": lambda: roi_align(opset=16, coordinate_transformation_mode="output_half_pixel",
                                                   output_height=4, output_width=3, spatial_scale=1.3),
    "roialign_max": lambda: roi_align(mode="max", output_height=3, output_width=3, sampling_ratio=2),
    "roialign_opset10": lambda: roi_align(opset=10, output_height=2, output_width=5),
    "roialign_folded": lambda: roi_align(folded=True, output_height=3, output_width=2, spatial_scale=0.8),
    "tensor_scatter_linear": lambda: tensor_scatter((3, 2, 8, 4), (3, 2, 3, 4), [0, 5, 2]),
    "tensor_scatter_circular": lambda: tensor_scatter((2, 6, 5), (2, 4, 5), [4, 1], axis=1, mode="circular"),
    "causal_conv": lambda: causal_conv(2, 6, 9, 4, bias=True, past=True),
    "causal_conv_silu": lambda: causal_conv(1, 5, 7, 3, activation="silu"),
}
