"""Keel against Keel: one-thread CPU time per run of two compiled folders, alternating.

    python3 scripts/bench_cpu_ab.py --models-dir MODELS --a DIR_A --b DIR_B [--keel-bench BIN]
        [--keel-bench-b BIN_B] [--threads 1] [--rounds 4] [--runs 60] MODEL...

DIR_A and DIR_B hold MODEL.keel (compiled by two keelc builds, e.g. main's and a branch's); MODELS
holds MODEL.json and its input files (the bundled models' format, see export_cpu_bench_models.py).
Per round and model: keel-bench on A, then on B (the same keel-bench binary for both, so only the
kernels differ; or BIN_B for B, to compare two runtimes on one folder given as both A and B), each reporting its CPU time per timed run (getrusage of its own process around the
timed loop, every thread) and its median wall time. CPU time does not grow when other processes hold
the cores, which wall time on a shared 2-core machine does. Prints the median per side, B / A, and
every round's figure (their spread is this run's noise), then the same for wall time, with the load
average before and after. --threads (default 1) is keel-bench's thread count.
"""
import argparse, json, os, statistics, subprocess


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models-dir", required=True)
    p.add_argument("--a", required=True)
    p.add_argument("--b", required=True)
    p.add_argument("--keel-bench", default="build/bin/keel-bench")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--runs", type=int, default=60)
    p.add_argument("--keel-bench-b", default="", help="keel-bench for side B (default: --keel-bench)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("models", nargs="+")
    a = p.parse_args()
    print("load average %.2f" % os.getloadavg()[0])
    for m in a.models:
        meta = json.load(open(os.path.join(a.models_dir, m + ".json")))
        inputs = []
        for i in meta["inputs"]:
            inputs += ["--input", "%s=%s" % (i["name"], os.path.join(a.models_dir, i["file"]))]
        cpu, wall = {"a": [], "b": []}, {"a": [], "b": []}
        for _ in range(a.rounds):
            for side, folder, bench in (("a", a.a, a.keel_bench), ("b", a.b, a.keel_bench_b or a.keel_bench)):
                cmd = [bench, os.path.join(folder, m + ".keel"), "--threads", str(a.threads), "--warmup", "2",
                       "--min-seconds", "0", "--iterations", str(a.runs), "--json"] + inputs
                r = json.loads(subprocess.check_output(cmd))
                cpu[side].append(r["cpu_ms"])
                wall[side].append(r["median_ms"])
        for what, times in (("cpu", cpu), ("wall", wall)):
            ma, mb = statistics.median(times["a"]), statistics.median(times["b"])
            print("%-14s %-4s A %.2f ms  B %.2f ms  B/A %.2f   (rounds A: %s | B: %s)" % (
                m, what, ma, mb, mb / ma, " ".join("%.2f" % x for x in times["a"]),
                " ".join("%.2f" % x for x in times["b"])))
    print("load average %.2f" % os.getloadavg()[0])


if __name__ == "__main__":
    main()
