// compiler/ops/fused_attention.h — keel.Attention: scaled dot-product
// attention, softmax(scale * Q K^T + mask) V, as one op whose operands are
// read through strided views of the tensors they live in.
//
// Why one op: a transformer's attention is ~10 kernels when each step runs
// alone (the slices and transposes that split heads, Q K^T, the softmax with
// its casts, P V, the transpose back); the CUDA back end runs keel.Attention as
// one Keel kernel (vm/cuda/runtime_kernels.cu, contract "keel.attention" in
// serialization/library_ops.h) that reads Q, K and V where the projection wrote
// them and writes its output where the next GEMM reads it, and never stores the
// scores. The pass that forms it is passes/attention_fusion.h.
//
// The problem: a flattened batch index b in [0, prod(batch)), written in the
// mixed radix `batch` (outer digit first); per b, queries i in [0, sq), keys j
// in [0, sk), head width d (Q, K) and dv (V, Y):
//   s[b,i,j] = scale * sum_c Q[b,i,c] K[b,j,c] + mask[b,i,j]   (in f32 or better)
//   Y[b,i,e] = sum_j softmax_j(s[b,i,:]) V[b,j,e]
// Each operand X in {Q, K, V, mask, Y} is a view: element [b, r, c] of it is
// element  offset + sum_t digit_t(b) * batch_stride_t + r * row + c * col  of
// the node's input (or, for Y, of its output). Rows and columns: Q (i, c),
// K (j, c), V (j, e), mask (i, j), Y (i, e). Y's view must place every output
// element exactly once.
//
// The node: inputs Q, K, V[, mask] (Q, K, V and Y of one floating type; the
// mask f32 or that type), one output. Attributes: "batch" (ints), "dims"
// [sq, sk, d, dv], "scale" (float), "shape" (the output's shape), and per
// operand "<x>_view" = [offset, batch strides..., row, col] for x in q, k, v,
// y and, with a mask, mask. Reference value: the formula above in double.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "keel/status.h"

namespace keel::ops {

inline constexpr const char* kFusedAttentionOp = "keel.Attention";

// One operand's view (see above).
struct AttentionOperand {
  int64_t offset = 0;
  std::vector<int64_t> batch_strides;  // one per batch digit
  int64_t row = 0, col = 0;
};

struct FusedAttention {
  std::vector<int64_t> batch;  // mixed-radix digits of the batch, outer first
  int64_t sq = 0, sk = 0, d = 0, dv = 0;
  double scale = 1.0;
  bool has_mask = false;
  AttentionOperand q, k, v, mask, y;
  std::vector<int64_t> out_shape;

  int64_t BatchCount() const;
};

// The attributes above written onto `node` / read back (InvalidArgument naming
// the node when one is missing or inconsistent; the views are not checked
// against tensor sizes here: infer does that).
void SetFusedAttentionAttrs(ir::Node& node, const FusedAttention& a);
Result<FusedAttention> ReadFusedAttention(const ir::Node& node);

// Whether the operand's view stays inside a tensor of `elements` elements for
// every index of `a`'s problem (rows x cols = r x c).
bool ViewInBounds(const FusedAttention& a, const AttentionOperand& x, int64_t rows, int64_t cols, int64_t elements);

}  // namespace keel::ops
