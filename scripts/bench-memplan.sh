#!/usr/bin/env bash
# Memory planning against the state of the art (issue 10), three tables:
#
#   challenging  Keel's `exact` (keel-plan --capacity) and MiniMalloc's solver on
#                MiniMalloc's eleven challenging instances, alternating which runs
#                first, ROUNDS rounds each; both solutions are checked here (no
#                two live buffers overlap, every buffer below the capacity). Times
#                are process wall times (start-up included for both), the median
#                of the rounds. ratio = Keel time / MiniMalloc time. "-": no
#                solution written (MiniMalloc is stopped after 2 x TIME_LIMIT);
#                "N>cap": Keel's best plan when none within the capacity was found.
#   generated    keel_perfect_packing_table: problems of 100..10,000 buffers whose
#                optimum (1 MiB) is known by construction.
#   models       every model of MODELS: the peak-live bound and greedy-size, auto
#                (keelc's default) and best, bytes / bound and planning time.
#
#   scripts/bench-memplan.sh [challenging|generated|models|all] (default: all)
#
# Environment: BUILD (default build), MINIMALLOC (the solver built unchanged from
# google/minimalloc; default ../shared/memplan/minimalloc), INSTANCES (default
# bench/memory/minimalloc-challenging), ROUNDS (default 3), TIME_LIMIT (seconds
# per Keel run; default 30), MODELS (default ../shared/models), SIZES (generated;
# default 100,300,1000,3000,10000), SEEDS (default 3). Needs python3.
# Exit status: non-zero when a solution fails its check or a run fails.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
build=${BUILD:-build}
plan=$build/bin/keel-plan
minimalloc=${MINIMALLOC:-../shared/memplan/minimalloc}
instances=${INSTANCES:-bench/memory/minimalloc-challenging}
rounds=${ROUNDS:-3}
time_limit=${TIME_LIMIT:-30}
models=${MODELS:-../shared/models}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -x "$plan" ] || { echo "bench-memplan: $plan not found (build keel-plan)" >&2; exit 1; }
status=0

# check.py PROBLEM SOLUTION CAPACITY → "bytes" (max end; "N>cap" when above the
# capacity: a valid plan, but unsolved) or exits 1 naming the overlap.
cat > "$work/check.py" <<'EOF'
import csv, sys
problem = {r['id']: r for r in csv.DictReader(open(sys.argv[1]))}
rows = list(csv.DictReader(open(sys.argv[2])))
cap = int(sys.argv[3])
if len(rows) != len(problem): sys.exit(f"{sys.argv[2]}: {len(rows)} buffers, problem has {len(problem)}")
b = []
for r in rows:
    p = problem[r['id']]
    if (p['lower'], p['upper'], p['size']) != (r['lower'], r['upper'], r['size']): sys.exit(f"buffer {r['id']} changed")
    b.append((int(r['lower']), int(r['upper']), int(r['size']), int(r['offset']), r['id']))
top = max(o + s for _, _, s, o, _ in b)
b.sort(key=lambda x: x[0])
for i in range(len(b)):
    for j in range(i + 1, len(b)):
        if b[j][0] >= b[i][1]: break
        if b[i][3] < b[j][3] + b[j][2] and b[j][3] < b[i][3] + b[i][2]:
            sys.exit(f"{sys.argv[2]}: buffers {b[i][4]} and {b[j][4]} overlap")
print(top if top <= cap else f"{top}>cap")  # >cap: a valid plan, but not within the capacity
EOF
cat > "$work/peak.py" <<'EOF'
import csv, sys
ev = []
for r in csv.DictReader(open(sys.argv[1])):
    ev.append((int(r['lower']), int(r['size']))); ev.append((int(r['upper']), -int(r['size'])))
ev.sort(key=lambda e: (e[0], e[1]))
live = peak = 0
for _, d in ev:
    live += d; peak = max(peak, live)
print(peak)
EOF
now() { date +%s.%N; }
median() { python3 -c 'import sys; v=sorted(map(float, sys.argv[1:])); print(f"{v[len(v)//2]:.2f}")' "$@"; }

challenging() {
  [ -x "$minimalloc" ] || { echo "bench-memplan: MiniMalloc solver $minimalloc not found (MINIMALLOC)" >&2; return 1; }
  printf '%-10s %10s %10s %8s %10s %8s %7s\n' instance bound keel_bytes keel_s mm_bytes mm_s ratio
  for f in "$instances"/*.csv; do
    name=$(basename "$f" .csv)
    cap=${name#*.}
    bound=$(python3 "$work/peak.py" "$f")
    keel_times=() mm_times=() keel_bytes=- mm_bytes=-
    for ((r = 1; r <= rounds; r++)); do
      for who in $( ((r % 2)) && echo "keel mm" || echo "mm keel"); do
        rm -f "$work/$who.csv"
        t0=$(now)
        if [ "$who" = keel ]; then
          "$plan" --buffers "$f" --strategies exact --capacity "$cap" --time-limit "$time_limit" -q \
            --solution "$work/keel.csv" 2>/dev/null || true
        else
          timeout "$((time_limit * 2))" "$minimalloc" --capacity="$cap" --input="$f" --output="$work/mm.csv" \
            >/dev/null 2>&1 || true
        fi
        t=$(python3 -c "print($(now) - $t0)")
        bytes=-
        if [ -s "$work/$who.csv" ]; then
          bytes=$(python3 "$work/check.py" "$f" "$work/$who.csv" "$cap") || { status=1; bytes=INVALID; }
        fi
        if [ "$who" = keel ]; then keel_times+=("$t"); keel_bytes=$bytes; else mm_times+=("$t"); mm_bytes=$bytes; fi
      done
    done
    ks=$(median "${keel_times[@]}"); ms=$(median "${mm_times[@]}")
    printf '%-10s %10s %10s %8s %10s %8s %7s\n' "$name" "$bound" "$keel_bytes" "$ks" "$mm_bytes" "$ms" \
      "$(python3 -c "print(f'{$ks / max($ms, 1e-9):.2f}')")"
  done
}

generated() {
  "$build/bin/keel_perfect_packing_table" --sizes "${SIZES:-100,300,1000,3000,10000}" --seeds "${SEEDS:-3}" \
    --time-limit 10 --strategies greedy-size,greedy-size-search,exact,lns
}

models() {
  [ -d "$models" ] || { echo "bench-memplan: no models folder $models" >&2; return 1; }
  printf '%-28s %12s %9s %9s %8s %9s %8s\n' model bound greedy auto auto_s best best_s
  for m in "$models"/*.onnx; do
    json="$work/$(basename "$m" .onnx).json"
    "$plan" "$m" --strategies greedy-size,auto,best --time-limit 10 -q --json "$json" || { status=1; continue; }
    python3 - "$json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
bound = r['bounds']['peak_live'] if 'bounds' in r else r['peak_live_bound']
by = {s['name']: s for s in r['strategies']}
def ratio(n): return f"{by[n]['total_bytes'] / bound:.4f}" if bound else "-"
print(f"{r['model']:<28} {bound:>12} {ratio('greedy-size'):>9} {ratio('auto'):>9} {by['auto']['seconds']:>8.3f} "
      f"{ratio('best'):>9} {by['best']['seconds']:>8.3f}")
EOF
  done
}

case "$what" in
  challenging) challenging || status=1 ;;
  generated) generated || status=1 ;;
  models) models || status=1 ;;
  all) challenging || status=1; echo; generated || status=1; echo; models || status=1 ;;
  *) echo "usage: scripts/bench-memplan.sh [challenging|generated|models|all]" >&2; exit 2 ;;
esac
exit $status
