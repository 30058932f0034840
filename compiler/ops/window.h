// compiler/ops/window.h — sliding-window attributes shared by convolutions and
// pooling: canonicalization (auto_pad resolved into explicit pads, defaults
// filled), the output-size rule, and the index bookkeeping the naive reference
// evaluators use (internal to compiler/ops). Rank-generic: 1-D, 2-D, 3-D and up.
//
// Canonical form: kernel_shape, strides, dilations (one per spatial dim),
// pads ([begin..., end...]), auto_pad "NOTSET". Every value is range-checked
// (positive kernel/stride/dilation, pads in [0, 2^31)) before any arithmetic
// uses it, so absurd models get an error naming the attribute, not an overflow.
// Thread-safety: pure functions (CanonicalizeWindow mutates only its node).
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"
#include "keel/status.h"

namespace keel::ops {

// The largest spatial size, kernel, stride, dilation or pad Keel accepts.
inline constexpr int64_t kMaxWindowValue = int64_t{1} << 31;

// Resolves auto_pad (NOTSET, VALID, SAME_UPPER, SAME_LOWER) against the input's
// spatial sizes and fills defaults. `kernel` is the window size per spatial dim.
Status CanonicalizeWindow(ir::Node& node, const std::vector<int64_t>& in_spatial, const std::vector<int64_t>& kernel,
                          bool has_dilations);

// Output spatial sizes of a canonical window node (ceil_mode: the last partial
// window counts when it starts inside the input or its begin padding).
Result<std::vector<int64_t>> WindowOutput(const ir::Node& node, const std::vector<int64_t>& in_spatial, bool ceil_mode);

// A window over any number (>= 1) of spatial dims, for the naive reference
// evaluators: every vector has one entry per spatial dim.
struct WindowND {
  int64_t n = 1, c = 1;
  std::vector<int64_t> in, out, k, s, pb, pe, d;
  size_t rank() const { return in.size(); }
};
// x/y: input and output shapes [N, C, spatial...]; attributes canonical
// (kernel_shape may be absent: then `kernel` gives it).
Result<WindowND> MakeWindow(const ir::Node& node, const std::vector<int64_t>& x, const std::vector<int64_t>& y,
                            const std::vector<int64_t>& kernel = {});

// Product of dims (1 for none).
inline int64_t NumElementsOf(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Odometer over `dims` (row-major, last fastest): advances idx, false after the last.
inline bool NextIndex(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  for (size_t i = idx.size(); i-- > 0;) {
    if (++idx[i] < dims[i]) return true;
    idx[i] = 0;
  }
  return false;
}

}  // namespace keel::ops
