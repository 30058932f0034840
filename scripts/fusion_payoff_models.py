"""Single-layer probes for what a producer + consumer fusion could save on the CPU.

    .venv/bin/python scripts/fusion_payoff_models.py OUT_DIR

Writes ONNX models (random weights, seed 0) that time one kernel with its input in L3, L2 or L1,
for two fusions of SqueezeNet 1.1 (and ResNet's stem) that would keep an intermediate out of memory:
- poolC.onnx: SqueezeNet's max pool after the stem (3x3 stride 2, ceil_mode) on C channels of
  111x111. With C = 64 its 3.2 MB input comes back from L3 between runs, as it does in the model
  after the stem writes it; with C <= 16 it stays in the 1 MB L2 (C = 1: about the L1's 48 KB).
  Time per 64 channels at small C is the pool's time had it read the stem's rows while cached.
- rpoolC.onnx: the same for ResNet's max pool (3x3 stride 2, pads 1, 112x112 -> 56x56).
- stemS.onnx: SqueezeNet's stem (Conv 3 -> 64, 3x3 stride 2, no pads, + Relu) on an SxS image;
  the time per output pixel at S = 224 (3.2 MB output, to L3) against S = 112 (0.77 MB, in L2) is
  what its stores to L3 cost. stempool224.onnx: that stem + the max pool, as in the model.
- rstemS.onnx: ResNet's stem (7x7 stride 2, pads 3, + Relu) + its max pool.
- cls.onnx / cls_gap.onnx: SqueezeNet's classifier (Conv 512 -> 1000, 1x1, at 13x13, + Relu),
  without and with the GlobalAveragePool behind it.
Compile each with keelc and time with `keel-bench M.keel --threads 1 --profile-all`.
"""
import os, sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(0)


def save(nodes, shape, inits, path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "probe", [x], [y], initializer=inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)


def weights(shape, scale):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def conv_relu(out_name, ci, co, k, stride, pad):
    w = numpy_helper.from_array(weights((co, ci, k, k), 0.2), "w")
    b = numpy_helper.from_array(weights((co,), 0.05), "b")
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k], strides=[stride] * 2,
                              pads=[pad] * 4),
             helper.make_node("Relu", ["c"], [out_name])]
    return nodes, [w, b]


def squeezenet_pool(src, dst):
    return helper.make_node("MaxPool", [src], [dst], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)


def resnet_pool(src, dst):
    return helper.make_node("MaxPool", [src], [dst], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    path = lambda name: os.path.join(out, name + ".onnx")
    for c in (64, 16, 8, 4, 2, 1):
        save([squeezenet_pool("x", "y")], [1, c, 111, 111], [], path("pool%d" % c))
        save([resnet_pool("x", "y")], [1, c, 112, 112], [], path("rpool%d" % c))
    for s in (224, 160, 112):
        nodes, inits = conv_relu("y", 3, 64, 3, 2, 0)
        save(nodes, [1, 3, s, s], inits, path("stem%d" % s))
    nodes, inits = conv_relu("r", 3, 64, 3, 2, 0)
    save(nodes + [squeezenet_pool("r", "y")], [1, 3, 224, 224], inits, path("stempool224"))
    for s in (224, 112):
        nodes, inits = conv_relu("r", 3, 64, 7, 2, 3)
        save(nodes + [resnet_pool("r", "y")], [1, 3, s, s], inits, path("rstem%d" % s))
    nodes, inits = conv_relu("y", 512, 1000, 1, 1, 0)
    save(nodes, [1, 512, 13, 13], inits, path("cls"))
    nodes, inits = conv_relu("r", 512, 1000, 1, 1, 0)
    pool = helper.make_node("GlobalAveragePool", ["r"], ["y"])
    save(nodes + [pool], [1, 512, 13, 13], inits, path("cls_gap"))


if __name__ == "__main__":
    main()
