#!/usr/bin/env bash
# cudnn-engines device round (staged by stage.sh): the engine test, then for each batch
# resnet18's compute-only device time (keel-cuda-time) with the legacy cuDNN algorithms and
# with KEEL_CUDNN_ENGINES=1, TF32 off and on, end-to-end correctness with engines, PyTorch
# CUDA-graph replay with cuDNN TF32 off and on (torch_tf32.py), and the existing library
# kernel tests with KEEL_CUDNN_ENGINES=force, and (RTC=1) the first batch with runtime-compiled
# engines allowed. Knobs: TESTS TORCH TF32 FORCED RTC (default 1), ALL (default 0: KEEL_CUDNN_ENGINES_ALL). Results go straight to $OUT (at most 8 files),
# so a run cut short still returns what it measured.
set -u
R=$(cd "$(dirname "$0")" && pwd)
O=${OUT:-/tmp/engines-out}; mkdir -p "$O"
W=$(mktemp -d /tmp/eng.XXXXXX)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:$R/lib:${LD_LIBRARY_PATH:-}
export KEEL_CUDA_TEST_LIB_DIR=$R/lib PYTHONUNBUFFERED=1
S=$O/summary.txt; : >"$S"
say() { echo "$*" | tee -a "$S"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}'; }
tar -xzf $R/pack.tar.gz -C $R
for g in $R/models/*.keel.gz; do gunzip -f $g; done
for t in $R/models/*.tail; do
  [ -f "$t" ] || continue
  read -r src n <$t; h=${t%.tail}.head; out=${t%.tail}
  cat $h >$out; tail -c $n $R/models/$src >>$out; rm $h $t
done
B=$R/bin; read -r M BATCHES <$R/model.txt
say "cudnn: $(ls /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib | grep -m1 'libcudnn.so.9') $(nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader 2>/dev/null)"
if [ "${TESTS:-1}" = 1 ]; then
  t0=$(now); timeout ${TEST_S:-100} $B/keel_cudnn_engine_conv_test >$O/engine_test.log 2>&1
  say "keel_cudnn_engine_conv_test: exit $? in $(since $t0) s: $(grep -E '^\[  (PASSED|FAILED) ' $O/engine_test.log | tr '\n' ' ')"
  grep -E 'candidates, ' $O/engine_test.log | tee -a "$S"
fi
keeltime() {  # label batch "keel-cuda-time flags" VAR=value...
  local label=$1 b=$2 flags=$3; shift 3
  local t0=$(now)
  env "$@" timeout 150 $B/keel-cuda-time $R/models/$M.b$b.keel --name $M --kernels $flags --input "input=$W/in$b.bin" \
    >$W/t_${label}_$b.txt 2>>$O/tune_b$b.log
  local rc=$?
  say "keel $M b$b $label: rc $rc wall $(since $t0) s $(head -1 $W/t_${label}_$b.txt)"
  { echo "== $label b$b"; head -40 $W/t_${label}_$b.txt; } >>$O/kernels.txt
}
for b in $BATCHES; do
  python3 -c "import numpy as np,sys; np.tile(np.fromfile(sys.argv[1],dtype=np.float32),int(sys.argv[2])).tofile(sys.argv[3])" \
    $R/models/$M.input.bin $b $W/in$b.bin
  for e in 0 1; do
    KEEL_CUDNN_ENGINES=$e timeout 150 $B/keel-run $R/models/$M.b$b.keel --device cuda --iterations 2 \
      --input "input=$W/in$b.bin" --output-dir $W/o_${b}_$e >$W/run_${b}_$e.log 2>&1 || say "keel-run b$b engines=$e FAILED: $(tail -2 $W/run_${b}_$e.log)"
  done
  python3 - $W $R/models/$M.output.bin $b <<'PY' | tee -a "$S"
import sys, os, numpy as np
w, ref, b = sys.argv[1], np.fromfile(sys.argv[2], dtype=np.float32), int(sys.argv[3])
for e in (0, 1):
    p = "%s/o_%d_%d/output.bin" % (w, b, e)
    if not os.path.exists(p): print("b%d engines=%d: no output" % (b, e)); continue
    o = np.fromfile(p, dtype=np.float32).reshape(b, -1)
    print("b%d engines=%d: max rel L2 vs reference %.3g" % (b, e, max(np.linalg.norm(r - ref) / np.linalg.norm(ref) for r in o)))
PY
  echo "==== b$b" >>$O/tune_b$b.log
  keeltime legacy $b "" KEEL_CUDNN_ENGINES=0
  keeltime engines $b "" KEEL_CUDNN_ENGINES=1 KEEL_CUDA_AUTOTUNE_LOG=1
  [ "$b" = "${BATCHES%% *}" ] && [ "${FORCED:-1}" = 1 ] && keeltime forced $b "" KEEL_CUDNN_ENGINES=force
  if [ "${ALL:-0}" = 1 ]; then  # every engine of the library, not only the heuristics' picks; legacy again (noise)
    keeltime engines_all $b "" KEEL_CUDNN_ENGINES=1 KEEL_CUDNN_ENGINES_ALL=1 KEEL_CUDA_AUTOTUNE_LOG=1
    keeltime legacy_again $b "" KEEL_CUDNN_ENGINES=0
  fi
  if [ "${TF32:-1}" = 1 ]; then
    keeltime legacy_tf32 $b --allow-tf32 KEEL_CUDNN_ENGINES=0
    keeltime engines_tf32 $b --allow-tf32 KEEL_CUDNN_ENGINES=1
  fi
  if [ "$b" = "${BATCHES%% *}" ] && [ "${TORCH:-1}" = 1 ]; then
    timeout 150 python3 $R/torch_tf32.py $R $M $BATCHES >$O/torch.txt 2>&1
    say "torch: $(grep '^{' $O/torch.txt | tr '\n' ' ')"
  fi
done
if [ "${TESTS:-1}" = 1 ]; then
  KEEL_CUDNN_ENGINES=force timeout 90 $B/keel_cuda_library_kernels_test --gtest_filter='*Conv*' >$O/libtest.log 2>&1
  say "keel_cuda_library_kernels_test *Conv* with KEEL_CUDNN_ENGINES=force: exit $? $(grep -E '^\[  (PASSED|FAILED) ' $O/libtest.log | tr '\n' ' ')"
fi
if [ "${RTC:-1}" = 1 ]; then  # runtime-compiled engines too (NVRTC at load), first batch
  b=${BATCHES%% *}; keeltime engines_rtc $b "" KEEL_CUDNN_ENGINES=1 KEEL_CUDNN_ENGINES_RTC=1 KEEL_CUDA_AUTOTUNE_LOG=1
fi
