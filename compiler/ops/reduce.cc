// compiler/ops/reduce.cc — the Reduce* family (Sum, Mean, Max, Min, Prod, L1,
// L2, SumSquare, LogSum, LogSumExp) and ArgMax / ArgMin.
//
// Reduce ops: `axes` is an attribute before opset 18 (13 for ReduceSum) and an
// input since (lifted when constant). Canonical form: `axes` sorted and
// non-negative, every axis when absent or empty; with noop_with_empty_axes=1
// and no axes, `axes` = [] and noop_with_empty_axes=1 stays (the reduction of
// each single element: x for Sum/Max/..., x*x for SumSquare, log x for
// LogSum — what the ONNX reference computes); `keepdims` 0/1.
// Reducing an empty set gives the op's identity: 0 (Sum, L1, L2, SumSquare),
// 1 (Prod), -inf / the type's lowest (Max, LogSum, LogSumExp), +inf / highest
// (Min), NaN (Mean); bool Max/Min are any/all.
// Dtypes: floats for all; integers for Sum/Max/Min/Prod/L1/SumSquare (wrapping
// like the stored type); bool for Max/Min (opset 20).
// ArgMax/ArgMin: one axis, keepdims, select_last_index; i64 indices.
// Lowerings: compiler/codegen/lower_reduce.cc.
#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/row_reference.h"

namespace keel::ops {
namespace {

struct ReduceOp {
  const char* name;
  codegen::ReduceKind kind;
  std::vector<int> versions;
  int axes_input_since;  // first version with `axes` as an input
  bool ints;             // integer inputs allowed
  bool bools;            // bool inputs allowed
  const char* partial;   // OpDef::reduction_partial: this op over its results is this op's result
};

const std::vector<ReduceOp>& ReduceOps() {
  static const std::vector<ReduceOp> kOps = {
      {"ReduceSum", codegen::ReduceKind::kSum, {1, 11, 13}, 13, true, false, "ReduceSum"},
      {"ReduceMean", codegen::ReduceKind::kMean, {1, 11, 13, 18}, 18, false, false, "ReduceMean"},
      {"ReduceMax", codegen::ReduceKind::kMax, {1, 11, 12, 13, 18, 20}, 18, true, true, "ReduceMax"},
      {"ReduceMin", codegen::ReduceKind::kMin, {1, 11, 12, 13, 18, 20}, 18, true, true, "ReduceMin"},
      {"ReduceProd", codegen::ReduceKind::kProd, {1, 11, 13, 18}, 18, true, false, "ReduceProd"},
      {"ReduceL1", codegen::ReduceKind::kL1, {1, 11, 13, 18}, 18, true, false, "ReduceL1"},
      {"ReduceL2", codegen::ReduceKind::kL2, {1, 11, 13, 18}, 18, false, false, "ReduceL2"},
      {"ReduceSumSquare", codegen::ReduceKind::kSumSquare, {1, 11, 13, 18}, 18, true, false, "ReduceL2"},
      {"ReduceLogSum", codegen::ReduceKind::kLogSum, {1, 11, 13, 18, 28}, 18, false, false, "ReduceSum"},
      {"ReduceLogSumExp", codegen::ReduceKind::kLogSumExp, {1, 11, 13, 18, 28}, 18, false, false, "ReduceLogSumExp"},
  };
  return kOps;
}

Status CanonicalizeReduce(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 2));
  KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 1, "axes"));
  if (HasInput(node, 1)) return NeedsConstant(node, 1, "the reduced axes decide the output shape");
  const int64_t rank = static_cast<int64_t>(InputType(node, 0).shape.size());
  KEEL_ASSIGN_OR_RETURN(int64_t noop, node.attrs().GetInt("noop_with_empty_axes", 0));
  KEEL_ASSIGN_OR_RETURN(auto axes, node.attrs().GetInts("axes", {}));
  if (axes.empty() && !noop) {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  node.attrs().Set("axes", axes);
  // Kept only where it matters, so that a second canonicalization keeps the empty axes.
  if (axes.empty() && noop) {
    node.attrs().Set("noop_with_empty_axes", int64_t{1});
  } else {
    node.attrs().Erase("noop_with_empty_axes");
  }
  KEEL_ASSIGN_OR_RETURN(int64_t keep, node.attrs().GetInt("keepdims", 1));
  node.attrs().Set("keepdims", keep != 0 ? int64_t{1} : int64_t{0});
  return CanonicalizeAxesAttr(node, "axes", rank, true);
}

Result<std::vector<ir::TensorType>> InferReduce(const ReduceOp& op, const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  const bool ok = IsFloatType(x.dtype) || (op.ints && IsIntegerType(x.dtype)) || (op.bools && IsBoolType(x.dtype));
  if (!ok) return NodeUnsupported(node, std::string(op.name) + " on " + ir::DTypeName(x.dtype));
  KEEL_ASSIGN_OR_RETURN(auto axes, node.attrs().GetInts("axes", {}));
  KEEL_ASSIGN_OR_RETURN(int64_t keep, node.attrs().GetInt("keepdims", 1));
  std::vector<int64_t> out;
  for (int64_t d = 0; d < static_cast<int64_t>(x.shape.size()); ++d) {
    const bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (reduced && keep) out.push_back(1);
    if (!reduced) out.push_back(x.shape[static_cast<size_t>(d)]);
  }
  return One({x.dtype, out});
}

// Lowest / highest value of an integer dtype (bool: 0 / 1), as int64 bits.
int64_t IntLimit(ir::DType t, bool highest) {
  if (IsBoolType(t)) return highest ? 1 : 0;
  const int bits = static_cast<int>(DataTypeSize(t)) * 8;
  if (IsUnsignedIntType(t)) return !highest ? 0 : bits >= 64 ? -1 : static_cast<int64_t>((uint64_t{1} << bits) - 1);
  if (bits >= 64) return highest ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  return highest ? (int64_t{1} << (bits - 1)) - 1 : -(int64_t{1} << (bits - 1));
}

// Integers: exact, wrapping (unsigned arithmetic), compared with the type's signedness.
int64_t ReduceInts(const std::string& op, ir::DType t, const std::vector<int64_t>& v) {
  auto less = [&](int64_t a, int64_t b) {
    return IsUnsignedIntType(t) ? static_cast<uint64_t>(a) < static_cast<uint64_t>(b) : a < b;
  };
  if (op == "ReduceMax" || op == "ReduceMin") {
    const bool mx = op == "ReduceMax";
    int64_t r = IntLimit(t, !mx);
    for (int64_t x : v) r = (mx ? less(r, x) : less(x, r)) ? x : r;
    return r;
  }
  uint64_t r = op == "ReduceProd" ? 1 : 0;
  for (int64_t x : v) {
    const uint64_t u = static_cast<uint64_t>(x);
    if (op == "ReduceProd") r *= u;
    else if (op == "ReduceSumSquare") r += u * u;
    else if (op == "ReduceL1") r += static_cast<uint64_t>(IsUnsignedIntType(t) || x >= 0 ? x : -x);
    else r += u;
  }
  return static_cast<int64_t>(r);
}

double ReduceDoubles(const std::string& op, const std::vector<double>& v) {
  const double inf = std::numeric_limits<double>::infinity();
  double r = 0;
  if (op == "ReduceMax") {
    r = -inf;
    for (double x : v) r = std::max(r, x);
  } else if (op == "ReduceMin") {
    r = inf;
    for (double x : v) r = std::min(r, x);
  } else if (op == "ReduceProd") {
    r = 1;
    for (double x : v) r *= x;
  } else if (op == "ReduceL1") {
    for (double x : v) r += std::fabs(x);
  } else if (op == "ReduceL2" || op == "ReduceSumSquare") {
    for (double x : v) r += x * x;
    if (op == "ReduceL2") r = std::sqrt(r);
  } else if (op == "ReduceLogSumExp") {
    double m = -inf;
    for (double x : v) m = std::max(m, x);
    if (!std::isfinite(m)) m = 0;
    for (double x : v) r += std::exp(x - m);
    r = std::log(r) + m;
  } else {  // Sum, Mean, LogSum
    for (double x : v) r += x;
    if (op == "ReduceMean") r = v.empty() ? std::numeric_limits<double>::quiet_NaN() : r / static_cast<double>(v.size());
    if (op == "ReduceLogSum") r = std::log(r);
  }
  return r;
}

Result<std::vector<ir::TensorDataPtr>> EvaluateReduce(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                      const std::vector<ir::TensorType>& out_types) {
  const ir::TensorData& x = *in[0];
  KEEL_ASSIGN_OR_RETURN(auto axes, node.attrs().GetInts("axes", {}));
  const auto rows = RowOffsets(x.type.shape, axes);
  auto out = NewTensor(out_types[0]);
  const bool exact = !IsFloatType(x.type.dtype);
  for (size_t r = 0; r < rows.size(); ++r) {
    if (exact) {
      std::vector<int64_t> v;
      for (int64_t o : rows[r]) v.push_back(ElementAsInt(x, o));
      StoreInt(*out, static_cast<int64_t>(r), ReduceInts(node.op_type(), x.type.dtype, v));
    } else {
      std::vector<double> v;
      for (int64_t o : rows[r]) v.push_back(ElementAsDouble(x, o));
      StoreDouble(*out, static_cast<int64_t>(r), ReduceDoubles(node.op_type(), v));
    }
  }
  return std::vector<ir::TensorDataPtr>{out};
}

// ---- ArgMax / ArgMin ----------------------------------------------------------------

Status CanonicalizeArg(ir::Node& node) {
  const int64_t rank = static_cast<int64_t>(InputType(node, 0).shape.size());
  KEEL_RETURN_IF_ERROR(CanonicalizeAxisAttr(node, "axis", 0, rank));
  for (const char* flag : {"keepdims", "select_last_index"}) {
    KEEL_ASSIGN_OR_RETURN(int64_t v, node.attrs().GetInt(flag, std::string(flag) == "keepdims" ? 1 : 0));
    node.attrs().Set(flag, v != 0 ? int64_t{1} : int64_t{0});
  }
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferArg(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  if (!IsFloatType(x.dtype) && !IsIntegerType(x.dtype)) return NodeUnsupported(node, std::string(node.op_type()) + " on " + ir::DTypeName(x.dtype));
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t keep, node.attrs().GetInt("keepdims", 1));
  if (x.shape.empty()) return NodeError(node, "input must have rank >= 1");
  if (x.shape[static_cast<size_t>(axis)] == 0) return NodeError(node, "axis " + std::to_string(axis) + " is empty: no index to return");
  std::vector<int64_t> out;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (static_cast<int64_t>(d) != axis) out.push_back(x.shape[d]);
    else if (keep) out.push_back(1);
  }
  return One({ir::DType::kI64, out});
}

Result<std::vector<ir::TensorDataPtr>> EvaluateArg(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                   const std::vector<ir::TensorType>& out_types) {
  const ir::TensorData& x = *in[0];
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t last, node.attrs().GetInt("select_last_index", 0));
  const bool is_max = node.op_type() == "ArgMax";
  const bool exact = !IsFloatType(x.type.dtype);
  const bool uns = IsUnsignedIntType(x.type.dtype);
  // a strictly before b in the op's order (larger first for ArgMax).
  auto before = [&](int64_t i, int64_t j) {
    if (exact) {
      int64_t a = ElementAsInt(x, i), b = ElementAsInt(x, j);
      bool lt = uns ? static_cast<uint64_t>(a) < static_cast<uint64_t>(b) : a < b;
      bool gt = uns ? static_cast<uint64_t>(a) > static_cast<uint64_t>(b) : a > b;
      return is_max ? gt : lt;
    }
    double a = ElementAsDouble(x, i), b = ElementAsDouble(x, j);
    return is_max ? a > b : a < b;
  };
  const auto rows = RowOffsets(x.type.shape, {axis});
  auto out = NewTensor(out_types[0]);
  for (size_t r = 0; r < rows.size(); ++r) {
    int64_t best = 0;
    for (size_t l = 1; l < rows[r].size(); ++l) {
      const int64_t cand = rows[r][l], cur = rows[r][static_cast<size_t>(best)];
      if (before(cand, cur) || (last && !before(cur, cand))) best = static_cast<int64_t>(l);
    }
    StoreInt(*out, static_cast<int64_t>(r), best);
  }
  return std::vector<ir::TensorDataPtr>{out};
}

}  // namespace

void RegisterReduceOps(Registry& r) {
  for (const ReduceOp& op : ReduceOps()) {
    OpDef def;
    def.name = op.name;
    def.versions = op.versions;
    def.fusion = FusionClass::kAnchor;
    if (op.kind == codegen::ReduceKind::kMax || op.kind == codegen::ReduceKind::kMin) {
      def.half = HalfPolicy::kHalf;  // picks an element: exact in any type
    } else {
      KeepF32(def, "sums over many elements");
    }
    const int since = op.axes_input_since;
    def.normalize = [since](ir::Node& node, int version) -> Status {
      // Before `since` there is no axes input and no noop_with_empty_axes: empty or absent axes reduce everything.
      if (version < since) {
        if (HasInput(node, 1)) return NodeError(node, "axes is an attribute before opset " + std::to_string(since));
        node.attrs().Erase("noop_with_empty_axes");
      } else if (node.attrs().Has("axes")) {
        return NodeError(node, "axes is an input since opset " + std::to_string(since));
      }
      return Status::Ok();
    };
    def.canonicalize = CanonicalizeReduce;
    def.infer = [op](const ir::Node& node) { return InferReduce(op, node); };
    def.evaluate = EvaluateReduce;
    def.reduction_partial = op.partial;
    // Reducing transposed inputs over axes A is reducing the inputs over perm[A].
    // Dropping the axes (keepdims 0) changes what the transpose permutes, except
    // where perm keeps the remaining axes in their order: then the result is the
    // same tensor, not transposed (a mean over an NHWC image's H and W is [N, C]
    // either way; passes/channels_last.h).
    def.permute_axes = [](ir::Node& node, const std::vector<int64_t>& perm) -> Result<bool> {
      KEEL_ASSIGN_OR_RETURN(int64_t keep, node.attrs().GetInt("keepdims", 1));
      KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, node.attrs().GetInts("axes", {}));
      if (axes.empty()) return false;
      if (keep == 0) {
        int64_t last = -1;
        for (size_t i = 0; i < perm.size(); ++i) {
          if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end()) continue;
          if (perm[i] < last) return false;
          last = perm[i];
        }
      }
      for (int64_t& a : axes) a = perm[static_cast<size_t>(a)];
      std::sort(axes.begin(), axes.end());
      node.attrs().Set("axes", axes);
      return true;
    };
    const codegen::ReduceKind kind = op.kind;
    def.kernel = [kind](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
      return codegen::LowerReduce(ctx, node, kind, stores[0]);
    };
    r.Add(std::move(def));
  }
  for (const char* name : {"ArgMax", "ArgMin"}) {
    OpDef def;
    def.name = name;
    def.versions = {1, 11, 12, 13};
    def.fusion = FusionClass::kAnchor;
    def.half = HalfPolicy::kHalf;  // compares only
    def.normalize = [](ir::Node& node, int version) -> Status {
      // select_last_index arrived in opset 12.
      if (version < 12) node.attrs().Erase("select_last_index");
      return Status::Ok();
    };
    def.canonicalize = CanonicalizeArg;
    def.infer = InferArg;
    def.evaluate = EvaluateArg;
    const bool is_max = std::string(name) == "ArgMax";
    def.kernel = [is_max](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
      return codegen::LowerArgReduce(ctx, node, is_max, stores[0]);
    };
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
