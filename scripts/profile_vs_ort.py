"""Keel against ONNX Runtime, layer by layer, on the CPU: where a model's gap to ORT is.

    .venv/bin/python scripts/profile_vs_ort.py MODEL.onnx MODEL.keel [--threads T] [--runs N]
        [--keel-bench build/bin/keel-bench] [--input name=file.bin ...] [--top K] [--ops OP,OP...]

Both sides are profiled with their own tracing at the same thread count: `keel-bench --profile-all`
(median per instruction, every one) and ONNX Runtime's profiler (all graph optimizations on, median per node
over N runs). Their kernels do not line up one to one (each fuses differently, and ORT's NCHWc
layout adds reorder nodes), so both are charged to the model's *anchors*: every Conv, ConvTranspose,
Gemm or MatMul node of MODEL.onnx takes the time of the kernels that start at it or at the
elementwise ops behind it (a fused Relu, Add, Clip, BatchNormalization...). Time that reaches no
anchor is summed per ONNX op type (pools, concats, softmax...) and ORT's layout reorders are their
own row. Prints the anchors sorted by Keel - ORT, then the totals per kind; with --ops, every node
of those ONNX op types (pools, Resize, ConvTranspose...) with both sides' time.
"""
import argparse, collections, json, os, re, sys, tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_cpu_scaling import add_profile_arguments, profile  # noqa: E402

ANCHORS = {"Conv", "ConvTranspose", "Gemm", "MatMul"}
# Ops that the compilers fuse behind an anchor (walked back through to find it).
EPILOGUE = {"Relu", "Clip", "Add", "Sub", "Mul", "Div", "Sigmoid", "HardSigmoid", "HardSwish", "LeakyRelu",
            "BatchNormalization", "Tanh", "Erf", "Identity"}


class Graph:
    def __init__(self, model):
        g = model.graph
        self.nodes = {n.name: n for n in g.node}
        self.producer = {o: n for n in g.node for o in n.output}

    def anchor(self, node, depth=0):
        """The anchor a node's time is charged to: itself, or the anchor in front of an epilogue op."""
        if node.op_type in ANCHORS or depth > 8:
            return node
        if node.op_type in EPILOGUE:
            ins = [self.producer[i] for i in node.input if i in self.producer]
            for p in ins:  # an anchor right in front first (a residual Add's other input is older)
                if p.op_type in ANCHORS:
                    return p
            if ins:
                return self.anchor(ins[0], depth + 1)
        return node

    def node_of(self, name):
        """The ONNX node an ORT or Keel kernel name stands for (node name, or a tensor it writes)."""
        if name in self.nodes:
            return self.nodes[name]
        for suffix in ("_nchwc", "_fused", "_token_0"):
            if name.endswith(suffix):
                return self.node_of(name[: -len(suffix)])
        if name in self.producer:
            return self.producer[name]
        # ORT's fusions append "/<Fusion>/..." to the first fused node's name.
        while "/" in name.strip("/"):
            name = name.rstrip("/").rsplit("/", 1)[0]
            if name in self.nodes:
                return self.nodes[name]
        return None


def keel_profile(a):
    """(node name, median ms) of every invoke of keel-bench --profile-all (profile_cpu_scaling.profile)."""
    rows = profile(a.keel_bench, a.keel, a.threads, a.runs, a.input)
    return [(re.sub(r"\+\d+$", "", name.strip("[]")), ms) for ms, op, name in rows.values() if op == "invoke"]


def ort_profile(a):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    s = ort.InferenceSession(a.onnx, so, providers=["CPUExecutionProvider"])
    feeds = {}
    given = dict(i.split("=", 1) for i in a.input)
    # ORT's input type names ("tensor(int64)") give the file's element type (token ids are int64).
    dtypes = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
              "tensor(double)": np.float64, "tensor(bool)": np.bool_}
    for i in s.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        if i.name in given:
            feeds[i.name] = np.fromfile(given[i.name], dtypes[i.type]).reshape(shape)
        else:
            feeds[i.name] = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    for _ in range(3):
        s.run(None, feeds)
    for _ in range(a.runs):
        s.run(None, feeds)
    events = json.load(open(s.end_profiling()))
    per = collections.defaultdict(list)
    ops = {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            name = e["name"][: -len("_kernel_time")]
            per[name].append(e["dur"] / 1000.0)
            ops[name] = e["args"].get("op_name", "?")
    # The last N runs only (warm), median per node.
    return [(n, float(np.median(v[-a.runs:])), ops[n]) for n, v in per.items()]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("onnx")
    p.add_argument("keel")
    add_profile_arguments(p, threads=1)
    p.add_argument("--top", type=int, default=20)
    p.add_argument("--ops", default="", help="also list every node of these ONNX op types (comma-separated), "
                   "e.g. AveragePool,MaxPool,Resize: Keel's and ORT's time side by side")
    a = p.parse_args()
    g = Graph(onnx.load(a.onnx))
    keel = keel_profile(a)
    ort_times = ort_profile(a)

    keel_at, ort_at = collections.defaultdict(float), collections.defaultdict(float)
    kinds = collections.defaultdict(lambda: [0.0, 0.0])
    def charge(table, side, name, ms, ort_op=None):
        node = g.node_of(name)
        if ort_op and ort_op.startswith("Reorder"):
            kinds["layout reorder (ORT NCHWc)"][side] += ms
            return
        if node is None:  # an ORT-made node (SkipLayerNormalization, Gelu, reshapes around a Gemm...)
            kinds["%s (no ONNX node)" % (ort_op or "?")][side] += ms
            return
        anchor = g.anchor(node)
        if anchor.op_type in ANCHORS:
            table[anchor.name] += ms
            kinds[anchor.op_type][side] += ms
        else:
            kinds[anchor.op_type][side] += ms
    for name, ms in keel:
        charge(keel_at, 0, name, ms)
    for name, ms, op in ort_times:
        charge(ort_at, 1, name, ms, op)

    print("%s: Keel (keel-bench --profile-all) and ORT %s, %d threads, %d profiled runs; per-node medians" % (a.keel, __import__("onnxruntime").__version__, a.threads, a.runs))
    rows = sorted(set(keel_at) | set(ort_at), key=lambda n: ort_at.get(n, 0) - keel_at.get(n, 0))
    print("\n%-56s %9s %9s %6s" % ("anchor (Conv/Gemm/MatMul and what is fused behind it)", "Keel ms", "ORT ms", "K/O"))
    for n in rows[: a.top]:
        k, o = keel_at.get(n, 0.0), ort_at.get(n, 0.0)
        print("%-56s %9.4f %9.4f %6s" % (n[-56:], k, o, "%.2f" % (k / o) if o else "-"))
    print("\n%-40s %9s %9s %6s" % ("kind", "Keel ms", "ORT ms", "K/O"))
    for kind, (k, o) in sorted(kinds.items(), key=lambda kv: -max(kv[1])):
        print("%-40s %9.4f %9.4f %6s" % (kind, k, o, "%.2f" % (k / o) if o else "-"))
    listed = set(filter(None, a.ops.split(",")))
    if listed:
        keel_node, ort_node = collections.defaultdict(float), collections.defaultdict(float)
        for table, times in ((keel_node, keel), (ort_node, [(n, ms) for n, ms, _ in ort_times])):
            for name, ms in times:
                node = g.node_of(name)
                if node is not None:
                    table[node.name] += ms
        print("\n%-56s %9s %9s %6s" % ("node (%s)" % ",".join(sorted(listed)), "Keel ms", "ORT ms", "K/O"))
        for n in g.nodes:
            if g.nodes[n].op_type in listed:
                k, o = keel_node.get(n, 0.0), ort_node.get(n, 0.0)
                print("%-56s %9.4f %9.4f %6s" % (n[-56:], k, o, "%.2f" % (k / o) if o else "-"))
    tk, to = sum(v[0] for v in kinds.values()), sum(v[1] for v in kinds.values())
    print("%-40s %9.4f %9.4f %6s" % ("total (sum of kernels)", tk, to, "%.2f" % (tk / to) if to else "-"))


if __name__ == "__main__":
    main()
