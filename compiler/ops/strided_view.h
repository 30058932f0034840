// compiler/ops/strided_view.h — a tensor seen as an affine map over another
// tensor's elements, and how data-movement ops compose such maps.
//
// Why: a kernel that reads its operands through arbitrary strides (the CUDA
// attention kernel, vm/cuda/library_calls_attention.h) can take the slices,
// transposes and reshapes in front of it as address arithmetic instead of as
// kernels that copy. The attention pass (passes/attention_fusion.h) follows an
// operand back through the ops that have a `strided_view` hook (op_def.h:
// Transpose, Slice, the reshape-like views) and composes their maps here.
//
// A StridedView of rank r maps index (i_0 .. i_{r-1}) to the element
//   offset + sum_d sum_f digit_f(i_d) * stride_f
// of a base tensor, where each dim d is a mixed-radix number of factors
// (extent, stride), the outer factor first (digit_f(i) the f-th digit of i in
// the radices given by the extents). One factor per dim is the usual strided
// tensor; several appear when a reshape merges axes whose strides do not nest
// (the [S, B, H*D] -> [S, B*H, D] of multi-head attention: B*H has strides
// 3*H*D and D). Strides may be 0 (broadcast) or negative (reversed slices).
//
// Every function returns nullopt when the result is not such a view (a
// reshape that would split a factor unevenly, a slice of a merged dim).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace keel::ops {

struct ViewFactor {
  int64_t extent = 1;
  int64_t stride = 0;
  bool operator==(const ViewFactor&) const = default;
};

struct StridedView {
  int64_t offset = 0;
  std::vector<std::vector<ViewFactor>> dims;  // per dim, outer factor first

  std::vector<int64_t> Shape() const;
  // The element of the base tensor that index `idx` (one per dim) reads.
  int64_t ElementOffset(const std::vector<int64_t>& idx) const;
  bool operator==(const StridedView&) const = default;
};

// The identity view of a dense row-major tensor of `shape`.
StridedView DenseView(const std::vector<int64_t>& shape);

// Output dim i is input dim perm[i] (ONNX Transpose's convention).
std::optional<StridedView> PermuteView(const StridedView& v, const std::vector<int64_t>& perm);

// Elements start, start+step, ... (len of them) of `axis`; step may be negative.
std::optional<StridedView> SliceView(const StridedView& v, int64_t axis, int64_t start, int64_t len, int64_t step);

// The same elements in row-major order regrouped into `shape`.
std::optional<StridedView> ReshapeView(const StridedView& v, const std::vector<int64_t>& shape);

// Numpy broadcasting to `shape` (dims aligned at the right; extent-1 and new
// leading dims get stride 0).
std::optional<StridedView> BroadcastView(const StridedView& v, const std::vector<int64_t>& shape);

// `factors` (one dim) split into factors with exactly `extents` (outer first;
// same product), or nullopt when a factor boundary of `factors` falls inside
// one of `extents`'s.
std::optional<std::vector<ViewFactor>> RefineFactors(const std::vector<ViewFactor>& factors,
                                                     const std::vector<int64_t>& extents);

// The coarsest extents (outer first) that refine every one of `factorizations`
// (each a list of extents with the same product), or nullopt when two of them
// cannot be refined together (radix boundaries that do not nest: 6 as 2x3 and
// 3x2).
std::optional<std::vector<int64_t>> CommonRefinement(const std::vector<std::vector<int64_t>>& factorizations);

}  // namespace keel::ops
