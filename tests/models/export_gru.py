"""A small GRU sequence model exported from PyTorch, compiled by Keel, checked against PyTorch.

Model (random weights, seeded): Linear(12 -> 24) -> 2-layer bidirectional GRU(24 -> 32, batch_first)
-> Linear(64 -> 5), on a [batch=3, seq=9, 12] input, with a fixed random initial state; exported with torch.onnx.export at opset 17
(PyTorch emits ONNX GRU nodes with linear_before_reset=1 plus the batch_first transposes).

    python3 export_gru.py --out DIR                 export only: DIR/gru.onnx, DIR/x.bin, DIR/ref.bin
    python3 export_gru.py --out DIR --bin BIN       also compile with BIN/keelc, run BIN/keel-run and
                                                    compare (relative L2 <= 1e-4)
Needs torch and numpy (not onnx). Exit 77 (skipped) when torch is missing, 1 on a mismatch.
"""
import argparse, os, subprocess, sys

try:
    import numpy as np
    import torch
except ImportError as e:
    print("skipped: %s" % e)
    sys.exit(77)


class GruModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(12, 24)
        self.gru = torch.nn.GRU(24, 32, num_layers=2, bidirectional=True, batch_first=True)
        self.head = torch.nn.Linear(64, 5)
        # A fixed initial state (layers * directions, batch, hidden): exported as an initializer
        # (a zero default state would be exported as Shape/Expand ops instead).
        self.register_buffer("h0", torch.rand(4, 3, 32) - 0.5)

    def forward(self, x):
        y, _ = self.gru(self.proj(x), self.h0)
        return self.head(y)


def export(out):
    torch.manual_seed(0)
    m = GruModel().eval()
    x = torch.rand(3, 9, 12) * 2 - 1
    with torch.no_grad():
        ref = m(x)
    path = os.path.join(out, "gru.onnx")
    torch.onnx.export(m, (x,), path, opset_version=17, input_names=["x"], output_names=["y"])
    x.numpy().astype(np.float32).tofile(os.path.join(out, "x.bin"))
    ref.numpy().astype(np.float32).tofile(os.path.join(out, "ref.bin"))
    return path


def check(out, bin_dir, path):
    exe = os.path.join(out, "gru.keel")
    r = subprocess.run([os.path.join(bin_dir, "keelc"), path, "-o", exe, "-q"], capture_output=True, text=True)
    if r.returncode != 0:
        print("keelc failed: " + r.stderr.strip())
        return 1
    r = subprocess.run([os.path.join(bin_dir, "keel-run"), exe, "--threads", "2", "--output-dir",
                        os.path.join(out, "keel"), "--input", "x=" + os.path.join(out, "x.bin")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print("keel-run failed: " + r.stderr.strip())
        return 1
    got = np.fromfile(os.path.join(out, "keel", "y.bin"), dtype=np.float32).astype(np.float64)
    ref = np.fromfile(os.path.join(out, "ref.bin"), dtype=np.float32).astype(np.float64)
    if got.size != ref.size:
        print("output has %d elements, PyTorch %d" % (got.size, ref.size))
        return 1
    err = np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30)
    print("GRU model vs PyTorch: relative L2 error %.3g" % err)
    return 0 if err <= 1e-4 else 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--bin", help="folder with keelc and keel-run (compare with Keel)")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    path = export(a.out)
    sys.exit(check(a.out, a.bin, path) if a.bin else 0)


if __name__ == "__main__":
    main()
