// compiler/ops/winograd.h — the Winograd form of a Conv: a 3x3, stride-1,
// dilation-1, ungrouped 2-D convolution whose weight was transformed at compile
// time for Winograd's F(m, 3) (compiler/codegen/winograd_matrices.h), the form
// the CPU back end's pass (passes/winograd.h) gives the convolutions it runs
// faster that way (lower_winograd.cc).
//
// A node in Winograd form carries attribute keel.winograd = m (2 or 4) and its
// input 1 is U = G g G^T, an f32 tensor [(m+2)^2, Co, Ci]: U[i*(m+2) + j, o, c]
// is entry (i, j) of the transformed 3x3 filter g = W[o, c]. The op keeps one
// definition: types and reference values come from the plain Conv twin whose
// weight is the transformed one taken back (g = R U R^T with R a left inverse
// of G; exact up to f32 rounding of U), so the reference evaluator checks the
// kernel against the convolution it stands for.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"
#include "keel/status.h"

namespace keel::ops {

struct OpDef;

// The attribute that marks the form; its value is the output tile side m.
inline constexpr const char* kWinogradAttr = "keel.winograd";

// m of a Conv in Winograd form, 0 for any other node.
int64_t WinogradTile(const ir::Node& node);

// Whether a plain (canonical, typed) Conv node has the geometry the form
// covers: rank-4 f32 operands, 3x3 kernel, strides 1, dilations 1, group 1,
// and a constant weight. Pads are free.
bool WinogradApplies(const ir::Node& conv);

// U from a [Co, Ci, 3, 3] f32 weight (computed in double, rounded once), and
// the [Co, Ci, 3, 3] weight back from U. InvalidArgument on other shapes or m.
Result<ir::TensorDataPtr> WinogradWeight(const ir::TensorData& w, int64_t m);
Result<ir::TensorDataPtr> WeightFromWinograd(const ir::TensorData& u, int64_t m);

// CanonicalizeNode / InferNodeTypes / EvaluateNode for a node in Winograd form
// (semantics.cc calls them): those of the plain Conv twin.
Status CanonicalizeWinograd(const OpDef& def, ir::Node& node);
Result<std::vector<ir::TensorType>> InferWinograd(const OpDef& def, const ir::Node& node);
Result<std::vector<ir::TensorDataPtr>> EvaluateWinograd(const OpDef& def, const ir::Node& node,
                                                        const std::vector<ir::TensorDataPtr>& inputs);

}  // namespace keel::ops
