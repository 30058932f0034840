"""Per-kernel device times from an Nsight Compute CSV (`ncu --metrics gpu__time_duration.sum --csv`),
summed per kernel name and grid, largest first: the one table half-gpu.sh (Keel's kernels) and
torch_kernels.sh (PyTorch's) print, so the two compare line by line.

    python3 ncu_summary.py NCU.csv > NCU.txt

When the CSV also holds keel-cuda-time's JSON line (its stdout), only one inference's kernels are
summed: the last `launches` - 2 rows (the launches of the timed run less its input and output
copies), and the header quotes keel-cuda-time's compute_ms.
"""
import collections, csv, json, re, sys

lines = open(sys.argv[1]).read().splitlines()
timing = next((json.loads(l) for l in lines if l.startswith("{")), None)
rows = list(csv.DictReader(l for l in lines if l.startswith('"')))
note = ""
if timing is not None:
    rows = rows[-(timing["launches"] - 2):]
    note = " (compute_ms of keel-cuda-time: %s)" % timing["compute_ms"]
agg = collections.defaultdict(lambda: [0, 0.0])
for r in rows:
    key = re.sub(r"\(.*", "", r["Kernel Name"])[:90] + " grid=" + r["Grid Size"].replace(" ", "")
    agg[key][0] += 1
    agg[key][1] += float(r["Metric Value"].replace(",", "")) / 1000
print(f"{sum(v[1] for v in agg.values()):.1f} us in {len(rows)} kernels{note}")
for key, (count, us) in sorted(agg.items(), key=lambda x: -x[1][1]):
    print(f"{us:9.1f} us {count:4d} x {us / count:7.2f}  {key}")
