#!/usr/bin/env bash
# Issue 5's numbers: runs keel-plan on every zoo model for the cpu and cuda
# targets with all strategies and prints one table (model, target, strategy,
# bytes, ratio to the peak-live bound, ratio to the positional-max bound for
# shared-object plans, device allocations, planning time).
#
#   scripts/plan-report.sh [BUILD_DIR]        (default: build)
#
# Environment: KEEL_PLAN (the keel-plan binary; default BUILD_DIR/bin/keel-plan),
# MODELS (default ../shared/models), TIME_LIMIT (seconds for exact/best; default 10),
# TARGETS (default "cpu cuda"), OUT (where the JSON/HTML reports go; default a temp dir).
# Needs python3 (to read the JSON reports). Exit status: non-zero when any run failed.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
plan=${KEEL_PLAN:-$build/bin/keel-plan}
models=${MODELS:-../shared/models}
time_limit=${TIME_LIMIT:-10}
targets=${TARGETS:-cpu cuda}
out=${OUT:-$(mktemp -d)}
[ -x "$plan" ] || { echo "plan-report: $plan not found (build the keel-plan target)" >&2; exit 1; }
[ -d "$models" ] || { echo "plan-report: no models folder $models" >&2; exit 1; }
mkdir -p "$out"

status=0
jsons=()
for model in "$models"/*.onnx; do
  name=$(basename "$model" .onnx)
  for target in $targets; do
    json="$out/$name.$target.json"
    echo "plan-report: $name ($target)" >&2
    if "$plan" "$model" --target "$target" --strategies all --time-limit "$time_limit" -q \
         --json "$json" --html "$out/$name.$target.html"; then
      jsons+=("$json")
    else
      echo "plan-report: keel-plan failed on $name ($target)" >&2
      status=1
      [ -s "$json" ] && jsons+=("$json")
    fi
  done
done

python3 - "${jsons[@]}" <<'PY'
import json, sys
rows = [("model", "target", "strategy", "bytes", "MiB", "/peak", "/posmax", "allocs", "time ms")]
for path in sys.argv[1:]:
    r = json.load(open(path))
    model = r["model"].removesuffix(".onnx")
    b = r["bounds"]
    rows.append((model, r["target"], "(peak-live bound)", str(b["peak_live"]), "%.2f" % (b["peak_live"] / 2**20), "", "", "", ""))
    rows.append((model, r["target"], "(positional-max bound)", str(b["positional_max"]),
                 "%.2f" % (b["positional_max"] / 2**20), "", "", "", ""))
    for s in r["strategies"]:
        if not s["ok"]:
            rows.append((model, r["target"], s["name"], "FAILED", "", "", "", "", s.get("error", "")))
            continue
        name = s["name"] if s["plan_strategy"] == s["name"] else "%s=%s" % (s["name"], s["plan_strategy"])
        if s["optimal"]:
            name += "*"
        ratio = lambda v: "-" if v is None else "%.3f" % v
        rows.append((model, r["target"], name, str(s["total_bytes"]), "%.2f" % (s["total_bytes"] / 2**20),
                     ratio(s["ratio_peak_live"]), ratio(s["ratio_positional_max"]), str(s["allocations"]),
                     "%.3f" % (1e3 * s.get("seconds", 0))))
widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
for row in rows:
    print("  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip())
print("(* proven optimal; /posmax only for shared-object plans; dynamic = sum of run-time allocations)")
PY
echo "plan-report: reports in $out" >&2
exit $status
