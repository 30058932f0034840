// compiler/ops/scan.cc — ops that walk one axis in order: CumSum, CumProd
// and TopK.
//
// CumSum (opsets 11, 14) and CumProd (26): `axis` is an input (a 0-D or
// one-element tensor); canonical form: the constant axis lifted into the int
// attribute `axis` (non-negative), `exclusive` / `reverse` 0/1. Floats and
// integers. They share one evaluator and one lowering, parameterized by the
// combine (sum or product, identity 0 or 1).
// TopK (opsets 1, 10, 11, 24): `k` is an attribute in opset 1 and an input
// since 10; canonical form: the constant k lifted into the int attribute `k`
// (a k that is not a compile-time constant would make the output shape
// value-dependent: refused with NeedsConstant), `axis` non-negative,
// `largest` / `sorted` 0/1. Outputs: values and i64 indices, always sorted
// (sorted=0 leaves the order unspecified); equal values by ascending index.
// Lowerings: compiler/codegen/lower_scan.cc.
#include <algorithm>
#include <numeric>

#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/row_reference.h"

namespace keel::ops {
namespace {

// Moves a constant one-value integer input into int attribute `attr`.
Status LiftOneInt(ir::Node& node, size_t index, const std::string& attr, const std::string& why) {
  KEEL_RETURN_IF_ERROR(LiftIntsInput(node, index, "keel.lifted"));
  if (HasInput(node, index)) return NeedsConstant(node, index, why);
  if (node.attrs().Has("keel.lifted")) {
    KEEL_ASSIGN_OR_RETURN(auto v, node.attrs().GetInts("keel.lifted", {}));
    node.attrs().Erase("keel.lifted");
    if (v.size() != 1) return NodeError(node, attr + " must be one value, got " + std::to_string(v.size()));
    node.attrs().Set(attr, v[0]);
  }
  return Status::Ok();
}

Status SetFlag(ir::Node& node, const std::string& name, int64_t def) {
  KEEL_ASSIGN_OR_RETURN(int64_t v, node.attrs().GetInt(name, def));
  node.attrs().Set(name, v != 0 ? int64_t{1} : int64_t{0});
  return Status::Ok();
}

Status CheckNumeric(const ir::Node& node, ir::DType dtype) {
  if (IsFloatType(dtype) || IsIntegerType(dtype)) return Status::Ok();
  return NodeUnsupported(node, node.op_type() + " on " + ir::DTypeName(dtype));
}

// ---- CumSum -----------------------------------------------------------------------

Status CanonicalizeCumSum(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 2));
  KEEL_RETURN_IF_ERROR(LiftOneInt(node, 1, "axis", "the scanned axis decides the loop structure"));
  if (!node.attrs().Has("axis")) return NodeError(node, "the axis input is missing");
  const int64_t rank = static_cast<int64_t>(InputType(node, 0).shape.size());
  if (rank == 0) return NodeError(node, "input must have rank >= 1");
  KEEL_RETURN_IF_ERROR(CanonicalizeAxisAttr(node, "axis", 0, rank));
  KEEL_RETURN_IF_ERROR(SetFlag(node, "exclusive", 0));
  return SetFlag(node, "reverse", 0);
}

Result<std::vector<ir::TensorDataPtr>> EvaluateCumulative(bool product, const ir::Node& node,
                                                          const std::vector<ir::TensorDataPtr>& in,
                                                          const std::vector<ir::TensorType>& out_types) {
  const ir::TensorData& x = *in[0];
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t exclusive, node.attrs().GetInt("exclusive", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t reverse, node.attrs().GetInt("reverse", 0));
  const bool exact = !IsFloatType(x.type.dtype);
  auto out = NewTensor(out_types[0]);
  for (std::vector<int64_t> row : RowOffsets(x.type.shape, {axis})) {
    if (reverse) std::reverse(row.begin(), row.end());
    uint64_t isum = product ? 1 : 0;  // wraps like the stored integer type
    double dsum = product ? 1 : 0;
    for (int64_t o : row) {
      if (exclusive) exact ? StoreInt(*out, o, static_cast<int64_t>(isum)) : StoreDouble(*out, o, dsum);
      if (exact) {
        const uint64_t v = static_cast<uint64_t>(ElementAsInt(x, o));
        isum = product ? isum * v : isum + v;
      } else {
        const double v = ElementAsDouble(x, o);
        dsum = product ? dsum * v : dsum + v;
      }
      if (!exclusive) exact ? StoreInt(*out, o, static_cast<int64_t>(isum)) : StoreDouble(*out, o, dsum);
    }
  }
  return std::vector<ir::TensorDataPtr>{out};
}

// ---- TopK -------------------------------------------------------------------------

Status CanonicalizeTopK(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 2));
  KEEL_RETURN_IF_ERROR(LiftOneInt(node, 1, "k", "k decides the output shape"));
  if (!node.attrs().Has("k")) return NodeError(node, "k is missing");
  const ir::TensorType& x = InputType(node, 0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0) return NodeError(node, "input must have rank >= 1");
  KEEL_RETURN_IF_ERROR(CanonicalizeAxisAttr(node, "axis", -1, rank));
  const int64_t axis = *node.attrs().GetInt("axis", 0), k = *node.attrs().GetInt("k", 0);
  const int64_t len = x.shape[static_cast<size_t>(axis)];
  if (k < 0 || k > len)
    return NodeError(node, "k " + std::to_string(k) + " is out of range for axis " + std::to_string(axis) + " of length " + std::to_string(len));
  KEEL_RETURN_IF_ERROR(SetFlag(node, "largest", 1));
  return SetFlag(node, "sorted", 1);
}

Result<std::vector<ir::TensorType>> InferTopK(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  KEEL_RETURN_IF_ERROR(CheckNumeric(node, x.dtype));
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t k, node.attrs().GetInt("k", 0));
  std::vector<int64_t> shape = x.shape;
  shape[static_cast<size_t>(axis)] = k;
  std::vector<ir::TensorType> out = {{x.dtype, shape}, {ir::DType::kI64, shape}};
  out.resize(std::min<size_t>(node.outputs().size(), 2));
  return out;
}

Result<std::vector<ir::TensorDataPtr>> EvaluateTopK(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                    const std::vector<ir::TensorType>& out_types) {
  const ir::TensorData& x = *in[0];
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t k, node.attrs().GetInt("k", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t largest, node.attrs().GetInt("largest", 1));
  const bool exact = !IsFloatType(x.type.dtype), uns = IsUnsignedIntType(x.type.dtype);
  // a strictly before b: larger (largest=1) or smaller first.
  auto before = [&](int64_t a, int64_t b) {
    if (exact) {
      const int64_t va = ElementAsInt(x, a), vb = ElementAsInt(x, b);
      const bool lt = uns ? static_cast<uint64_t>(va) < static_cast<uint64_t>(vb) : va < vb;
      const bool gt = uns ? static_cast<uint64_t>(va) > static_cast<uint64_t>(vb) : va > vb;
      return largest ? gt : lt;
    }
    return largest ? ElementAsDouble(x, a) > ElementAsDouble(x, b) : ElementAsDouble(x, a) < ElementAsDouble(x, b);
  };
  const auto in_rows = RowOffsets(x.type.shape, {axis});
  const auto out_rows = RowOffsets(out_types[0].shape, {axis});
  std::vector<std::shared_ptr<ir::TensorData>> outs;
  for (const ir::TensorType& t : out_types) outs.push_back(NewTensor(t));
  for (size_t r = 0; r < in_rows.size(); ++r) {
    std::vector<int64_t> order(in_rows[r].size());
    std::iota(order.begin(), order.end(), 0);
    // Stable: equal values keep ascending indices.
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return before(in_rows[r][static_cast<size_t>(a)], in_rows[r][static_cast<size_t>(b)]);
    });
    for (int64_t j = 0; j < k; ++j) {
      const int64_t src = in_rows[r][static_cast<size_t>(order[static_cast<size_t>(j)])];
      const int64_t dst = out_rows[r][static_cast<size_t>(j)];
      if (exact) StoreInt(*outs[0], dst, ElementAsInt(x, src));
      else StoreDouble(*outs[0], dst, ElementAsDouble(x, src));
      if (outs.size() > 1) StoreInt(*outs[1], dst, order[static_cast<size_t>(j)]);
    }
  }
  return std::vector<ir::TensorDataPtr>(outs.begin(), outs.end());
}

}  // namespace

void RegisterScanOps(Registry& r) {
  for (const bool product : {false, true}) {
    OpDef def;
    def.name = product ? "CumProd" : "CumSum";
    def.versions = product ? std::vector<int>{26} : std::vector<int>{11, 14};
    def.fusion = FusionClass::kAnchor;
    KeepF32(def, product ? "running products" : "running sums");
    def.canonicalize = CanonicalizeCumSum;
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
      KEEL_RETURN_IF_ERROR(CheckNumeric(node, InputType(node, 0).dtype));
      return One(InputType(node, 0));
    };
    def.evaluate = [product](const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                             const std::vector<ir::TensorType>& out_types) {
      return EvaluateCumulative(product, node, in, out_types);
    };
    def.kernel = [product](codegen::LowerContext& ctx, const ir::Node& node,
                           const std::vector<codegen::StoreFn>& stores) {
      return product ? codegen::LowerCumProd(ctx, node, stores[0]) : codegen::LowerCumSum(ctx, node, stores[0]);
    };
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "TopK";
    def.half = HalfPolicy::kHalf;  // compares only
    def.versions = {1, 10, 11, 24};
    def.fusion = FusionClass::kAnchor;
    def.normalize = [](ir::Node& node, int version) -> Status {
      if (version >= 10 && node.attrs().Has("k")) return NodeError(node, "k is an input since opset 10");
      if (version < 11) {
        // largest/sorted arrived in opset 11 (before: largest, sorted).
        node.attrs().Erase("largest");
        node.attrs().Erase("sorted");
      }
      return Status::Ok();
    };
    def.canonicalize = CanonicalizeTopK;
    def.infer = InferTopK;
    def.evaluate = EvaluateTopK;
    def.kernel = [](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
      return codegen::LowerTopK(ctx, node, stores);
    };
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
