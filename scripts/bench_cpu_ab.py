"""Keel against Keel: one-thread CPU time per run of two compiled folders, alternating.

    python3 scripts/bench_cpu_ab.py --models-dir MODELS --a DIR_A --b DIR_B [--keel-bench BIN]
        [--rounds 4] [--runs 60] MODEL...

DIR_A and DIR_B hold MODEL.keel (compiled by two keelc builds, e.g. main's and a branch's); MODELS
holds MODEL.json and its input files (the bundled models' format, see export_cpu_bench_models.py).
Per round and model: keel-bench on A, then on B (the same keel-bench binary for both, so only the
kernels differ), each as the difference in child CPU time (getrusage) between a run of 2N and one of N
runs (cancelling loading and warm-up), per run. CPU time does not grow when other processes hold the
cores, which wall time on a shared 2-core machine does. Prints the median per side, B / A, and every
round's figure (their spread is this run's noise), with the load average before and after.
"""
import argparse, json, os, resource, statistics, subprocess


def child_cpu_s(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.check_output(cmd)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--models-dir", required=True)
    p.add_argument("--a", required=True)
    p.add_argument("--b", required=True)
    p.add_argument("--keel-bench", default="build/bin/keel-bench")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--runs", type=int, default=60)
    p.add_argument("models", nargs="+")
    a = p.parse_args()
    print("load average %.2f" % os.getloadavg()[0])
    for m in a.models:
        meta = json.load(open(os.path.join(a.models_dir, m + ".json")))
        inputs = []
        for i in meta["inputs"]:
            inputs += ["--input", "%s=%s" % (i["name"], os.path.join(a.models_dir, i["file"]))]
        times = {"a": [], "b": []}
        for _ in range(a.rounds):
            for side, folder in (("a", a.a), ("b", a.b)):
                cmd = [a.keel_bench, os.path.join(folder, m + ".keel"), "--threads", "1", "--warmup", "2",
                       "--min-seconds", "0"] + inputs
                one = child_cpu_s(cmd + ["--iterations", str(a.runs)])
                two = child_cpu_s(cmd + ["--iterations", str(2 * a.runs)])
                times[side].append((two - one) * 1e3 / a.runs)
        ma, mb = statistics.median(times["a"]), statistics.median(times["b"])
        print("%-14s A %.2f ms  B %.2f ms  B/A %.2f   (rounds A: %s | B: %s)" % (
            m, ma, mb, mb / ma, " ".join("%.2f" % x for x in times["a"]), " ".join("%.2f" % x for x in times["b"])))
    print("load average %.2f" % os.getloadavg()[0])


if __name__ == "__main__":
    main()
