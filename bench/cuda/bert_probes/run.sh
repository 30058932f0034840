#!/usr/bin/env bash
# Probes behind "Where BERT-base's batch-8 time goes" in docs/PRECISION.md: standalone CUDA
# programs on BERT-base's shapes (1,024 rows = batch 8 x 128 tokens, width 768), timed as CUDA-graph
# replay, each against cuBLASLt in the same process.
#   gemm_layernorm        a GEMM + bias + residual + LayerNorm kernel (mma.sync, a thread-block
#                         cluster per row block sharing row sums in distributed shared memory)
#                         against cuBLASLt + a LayerNorm kernel; checked against an f64 reference
#   layernorm_after_gemm  LayerNorm launch forms (rows per block, 16-byte loads, gamma/beta read
#                         before griddepcontrol.wait, 96 threads per row) after a cuBLASLt GEMM
#   gemm_weight_layout    cuBLASLt on the four GEMMs with the weight [K, N] (Keel) or [N, K] (PyTorch)
#   layer_streams         twelve layers as one graph: the batch on one stream, or split in two halves
#                         on two streams (independent chains side by side)
#
#   bash bench/cuda/bert_probes/run.sh build      # here (nvcc, sm_90): writes .gpu/bert_probes
#   (device, carry [".gpu/bert_probes"])  bash .gpu/bert_probes/run.sh run
set -euo pipefail
case ${1:-} in
  build)
    here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../../.." && pwd); out=$root/.gpu/bert_probes
    mkdir -p "$out"
    for p in gemm_layernorm layernorm_after_gemm gemm_weight_layout layer_streams gemm_algo_search; do
      nvcc -std=c++17 -O3 -arch=sm_90 -I"$root" "$here/$p.cu" -o "$out/$p" -lcublasLt
    done
    cp "$0" "$out/run.sh" ;;
  run)
    here=$(cd "$(dirname "$0")" && pwd)
    export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
    nvidia-smi --query-gpu=name --format=csv,noheader
    for p in gemm_weight_layout layernorm_after_gemm gemm_layernorm layer_streams; do echo "== $p"; "$here/$p"; done ;;
  *) echo "usage: run.sh build | run"; exit 2 ;;
esac
