#!/usr/bin/env bash
# Half precision on the GPU (issue 9), Keel beside PyTorch in the same device call:
# accuracy of keelc --precision fp16/bf16 (batch 1 and the large batch) and latency at batch 1 and at a large batch
# (32 for image models, 8 for the others) against PyTorch fp16 CUDA-graph replay
# (NCHW and channels-last) and, optionally, torch.compile(mode="max-autotune").
#
#   scripts/half-gpu.sh prepare [MODELS]      # here: export with compact weights, check on the
#                                             # CPU, stage .gpu/half (scripts/zoo-gpu.sh prepare-onnx)
#   (device) bash .gpu/half/common/half-gpu.sh run GROUP [--compile] [--compile-form F] [--precisions LIST]
#                                             [--models M1,M2] [--batches small|large|both]
#   (device) bash .gpu/half/common/half-gpu.sh multi GROUP [run options] -- MODEL:BATCH:FORM ...
#
# multi: one run per job, spread over the machine's GPUs (CUDA_VISIBLE_DEVICES; jobs of one GPU
# in turn, the GPUs side by side), each job one model at one batch (small = 1, large = 32 or 8)
# whose torch.compile covers FORM (nchw or cl) alone: a multi-GPU machine fits the CNNs'
# max-autotune compiles (minutes each) in one call. Writes $OUT/results.txt (every job's) and
# $OUT/multi.tar.gz (every job's logs).
#
# LIST: comma-separated keelc precisions (default fp32,fp16,bf16); P-L also sets keelc
# --layout L (fp16-nchw: the half build without the channels-last pass, for comparison).
#
# MODELS default: resnet50,mobilenet_v2,convnext_tiny,bert_base (tests/models/zoo_models.py).
# The models travel as compressed ONNX with compact weights and are compiled on the GPU
# machine by the carried keelc, once per precision and batch. Accuracy: batch entry 0 (the
# reference input) against PyTorch's fp32 CPU output of the same weights (fp32: rel L2 <= 1e-4;
# fp16/bf16: <= 1e-2 and the same top-1 class for classifiers), and at the large batch the other
# entries (the input rotated) against Keel's fp32 output when fp32 is in the run. Latency: keel-cuda-time's compute_ms (10 warm-up runs, median of 50; the library choices the accuracy run recorded in a tuning file, as deployed; the replayed CUDA
# graph less its input/output copies) against PyTorch's CUDA-graph replay with the input already
# on the GPU (../shared/anchors/torch_latency.py, its own random weights, cudnn.benchmark on;
# scripts/torch_zoo_latency.py adds the zoo's other architectures to its list). TF32: the fp32 executable timed with --allow-tf32. Writes $OUT/results.txt, $OUT/half.json.
# KEEL_HALF_KERNELS=P (a precision of LIST): also keel-cuda-time --kernels for P's executables,
# the device time of every kernel (logs.tar.gz: kernels_MODEL.P.bBATCH.txt). KEEL_HALF_TORCH=0
# skips PyTorch (a second Keel build in the same call, compared with the first call's PyTorch);
# KEEL_HALF_TORCH_TIMEOUT=S bounds each PyTorch run (default 500 s: a max-autotune compile
# included). Inductor's own switches pass through the environment: a CNN's full max-autotune
# search can outlast a device call, TORCHINDUCTOR_MAX_AUTOTUNE_CONV_BACKENDS=ATEN leaves its
# convolutions to cuDNN (docs/PRECISION.md).
# KEEL_HALF_TRACE=P: also P's timing run and PyTorch's under the CUPTI kernel tracer
# (bench/cuda/kernel_trace, staged by prepare): every kernel of the replayed graphs with its device
# time and the gap before it, Keel's and PyTorch's node by node (trace_TAG.txt in logs.tar.gz).
# KEEL_HALF_KEELC_FLAGS: more keelc options for every compile (e.g. --disable-pass=im2col, for an
# A/B in one call).
# KEEL_HALF_NCU=P[,P...]: (tf32: the fp32 executable run with TF32) the device time of every kernel from Nsight Compute (ncu_MODEL.P.bBATCH.txt),
# without the launch overheads that --kernels includes, with the timing run's library choices
# (its tuning file).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

prepare() {
  set -e
  cd "$here/.."
  local models=${1:-resnet50,mobilenet_v2,convnext_tiny,bert_base}
  local stage=.gpu/half
  KEEL_ZOO_STAGE=$stage scripts/zoo-gpu.sh prepare-onnx "$models"
  cp scripts/half-gpu.sh scripts/ncu_summary.py scripts/torch_zoo_latency.py tests/models/zoo_models.py \
    "${KEEL_SHARED_DIR:-../shared}/anchors/torch_latency.py" "$stage/common/"
  bash bench/cuda/kernel_trace/build.sh "$stage/common/trace" || echo "(no CUPTI kernel tracer: KEEL_HALF_TRACE will not work)"
  echo "device calls, one per group:"
  for g in $(ls -d "$stage"/g* | sort -V); do
    echo "  carry [\"$stage/common\", \"$g\"]  command: bash $stage/common/half-gpu.sh run $(basename "$g")"
  done
}

# Device time of every kernel of one inference (ncu, clocks and caches as in a run), summed per
# kernel name: ncu_TAG.txt. KEEL_HALF_NCU_DETAIL=REGEX adds ncu's analysis sections for the first
# matching kernel of that inference (ncu_detail_TAG.txt); KEEL_HALF_NCU_SKIP=N skips the first N
# matching launches (a warm launch instead of the first).
ncu_kernels() {
  local bin=$1 k=$2 input=$3 tag=$4; shift 4  # then keel-cuda-time options (--allow-tf32)
  local flags=(--cache-control none --clock-control none)
  # The timing run's library choices (timing them under the profiler would pick at random).
  local tuning=(--tuning-file "$work/$tag.tuning")
  timeout 300 ncu "${flags[@]}" --metrics gpu__time_duration.sum --csv "$bin/keel-cuda-time" "$k" --warmup 0 \
    --iterations 1 --input "input=$input" "${tuning[@]}" "$@" >"$out/ncu_$tag.csv" 2>"$out/ncu_$tag.err" || true
  python3 "$here/ncu_summary.py" "$out/ncu_$tag.csv" >"$out/ncu_$tag.txt"
  if [ -n "${KEEL_HALF_NCU_DETAIL:-}" ]; then
    timeout 300 ncu "${flags[@]}" -k "regex:$KEEL_HALF_NCU_DETAIL" -s "${KEEL_HALF_NCU_SKIP:-0}" -c 1 \
      --section SpeedOfLight --section WarpStateStats --section SourceCounters --section InstructionStats \
      --section Occupancy --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats \
      --metrics "sm__cycles_active.max,sm__cycles_active.min,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
      "$bin/keel-cuda-time" "$k" --warmup 0 --iterations 1 --input "input=$input" "${tuning[@]}" \
      >"$out/ncu_detail_$tag.txt" 2>&1 || true
  fi
}

# keelc's bundle, unpacked into $2 once per bundle: a warm machine keeps the last one, a new
# bundle replaces it.
unpack_keelc() {
  local stage=$1 kdir=$2 sum
  sum=$(md5sum <"$stage/common/keelc-bundle.tar.xz")
  if [ ! -x "$kdir/keelc/keelc" ] || [ "$(cat "$kdir/bundle.md5" 2>/dev/null)" != "$sum" ]; then
    rm -rf "$kdir" && mkdir -p "$kdir" && echo "$sum" >"$kdir/bundle.md5" && python3 -c "import lzma,sys,tarfile; tarfile.open(fileobj=lzma.open(sys.argv[1])).extractall(sys.argv[2])" \
      "$stage/common/keelc-bundle.tar.xz" "$kdir"
  fi
}

# traced STAGE OUT TAG PROGRAM ARGS...: PROGRAM under the CUPTI tracer; the per-replay table of
# its most replayed graph in OUT/trace_TAG.txt.
traced() {
  local stage=$1 out=$2 tag=$3; shift 3
  local t=$stage/common/trace
  [ -f "$t/libkeel_cupti_trace.so" ] || { echo "no tracer staged" >"$out/trace_$tag.txt"; return; }
  LD_PRELOAD=$t/libkeel_cupti_trace.so LD_LIBRARY_PATH="$t:$LD_LIBRARY_PATH" KEEL_CUPTI_OUT=$out/trace_$tag.tsv \
    timeout 300 "$@" >/dev/null 2>"$out/trace_$tag.err" || true
  python3 "$t/kernel_trace.py" "$out/trace_$tag.tsv" --nodes >"$out/trace_$tag.txt" 2>&1 || true
  rm -f "$out/trace_$tag.tsv"
}

run() {
  local group=$1; shift
  local compile="" cform="" precisions="fp32 fp16 bf16" only_models="" batches=both
  while [ $# -gt 0 ]; do
    case $1 in
      --compile) compile=max-autotune ;;
      --compile-form) cform=$2; shift ;;
      --models) only_models=${2//,/ }; shift ;;
      --batches) batches=$2; shift ;;
      --precisions) precisions=${2//,/ }; shift ;;
      *) echo "half-gpu.sh run: unknown option $1"; exit 2 ;;
    esac
    shift
  done
  local stage; stage=$(cd "$here/.." && pwd)
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:${LD_LIBRARY_PATH:-}
  # Not local: the EXIT trap reads out and final after run returns.
  final=${OUT:-/tmp/keel-half-out} kdir=/tmp/keel-zoo-keelc
  work=$(mktemp -d /tmp/keel-half.XXXXXX); out=$(mktemp -d /tmp/keel-half-logs.XXXXXX)
  mkdir -p "$final"
  trap 'cp "$out/results.txt" "$out/half.json" "$final/" 2>/dev/null; tar -czf "$final/logs.tar.gz" -C "$out" . 2>/dev/null' EXIT
  unpack_keelc "$stage" "$kdir"
  local bin=$stage/common/bin
  # (The GPU this run sees: multi gives each job one.)
  local gpu_id=(); [ -n "${CUDA_VISIBLE_DEVICES:-}" ] && gpu_id=(--id="${CUDA_VISIBLE_DEVICES%%,*}")
  echo "== GPU: $(nvidia-smi "${gpu_id[@]}" --query-gpu=name,driver_version --format=csv,noheader 2>&1)" | tee -a "$out/results.txt"
  local g=$stage/$group models m b p
  models=${only_models:-$(cat "$g/models.txt")}
  # 1. Every (model, batch, precision) compiled up front, several at a time (keelc is mostly
  #    one thread; the machine has 16 cores): a job list of "model batch precision shape".
  : >"$work/jobs.txt"
  for m in $models; do
    python3 -c "import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2],'wb'), 1<<24)" \
      "$g/$m.onnx.xz" "$work/$m.onnx"
    # The input's shape without its batch dimension; the large batch: 32 for images, else 8.
    local shape big
    shape=$(python3 -c "import json,sys; print(','.join(map(str, json.load(open(sys.argv[1]))['input_shape'][1:])))" "$g/$m.json")
    big=8; [ "$(echo "$shape" | tr ',' '\n' | wc -l)" = 3 ] && big=32
    local these="1 $big"
    case $batches in small) these=1 ;; large) these=$big ;; esac
    echo "$m $big $these" >>"$work/batches.txt"
    for b in $these; do
      # Entry 0 is the reference input; entry i its flat values rotated by 7i (distinct
      # entries, so that a kernel mixing up the batch shows in the large-batch accuracy).
      python3 -c "import sys, numpy as np; x=np.fromfile(sys.argv[1],np.float32)
np.concatenate([np.roll(x, 7*i) for i in range(int(sys.argv[3]))]).tofile(sys.argv[2])" \
        "$g/$m.input.bin" "$work/$m.b$b.input.bin" "$b"
      for p in $precisions; do echo "$m $b $p $shape" >>"$work/jobs.txt"; done
    done
  done
  export KEELC="$kdir/keelc/keelc" KEELC_LIB="$kdir/keelc/lib" WORK=$work LOGS=$out KEEL_HALF_KEELC_FLAGS=${KEEL_HALF_KEELC_FLAGS:-}
  # A precision may name a layout: fp16-nchw is keelc --precision fp16 --layout nchw.
  xargs -P 6 -L 1 bash -c 'l=auto; case $2 in *-*) l=${2#*-} ;; esac
    LD_LIBRARY_PATH="$KEELC_LIB:$LD_LIBRARY_PATH" timeout 400 "$KEELC" "$WORK/$0.onnx" $KEEL_HALF_KEELC_FLAGS \
    -o "$WORK/$0.$2.b$1.keel" --target cuda --precision "${2%%-*}" --layout "$l" --input-shape "input=$1,$3" \
    >"$LOGS/keelc_$0.$2.b$1.log" 2>&1 \
    || echo "$0.$2.b$1: keelc failed: $(tail -1 "$LOGS/keelc_$0.$2.b$1.log")" >>"$LOGS/results.txt"' <"$work/jobs.txt"
  # 2. Accuracy (both batches) and Keel's latency, one executable at a time.
  while read -r m b p _; do
    local k=$work/$m.$p.b$b.keel tag=$m.$p.b$b
    [ -f "$k" ] || continue
    # The accuracy run records the cuDNN/cuBLASLt choices; the timing runs read them, as a
    # deployment with a tuning file does (the same choices in every timing process; a process
    # that timed cuBLASLt at load with plain launches replayed ~4% slower on an H100, fixed by
    # timing in graphs; docs/PRECISION.md).
    timeout 60 "$bin/keel-run" "$k" --device cuda --input "input=$work/$m.b$b.input.bin" --output-dir "$work/out_$tag" \
      --tuning-file "$work/$tag.tuning" \
      >"$out/run_$tag.log" 2>&1 || echo "$tag: keel-run failed: $(tail -1 "$out/run_$tag.log")" | tee -a "$out/results.txt"
    timeout 90 "$bin/keel-cuda-time" "$k" --warmup 10 --iterations 50 --input "input=$work/$m.b$b.input.bin" --name "$tag" \
      --tuning-file "$work/$tag.tuning" >"$out/time_$tag.json" 2>"$out/time_$tag.err" || true
    if [ "$p" = "${KEEL_HALF_TRACE:-}" ]; then  # every kernel of the replays, from CUPTI
      traced "$stage" "$out" "$tag" "$bin/keel-cuda-time" "$k" --warmup 3 --iterations 30 \
        --input "input=$work/$m.b$b.input.bin" --tuning-file "$work/$tag.tuning"
    fi
    if [ "$p" = "${KEEL_HALF_KERNELS:-}" ]; then  # where the time goes: one line per kernel
      timeout 90 "$bin/keel-cuda-time" "$k" --warmup 3 --iterations 5 --input "input=$work/$m.b$b.input.bin" \
        --kernels >"$out/kernels_$tag.txt" 2>&1 || true
    fi
    case ",${KEEL_HALF_NCU:-}," in  # the same without launch overheads: Nsight Compute
      *",$p,"*) ncu_kernels "$bin" "$k" "$work/$m.b$b.input.bin" "$tag" ;;
    esac
    if [ "$p" = fp32 ]; then
      timeout 90 "$bin/keel-cuda-time" "$k" --warmup 10 --iterations 50 --input "input=$work/$m.b$b.input.bin" \
        --name "$m.tf32.b$b" --allow-tf32 --tuning-file "$work/$m.tf32.b$b.tuning" >"$out/time_$m.tf32.b$b.json" 2>>"$out/time_$tag.err" || true
      case ",${KEEL_HALF_NCU:-}," in  # with TF32's tuning file
        *,tf32,*) ncu_kernels "$bin" "$k" "$work/$m.b$b.input.bin" "$m.tf32.b$b" --allow-tf32 ;;
      esac
    fi
  done <"$work/jobs.txt"
  # 3. PyTorch fp16: NCHW and (image models) channels-last, CUDA-graph replay; torch.compile on request.
  [ "${KEEL_HALF_TORCH:-1}" = 0 ] && : >"$work/batches.txt"  # Keel only (its columns still print)
  while read -r m big these; do
    for b in $these; do
      for form in nchw $([ "$big" = 32 ] && echo cl); do
        local flags=""; [ "$form" = cl ] && flags=--channels-last
        [ -n "$compile" ] && [ -z "$cform" -o "$cform" = "$form" ] && flags="$flags --compile $compile"
        timeout "${KEEL_HALF_TORCH_TIMEOUT:-500}" python3 "$stage/common/torch_zoo_latency.py" --models "$m" --batch "$b" --dtype float16 $flags \
          --iters 50 --out "$out/torch_$m.b$b.$form.json" >"$out/torch_$m.b$b.$form.log" 2>&1 \
          || echo "$m b$b: torch ($form) failed: $(tail -1 "$out/torch_$m.b$b.$form.log")" | tee -a "$out/results.txt"
        if [ -n "${KEEL_HALF_TRACE:-}" ]; then
          traced "$stage" "$out" "torch_$m.b$b.$form" python3 "$stage/common/torch_zoo_latency.py" --models "$m" \
            --batch "$b" --dtype float16 $flags --iters 50 --out /dev/null
        fi
      done
    done
  done <"$work/batches.txt"
  python3 - "$stage/$group" "$work" "$out" "$precisions" "$models" <<'PY' | tee -a "$out/results.txt"
import glob, json, os, sys
import numpy as np
g, work, out, precisions, models = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(), sys.argv[5].split()
def load(path):
    try:
        j = json.load(open(path))
        return j[0] if isinstance(j, list) else j
    except Exception:
        return None
rows, acc = [], []
for m in models:
    meta = json.load(open(os.path.join(g, m + ".json")))
    ref = np.fromfile(os.path.join(g, m + ".output.bin"), dtype=np.float32).astype(np.float64)
    classifier = len(meta["output_shape"]) == 2
    batches = sorted({int(os.path.basename(f).split(".b")[-1].split(".")[0]) for f in glob.glob(os.path.join(out, "time_%s.*.json" % m))})
    rel = lambda a, b: float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))
    def output(p, b):
        path = os.path.join(work, "out_%s.%s.b%d" % (m, p, b), "output.bin")
        got = np.fromfile(path, dtype=np.float32).astype(np.float64) if os.path.exists(path) else None
        return got.reshape(b, -1) if got is not None and got.size == b * ref.size else None
    for b in batches:
        for p in precisions:
            got = output(p, b)
            if got is None:
                acc.append((m, "%s b%d" % (p, b), None, None, "no output")); continue
            # Entry 0 (the reference input) against PyTorch; at the large batch the other
            # entries (rotated inputs) against Keel's fp32 output of the same batch.
            err = rel(got[0], ref)
            top1 = bool(np.argmax(got[0]) == np.argmax(ref)) if classifier else None
            f32 = output("fp32", b) if b > 1 and p != "fp32" else None
            if f32 is not None:
                err = max([err] + [rel(got[i], f32[i]) for i in range(1, b)])
            limit = 1e-4 if p == "fp32" else 1e-2
            ok = err <= limit and top1 is not False
            acc.append((m, "%s b%d" % (p, b), err, top1, "ok" if ok else "MISMATCH"))
    for b in batches:
        r = {"model": m, "batch": b}
        for p in precisions + ["tf32"]:
            t = load(os.path.join(out, "time_%s.%s.b%d.json" % (m, p, b)))
            r["keel_" + p] = t["compute_ms"] if t else None
        for form in ("nchw", "cl"):
            t = load(os.path.join(out, "torch_%s.b%d.%s.json" % (m, b, form)))
            r["torch_fp16_" + form] = t["cudagraph_ms"] if t else None
            r["torch_compile_" + form] = t.get("compiled_ms") if t else None
        rows.append(r)
print("accuracy (rel L2 vs PyTorch fp32 CPU, same weights, of batch entry 0 and, with fp32 in the run, the worst")
print("other entry vs Keel fp32 at the same batch; fp32 <= 1e-4, half <= 1e-2, same top-1):")
for m, p, err, top1, status in acc:
    print("  %-14s %-9s %10s  top-1 %-5s %s" % (m, p, "%.2e" % err if err is not None else "-", {True: "same", False: "DIFF", None: "-"}[top1], status))
f = lambda v: "%.3f" % v if v else "-"
print("\nlatency, ms (Keel compute_ms: graph replay less copies; PyTorch fp16 CUDA-graph replay, input on the GPU):")
hdr = ["model", "batch"] + ["keel " + p for p in precisions + ["tf32"]] + ["torch fp16", "torch fp16 CL", "torch compile", "fp16/torch", "fp16/compiled", "fp16 items/s"]
print("  " + " ".join("%-13s" % h for h in hdr))
for r in rows:
    torch_best = min([v for v in (r["torch_fp16_nchw"], r["torch_fp16_cl"]) if v] or [0]) or None
    k16 = r.get("keel_fp16")
    comp = min([v for v in (r["torch_compile_nchw"], r["torch_compile_cl"]) if v] or [0]) or None
    cells = [r["model"], str(r["batch"])] + [f(r.get("keel_" + p)) for p in precisions + ["tf32"]] + \
            [f(r["torch_fp16_nchw"]), f(r["torch_fp16_cl"]), f(comp),
             "%.2f" % (k16 / torch_best) if k16 and torch_best else "-",
             "%.2f" % (k16 / comp) if k16 and comp else "-",
             "%.0f" % (r["batch"] * 1000 / k16) if k16 else "-"]
    print("  " + " ".join("%-13s" % c for c in cells))
json.dump({"accuracy": acc, "latency": rows}, open(os.path.join(out, "half.json"), "w"), indent=1)
sys.exit(1 if any(a[4] != "ok" for a in acc) else 0)
PY
}

# Jobs MODEL:BATCH:FORM (BATCH small, large or both) spread over the GPUs: job i on GPU i mod
# GPUs, each GPU's jobs in turn. Options before "--" go to every job's run.
multi() {
  local group=$1; shift
  local opts=() jobs=() stage kdir=/tmp/keel-zoo-keelc final=${OUT:-/tmp/keel-half-out}
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift
  jobs=("$@")
  [ ${#jobs[@]} -ge 1 ] || { echo "half-gpu.sh multi: no jobs (MODEL:BATCH:FORM after --)"; exit 2; }
  stage=$(cd "$here/.." && pwd)
  unpack_keelc "$stage" "$kdir"  # once, before the jobs race for it
  # The GPUs: KEEL_HALF_GPUS (comma list of indices), else every GPU of the machine.
  local ids=()
  if [ -n "${KEEL_HALF_GPUS:-}" ]; then IFS=, read -r -a ids <<<"$KEEL_HALF_GPUS"
  else mapfile -t ids < <(nvidia-smi -L | grep -o '^GPU [0-9]*' | cut -d' ' -f2); fi
  [ ${#ids[@]} -ge 1 ] || ids=(0)
  local gpus=${#ids[@]}
  local root; root=$(mktemp -d /tmp/keel-half-multi.XXXXXX)
  mkdir -p "$final"
  echo "== multi: ${#jobs[@]} jobs on GPUs ${ids[*]}" | tee "$root/results.txt"
  # KEEL_HALF_DEADLINE=S: no job starts after S seconds, and a running job is stopped then (its
  # partial logs kept), so that the results come back within a device call.
  local deadline=$((SECONDS + ${KEEL_HALF_DEADLINE:-86400}))
  local slot i
  for ((slot = 0; slot < gpus; ++slot)); do
    (
      for ((i = slot; i < ${#jobs[@]}; i += gpus)); do
        IFS=: read -r m b form <<<"${jobs[$i]}"
        local left=$((deadline - SECONDS))
        if [ $left -lt 30 ]; then echo "job $i ($m $b $form): not started (deadline)" >"$root/job$i.status"; continue; fi
        CUDA_VISIBLE_DEVICES=${ids[$slot]} OUT=$root/job$i timeout -s INT $left bash "$here/half-gpu.sh" run "$group" \
          "${opts[@]}" --models "$m" --batches "$b" --compile-form "$form" >"$root/job$i.log" 2>&1
        echo "job $i ($m $b $form, GPU ${ids[$slot]}): exit $?" >"$root/job$i.status"
      done
    ) &
  done
  wait
  for ((i = 0; i < ${#jobs[@]}; ++i)); do
    { echo; cat "$root/job$i.status"; cat "$root/job$i/results.txt" 2>/dev/null; } | tee -a "$root/results.txt"
  done
  cp "$root/results.txt" "$final/"
  tar -czf "$final/multi.tar.gz" -C "$root" . 2>/dev/null
}

case "${1:-}" in
  prepare) prepare "${2:-}" ;;
  multi) shift; [ $# -ge 1 ] || { echo "usage: half-gpu.sh multi GROUP [run options] -- MODEL:BATCH:FORM ..."; exit 2; }; multi "$@" ;;
  run) shift; [ $# -ge 1 ] || { echo "usage: half-gpu.sh run GROUP [options]"; exit 2; }; run "$@" ;;
  *) echo "usage: scripts/half-gpu.sh prepare [MODELS] | run GROUP [options] | multi GROUP [options] -- JOBS"; exit 2 ;;
esac
