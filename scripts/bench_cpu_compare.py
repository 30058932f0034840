"""Keel vs ONNX Runtime (and PyTorch) CPU latency, measured alternately in one run.

Driven by scripts/bench-cpu.sh, run with the test virtualenv's python (onnxruntime):

    .venv/bin/python scripts/bench_cpu_compare.py --out DIR --threads T --rounds R \
        --models-dir ../shared/models --keel-bench build/bin/keel-bench [--torch DIR/torch.json] MODEL...

Expects DIR/MODEL.keel (compiled by keelc) and DIR/MODEL.keelc.txt (keelc's report, for the compile
time). Per round and model: one keel-bench process (median of its runs), then ONNX Runtime in this
process (same input, same thread count: intra_op_num_threads=T, inter_op_num_threads=1, sequential
execution, ORT_ENABLE_ALL) for the same number of runs. Alternating the two keeps load changes on a
shared machine from favouring either side; each side's latency is the median over its per-round
medians and the ratio the median of the per-round ratios. Prints a table, writes
DIR/compare-tT.json.

CPU time per run is measured too (it does not grow when other processes take the cores, which wall
time on a shared 2-core machine does), over the same timed runs as the wall times: Keel's as keel-bench
reports it (getrusage of its own process around the timed loop, every thread), ONNX Runtime's from
this process's CPU clock around its timed runs (its pool threads included). Each side's CPU figure
is the median over rounds.
"""
import argparse, json, os, re, statistics, subprocess, time

import numpy as np
import onnxruntime as ort


def ort_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_feeds(models_dir, model):
    meta = json.load(open(os.path.join(models_dir, model + ".json")))
    feeds = {}
    for i in meta["inputs"]:
        data = np.fromfile(os.path.join(models_dir, i["file"]), dtype=np.dtype(i["dtype"]))
        feeds[i["name"]] = data.reshape(i["shape"])
    return feeds


def ort_round(sess, feeds, runs, min_seconds):
    """(median wall ms, CPU ms per run) of one round."""
    samples, start, cpu = [], time.perf_counter(), time.process_time()
    while len(samples) < runs or time.perf_counter() - start < min_seconds:
        t = time.perf_counter()
        sess.run(None, feeds)
        samples.append((time.perf_counter() - t) * 1e3)
    return statistics.median(samples), (time.process_time() - cpu) * 1e3 / len(samples)


def keel_cmd(keel_bench, exe, models_dir, model, threads, runs, min_seconds):
    meta = json.load(open(os.path.join(models_dir, model + ".json")))
    cmd = [keel_bench, exe, "--threads", str(threads), "--json", "--warmup", "3", "--iterations", str(runs),
           "--min-seconds", str(min_seconds)]
    for i in meta["inputs"]:
        cmd += ["--input", "%s=%s" % (i["name"], os.path.join(models_dir, i["file"]))]
    return cmd


def keel_round(keel_bench, exe, models_dir, model, threads, runs, min_seconds):
    """(median wall ms, CPU ms per run) of one keel-bench process."""
    r = json.loads(subprocess.check_output(keel_cmd(keel_bench, exe, models_dir, model, threads, runs, min_seconds)))
    return r["median_ms"], r["cpu_ms"]


def measure(a, m, torch):
    """One model's row: a.rounds rounds, keel-bench then ONNX Runtime in each."""
    exe = os.path.join(a.out, m + ".keel")
    report = open(os.path.join(a.out, m + ".keelc.txt")).read()
    compile_s = float(re.search(r"compiled in ([\d.]+) s", report).group(1))
    sess, feeds = ort_session(os.path.join(a.models_dir, m + ".onnx"), a.threads), ort_feeds(a.models_dir, m)
    for _ in range(3):
        sess.run(None, feeds)
    keel, onnx, keel_cpu, onnx_cpu = [], [], [], []
    for _ in range(a.rounds):
        wall_ms, cpu_ms = keel_round(a.keel_bench, exe, a.models_dir, m, a.threads, a.runs, a.min_seconds)
        keel.append(wall_ms)
        keel_cpu.append(cpu_ms)
        wall_ms, cpu_ms = ort_round(sess, feeds, a.runs, a.min_seconds)
        onnx.append(wall_ms)
        onnx_cpu.append(cpu_ms)
    del sess
    return {"model": m, "threads": a.threads, "keel_ms": round(statistics.median(keel), 4),
            "ort_ms": round(statistics.median(onnx), 4),
            "keel_over_ort": round(statistics.median(k / o for k, o in zip(keel, onnx)), 3),
            "torch_ms": torch.get(m), "keelc_s": compile_s,
            "keel_cpu_ms": round(statistics.median(keel_cpu), 4),
            "ort_cpu_ms": round(statistics.median(onnx_cpu), 4),
            "keel_rounds_ms": [round(x, 4) for x in keel], "ort_rounds_ms": [round(x, 4) for x in onnx]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--runs", type=int, default=20, help="timed runs per side per round (at least)")
    p.add_argument("--min-seconds", type=float, default=0.3, help="and at least this long per side per round")
    p.add_argument("--models-dir", required=True)
    p.add_argument("--keel-bench", required=True)
    p.add_argument("--torch", default="", help="torch_latency.py's JSON (PyTorch eager column)")
    p.add_argument("models", nargs="+")
    a = p.parse_args()
    torch = {}
    if a.torch and os.path.exists(a.torch):
        torch = {r["model"]: r["eager_ms"] for r in json.load(open(a.torch))}
    load = os.getloadavg()[0]
    rows = []
    for m in a.models:
        try:
            rows.append(measure(a, m, torch))
        except Exception as e:  # keel-bench or ONNX Runtime failing on one model: a row, the rest still run
            print("bench_cpu_compare: %s failed: %s" % (m, e), flush=True)
            rows.append({"model": m, "threads": a.threads, "error": str(e)[:300]})
    result = {"threads": a.threads, "rounds": a.rounds, "runs": a.runs, "onnxruntime": ort.__version__,
              "load_average_1min": round(load, 2), "finished_load_average_1min": round(os.getloadavg()[0], 2),
              "models": rows}
    json.dump(result, open(os.path.join(a.out, "compare-t%d.json" % a.threads), "w"), indent=1)
    print("threads=%d  onnxruntime %s  load average %.2f -> %.2f" % (a.threads, ort.__version__, load,
                                                                     os.getloadavg()[0]))
    print("%-26s %8s %9s %9s %9s %9s %10s %9s %9s" % ("model", "keelc s", "keel ms", "ort ms", "keel/ort",
                                                    "torch ms", "keel/torch", "cpu k/o", "cpu ms k"))
    for r in rows:
        if "error" in r:
            print("%-26s failed: %s" % (r["model"], r["error"][:100]))
            continue
        t, kc, oc = r["torch_ms"], r["keel_cpu_ms"], r["ort_cpu_ms"]
        print("%-26s %8.2f %9.3f %9.3f %9.2f %9s %10s %9s %9s" % (
            r["model"], r["keelc_s"], r["keel_ms"], r["ort_ms"], r["keel_over_ort"],
            "%.3f" % t if t else "-", "%.2f" % (r["keel_ms"] / t) if t else "-",
            "%.2f" % (kc / oc) if kc and oc else "-", "%.2f" % kc if kc else "-"))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
