// compiler/ir/reference_eval.h — the reference evaluator (library keel_reference).
//
// Naive, obviously-correct CPU implementations of every op the IR supports (see
// compiler/frontend/op_schemas.h for the normalized forms), written for
// clarity, not speed: every value is computed in double precision from its
// definition and rounded to the output dtype at the end. It is used by
//   - constant folding (compiler/passes/constant_folding.h),
//   - tests of the frontend and passes (whole models against PyTorch outputs),
//   - codegen's tests, which compare generated kernels against it.
// Supported dtypes: f32, f64, i8, i16, i32, i64, u8, bool (f16/bf16: Unsupported).
//
// Nodes must be canonical (ir::CanonicalizeNode) — the frontend + shape-inference
// pass guarantee that; a hand-built node for a test can be canonicalized first.
//
// Errors: InvalidArgument/Unsupported values naming the node (out-of-range
// Gather index, unsupported dtype, shape mismatch). Never aborts on bad input.
// Thread-safety: pure functions; results are fresh immutable tensors.
#pragma once

#include <vector>

#include "compiler/ir/graph.h"

namespace keel::ir {

// Evaluates one node. `inputs` has one entry per node input (nullptr where the
// node input is nullptr). Returns one tensor per node output. keel.Fused nodes
// evaluate their body.
Result<std::vector<TensorDataPtr>> EvaluateNode(const Node& node, const std::vector<TensorDataPtr>& inputs);

// Evaluates a whole graph in node order: `inputs` correspond to graph.inputs();
// constants come from the graph. Returns the graph outputs in order.
Result<std::vector<TensorDataPtr>> EvaluateGraph(const Graph& graph, const std::vector<TensorDataPtr>& inputs);

// Convenience constructors and accessors for tests and passes.
TensorDataPtr MakeTensorF32(std::vector<int64_t> shape, const std::vector<float>& values);
TensorDataPtr MakeTensorI64(std::vector<int64_t> shape, const std::vector<int64_t>& values);
// Values of any supported dtype converted to double (empty + error for f16/bf16).
Result<std::vector<double>> TensorToDoubles(const TensorData& tensor);
// Builds a tensor of `type` from doubles (rounded / truncated toward zero for integers).
Result<TensorDataPtr> TensorFromDoubles(const TensorType& type, const std::vector<double>& values);

}  // namespace keel::ir
