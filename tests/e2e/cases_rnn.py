"""Recurrent ops (RNN, GRU, LSTM) vs onnxruntime.

Every output the node produces is compared: y = Concat(flatten(Y), flatten(Y_h)[, flatten(Y_c)]).
sequence_lens is a runtime int32 graph input where the case says so (the kernel masks per batch
element), otherwise an initializer.
"""
from onnx_ops_vs_onnxruntime import helper, np, numpy_helper, TensorProto, rnd

F = TensorProto.FLOAT


def recurrent(op, T=5, B=3, I=4, H=6, direction="forward", gates=1, bias=True, lens=None, lens_runtime=False,
              h0=False, c0=False, peep=False, opset=14, outputs=("Y", "Y_h"), fold=False, **attrs):
    D = 2 if direction == "bidirectional" else 1
    inits = [numpy_helper.from_array(rnd(D, gates * H, I, seed=1), "W"),
             numpy_helper.from_array(rnd(D, gates * H, H, seed=2), "R")]
    ins = ["x", "W", "R"]
    ins.append("Bias" if bias else "")
    if bias:
        inits.append(numpy_helper.from_array(rnd(D, 2 * gates * H, seed=3), "Bias"))
    x = rnd(T, B, I, seed=4, lo=-2, hi=2)
    if fold:  # every input constant: keelc folds the node with the reference evaluator
        inits.append(numpy_helper.from_array(x, "x"))
        graph_inputs, feeds = [], {}
    else:
        graph_inputs = [helper.make_tensor_value_info("x", F, (T, B, I))]
        feeds = {"x": x}
    ins.append("lens" if lens is not None else "")
    if lens is not None:
        lv = np.array(lens, np.int32)
        if lens_runtime:
            graph_inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT32, (B,)))
            feeds["lens"] = lv
        else:
            inits.append(numpy_helper.from_array(lv, "lens"))
    ins.append("h0" if h0 else "")
    if h0:
        inits.append(numpy_helper.from_array(rnd(D, B, H, seed=5), "h0"))
    if op == "LSTM":
        ins.append("c0" if c0 else "")
        if c0:
            inits.append(numpy_helper.from_array(rnd(D, B, H, seed=6), "c0"))
        ins.append("P" if peep else "")
        if peep:
            inits.append(numpy_helper.from_array(rnd(D, 3 * H, seed=7), "P"))
    while ins and ins[-1] == "":
        ins.pop()
    outs = ["Y", "Y_h", "Y_c"][:len(outputs)] if outputs[0] == "Y" else ["", "Y_h", "Y_c"][:len(outputs) + 1]
    nodes = [helper.make_node(op, ins, outs, hidden_size=H, direction=direction, **attrs)]
    flat = []
    for o in outs:
        if o:
            nodes.append(helper.make_node("Reshape", [o, "minus1"], [o + "_flat"]))
            flat.append(o + "_flat")
    inits.append(numpy_helper.from_array(np.array([-1], np.int64), "minus1"))
    cat = "cat" if fold else "y"
    nodes.append(helper.make_node("Concat", flat, [cat], axis=0) if len(flat) > 1 else
                 helper.make_node("Identity", flat, [cat]))
    if fold:  # a runtime operand keeps the graph from folding away entirely
        size = T * D * B * H * ("Y" in outs) + D * B * H * (len([o for o in outs if o]) - ("Y" in outs))
        graph_inputs.append(helper.make_tensor_value_info("z", F, (size,)))
        feeds["z"] = np.zeros(size, np.float32)
        nodes.append(helper.make_node("Add", ["cat", "z"], ["y"]))
    g = helper.make_graph(nodes, "g", graph_inputs, [helper.make_tensor_value_info("y", F, None)], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m, feeds


CASES = {
    "lstm_bidir_seqlens_runtime": lambda: recurrent(
        "LSTM", gates=4, direction="bidirectional", lens=[5, 3, 1], lens_runtime=True, h0=True, c0=True, peep=True,
        outputs=("Y", "Y_h", "Y_c")),
    "lstm_bidir_seqlens_const": lambda: recurrent(
        "LSTM", gates=4, direction="bidirectional", lens=[2, 5, 4], h0=True, c0=True, outputs=("Y", "Y_h", "Y_c")),
    "lstm_reverse_clip_forget": lambda: recurrent(
        "LSTM", gates=4, direction="reverse", h0=True, c0=True, peep=True, clip=0.7, input_forget=1,
        outputs=("Y", "Y_h", "Y_c")),
    "lstm_activations": lambda: recurrent(
        "LSTM", gates=4, activations=["HardSigmoid", "LeakyRelu", "Softsign"], activation_alpha=[0.3, 0.05],
        activation_beta=[0.4], outputs=("Y", "Y_h", "Y_c")),
    "lstm_yh_only_opset22": lambda: recurrent("LSTM", gates=4, T=7, B=2, I=9, H=16, opset=22, outputs=("Y_h",)),
    "gru_lbr0_bidir_seqlens": lambda: recurrent(
        "GRU", gates=3, direction="bidirectional", lens=[4, 5, 2], lens_runtime=True, h0=True,
        linear_before_reset=0),
    "gru_lbr1_bidir_seqlens": lambda: recurrent(
        "GRU", gates=3, direction="bidirectional", lens=[4, 5, 2], lens_runtime=True, h0=True,
        linear_before_reset=1),
    "gru_lbr1_reverse_clip": lambda: recurrent("GRU", gates=3, direction="reverse", clip=0.5, linear_before_reset=1),
    "gru_activations_opset7": lambda: recurrent(
        "GRU", gates=3, activations=["ScaledTanh", "Elu"], activation_alpha=[0.8, 0.9], activation_beta=[1.2],
        opset=7),
    "gru_big": lambda: recurrent("GRU", gates=3, T=9, B=4, I=40, H=96, linear_before_reset=0),
    "rnn_relu_bidir": lambda: recurrent("RNN", direction="bidirectional", h0=True, activations=["Relu", "Relu"]),
    "rnn_mixed_activations_seqlens": lambda: recurrent(
        "RNN", direction="bidirectional", lens=[1, 5, 3], lens_runtime=True,
        activations=["ThresholdedRelu", "Affine"], activation_alpha=[0.2, 0.5], activation_beta=[0.1]),
    "lstm_clip": lambda: recurrent("LSTM", gates=4, clip=0.7, peep=True, outputs=("Y", "Y_h", "Y_c")),
    "lstm_zero_length_runtime": lambda: recurrent(
        "LSTM", gates=4, direction="bidirectional", lens=[0, 5, 2], lens_runtime=True, h0=True, c0=True,
        outputs=("Y", "Y_h", "Y_c")),
    "gru_zero_length": lambda: recurrent("GRU", gates=3, lens=[3, 0, 5], h0=True),
    "lstm_folded_reference": lambda: recurrent(
        "LSTM", gates=4, direction="bidirectional", lens=[0, 5, 2], h0=True, c0=True, peep=True, clip=0.9,
        outputs=("Y", "Y_h", "Y_c"), fold=True),
    "gru_folded_reference_lbr0": lambda: recurrent("GRU", gates=3, direction="bidirectional", lens=[3, 1, 5], h0=True,
                                                   fold=True),
    "gru_folded_reference_lbr1": lambda: recurrent("GRU", gates=3, direction="reverse", linear_before_reset=1,
                                                   fold=True),
    "rnn_folded_reference": lambda: recurrent("RNN", direction="bidirectional", activations=["Relu", "Softsign"],
                                              h0=True, fold=True),
    "rnn_softplus_reverse": lambda: recurrent("RNN", direction="reverse", activations=["Softplus"], h0=True),
    # Hidden sizes whose output rows fill vector lanes on the CPU (4 and 8 of them: 12, 20, 40):
    # the recurrent products' other form (LowerOptions::recurrent_rows_in_lanes).
    "gru_lbr0_lanes_bidir_seqlens": lambda: recurrent(
        "GRU", gates=3, H=12, direction="bidirectional", lens=[4, 5, 2], lens_runtime=True, h0=True,
        linear_before_reset=0),
    "gru_lbr1_lanes_reverse_clip": lambda: recurrent(
        "GRU", gates=3, H=40, B=2, direction="reverse", clip=0.5, linear_before_reset=1),
    "lstm_lanes_bidir_peep": lambda: recurrent(
        "LSTM", gates=4, H=20, direction="bidirectional", lens=[5, 3, 1], lens_runtime=True, h0=True, c0=True,
        peep=True, outputs=("Y", "Y_h", "Y_c")),
    "rnn_lanes_bidir": lambda: recurrent("RNN", H=8, direction="bidirectional", h0=True, activations=["Tanh", "Relu"]),
}
