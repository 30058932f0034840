#!/usr/bin/env python3
"""bench/cuda/attention_chain.py — Keel's fused attention kernel against PyTorch's
scaled_dot_product_attention, like for like: L attentions in a chain (the output
of one is the next one's queries; K and V fixed), [B, H, S, D] half tensors.

  attention_chain.py make DIR B,H,S,D[,L] ...   ONNX models DIR/attn_B_H_S_D.onnx
                                                 (onnx package; Q, K, V are weights,
                                                 Q times the one-element input x,
                                                 the output the last one's first query;
                                                 compile with keelc --target cuda
                                                 --precision fp16)
  attention_chain.py torch B,H,S,D[,L] ...      PyTorch fp16 CUDA-graph replay of the
                                                 same chain, µs per attention (one
                                                 JSON line per shape)

Keel's side is timed with keel-cuda-time: (graph_ms - the Mul and the Slice) / L
(keel-cuda-time --kernels gives those two). L defaults to 12."""
import json
import os
import sys


def shapes(args):
    for a in args:
        v = [int(x) for x in a.split(",")]
        if len(v) == 4:
            v.append(12)
        yield tuple(v)


def make(out_dir, specs):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    os.makedirs(out_dir, exist_ok=True)
    for b, h, s, d, layers in specs:
        dims = [b, h, s, d]
        # Q, K and V are weights (no input copy of megabytes per run: the
        # graph's time is the kernels'); Q is scaled by the one-element input
        # (one elementwise kernel) so that nothing folds at compile time.
        rng = np.random.default_rng(0)
        weights = [numpy_helper.from_array(rng.standard_normal(dims).astype(np.float32), n) for n in ("q0", "k", "v")]
        nodes, prev = [helper.make_node("Mul", ["q0", "x"], ["q"])], "q"
        scale = helper.make_tensor("scale", TensorProto.FLOAT, [], [1.0 / d ** 0.5])
        for i in range(layers):
            nodes += [
                helper.make_node("Transpose", ["k"], [f"kt{i}"], perm=[0, 1, 3, 2]),
                helper.make_node("MatMul", [prev, f"kt{i}"], [f"s{i}"]),
                helper.make_node("Mul", [f"s{i}", "scale"], [f"ss{i}"]),
                helper.make_node("Softmax", [f"ss{i}"], [f"p{i}"], axis=-1),
                helper.make_node("MatMul", [f"p{i}", "v"], [f"o{i}"]),
            ]
            prev = f"o{i}"
        # The first query's rows out (no output copy of megabytes either): one small copy.
        consts = [helper.make_tensor(n, TensorProto.INT64, [1], [v]) for n, v in (("zero", 0), ("one", 1), ("two", 2))]
        nodes.append(helper.make_node("Slice", [prev, "zero", "one", "two"], ["first"]))
        graph = helper.make_graph(
            nodes, "attention_chain",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
            [helper.make_tensor_value_info("first", TensorProto.FLOAT, [b, h, 1, d])], [scale] + consts + weights)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        path = os.path.join(out_dir, f"attn_{b}_{h}_{s}_{d}.onnx")
        onnx.save(model, path)
        print(path)


def torch_time(specs):
    import torch
    import torch.nn.functional as F

    torch.backends.cuda.matmul.allow_tf32 = False
    for b, h, s, d, layers in specs:
        q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))

        def chain(x):
            for _ in range(layers):
                x = F.scaled_dot_product_attention(x, k, v)
            return x

        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                chain(q)
        torch.cuda.current_stream().wait_stream(stream)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = chain(q)
        times = []
        for _ in range(7):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(50):
                g.replay()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 50)
        times.sort()
        print(json.dumps({"shape": [b, h, s, d], "layers": layers,
                          "torch_us_per_attention": round(1000 * times[len(times) // 2] / layers, 2)}))
        del out


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("make", "torch"):
        sys.exit(__doc__)
    if sys.argv[1] == "make":
        make(sys.argv[2], list(shapes(sys.argv[3:])))
    else:
        torch_time(list(shapes(sys.argv[2:])))


if __name__ == "__main__":
    main()
