#!/usr/bin/env python3
"""fuzz/zoo_seeds.py MODELS_DIR OUT_DIR [--max-bytes N] — small ONNX seeds cut from
the bundled models (../shared/models: 3-47 MB each, too big to mutate quickly).

Each seed is a window of consecutive nodes of a zoo model: values it reads from
earlier nodes become graph inputs (shapes from ONNX shape inference), initializers
up to 4 KiB are kept, bigger ones become graph inputs of the same shape, so the
seed still has the zoo's real ops, attributes and shapes. Deterministic."""
import os
import sys

import onnx
from onnx import helper, shape_inference


def windows(model, sizes=(1, 2, 3, 5, 8), stride=7):
    g = model.graph
    n = len(g.node)
    for size in sizes:
        for start in range(0, max(1, n - size + 1), stride):
            yield start, g.node[start:start + size]


def cut(model, nodes, types, inits):
    produced = {o for nd in nodes for o in nd.output if o}
    consumed = [i for nd in nodes for i in nd.input if i]
    inputs, initializers, seen = [], [], set()
    for name in consumed:
        if name in produced or name in seen:
            continue
        seen.add(name)
        init = inits.get(name)
        if init is not None and len(init.SerializeToString()) <= 4096:
            initializers.append(init)
        elif init is not None:
            inputs.append(helper.make_tensor_value_info(name, init.data_type, list(init.dims)))
        elif name in types:
            inputs.append(types[name])
        else:
            return None
    outputs = [types[o] if o in types else helper.make_tensor_value_info(o, 0, None)
               for o in (nodes[-1].output[0],) if o]
    graph = helper.make_graph(list(nodes), "seed", inputs, outputs, initializers)
    m = helper.make_model(graph, opset_imports=model.opset_import)
    m.ir_version = model.ir_version
    return m


def main():
    models_dir, out_dir = sys.argv[1], sys.argv[2]
    max_bytes = int(sys.argv[sys.argv.index("--max-bytes") + 1]) if "--max-bytes" in sys.argv else 65536
    os.makedirs(out_dir, exist_ok=True)
    written = 0
    for fname in sorted(os.listdir(models_dir)):
        if not fname.endswith(".onnx"):
            continue
        model = onnx.load(os.path.join(models_dir, fname))
        try:
            inferred = shape_inference.infer_shapes(model)
        except Exception:  # a seed generator: fall back to declared types only
            inferred = model
        g = inferred.graph
        types = {vi.name: vi for vi in list(g.input) + list(g.value_info) + list(g.output)}
        inits = {t.name: t for t in model.graph.initializer}
        for start, nodes in windows(model):
            m = cut(model, nodes, types, inits)
            if m is None:
                continue
            data = m.SerializeToString()
            if len(data) > max_bytes:
                continue
            name = "%s_%04d_%d.onnx" % (fname[:-5], start, len(nodes))
            with open(os.path.join(out_dir, name), "wb") as f:
                f.write(data)
            written += 1
    print("wrote %d zoo seeds to %s" % (written, out_dir))


if __name__ == "__main__":
    main()
