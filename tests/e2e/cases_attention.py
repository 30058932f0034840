"""onnxruntime cases for the transformer composites (compiler/ops/attention.cc)."""
from onnx_ops_vs_onnxruntime import helper, model, np, rnd


def attention(q, k, v, opset=23, extra_inputs=(), **attrs):
    names = ["q", "k", "v"] + [n for n, _ in extra_inputs]
    feeds = {"q": rnd(*q, seed=1), "k": rnd(*k, seed=2), "v": rnd(*v, seed=3)}
    feeds.update(dict(extra_inputs))
    node = helper.make_node("Attention", names, ["y"], **attrs)
    return model([node], [(n, f.shape) for n, f in feeds.items()], ["y"], opset=opset), feeds


def rotary(interleaved):
    x, cos, sin = rnd(2, 5, 16, seed=1), rnd(2, 5, 4, seed=2), rnd(2, 5, 4, seed=3)
    node = helper.make_node("RotaryEmbedding", ["x", "cos", "sin"], ["y"], num_heads=2, rotary_embedding_dim=8,
                            interleaved=interleaved)
    return model([node], [("x", x.shape), ("cos", cos.shape), ("sin", sin.shape)], ["y"], opset=23), \
        {"x": x, "cos": cos, "sin": sin}


CASES = {
    "attention_4d_causal": lambda: attention((2, 3, 7, 8), (2, 3, 7, 8), (2, 3, 7, 5), is_causal=1),
    "attention_3d_gqa_scaled": lambda: attention((2, 6, 32), (2, 9, 16), (2, 9, 12), q_num_heads=4, kv_num_heads=2,
                                                 scale=0.3),
    "attention_4d_softcap": lambda: attention((1, 2, 4, 8), (1, 2, 6, 8), (1, 2, 6, 8), softcap=2.0),
    "rotary_halves": lambda: rotary(0),
    "rotary_interleaved": lambda: rotary(1),
}
