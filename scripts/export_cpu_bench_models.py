"""Exports the CPU benchmark's extra architectures in the bundled models' file format.

scripts/bench_cpu_compare.py reads a models folder laid out like ../shared/models (NAME.onnx,
NAME.json with an "inputs" list, NAME.input.bin). The bundled folder holds four models; the issue-11
table also covers the architectures the test set exports (tests/models/zoo_models.py: ResNet-50,
ConvNeXt-T, BERT-base) and the other torchvision families ../shared/anchors/torch_latency.py times
(MnasNet, ShuffleNetV2). This script writes them there, with the zoo's seeded random weights
(zoo_models.randomize: random BatchNorm statistics, no constant tensors), opset 17, batch 1, and
PyTorch's output beside the input (NAME.output.bin) for an accuracy check.

Any other architecture of the zoo (tests/models/zoo_models.py: resnext50_32x4d, vit_b_16, mc3_18,
t5_encoder, ...) is exported by tests/models/export_zoo.py's own export() into --zoo-dir (default
build/tests/e2e/zoo, the folder keel_e2e.zoo_pytorch writes: the files are the test's, and either
side reuses the other's while the zoo's sources are unchanged), then laid out in --out: NAME.onnx
links to the zoo's file, the .npy input and output become .bin files.

    /usr/bin/python3 scripts/export_cpu_bench_models.py --out build/bench-models [--models a,b]
    /usr/bin/python3 scripts/export_cpu_bench_models.py --list-zoo     (the zoo's names, one line)

Needs /usr/bin/python3 with torch and torchvision (Debian's python3-torch). A model whose files
exist is not exported again (delete the folder to refresh).
"""
import argparse, json, os, sys, warnings

import torch
import torchvision.models as tvm

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "models"))
import zoo_models  # noqa: E402  (randomize, Encoder, the zoo's builders)


def image():
    return torch.rand(1, 3, 224, 224) * 2 - 1


# name: (builder, input maker). The zoo's entries are reused where the zoo has the model.
MODELS = {
    "mnasnet1_0": (lambda: tvm.mnasnet1_0(weights=None), image),
    "shufflenet_v2": (lambda: tvm.shufflenet_v2_x1_0(weights=None), image),
    "resnet50": (zoo_models.MODELS["resnet50"][0], image),
    "convnext_tiny": (zoo_models.MODELS["convnext_tiny"][0], image),
    "bert_base": zoo_models.MODELS["bert_base"][:2],
}


def bench_meta(name, x, ref, source):
    """NAME.json in the bundled models' format."""
    return {
        "model": name + ".onnx", "opset": 17,
        "inputs": [{"name": "input", "shape": list(x.shape), "dtype": str(x.dtype), "file": name + ".input.bin"}],
        "outputs": [{"name": "output", "shape": list(ref.shape), "dtype": str(ref.dtype), "file": name + ".output.bin"}],
        "source": source,
    }


def export_from_zoo(name, out, zoo_dir):
    """A zoo architecture, exported exactly as keel_e2e.zoo_pytorch exports it, laid out in `out`."""
    import numpy as np
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "models"))
    import export_zoo
    os.makedirs(zoo_dir, exist_ok=True)
    meta = export_zoo.export(name, zoo_dir, export_zoo.source_hash())
    onnx_link = os.path.join(out, name + ".onnx")
    if os.path.lexists(onnx_link):
        os.remove(onnx_link)
    os.symlink(os.path.realpath(os.path.join(zoo_dir, meta["onnx"])), onnx_link)
    x, ref = np.load(os.path.join(zoo_dir, meta["input"])), np.load(os.path.join(zoo_dir, meta["output"]))
    x.tofile(os.path.join(out, name + ".input.bin"))
    ref.tofile(os.path.join(out, name + ".output.bin"))
    source = "tests/models/export_zoo.py (source %s) in %s, torch %s" % (meta["source"], zoo_dir, torch.__version__)
    json.dump(bench_meta(name, x, ref, source), open(os.path.join(out, name + ".json"), "w"), indent=1)
    print("exported", name, "(zoo)")


def export(name, out):
    meta_path = os.path.join(out, name + ".json")
    if os.path.exists(meta_path) and os.path.exists(os.path.join(out, name + ".onnx")):
        return
    build, make_input = MODELS[name]
    torch.manual_seed(0)
    model = zoo_models.randomize(build()).eval()
    torch.manual_seed(1)
    x = make_input()
    with torch.no_grad():
        ref = model(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), os.path.join(out, name + ".onnx"), opset_version=17,
                          input_names=["input"], output_names=["output"])
    x.numpy().tofile(os.path.join(out, name + ".input.bin"))
    ref.numpy().tofile(os.path.join(out, name + ".output.bin"))
    source = ("torch %s / torchvision builders of scripts/export_cpu_bench_models.py, random weights "
              "(seed 0, zoo_models.randomize), eval mode" % torch.__version__)
    json.dump(bench_meta(name, x.numpy(), ref.numpy(), source), open(meta_path, "w"), indent=1)
    print("exported", name)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out")
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--zoo-dir", default=os.path.join(HERE, "..", "build", "tests", "e2e", "zoo"),
                   help="where the zoo's architectures are exported (keel_e2e.zoo_pytorch's folder)")
    p.add_argument("--list-zoo", action="store_true", help="print the zoo's architecture names and exit")
    a = p.parse_args()
    if a.list_zoo:
        print(" ".join(zoo_models.MODELS))
        return
    if not a.out:
        p.error("--out is required")
    os.makedirs(a.out, exist_ok=True)
    for name in a.models.split(","):
        if name in MODELS:
            export(name, a.out)
        elif name in zoo_models.MODELS:
            export_from_zoo(name, a.out, a.zoo_dir)
        else:
            sys.exit("export_cpu_bench_models: unknown model '%s' (known: %s)" %
                     (name, ", ".join(list(MODELS) + [m for m in zoo_models.MODELS if m not in MODELS])))


if __name__ == "__main__":
    main()
