// compiler/ops/op_util.h — helpers the op definitions share: error messages
// that name the node, attribute/axis canonicalization, constant operands,
// broadcasting and checked shape arithmetic.
//
// Every message names the node the way the rest of Keel does ("Conv 'conv1':
// ..."). Checked arithmetic refuses absurd sizes (more than kMaxElements
// elements, or an overflow) before anything is allocated from them.
// Thread-safety: pure functions (the canonicalization helpers mutate only the
// node they are given).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_def.h"
#include "keel/status.h"

namespace keel::ops {

// The largest tensor Keel accepts: 2^40 elements (1 TiB of bytes).
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

// ---- messages -------------------------------------------------------------------
using ir::NodeDescription;  // "Conv 'conv1'"
Status NodeError(const ir::Node& node, const std::string& message);        // InvalidArgument
Status NodeUnsupported(const ir::Node& node, const std::string& message);  // Unsupported
// Input `index` must be a compile-time constant (Keel compiles static shapes).
// The message has the fixed form "input <n> ('<name>') must be a compile-time
// constant" that tools (the conformance runner, keelc's hint) rely on.
Status NeedsConstant(const ir::Node& node, size_t index, const std::string& what);
std::string ShapeString(const std::vector<int64_t>& shape);  // "[2,3]"

// ---- inputs and attributes --------------------------------------------------------
bool HasInput(const ir::Node& node, size_t index);  // present (non-null)
// The type of a present input (callers check HasInput or arity first).
const ir::TensorType& InputType(const ir::Node& node, size_t index);
// InvalidArgument unless the node has between min and max present leading inputs.
Status CheckArity(const ir::Node& node, size_t min_inputs, size_t max_inputs);
// Unsupported unless the node has at most `n` outputs (the importer drops
// trailing outputs nothing uses, so this refuses only outputs a model reads).
Status CheckOutputs(const ir::Node& node, size_t n, const std::string& what_is_missing);
// The node's single output type list.
inline std::vector<ir::TensorType> One(ir::TensorType t) { return {std::move(t)}; }

// Integer tensor values (any integer dtype) as int64.
Result<std::vector<int64_t>> ReadInts(const ir::TensorData& t);
// A one-element numeric tensor as double.
Result<double> ReadScalar(const ir::TensorData& t);
// The constant data of input `index`, or nullptr when absent or not constant.
const ir::TensorData* ConstantInput(const ir::Node& node, size_t index);
// A new f32 constant of `shape` holding `values` (rounded to float) in `g`.
ir::Value* AddF32Constant(ir::Graph& g, const std::string& name, std::vector<int64_t> shape,
                          const std::vector<double>& values);

// Moves constant input `index` (integers) into int-list attribute `attr` and
// drops the input (nullptr; trailing nullptrs are trimmed). No-op when the
// input is absent or not constant.
Status LiftIntsInput(ir::Node& node, size_t index, const std::string& attr);
// Moves a constant scalar input into float attribute `attr` (same rules).
Status LiftScalarInput(ir::Node& node, size_t index, const std::string& attr);
// Removes trailing nullptr inputs (keeps at least one input).
void TrimTrailingNulls(ir::Node& node);

// An axis in [-rank, rank) made non-negative; InvalidArgument naming `what` otherwise.
Result<int64_t> NormalizeAxis(const ir::Node& node, int64_t axis, int64_t rank, const std::string& what);
// Attribute `attr` (an int, default `def`) normalized against `rank` and stored back.
Status CanonicalizeAxisAttr(ir::Node& node, const std::string& attr, int64_t def, int64_t rank);
// Attribute `attr` (ints) normalized, optionally sorted, duplicates refused, stored back.
Status CanonicalizeAxesAttr(ir::Node& node, const std::string& attr, int64_t rank, bool sort);

// ---- definitions ---------------------------------------------------------------------
// A fresh kInjective OpDef named `name` with ONNX since-versions `versions`
// (the family files fill in the hooks).
OpDef InjectiveOp(const std::string& name, std::vector<int> versions);

// ---- dtypes -----------------------------------------------------------------------------
// ONNX TensorProto.DataType code -> IR dtype; Unsupported naming the ONNX type
// (string, float8, int4, complex...) for the ones Keel does not have.
Result<ir::DType> DTypeFromOnnx(int64_t code);
// The IR dtype named `name` ("f32", "i64", "bool", ...).
Result<ir::DType> DTypeFromName(const std::string& name);

// ---- shapes ---------------------------------------------------------------------------
// Numpy broadcast of shapes; InvalidArgument "shapes [..] and [..] do not broadcast".
Result<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
// Element count with overflow and kMaxElements checks (InvalidArgument naming the node).
Result<int64_t> CheckedElements(const ir::Node& node, const std::vector<int64_t>& shape);
// Every dim >= 0 and the element count sane; InvalidArgument naming `what` otherwise.
Status CheckShape(const ir::Node& node, const std::vector<int64_t>& shape, const std::string& what);

// Layout (OpDef::permute_axes): an attribute with one value per axis, or every
// axis' begin then every axis' end (Pad's pads, Resize's roi), for inputs now
// transposed by `perm`: old axis i is new axis perm[i]. False when `v` has
// another length (left unchanged).
template <class T>
bool PermuteAxisValues(std::vector<T>& v, const std::vector<int64_t>& perm) {
  const size_t rank = perm.size();
  if (v.size() != rank && v.size() != 2 * rank) return false;
  std::vector<T> out(v.size());
  for (size_t half = 0; half < v.size(); half += rank) {
    for (size_t i = 0; i < rank; ++i) out[half + static_cast<size_t>(perm[i])] = v[half + i];
  }
  v = std::move(out);
  return true;
}

}  // namespace keel::ops
