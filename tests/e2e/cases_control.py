"""Static control flow vs onnxruntime: If on a condition that folds (inlined) and on a runtime
condition (both branches, selected), subgraphs reading outer-scope values, Scan unrolled over
static sequences (directions, axes), Loop with a constant trip count or a condition that folds
each iteration, nested control flow (an If inside a Loop body)."""
from onnx_ops_vs_onnxruntime import model, rnd, helper, np, TensorProto

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def vi(name, elem=F, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def graph(nodes, name, inputs, outputs):
    return helper.make_graph(nodes, name, inputs, outputs)


def if_on_rank():
    # cond = (Size(Shape(x)) == 2): a rank test that folds; the branches read x from the outer scope.
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Size", ["s"], ["r"]),
             helper.make_node("Equal", ["r", "two"], ["c"]),
             helper.make_node("If", ["c"], ["y"],
                              then_branch=graph([helper.make_node("Relu", ["x"], ["t"])], "then", [], [vi("t")]),
                              else_branch=graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [vi("e")]))]
    return model(nodes, [("x", (3, 4))], ["y"], [("two", np.array(2, np.int64))], opset=13), {"x": rnd(3, 4)}


def if_runtime():
    # cond depends on x's values: both branches run, Where selects.
    nodes = [helper.make_node("ReduceSum", ["x"], ["sum"], keepdims=0), helper.make_node("Greater", ["sum", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"],
                              then_branch=graph([helper.make_node("Mul", ["x", "x"], ["t"])], "then", [], [vi("t")]),
                              else_branch=graph([helper.make_node("Sub", ["x", "zero"], ["e"])], "else", [], [vi("e")]))]
    return model(nodes, [("x", (2, 5))], ["y"], [("zero", np.array(0, np.float32))], opset=13), {"x": rnd(2, 5, lo=-0.2)}


def scan_cumsum(reverse=0, out_axis=0):
    body = graph([helper.make_node("Add", ["acc", "xi"], ["acc_out"]), helper.make_node("Mul", ["acc_out", "w"], ["yi"])],
                 "body", [vi("acc", F, [4]), vi("xi", F, [4])], [vi("acc_out", F, [4]), vi("yi", F, [4])])
    node = helper.make_node("Scan", ["init", "x"], ["final", "y"], num_scan_inputs=1, body=body,
                            scan_input_directions=[reverse], scan_output_axes=[out_axis], scan_input_axes=[1])
    return (model([node], [("init", (4,)), ("x", (4, 6))], ["y"], [("w", np.array(0.5, np.float32))], opset=16),
            {"init": rnd(4, seed=1), "x": rnd(4, 6, seed=2)})


def loop(trip, cond_limit=None):
    # y accumulates x * iter; scan output stacks each step. With cond_limit, the body's condition
    # (iter + 1 < cond_limit) folds every iteration and stops the loop before the trip count.
    body_nodes = [helper.make_node("Cast", ["i"], ["fi"], to=F), helper.make_node("Mul", ["x", "fi"], ["xi"]),
                  helper.make_node("Add", ["acc", "xi"], ["acc_out"]), helper.make_node("Relu", ["acc_out"], ["step"])]
    if cond_limit is None:
        body_nodes.append(helper.make_node("Identity", ["c_in"], ["c_out"]))
    else:
        body_nodes += [helper.make_node("Add", ["i", "one"], ["next"]), helper.make_node("Less", ["next", "lim"], ["c_out"])]
    body = graph(body_nodes, "body", [vi("i", I64, []), vi("c_in", B, []), vi("acc")],
                 [vi("c_out", B, []), vi("acc_out"), vi("step")])
    nodes = [helper.make_node("Loop", ["M", "cond", "x0"], ["final", "y"], body=body)]
    inits = [("M", np.array(trip, np.int64)), ("cond", np.array(True)), ("one", np.array(1, np.int64)),
             ("lim", np.array(cond_limit or 0, np.int64))]
    return model(nodes, [("x", (2, 3)), ("x0", (2, 3))], ["y"], inits, opset=13), {"x": rnd(2, 3, seed=1), "x0": rnd(2, 3, seed=2)}


def loop_with_if():
    # The If inside the body tests the iteration number (a constant once unrolled).
    then_b = graph([helper.make_node("Add", ["acc", "x"], ["t"])], "then", [], [vi("t")])
    else_b = graph([helper.make_node("Mul", ["acc", "x"], ["e"])], "else", [], [vi("e")])
    body = graph([helper.make_node("Mod", ["i", "two"], ["m"]), helper.make_node("Equal", ["m", "zero"], ["even"]),
                  helper.make_node("If", ["even"], ["acc_out"], then_branch=then_b, else_branch=else_b),
                  helper.make_node("Identity", ["c_in"], ["c_out"])],
                 "body", [vi("i", I64, []), vi("c_in", B, []), vi("acc")], [vi("c_out", B, []), vi("acc_out")])
    nodes = [helper.make_node("Loop", ["M", "", "x"], ["y"], body=body)]
    inits = [("M", np.array(5, np.int64)), ("two", np.array(2, np.int64)), ("zero", np.array(0, np.int64))]
    return model(nodes, [("x", (3, 2))], ["y"], inits, opset=13), {"x": rnd(3, 2, lo=0.5, hi=1.5)}


CASES = {
    "if_const_cond_rank": if_on_rank,
    "if_runtime_cond_where": if_runtime,
    "scan_cumsum_axis1": lambda: scan_cumsum(),
    "scan_cumsum_reverse_out_axis1": lambda: scan_cumsum(reverse=1, out_axis=1),
    "loop_const_trip": lambda: loop(4),
    "loop_cond_folds": lambda: loop(100, cond_limit=3),
    "loop_nested_if": loop_with_if,
}
