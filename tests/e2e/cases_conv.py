"""Convolution and pooling family vs onnxruntime: N-D Conv / ConvTranspose, window pools over
1-3 spatial dims (ceil_mode, dilations, count_include_pad), MaxPool's Indices, global pools,
LpPool and MaxUnpool."""
from onnx_ops_vs_onnxruntime import model, rnd, unary, helper, np, numpy_helper, TensorProto


def conv(op, x_shape, w_shape, bias=False, opset=17, **attrs):
    ins = ["x", "w"] + (["b"] if bias else [])
    out_ch = w_shape[0] if op == "Conv" else w_shape[1] * attrs.get("group", 1)
    inits = [("w", rnd(*w_shape, seed=3))] + ([("b", rnd(out_ch, seed=4))] if bias else [])
    node = helper.make_node(op, ins, ["y"], **attrs)
    return model([node], [("x", x_shape)], ["y"], inits, opset=opset), {"x": rnd(*x_shape)}


def pool_indices(shape, **attrs):
    # Both outputs feed y (Indices cast to float) so one comparison checks them.
    nodes = [helper.make_node("MaxPool", ["x"], ["v", "i"], **attrs),
             helper.make_node("Cast", ["i"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Add", ["v", "f"], ["y"])]
    return model(nodes, [("x", shape)], ["y"]), {"x": rnd(*shape)}


def unpool():
    x = rnd(1, 2, 2, 3)
    # Distinct in-window positions of a 2x2/stride-2 pool over [1, 2, 4, 6] (flat, with channel offset).
    idx = np.array([[[[0, 3, 5], [13, 14, 23]], [[24, 27, 29], [37, 38, 47]]]], np.int64)
    node = helper.make_node("MaxUnpool", ["x", "i"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    m = model([node], [("x", (1, 2, 2, 3))], ["y"], [("i", idx)], opset=11)
    return m, {"x": x}


CASES = {
    "conv1d_stride_pad": lambda: conv("Conv", (2, 4, 19), (6, 4, 3), bias=True, strides=[2], pads=[1, 2]),
    "conv1d_depthwise": lambda: conv("Conv", (1, 6, 40), (6, 1, 5), group=6, dilations=[2], pads=[4, 4]),
    "conv2d_group_dilation": lambda: conv("Conv", (1, 8, 13, 11), (6, 4, 3, 3), group=2, dilations=[2, 1],
                                          pads=[1, 0, 2, 1]),
    "conv2d_same_lower": lambda: conv("Conv", (1, 3, 10, 9), (5, 3, 4, 3), strides=[2, 2], auto_pad="SAME_LOWER"),
    "conv3d": lambda: conv("Conv", (1, 3, 6, 7, 8), (4, 3, 3, 2, 3), bias=True, strides=[1, 2, 1],
                           pads=[1, 0, 1, 1, 1, 0]),
    "conv3d_depthwise": lambda: conv("Conv", (1, 4, 5, 6, 20), (4, 1, 3, 3, 3), group=4, pads=[1, 1, 1, 1, 1, 1]),
    "convtranspose2d_output_padding": lambda: conv("ConvTranspose", (1, 3, 5, 6), (3, 4, 3, 3), bias=True,
                                                   strides=[2, 3], output_padding=[1, 2], pads=[1, 0, 0, 1]),
    # Strided ones that the CPU runs as a forward Conv and a DepthToSpace (the subpixel pass): kernel ==
    # stride (no crop), a U-Net's 3x3 stride 2 with pads and output_padding, 5x5 stride 3 with uneven pads.
    "convtranspose2d_k2s2": lambda: conv("ConvTranspose", (2, 6, 5, 7), (6, 5, 2, 2), bias=True, strides=[2, 2]),
    "convtranspose2d_k3s2_output_padding": lambda: conv("ConvTranspose", (1, 4, 7, 6), (4, 3, 3, 3), bias=True,
                                                        strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
    "convtranspose2d_k5s3_uneven": lambda: conv("ConvTranspose", (1, 3, 4, 5), (3, 2, 5, 5), strides=[3, 3],
                                                pads=[2, 1, 1, 2], output_padding=[2, 2]),
    "convtranspose2d_group_dilation": lambda: conv("ConvTranspose", (2, 4, 4, 5), (4, 3, 2, 3), group=2,
                                                   dilations=[2, 1], strides=[2, 1]),
    "convtranspose1d_output_shape": lambda: conv("ConvTranspose", (1, 2, 7), (2, 3, 4), strides=[2],
                                                 output_shape=[16]),
    "convtranspose3d_same_upper": lambda: conv("ConvTranspose", (1, 2, 3, 4, 3), (2, 2, 3, 3, 2), strides=[2, 1, 2],
                                               auto_pad="SAME_UPPER"),
    "maxpool1d_ceil": lambda: unary("MaxPool", shape=(2, 3, 20), kernel_shape=[3], strides=[2], ceil_mode=1),
    "maxpool3d_dilation": lambda: unary("MaxPool", shape=(1, 2, 7, 8, 9), kernel_shape=[2, 3, 2],
                                        dilations=[2, 1, 2], pads=[1, 1, 0, 0, 1, 1]),
    "maxpool2d_ceil_dilation": lambda: unary("MaxPool", shape=(1, 2, 12, 30), kernel_shape=[3, 3], strides=[2, 2],
                                             dilations=[1, 2], pads=[1, 1, 1, 1], ceil_mode=1),
    "avgpool3d_ceil_include_pad": lambda: unary("AveragePool", shape=(1, 2, 6, 7, 8), kernel_shape=[3, 3, 3],
                                                strides=[2, 2, 2], pads=[1, 1, 1, 1, 1, 1], ceil_mode=1,
                                                count_include_pad=1),
    "avgpool1d_ceil_exclude_pad": lambda: unary("AveragePool", shape=(1, 3, 24), kernel_shape=[4], strides=[3],
                                                pads=[2, 1], ceil_mode=1),
    "maxpool_indices": lambda: pool_indices((2, 3, 9, 10), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    "maxpool_indices_storage_order": lambda: pool_indices((1, 2, 8, 7), kernel_shape=[2, 2], strides=[2, 2],
                                                          storage_order=1),
    "lppool2d_p3": lambda: unary("LpPool", shape=(1, 3, 9, 20), kernel_shape=[3, 2], strides=[2, 1], p=3,
                                 pads=[1, 0, 1, 1]),
    "lppool1d_p2": lambda: unary("LpPool", shape=(2, 2, 33), kernel_shape=[4], strides=[2], p=2),
    "global_max_pool_3d": lambda: unary("GlobalMaxPool", shape=(2, 3, 4, 5, 6)),
    "global_avg_pool_1d": lambda: unary("GlobalAveragePool", shape=(2, 5, 17)),
    "global_lp_pool": lambda: unary("GlobalLpPool", shape=(2, 3, 6, 7), p=3),
    "maxunpool": unpool,
}


def deform_conv():
    x = rnd(1, 4, 7, 8)
    off = rnd(1, 2 * 3 * 3 * 2, 5, 6, seed=5, lo=-1.5, hi=1.5)
    mask = rnd(1, 2 * 3 * 3, 5, 6, seed=6, lo=0.0, hi=1.0)
    node = helper.make_node("DeformConv", ["x", "w", "off", "b", "m"], ["y"], group=2, offset_group=2,
                            pads=[0, 0, 0, 0], strides=[1, 1])
    g = helper.make_graph([node], "g",
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                           for n, s in [("x", x.shape), ("off", off.shape), ("m", mask.shape)]],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[numpy_helper.from_array(rnd(6, 2, 3, 3, seed=3), "w"),
                                       numpy_helper.from_array(rnd(6, seed=4), "b")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    m.ir_version = 9
    return m, {"x": x, "off": off, "m": mask}


CASES["deform_conv_groups_mask"] = deform_conv


def conv_half():
    # f16 data read widened: the kernel accumulates in f32 and rounds the output once.
    x = rnd(1, 4, 9, 9).astype(np.float16)
    w = rnd(6, 4, 3, 3, seed=3).astype(np.float16)
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, x.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)],
                          initializer=[numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m, {"x": x}


CASES["conv_f16"] = conv_half


def se_chain(expand=(72, 40, 120), pools=("GlobalAveragePool", "GlobalMaxPool", "GlobalAveragePool")):
    """A MobileNetV3-like chain: a 3x3 stem, then inverted residual blocks (1x1 expand, HardSwish,
    depthwise 3x3 or 5x5 / stride 2, Relu, a squeeze-and-excitation block: global pool, 1x1, Relu,
    1x1, HardSigmoid, Mul; 1x1 project, Add where the shapes allow) on a 15x15 image. The CPU target
    runs it channels-last (the global pools inside the chain, cpu_backend.cc InNhwcChain)."""
    nodes, inits, seed = [], [], [10]

    def w(*shape):
        seed[0] += 1
        name = "w%d" % seed[0]
        inits.append((name, rnd(*shape, seed=seed[0], lo=-0.3, hi=0.3)))
        return name

    def node(op, ins, **attrs):
        out = "t%d" % len(nodes)
        nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    def conv(x, cin, cout, k=1, group=1, stride=1):
        return node("Conv", [x, w(cout, cin // group, k, k), w(cout)], group=group, strides=[stride, stride],
                    pads=[k // 2] * 4)

    y, c = node("HardSwish", [conv("x", 8, 16, 3)]), 16
    for b, (e, pool) in enumerate(zip(expand, pools)):
        k, s, cout = (5, 2, 24) if b == 1 else (3, 1, 16 if b == 0 else 24)
        h = node("HardSwish", [conv(y, c, e)])
        d = node("Relu", [conv(h, e, e, k, group=e, stride=s)])
        g = node(pool, [d])
        g = node("HardSigmoid", [conv(node("Relu", [conv(g, e, e // 4)]), e // 4, e)])
        p = conv(node("Mul", [d, g]), e, cout)
        y = node("Add", [p, y]) if cout == c and s == 1 else p
        c = cout
    nodes[-1].output[0] = "y"
    return model(nodes, [("x", (1, 8, 15, 15))], ["y"], inits), {"x": rnd(1, 8, 15, 15)}


CASES["se_chain_channels_last"] = se_chain
