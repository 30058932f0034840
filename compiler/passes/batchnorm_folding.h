// compiler/passes/batchnorm_folding.h — fold inference BatchNormalization.
//
// BN(x) = x * s + t per channel (axis 1), s = gamma / sqrt(var + eps),
// t = beta - mean * s.
//  - Into the producer's weights where its op definition has a fold_scale_shift
//    hook (compiler/ops/conv.cc, gemm.cc) and x feeds only the BN:
//  - Conv → BN, where the Conv's weight (and bias, if any) are constants and the
//    Conv output feeds only the BN: W'[oc,...] = W[oc,...] * s[oc],
//    B'[oc] = B[oc] * s[oc] + t[oc] (B = 0 when absent: a bias is created).
//  - Gemm → BN (2-D, channels = columns): B scaled per output column (respecting
//    transB), C' = beta*C*s + t as a new [N] bias with beta = 1; only when C is
//    absent or broadcasts along rows ([], [1], [N], [1,N]).
//  - Any other BN becomes Mul(x, s) and Add(·, t) with constants shaped
//    [C, 1, ..., 1] (rank-1 trailing ones) — plain elementwise ops that fusion
//    then merges with their neighbours.
// Only inference BNs on f32 data with constant per-channel parameters are
// folded; the others (runtime parameters, other dtypes, training mode) stay and
// compile as BatchNormalization's own kernel. Requires typed values (run after
// shape-inference). New constants are f32.
#pragma once

#include "compiler/passes/pass.h"

namespace keel::passes {

class BatchNormFoldingPass : public Pass {
 public:
  std::string name() const override { return "batchnorm-folding"; }
  std::string description() const override {
    return "fold BatchNormalization into Conv/Gemm weights, else into Mul+Add";
  }
  Status Run(ir::Graph& graph) override;
};

}  // namespace keel::passes
