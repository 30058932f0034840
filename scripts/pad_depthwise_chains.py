"""Pads the channels of a model's depthwise chains with zeros, at the ONNX level: the ceiling of a
padded channels-last layout, measured before building it in the compiler.

    .venv/bin/python scripts/pad_depthwise_chains.py IN.onnx OUT.onnx [--lanes 16] [--max-pad 0.125]
        [--channels 72,120]

A chain is `producer Conv (one group) -> [Relu] -> depthwise Conv -> [Relu] -> consumer Conv (one
group)`, every tensor in it read by the next node only. Where the depthwise layer's C channels are
not a multiple of --lanes and padding them up to one (P = ceil(C / lanes) * lanes) adds at most
--max-pad * C channels (and C is in --channels, when given), the producer gets P - C more output
channels (zero weights, zero bias), the depthwise layer P channels (zero weights and bias for the
new ones), and the consumer P - C more input channels with zero weights. The pad channels hold
Relu(0) = 0 all the way and meet only zero weights, so the outputs are those of IN.onnx up to the
order of additions: a padded channels-last tensor then starts every pixel on a whole 64-byte line
(72 channels: pixels 320 bytes apart instead of 288). The cost is visible too: the consumer's
GEMM runs over P input channels, the producer's over P output channels.

docs/MEASUREMENTS.md (cpu46) has what it measured. Compile OUT.onnx with keelc as usual; the node
names are IN.onnx's, so `keel-bench --profile-all` lines match those of IN.onnx's library.
"""
import argparse

import numpy as np
import onnx
from onnx import numpy_helper


def main():
    p = argparse.ArgumentParser()
    p.add_argument("src")
    p.add_argument("dst")
    p.add_argument("--lanes", type=int, default=16)
    p.add_argument("--max-pad", type=float, default=0.125)
    p.add_argument("--channels", default="", help="only depthwise layers of these channel counts (comma-separated)")
    a = p.parse_args()
    only = {int(c) for c in a.channels.split(",") if c}

    model = onnx.load(a.src)
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    outputs = {o.name for o in g.output}

    def array(name):
        return numpy_helper.to_array(inits[name])

    def store(name, x):
        inits[name].CopyFrom(numpy_helper.from_array(x.astype(np.float32), name))

    def group(n):
        return next((at.i for at in n.attribute if at.name == "group"), 1)

    def sole_reader(value):
        readers = consumers.get(value, [])
        return readers[0] if len(readers) == 1 and value not in outputs else None

    def plain_conv(n):
        return n is not None and n.op_type == "Conv" and group(n) == 1 and all(i in inits for i in n.input[1:])

    padded = 0
    for dw in g.node:
        if dw.op_type != "Conv" or dw.input[1] not in inits or len(dw.input) < 3:
            continue
        c = array(dw.input[1]).shape[0]
        if group(dw) != c or c == 1 or (only and c not in only):
            continue
        p_ch = -(-c // a.lanes) * a.lanes
        if p_ch == c or p_ch - c > a.max_pad * c:
            continue
        # producer -> [Relu] -> dw
        prod = producer.get(dw.input[0])
        if prod is not None and prod.op_type == "Relu":
            if sole_reader(prod.output[0]) is not dw:
                continue
            prod = producer.get(prod.input[0])
        if not plain_conv(prod) or len(prod.input) < 3 or sole_reader(prod.output[0]) is None:
            continue
        # dw -> [Relu] -> consumer
        cons = sole_reader(dw.output[0])
        if cons is not None and cons.op_type == "Relu":
            cons = sole_reader(cons.output[0])
        if not plain_conv(cons):
            continue
        pad = p_ch - c
        w = array(prod.input[1])
        store(prod.input[1], np.concatenate([w, np.zeros((pad,) + w.shape[1:])], 0))
        store(prod.input[2], np.concatenate([array(prod.input[2]), np.zeros(pad)]))
        w = array(dw.input[1])
        store(dw.input[1], np.concatenate([w, np.zeros((pad,) + w.shape[1:])], 0))
        store(dw.input[2], np.concatenate([array(dw.input[2]), np.zeros(pad)]))
        next(at for at in dw.attribute if at.name == "group").i = p_ch
        w = array(cons.input[1])
        store(cons.input[1], np.concatenate([w, np.zeros((w.shape[0], pad) + w.shape[2:])], 1))
        padded += 1
    del g.value_info[:]  # the padded tensors' recorded shapes are stale
    onnx.save(model, a.dst)
    print("padded %d depthwise chains" % padded)


if __name__ == "__main__":
    main()
