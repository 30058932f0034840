#!/usr/bin/env python3
"""Writes ONNX's node conformance cases to a folder for keel_conformance.

Every case of onnx.backend.test.case.node.collect_testcases() (the installed onnx
package: the same cases as onnx/backend/test/data/node) becomes

  OUT/cases/<name>/model.onnx
  OUT/cases/<name>/in<i>.bin, exp<i>.bin   raw little-endian, C order (bool: 1 byte)

plus two manifests listing every case, excluded ones included:

  OUT/manifest.json  for people and tools: name, category, reason, op (the op the
                     case tests, for the per-op table), ops (all of the model's), rtol, atol,
                     inputs/outputs (name, dtype, shape, file)
  OUT/manifest.tsv   the same for the C++ runner, one record per line (tab-separated):
                       onnx <version>
                       case <name> <category> <reason> <op> <ops,...> <rtol> <atol>
                       in   <name> <dtype> <d0,d1,..> <file>
                       out  <name> <dtype> <d0,d1,..> <file>
                     (a scalar's shape field is "-"; in/out lines follow their case line)

category is "tensor" (every graph input/output is a tensor of a type Keel has)
or "excluded:<why>" — see EXCLUSIONS below and docs/CONFORMANCE.md. Deterministic:
cases sorted by name, files written only when their content changed (so a
re-dump is cheap and keeps timestamps), stale case folders removed.

Usage: dump_cases.py --out DIR [--filter REGEX]
"""
import argparse
import json
import os
import re
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

# ONNX element type -> Keel dtype name (include/keel/dtype_list.h).
KEEL_DTYPES = {
    TensorProto.FLOAT: "f32", TensorProto.FLOAT16: "f16", TensorProto.BFLOAT16: "bf16",
    TensorProto.DOUBLE: "f64", TensorProto.INT8: "i8", TensorProto.INT16: "i16",
    TensorProto.INT32: "i32", TensorProto.INT64: "i64", TensorProto.UINT8: "u8",
    TensorProto.BOOL: "bool", TensorProto.UINT16: "u16", TensorProto.UINT32: "u32",
    TensorProto.UINT64: "u64",
}
NUMPY_TO_KEEL = {
    "float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "int8": "i8",
    "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "bool",
    "uint16": "u16", "uint32": "u32", "uint64": "u64",
}

# Why a case is not a tensor case. Keel compiles dense tensors of the types in
# KEEL_DTYPES in the default ONNX domain; everything else is out of scope by design.
EXCLUSIONS = {
    "string": "string tensors",
    "sequence": "sequence values (Sequence*/SplitToSequence/ConcatFromSequence)",
    "optional": "optional values (Optional*)",
    "narrow-type": "float8/float6/float4/int4/uint4/int2/uint2 element types",
    "complex": "complex element types",
    "training": "training ops (ai.onnx.preview.training)",
    "ml-domain": "ai.onnx.ml domain (classic ML operators)",
    "preview-domain": "ai.onnx.preview domain (experimental operators)",
    "other-domain": "a custom op domain",
}
SEQUENCE_OPS = {"SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert",
                "SequenceLength", "SequenceMap", "SplitToSequence", "ConcatFromSequence"}
OPTIONAL_OPS = {"Optional", "OptionalGetElement", "OptionalHasElement"}
NARROW = {getattr(TensorProto, n) for n in dir(TensorProto)
          if re.match(r"^(FLOAT8|FLOAT6|FLOAT4|U?INT4$|U?INT2$)", n)}
COMPLEX = {TensorProto.COMPLEX64, TensorProto.COMPLEX128}


def elem_category(elem_type):
    if elem_type == TensorProto.STRING:
        return "string"
    if elem_type in COMPLEX:
        return "complex"
    if elem_type in NARROW:
        return "narrow-type"
    if elem_type not in KEEL_DTYPES:
        return "narrow-type" if elem_type > TensorProto.BFLOAT16 else "other-domain"
    return None


def type_category(tp):
    kind = tp.WhichOneof("value")
    if kind == "sequence_type":
        return "sequence"
    if kind == "optional_type":
        return "optional"
    if kind != "tensor_type":
        return "sequence" if kind is None else "other-domain"
    return elem_category(tp.tensor_type.elem_type)


def graphs(g):
    yield g
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from graphs(a.g)
            for sub in a.graphs:
                yield from graphs(sub)


def classify(model, inputs, outputs):
    """(category, reason): "tensor" or "excluded:<why>" with a one-line reason."""
    # Domains first: they decide scope regardless of the value types.
    for g in graphs(model.graph):
        for n in g.node:
            d = n.domain
            if d in ("", "ai.onnx"):
                continue
            if d == "ai.onnx.preview.training":
                return "training", f"{n.op_type} is a training op ({d})"
            if d == "ai.onnx.ml":
                return "ml-domain", f"{n.op_type} is in the {d} domain"
            if d == "ai.onnx.preview":
                return "preview-domain", f"{n.op_type} is in the experimental {d} domain"
            if not any(f.domain == d for f in model.functions):
                return "other-domain", f"{n.op_type} is in domain '{d}'"
    g = model.graph
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        c = type_category(vi.type)
        if c:
            t = vi.type.tensor_type.elem_type if vi.type.HasField("tensor_type") else None
            what = TensorProto.DataType.Name(t) if t is not None else vi.type.WhichOneof("value")
            return c, f"value '{vi.name}' is {what}"
    for t in g.initializer:
        c = elem_category(t.data_type)
        if c:
            return c, f"initializer '{t.name}' is {TensorProto.DataType.Name(t.data_type)}"
    for sub in graphs(g):
        for n in sub.node:
            if n.op_type in SEQUENCE_OPS:
                return "sequence", f"{n.op_type} makes or reads a sequence"
            if n.op_type in OPTIONAL_OPS:
                return "optional", f"{n.op_type} makes or reads an optional"
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR:
                    c = elem_category(a.t.data_type)
                    if c:
                        return c, f"{n.op_type} attribute '{a.name}' is {TensorProto.DataType.Name(a.t.data_type)}"
    for x in list(inputs) + list(outputs):
        if not isinstance(x, np.ndarray):
            return "sequence", f"a value of the data set is a {type(x).__name__}, not a tensor"
        if x.dtype.name not in NUMPY_TO_KEEL:
            return elem_category_numpy(x.dtype), f"a value of the data set has dtype {x.dtype}"
    return None, ""


def elem_category_numpy(dt):
    if dt.kind in "OSU":
        return "string"
    if dt.kind == "c":
        return "complex"
    return "narrow-type"


def as_arrays(values):
    """numpy scalars -> 0-d arrays, TensorProtos -> arrays; sequences etc. stay as they are."""
    out = []
    for x in values:
        if isinstance(x, np.generic):
            x = np.asarray(x)
        elif isinstance(x, TensorProto):
            x = numpy_helper.to_array(x) if elem_category(x.data_type) is None else x
        out.append(x)
    return out


def primary_op(case, single_op):
    """The op a case tests, for the per-op table: the single node's op; for a
    function-expanded case (name_expanded[_verN]) "<op of name> (expanded)"; else the
    one non-Constant op, or the distinct ops joined with '+'."""
    if case.name in single_op:
        return single_op[case.name]
    m = re.match(r"^(.*)_expanded(_ver\d+)?$", case.name)
    if m and m.group(1) in single_op:
        return single_op[m.group(1)] + " (expanded)"
    ops = sorted({n.op_type for n in case.model.graph.node} - {"Constant"})
    return "+".join(ops) if ops else "Constant"


def write_if_changed(path, data):
    if os.path.exists(path):
        with open(path, "rb") as f:
            if f.read() == data:
                return
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def tensor_bytes(x):
    return np.ascontiguousarray(x).astype(x.dtype.newbyteorder("<"), copy=False).tobytes()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--filter", default="", help="only cases whose name matches this regex")
    a = ap.parse_args()
    with warnings.catch_warnings():  # the generators compute -inf/NaN on purpose
        warnings.simplefilter("ignore")
        np.seterr(all="ignore")
        from onnx.backend.test.case.node import collect_testcases
        cases = sorted(collect_testcases(), key=lambda c: c.name)
    rx = re.compile(a.filter)
    cases = [c for c in cases if rx.search(c.name)]
    root = os.path.join(a.out, "cases")
    os.makedirs(root, exist_ok=True)
    manifest, tsv = [], ["onnx\t" + onnx.__version__]
    seen = set()
    single_op = {c.name: c.model.graph.node[0].op_type for c in cases if len(c.model.graph.node) == 1}
    for c in cases:
        if c.name in seen or not re.fullmatch(r"[A-Za-z0-9_.\-]+", c.name):
            print(f"dump_cases: skipping case with a duplicate or unusual name {c.name!r}", file=sys.stderr)
            continue
        seen.add(c.name)
        model = c.model
        inputs, outputs = (as_arrays(v) for v in c.data_sets[0])
        ops = sorted({n.op_type for n in model.graph.node})
        cat, reason = classify(model, inputs, outputs)
        init_names = {t.name for t in model.graph.initializer}
        in_vis = [vi for vi in model.graph.input if vi.name not in init_names]
        if cat is None and (len(in_vis) != len(inputs) or len(model.graph.output) != len(outputs)):
            cat, reason = "optional", "the data set does not give one value per graph input/output"
        entry = {"name": c.name, "category": "tensor" if cat is None else "excluded:" + cat, "reason": reason,
                 "op": primary_op(c, single_op), "ops": ops, "rtol": float(c.rtol), "atol": float(c.atol), "inputs": [], "outputs": []}
        d = os.path.join(root, c.name)
        if cat is None:
            os.makedirs(d, exist_ok=True)
            write_if_changed(os.path.join(d, "model.onnx"), model.SerializeToString(deterministic=True))
            for kind, vis, values, prefix in (("inputs", in_vis, inputs, "in"),
                                              ("outputs", model.graph.output, outputs, "exp")):
                for i, (vi, x) in enumerate(zip(vis, values)):
                    f = f"{prefix}{i}.bin"
                    write_if_changed(os.path.join(d, f), tensor_bytes(x))
                    entry[kind].append({"name": vi.name, "dtype": NUMPY_TO_KEEL[x.dtype.name],
                                        "shape": [int(s) for s in x.shape], "file": f})
        elif os.path.isdir(d):
            shutil.rmtree(d)
        manifest.append(entry)
        tsv.append("\t".join(["case", c.name, entry["category"], reason.replace("\t", " ").replace("\n", " "),
                              entry["op"], ",".join(ops) or "-", repr(entry["rtol"]), repr(entry["atol"])]))
        for kind, tag in (("inputs", "in"), ("outputs", "out")):
            for t in entry[kind]:
                shape = ",".join(str(s) for s in t["shape"]) if t["shape"] else "-"
                tsv.append("\t".join([tag, t["name"], t["dtype"], shape, t["file"]]))
    # Folders of cases that no longer exist (another onnx version, a filter change).
    for stale in sorted(set(os.listdir(root)) - seen):
        shutil.rmtree(os.path.join(root, stale), ignore_errors=True)
    write_if_changed(os.path.join(a.out, "manifest.json"),
                     (json.dumps({"onnx_version": onnx.__version__, "cases": manifest}, indent=1) + "\n").encode())
    write_if_changed(os.path.join(a.out, "manifest.tsv"), ("\n".join(tsv) + "\n").encode())
    counts = {}
    for e in manifest:
        counts[e["category"]] = counts.get(e["category"], 0) + 1
    print(f"dump_cases: onnx {onnx.__version__}: {len(manifest)} cases -> {a.out}: " +
          ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
