// compiler/memory/lower_bounds.h — the two lower bounds declared in planner.h.
//
// Both are computed per device and summed (devices never share memory). The live
// set only grows at a tensor's first_use, so both scan the first_use steps only.
//
// PeakLiveLowerBound (offset form): max over steps s of the bytes live at s. At a
// step every live tensor needs its own bytes, so no arena can be smaller. An
// in-place pair (t aliases a, live together only at s = t.first_use) may share
// bytes, so min(size_t, size_a) is subtracted at s for each such pair — by the
// Bonferroni inequality |∪A_i| >= Σ|A_i| − Σ_pairs |A_i ∩ A_j| the result is still
// a valid bound. Alignment padding is ignored (it only adds bytes).
//
// PositionalMaxLowerBound (shared-object form; Pisarchyk & Lee 2020, "Efficient
// Memory Management for Deep Neural Net Inference", the lower bound for shared
// objects). For step s let p_k(s) be the k-th largest size among the tensors live
// at s (0 if fewer than k are live). The bound is
//
//     Σ_k  max_s p_k(s).
//
// Why it holds: at step s the k largest live tensors sit in k distinct objects,
// each at least p_k(s) bytes, so the k-th largest object is >= p_k(s) for every s;
// summing over k gives the bound on Σ object sizes. It is >= PeakLive (swap the
// max and the sum) and applies to plans where tensors live at the same step never
// share an object (our shared-object planners do not use in-place aliasing).
//
//   step:        0   1   2          p_1 = max(8,6,9) = 9
//   live sizes: {8,4} {6,5} {9}     p_2 = max(4,5,0) = 5   bound = 14,
//                                   while peak live = max(12,11,9) = 12.
//
// Cost: O(n log n + Σ_s |live(s)|) for the positional bound (it visits each live
// set at each first_use step), O(n log n) for the peak. Input is not validated
// (out-of-contract lifetimes give a meaningless but finite number).
// Thread-safety: stateless.
#pragma once

#include "compiler/memory/planner.h"

namespace keel::memory::internal {
// PeakLiveLowerBound of one device group (global indices into `tensors`).
uint64_t GroupPeakLive(const std::vector<TensorLifetime>& tensors, const std::vector<int32_t>& group);
}  // namespace keel::memory::internal
