// compiler/ops/packed_weight.h — the packed-weight form of a Conv: its weight
// (input 1, a constant) was reordered at compile time into the row-panel layout
// of the blocked GEMM's micro-kernel (compiler/codegen/gemm_panels.h), so the
// kernel reads each register tile's weights as one contiguous stream with no
// packing at run time. The CPU back end's pass (passes/weight_packing.h) puts
// the convolutions its GEMM runs into this form.
//
// A node in this form carries attribute keel.packed_rows = MR (the rows per
// panel, the GEMM's register tile height) and its weight has the same type as
// before (the layout has no padding): only the order of the elements changed.
// (A pointwise convolution the CPU runs transposed, pixels as the GEMM's rows,
// is packed with MR = the GEMM's panel width: codegen PointwisePixelRows.)
// The weight is a stack of GEMM A matrices, each packed on its own:
//   * a plain Conv (more than one input channel per group: the implicit GEMM):
//     `group` matrices [Co/group, Cin/group * prod(kernel)];
//   * a Conv in Winograd form (ops/winograd.h): (m+2)^2 matrices [Co, Ci];
//   * a channels-last depthwise Conv (one input channel per group,
//     multiplier 1): one matrix [Co, prod(kernel)] (the CPU's NHWC kernel
//     reads it in one panel of Co rows: [prod(kernel)][Co],
//     codegen/lower_conv_nhwc.h).
// A channels-last Conv (ops/channels_last.h) takes the form only where its
// OHWI weight has the bytes of the OIHW one (a 1x1 kernel, or one input
// channel per group). Types and reference values come from the twin with the
// weight unpacked (op_twin.h), so the reference evaluator checks the kernel
// against the convolution it stands for. Other depthwise convolutions
// (a channel multiplier above 1) have no packed form.
//
// The B-panel form of a MatMul or Gemm (the same mechanism for the other GEMM
// operand): its B (input 1, a constant [K, N] matrix, or [N, K] under
// transB) was reordered at compile time into the column panels of the blocked
// GEMM (gemm_panels.h): ceil(N / NR) panels of [K][NR], zero padded past N,
// stored as a constant of type [ceil(N / NR), K, NR]. The node carries
// attribute keel.packed_cols = N (the product's column count, which the padded
// shape no longer tells) and a Gemm has transB = 0 (the panels are of the
// K x N operand whatever B's stored orientation was). The GEMM then reads its
// B panels in place, with no packing pass at run time. Types and reference
// values come from the twin with B unpacked to [K, N].
// Panels one column wide ([N, K, 1]) are B transposed: the CUDA back end
// gives half-precision products that form so that cuBLASLt reads an [N, K]
// weight, the layout its kernels are fastest on (CudaBackend::PackedBColumns).
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"
#include "keel/status.h"

namespace keel::ops {

// The attribute that marks the form; its value is the rows per panel.
inline constexpr const char* kPackedRowsAttr = "keel.packed_rows";

// MR of a Conv in packed-weight form, 0 for any other node.
int64_t PackedWeightRows(const ir::Node& node);

// The stack of GEMM A matrices a Conv's weight is (see above).
struct WeightMatrices {
  int64_t batch = 0, m = 0, k = 0;
};

// Whether a (canonical, typed) Conv node can take the form: not yet packed,
// a constant weight, and one of the stacks above (a depthwise one only in
// channels-last form); `matrices` receives it.
bool PackedWeightApplies(const ir::Node& conv, WeightMatrices* matrices);

// The weight reordered into / back from the panel layout with `mr` rows per
// panel. InvalidArgument when the size disagrees with `matrices` or mr < 1.
Result<ir::TensorDataPtr> PackWeight(const ir::TensorData& w, const WeightMatrices& matrices, int64_t mr);
Result<ir::TensorDataPtr> UnpackWeight(const ir::TensorData& w, const WeightMatrices& matrices, int64_t mr);

// EvaluateNode for a node in packed-weight form (semantics.cc calls it): the
// value of its twin without the attribute, on the unpacked weight.
Result<std::vector<ir::TensorDataPtr>> EvaluatePackedWeight(const ir::Node& node,
                                                            const std::vector<ir::TensorDataPtr>& inputs);

// ---- B-panel form (MatMul, Gemm) ----

// The attribute that marks the form; its value is N, the product's columns.
inline constexpr const char* kPackedColumnsAttr = "keel.packed_cols";

// N of a MatMul or Gemm in B-panel form, 0 for any other node.
int64_t PackedColumns(const ir::Node& node);

// The constant B operand of a MatMul or Gemm: K x N, `transposed` when stored
// as [N, K] (a Gemm's transB), `m` the product's rows (A's rows; a MatMul's
// batch dims folded in).
struct BMatrix {
  int64_t k = 0, n = 0, m = 0;
  bool transposed = false;
};

// Whether a (canonical, typed) MatMul or Gemm can take the form: not yet in
// it, one output, B a constant 2-D f32, f16 or bf16 matrix of A's type (a
// MatMul's A of rank >= 2); `matrix` receives B's shape.
bool PackedColumnsApplies(const ir::Node& node, BMatrix* matrix);

// B (K x N per `matrix`, f32) into column panels of `nr` columns, typed
// [ceil(N / nr), K, nr]; and panels back into row-major [K, N] (N = `n`).
// InvalidArgument when the size disagrees or nr < 1.
Result<ir::TensorDataPtr> PackColumns(const ir::TensorData& b, const BMatrix& matrix, int64_t nr);
Result<ir::TensorDataPtr> UnpackColumns(const ir::TensorData& panels, int64_t n);

// Puts `node` (for which PackedColumnsApplies gave `matrix`) into the form:
// input 1 becomes `panels` (PackColumns of its B), the attribute is set and a
// Gemm's transB cleared.
void SetPackedColumns(ir::Node& node, ir::Value* panels, const BMatrix& matrix);

// InferNodeTypes / EvaluateNode for a node in the form (semantics.cc calls
// them): those of its twin without the attribute, on B unpacked to [K, N].
Result<std::vector<ir::TensorType>> InferPackedColumns(const ir::Node& node);
Result<std::vector<ir::TensorDataPtr>> EvaluatePackedColumns(const ir::Node& node,
                                                             const std::vector<ir::TensorDataPtr>& inputs);

}  // namespace keel::ops
