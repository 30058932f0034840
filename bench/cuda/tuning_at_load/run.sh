#!/usr/bin/env bash
# Does timing the library choices at load slow a process's CUDA-graph replays? (issue 9; an H100
# replayed BERT-base fp16 at batch 8 ~4% slower in a process that timed its cuBLASLt/cuDNN choices
# at load than in one that read them from a tuning file.) On the GPU machine, after a
# half-gpu.sh run has compiled the executable and recorded its tuning file:
#
#   bash run.sh BIN EXE INPUT TUNING [ROUNDS]
#
# BIN: the folder with keel-cuda-time; EXE/INPUT: the .keel folder and its input; TUNING: the
# file the accuracy run recorded. Each round times, one process each, in turn:
#   file      the choices read from TUNING (no timing at load)
#   load      no tuning file: every choice timed at load
#   twice     --load-twice: one VM times and records, is destroyed, a second reads the file
#   gemm      only TUNING's cuBLASLt lines: the cuDNN choices timed at load
#   cudnn     only TUNING's cuDNN lines: the cuBLASLt choices timed at load
#   eager     as file, with CUDA_MODULE_LOADING=EAGER (every kernel of every library loaded)
# and prints compute_ms (median of 200 replays after 10 warm-ups) per variant per round.
set -uo pipefail
bin=$1 exe=$2 input=$3 tuning=$4 rounds=${5:-3}
tmp=$(mktemp -d)
grep -v cudnn "$tuning" >"$tmp/gemm.tuning"
grep -v cublasLt "$tuning" >"$tmp/cudnn.tuning"
echo "tuning lines: all $(grep -vc '^#' "$tuning"), cuBLASLt $(grep -c cublasLt "$tuning"), cuDNN $(grep -c cudnn "$tuning")"
time_one() {  # VARIANT ROUND
  local v=$1 r=$2 args=(--tuning-file "$tuning") env=()
  case $v in
    load) args=() ;;
    twice) rm -f "$tmp/twice.tuning"; args=(--load-twice --tuning-file "$tmp/twice.tuning") ;;
    gemm | cudnn) cp "$tmp/$v.tuning" "$tmp/$v.r$r.tuning"; args=(--tuning-file "$tmp/$v.r$r.tuning") ;;
    eager) env=(CUDA_MODULE_LOADING=EAGER) ;;
  esac
  env "${env[@]}" "$bin/keel-cuda-time" "$exe" --warmup 10 --iterations 200 --input "input=$input" "${args[@]}" 2>&1 |
    grep -o '"compute_ms": [0-9.]*' | cut -d' ' -f2
}
for r in $(seq 1 "$rounds"); do
  line="round $r:"
  for v in file load twice gemm cudnn eager; do line="$line $v $(time_one "$v" "$r")"; done
  echo "$line"
done
rm -rf "$tmp"
