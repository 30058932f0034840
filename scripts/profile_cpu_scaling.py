"""Which instructions of a compiled model scale poorly from 1 to T threads.

    python3 scripts/profile_cpu_scaling.py MODEL.keel [--threads T] [--runs N] [--rounds R]
        [--keel-bench build/bin/keel-bench] [--input name=file.bin ...] [--top K]

Runs `keel-bench MODEL.keel --profile-all` at 1 thread and at T threads, alternating, R rounds each (the
median of the rounds' per-instruction medians), and prints per instruction its time at 1 and at T
threads, the speedup, and the time lost against perfect scaling (time at T - time at 1 / T), sorted by
that loss: the instructions that a T-thread run pays for. The total line compares the sums of the
instruction medians (the gaps between instructions are not in the trace). On a machine shared with
other work the T-thread times measure the scheduler too: compare rounds, read the load average.
"""
import argparse, os, re, statistics, subprocess


def profile(keel_bench, keel, threads, runs, inputs):
    cmd = [keel_bench, keel, "--threads", str(threads), "--iterations", str(runs), "--warmup", "3",
           "--min-seconds", "0", "--profile-all"]
    for i in inputs:
        cmd += ["--input", i]
    rows = {}
    for line in subprocess.check_output(cmd, text=True).splitlines():
        m = re.match(r"\s*([\d.]+) ms\s+([\d.]+)%\s+#(\d+)\s+(\S+)\s+(.*)", line)
        if m:
            rows[int(m.group(3))] = (float(m.group(1)), m.group(4), m.group(5).strip())
    return rows


def add_profile_arguments(p, threads, runs=30):
    """The options every profiling script passes to profile(): --threads, --runs, --keel-bench, --input."""
    p.add_argument("--threads", type=int, default=threads)
    p.add_argument("--runs", type=int, default=runs)
    p.add_argument("--keel-bench", default="build/bin/keel-bench")
    p.add_argument("--input", action="append", default=[])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("keel")
    add_profile_arguments(p, threads=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--top", type=int, default=25)
    a = p.parse_args()
    load = os.getloadavg()[0]
    one, many = {}, {}
    for _ in range(a.rounds):
        for threads, into in ((1, one), (a.threads, many)):
            for index, row in profile(a.keel_bench, a.keel, threads, a.runs, a.input).items():
                into.setdefault(index, [row[1], row[2], []])[2].append(row[0])
    lines = []
    for index in one.keys() & many.keys():
        t1, tn = statistics.median(one[index][2]), statistics.median(many[index][2])
        lines.append((tn - t1 / a.threads, index, one[index][0], one[index][1], t1, tn))
    lines.sort(reverse=True)
    sum1, sumn = sum(l[4] for l in lines), sum(l[5] for l in lines)
    print("load average %.2f -> %.2f; %d rounds of %d traced runs" % (load, os.getloadavg()[0], a.rounds, a.runs))
    print("%9s %9s %7s %9s  %-4s %-7s %s" % ("1t ms", "%dt ms" % a.threads, "speedup", "lost ms", "#", "op", "name"))
    for lost, index, op, name, t1, tn in lines[:a.top]:
        print("%9.4f %9.4f %7.2f %9.4f  #%-4d %-7s %s" % (t1, tn, t1 / tn if tn else 0, lost, index, op, name[:60]))
    print("sum of instruction medians: %.3f ms at 1 thread, %.3f ms at %d (speedup %.2f; %.3f ms lost)" % (
        sum1, sumn, a.threads, sum1 / sumn if sumn else 0, sumn - sum1 / a.threads))


if __name__ == "__main__":
    main()
