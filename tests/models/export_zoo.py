"""Real architectures with random weights, exported from PyTorch, compiled by Keel, checked against PyTorch.

For each model of zoo_models.MODELS: seeded random weights (torchvision with weights=None, random
BatchNorm statistics), ONNX export at opset 17 (batch 1), PyTorch's CPU output on a fixed random
input. Files, per model NAME under --out (git-ignored; never committed, the large ones are 100-500 MB):
    NAME.onnx, NAME.input.npy, NAME.output.npy, NAME.json (shapes, ONNX op types, PyTorch ms)
A model whose files exist and were written by the same scripts (source hash in NAME.json) is not
exported again.

    python3 export_zoo.py --out DIR                         export only
    python3 export_zoo.py --out DIR --bin BIN               also compile with BIN/keelc (cpu, and
                                                            --target cuda compile-only when
                                                            BIN/keelc has CUDA), run on the CPU
                                                            with BIN/keel-run, compare (rel L2 <= 1e-4)
    python3 export_zoo.py --out DIR --bin BIN --gpu-stage S also stage the cuda executables, inputs
                                                            and references under S for scripts/zoo-gpu.sh
    python3 export_zoo.py --out DIR --bin BIN --gpu-stage-onnx S
                                                            stage compact-weight models as compressed
                                                            ONNX (compiled on the GPU machine; see
                                                            compact_weights) after checking them here
Models: --models a,b,c; default the "small" ones, all of them with --all or KEEL_ZOO_ALL=1.
Needs /usr/bin/python3 with torch, torchvision and numpy (not onnx). Exit 77 (skipped) when they are
missing, 1 when a model fails to export, compile, run, or match.
"""
import argparse, hashlib, json, os, subprocess, sys, time, warnings

try:
    import numpy as np
    import torch
    import torchvision  # noqa: F401  (the zoo's builders import its submodules)
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import zoo_models  # noqa: E402

TOLERANCE = 1e-4
THREADS = 2


def source_hash():
    h = hashlib.sha256()
    for f in ("zoo_models.py", "export_zoo.py", "export_gru.py"):
        h.update(open(os.path.join(HERE, f), "rb").read())
    return h.hexdigest()[:16]


# ---- ONNX op types without the onnx package: a minimal protobuf walk ----

def _varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7F) << s; s += 7
        if c < 0x80:
            return v, i


def _fields(b):
    """Yields (field number, wire type, value) of one message; value is bytes for wire type 2."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        f, w = key >> 3, key & 7
        if w == 0:
            v, i = _varint(b, i)
        elif w == 1:
            v, i = b[i:i + 8], i + 8
        elif w == 5:
            v, i = b[i:i + 4], i + 4
        elif w == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError("unsupported protobuf wire type %d" % w)
        yield f, w, v


def onnx_op_types(path):
    """Op type -> count over the main graph (ModelProto.graph = 7, GraphProto.node = 1, NodeProto.op_type = 4)."""
    data = memoryview(open(path, "rb").read())
    ops = {}
    for f, w, graph in _fields(data):
        if f == 7 and w == 2:
            for g, gw, node in _fields(graph):
                if g == 1 and gw == 2:
                    for n, nw, v in _fields(node):
                        if n == 4 and nw == 2:
                            t = bytes(v).decode()
                            ops[t] = ops.get(t, 0) + 1
    return ops


# ---- export ----

def torch_ms(model, x, runs=3):
    with torch.no_grad():
        model(x)
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)[len(times) // 2]


# Compact weights: every large float tensor repeats a random block of its own first COMPACT_PERIOD
# values (a prime, so a repeat never lines up with a tensor's strides: a kernel that reads the
# wrong weight still reads a different value). The model keeps its architecture, its shapes and
# its random small tensors (biases, norm statistics), but its ONNX file compresses to a few MB,
# so the 100-500 MB models fit a GPU call's 64 MiB carry and are compiled there. BatchNorm stays
# a node (export with TrainingMode.PRESERVE): folded at export, the per-channel scales would make
# every weight row unique again. The CPU zoo keeps fully random weights.
COMPACT_PERIOD = 4093


def compact_weights(model):
    with torch.no_grad():
        for t in list(model.parameters()) + list(model.buffers()):
            if t.is_floating_point() and t.numel() > 4 * COMPACT_PERIOD:
                flat = t.view(-1)
                block = flat[:COMPACT_PERIOD].clone()
                flat.copy_(block.repeat(-(-flat.numel() // COMPACT_PERIOD))[:flat.numel()])
    return model


def export(name, out, stamp, compact=False):
    base = name + (".compact" if compact else "")
    meta_path = os.path.join(out, base + ".json")
    if os.path.exists(meta_path):
        try:
            meta = json.load(open(meta_path))
            if meta.get("source") == stamp and all(os.path.exists(os.path.join(out, meta[k])) for k in ("onnx", "input", "output")):
                return meta
        except (ValueError, KeyError):
            pass
    build, make_input, _ = zoo_models.MODELS[name]
    torch.manual_seed(0)
    model = zoo_models.randomize(build()).eval()
    if compact:
        compact_weights(model)
    torch.manual_seed(1)
    x = make_input()
    with torch.no_grad():
        ref = model(x)
    path = os.path.join(out, base + ".onnx")
    t0 = time.perf_counter()
    with warnings.catch_warnings():  # the exporter's notes on shape inference and GRU batch sizes
        warnings.simplefilter("ignore")
        mode = torch.onnx.TrainingMode.PRESERVE if compact else torch.onnx.TrainingMode.EVAL
        # Compact exports (compiled again on the GPU machine, at other batch sizes too) keep the
        # batch dimension symbolic, so that keelc --input-shape can set it.
        dynamic = {"input": {0: "batch"}, "output": {0: "batch"}} if compact else None
        torch.onnx.export(model, (x,), path, opset_version=17, input_names=["input"], output_names=["output"],
                          training=mode, dynamic_axes=dynamic)
    export_s = time.perf_counter() - t0
    np.save(os.path.join(out, base + ".input.npy"), x.numpy())
    np.save(os.path.join(out, base + ".output.npy"), ref.numpy())
    meta = {
        "name": name, "source": stamp, "opset": 17, "onnx": base + ".onnx", "compact_weights": compact,
        "dynamic_batch": compact,
        "input": base + ".input.npy", "output": base + ".output.npy",
        "input_name": "input", "input_shape": list(x.shape), "input_dtype": str(x.numpy().dtype),
        "output_name": "output", "output_shape": list(ref.shape),
        "params": sum(p.numel() for p in model.parameters()),
        "ops": onnx_op_types(path), "torch_ms": torch_ms(model, x), "torch_threads": torch.get_num_threads(),
        "export_s": round(export_s, 1),
    }
    json.dump(meta, open(meta_path, "w"), indent=1)
    return meta


# ---- compile and check ----

def rel_l2(got, ref):
    got, ref = got.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
    return float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))


def first_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1] if lines else "(no message)"


def keelc(bin_dir, onnx_path, exe, target, meta):
    t0 = time.perf_counter()
    shape = ["--input-shape", "input=" + ",".join(map(str, meta["input_shape"]))] if meta.get("dynamic_batch") else []
    r = subprocess.run([os.path.join(bin_dir, "keelc"), onnx_path, "-o", exe, "--target", target, "-q"] + shape,
                       capture_output=True, text=True)
    return r.returncode, time.perf_counter() - t0, r.stderr + r.stdout


def check(name, meta, out, bin_dir, cuda, stage, onnx_stage=None):
    row = {"model": name, "ops": sum(meta["ops"].values()), "op_types": len(meta["ops"]), "torch_ms": meta["torch_ms"]}
    work = os.path.join(out, meta["onnx"][:-len(".onnx")] + ".keel.d")
    os.makedirs(work, exist_ok=True)
    x = np.load(os.path.join(out, meta["input"]))
    ref = np.load(os.path.join(out, meta["output"]))
    x.tofile(os.path.join(work, "input.bin"))
    exe = os.path.join(work, name + ".keel")
    rc, row["compile_s"], msg = keelc(bin_dir, os.path.join(out, meta["onnx"]), exe, "cpu", meta)
    if rc != 0:
        row["status"] = "keelc cpu failed: " + first_line(msg)
        return row
    r = subprocess.run([os.path.join(bin_dir, "keel-run"), exe, "--threads", str(THREADS), "--iterations", "3",
                        "--output-dir", os.path.join(work, "cpu"), "--input", "input=" + os.path.join(work, "input.bin")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        row["status"] = "keel-run failed: " + first_line(r.stderr + r.stdout)
        return row
    for line in r.stdout.splitlines():
        if "ms per run" in line:
            row["keel_ms"] = float(line.split(":")[-1].split()[0])
    got = np.fromfile(os.path.join(work, "cpu", "output.bin"), dtype=ref.dtype)
    if got.size != ref.size:
        row["status"] = "output has %d elements, PyTorch %d" % (got.size, ref.size)
        return row
    row["rel_l2"] = rel_l2(got, ref)
    row["status"] = "ok" if row["rel_l2"] <= TOLERANCE else "MISMATCH"
    if not np.all(np.isfinite(ref)) or float(np.std(ref)) == 0:  # a constant reference proves nothing
        row["status"] = "degenerate reference (constant or not finite)"
    if onnx_stage and row["status"] == "ok":
        stage_onnx(name, meta, out, work, onnx_stage)
    if cuda:
        cexe = os.path.join(work, name + ".cuda.keel")
        rc, row["cuda_compile_s"], msg = keelc(bin_dir, os.path.join(out, meta["onnx"]), cexe, "cuda", meta)
        if rc != 0:
            row["cuda"] = "keelc cuda failed: " + first_line(msg)
            row["status"] = "cuda compile failed"
        else:
            row["cuda"] = "compiled"
            if stage:
                stage_model(name, meta, out, work, cexe, stage)
    return row


def stage_model(name, meta, out, work, cexe, stage):
    """Files for scripts/zoo-gpu.sh: NAME.keel(.so), NAME.input.bin, NAME.output.bin, NAME.json."""
    import shutil
    os.makedirs(stage, exist_ok=True)
    shutil.copy(cexe, os.path.join(stage, name + ".keel"))
    shutil.copy(cexe + ".so", os.path.join(stage, name + ".keel.so"))
    shutil.copy(os.path.join(work, "input.bin"), os.path.join(stage, name + ".input.bin"))
    np.load(os.path.join(out, meta["output"])).tofile(os.path.join(stage, name + ".output.bin"))
    json.dump(meta, open(os.path.join(stage, name + ".json"), "w"), indent=1)


def stage_onnx(name, meta, out, work, stage):
    """Files for scripts/zoo-gpu.sh run, compiled there: NAME.onnx.xz, NAME.input.bin, NAME.output.bin, NAME.json."""
    import lzma, shutil
    os.makedirs(stage, exist_ok=True)
    with open(os.path.join(out, meta["onnx"]), "rb") as src, lzma.open(os.path.join(stage, name + ".onnx.xz"), "wb", preset=6) as dst:
        shutil.copyfileobj(src, dst, 1 << 24)
    shutil.copy(os.path.join(work, "input.bin"), os.path.join(stage, name + ".input.bin"))
    np.load(os.path.join(out, meta["output"])).tofile(os.path.join(stage, name + ".output.bin"))
    json.dump(meta, open(os.path.join(stage, name + ".json"), "w"), indent=1)


def print_table(rows):
    print("%-26s %5s %6s %9s %9s %9s %10s %s" % ("model", "ops", "types", "compile s", "keel ms", "torch ms", "rel L2", "status"))
    for r in rows:
        f = lambda k, fmt: (fmt % r[k]) if k in r else "-"
        extra = "" if r.get("cuda") in (None, "compiled") else "  [%s]" % r["cuda"]
        cuda = " +cuda %.1fs" % r["cuda_compile_s"] if r.get("cuda") == "compiled" else ""
        print("%-26s %5s %6s %9s %9s %9s %10s %s%s%s" % (r["model"], r.get("ops", "-"), r.get("op_types", "-"),
              f("compile_s", "%.1f"), f("keel_ms", "%.1f"), f("torch_ms", "%.1f"), f("rel_l2", "%.2e"),
              r["status"], cuda, extra))
    print("keel ms: keel-run --threads %d, mean of 3 runs (the first included); torch ms: PyTorch %s on the CPU, "
          "median of 3, %d thread(s)" % (THREADS, torch.__version__, torch.get_num_threads()))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--bin", help="folder with keelc and keel-run (compile and compare)")
    p.add_argument("--models", help="comma list (default: the small models; all with --all or KEEL_ZOO_ALL=1)")
    p.add_argument("--all", action="store_true")
    p.add_argument("--no-cuda", action="store_true", help="skip the --target cuda compile")
    p.add_argument("--gpu-stage", help="stage cuda executables and references here for scripts/zoo-gpu.sh")
    p.add_argument("--gpu-stage-onnx", help="export with compact weights, check on the CPU, and stage the "
                   "compressed ONNX here for scripts/zoo-gpu.sh (compiled on the GPU machine)")
    a = p.parse_args()
    torch.set_num_threads(THREADS)
    if a.models:
        names = a.models.split(",")
        unknown = [n for n in names if n not in zoo_models.MODELS]
        if unknown:
            p.error("unknown models: %s (known: %s)" % (", ".join(unknown), ", ".join(zoo_models.MODELS)))
    elif a.all or os.environ.get("KEEL_ZOO_ALL") == "1":
        names = list(zoo_models.MODELS)
    else:
        names = [n for n, m in zoo_models.MODELS.items() if m[2] == "small"]
    os.makedirs(a.out, exist_ok=True)
    stamp = source_hash()
    cuda = bool(a.bin) and not a.no_cuda
    rows, failed = [], 0
    for name in names:
        try:
            meta = export(name, a.out, stamp, compact=bool(a.gpu_stage_onnx))
        except Exception as e:  # an export failure is a failed row, not the end of the run
            rows.append({"model": name, "status": "export failed: %s" % first_line(str(e))})
            failed += 1
            continue
        if not a.bin:
            rows.append({"model": name, "ops": sum(meta["ops"].values()), "op_types": len(meta["ops"]),
                         "torch_ms": meta["torch_ms"], "status": "exported"})
            continue
        row = check(name, meta, a.out, a.bin, cuda, a.gpu_stage, a.gpu_stage_onnx)
        failed += row["status"] != "ok"
        rows.append(row)
        print("%s: %s" % (name, row["status"]), flush=True)
    print_table(rows)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
