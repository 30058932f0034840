#!/usr/bin/env python3
"""Per-replay kernel table from a cupti_trace.tsv (libkeel_cupti_trace.so's output).

Takes the CUDA graph with the most recorded kernels (the timed replays), cuts its records into
replays (a replay ends where a graph node repeats), and prints, over the last --replays replays:
the median wall time of a replay (first start to last end), the median sum of kernel times, the
gaps; then one line per graph node in launch order with its median duration and the median gap
before it, and a summary by kernel family. Works on any program's trace (keel-cuda-time, PyTorch's
graph replay), so the two can be compared node by node.

  python3 kernel_trace.py TRACE.tsv [--replays 20] [--nodes] [--width 90]
"""
import argparse
import collections
import re
import statistics


def family(name):
    n = name.lower()
    for key, label in (("cutlass", "gemm (cutlass/cublas)"), ("gemm", "gemm (cutlass/cublas)"),
                       ("sm90_xmma", "gemm (cutlass/cublas)"), ("nvjet", "gemm (cutlass/cublas)"),
                       ("flash", "attention"), ("fmha", "attention"), ("attn", "attention"),
                       ("cudnn", "cudnn"), ("layer_norm", "layernorm"), ("layernorm", "layernorm"),
                       ("softmax", "softmax"), ("elementwise", "elementwise (torch)"),
                       ("reduce", "reduction"), ("triton", "triton")):
        if key in n:
            return label
    return re.sub(r"[(<].*", "", name)[:40]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--replays", type=int, default=20)
    ap.add_argument("--nodes", action="store_true", help="one line per graph node")
    ap.add_argument("--width", type=int, default=90)
    args = ap.parse_args()
    recs = []
    with open(args.trace) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if p[0] == "K":
                recs.append((int(p[1]), int(p[2]), int(p[4]), int(p[5]), p[6], p[7], p[8]))
            elif p[0] == "M":
                recs.append((int(p[1]), int(p[2]), int(p[4]), int(p[5]), p[6], "", p[8]))
    graphs = collections.Counter(r[2] for r in recs if r[2] != 0)
    if not graphs:
        print("no graph replays in the trace")
        return
    gid = graphs.most_common(1)[0][0]
    rs = sorted((r for r in recs if r[2] == gid), key=lambda r: r[0])
    replays, cur, seen = [], [], set()
    for r in rs:
        if r[3] in seen:
            replays.append(cur)
            cur, seen = [], set()
        cur.append(r)
        seen.add(r[3])
    replays.append(cur)
    n_nodes = max(len(x) for x in replays)
    replays = [x for x in replays if len(x) == n_nodes][-args.replays:]
    wall = statistics.median((x[-1][1] - x[0][0]) / 1e3 for x in replays)
    busy = statistics.median(sum(r[1] - r[0] for r in x) / 1e3 for x in replays)
    print(f"graph {gid}: {n_nodes} nodes, {len(replays)} replays; median replay {wall:.1f} us, "
          f"kernels {busy:.1f} us, gaps {wall - busy:.1f} us ({(wall - busy) / max(1, n_nodes - 1):.2f} per edge)")
    # Per node (position in the replay), medians over the replays.
    rows = []
    for i in range(n_nodes):
        d = statistics.median((x[i][1] - x[i][0]) / 1e3 for x in replays)
        g = statistics.median((x[i][0] - x[i - 1][1]) / 1e3 for x in replays) if i else 0.0
        r = replays[-1][i]
        rows.append((i, d, g, r[4], r[5], r[6]))
    fam = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for _, d, g, _, _, name in rows:
        f = fam[family(name)]
        f[0] += 1
        f[1] += d
        f[2] += g
    print(f"{'family':42s} {'count':>5s} {'kernel us':>10s} {'gaps before':>12s}")
    for k, (c, d, g) in sorted(fam.items(), key=lambda kv: -kv[1][1]):
        print(f"{k[:42]:42s} {c:5d} {d:10.1f} {g:12.1f}")
    if args.nodes:
        print(f"{'#':>4s} {'us':>7s} {'gap':>6s} {'grid':>12s} {'block':>10s} name")
        for i, d, g, grid, block, name in rows:
            print(f"{i:4d} {d:7.2f} {g:6.2f} {grid:>12s} {block:>10s} {name[:args.width]}")


if __name__ == "__main__":
    main()
