// compiler/ops/window.h — sliding-window attributes shared by convolutions and
// pooling: canonicalization (auto_pad resolved into explicit pads, defaults
// filled), the output-size rule, and the index bookkeeping the naive reference
// evaluators use (internal to compiler/ops).
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

// A window over 1 to 3 spatial dims, padded to 3 (missing leading dims are 1).
struct Window3 {
  int64_t n = 1, c = 1;
  int64_t in[3], out[3], k[3], s[3], pb[3], pe[3], d[3];
};
// x/y: input and output shapes [N, C, spatial...]; attributes canonical.
Result<Window3> MakeWindow3(const ir::Node& node, const std::vector<int64_t>& x, const std::vector<int64_t>& y);

}  // namespace keel::ops
