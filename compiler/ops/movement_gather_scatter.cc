// compiler/ops/movement_gather_scatter.cc — indexed reads and writes:
// GatherElements and GatherND (injective: each output element reads one input
// element at a run-time index) and ScatterElements, ScatterND and the
// deprecated Scatter (anchors).
//
// Scatters are not index functions of their output (an output element may
// receive any number of updates, in order, with a reduction), so they have
// their own kernel: copy `data` into a workspace, apply the updates one by one
// in index order (a serial loop: later updates see earlier ones, which is what
// the reductions and "last write wins" need), then store the workspace. Run-time
// indices outside the data are skipped (never written out of bounds); constant
// ones are refused at compile time. Gathers clamp run-time indices.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "compiler/codegen/lower_context.h"
#include "compiler/ops/lowering.h"
#include "compiler/ops/movement_util.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using codegen::Expr;
using codegen::Stmt;
using codegen::TensorFn;

// ---- GatherElements ------------------------------------------------------------------------------

Result<std::vector<ir::TensorType>> InferGatherElements(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 2));
  const ir::TensorType& x = InputType(node, 0);
  const ir::TensorType& ind = InputType(node, 1);
  KEEL_RETURN_IF_ERROR(CheckIndexDType(node, 1));
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  if (ind.shape.size() != x.shape.size()) return NodeError(node, "indices " + ind.ToString() + " and data " + x.ToString() + " differ in rank");
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (static_cast<int64_t>(d) != axis && ind.shape[d] > x.shape[d]) {
      return NodeError(node, "indices " + ind.ToString() + " exceed data " + x.ToString() + " on axis " + std::to_string(d));
    }
  }
  const int64_t dim = x.shape[static_cast<size_t>(axis)];
  KEEL_RETURN_IF_ERROR(CheckConstantIndices(node, 1, [dim](int64_t) { return dim; }));
  if (dim == 0 && ind.NumElements() > 0) return NodeError(node, "gathers from an empty axis");
  return One({x.dtype, ind.shape});
}

Status DefineGatherElements(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* in, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* ind, ctx.Input(node, 1));
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  TensorFn fn;
  fn.type = node.output(0)->type();
  const size_t ax = static_cast<size_t>(axis);
  fn.at = [in, ind, ax](const std::vector<Expr>& idx) {
    std::vector<Expr> src = idx;
    src[ax] = WrapIndex(ind->at(idx), in->type.shape[ax]);
    return in->at(src);
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

// ---- GatherND -------------------------------------------------------------------------------------

Result<std::vector<ir::TensorType>> InferGatherND(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 2));
  const ir::TensorType& x = InputType(node, 0);
  const ir::TensorType& ind = InputType(node, 1);
  KEEL_RETURN_IF_ERROR(CheckIndexDType(node, 1));
  KEEL_ASSIGN_OR_RETURN(int64_t b, node.attrs().GetInt("batch_dims", 0));
  const int64_t r = static_cast<int64_t>(x.shape.size()), q = static_cast<int64_t>(ind.shape.size());
  if (q < 1) return NodeError(node, "indices must have rank >= 1");
  if (b < 0 || b >= std::min(r, q)) return NodeError(node, "batch_dims " + std::to_string(b) + " is out of range");
  const int64_t k = ind.shape.back();
  if (k < 1 || k > r - b) return NodeError(node, "indices' last dimension " + std::to_string(k) + " is out of range for data " + x.ToString());
  for (int64_t d = 0; d < b; ++d) {
    if (ind.shape[static_cast<size_t>(d)] != x.shape[static_cast<size_t>(d)]) {
      return NodeError(node, "batch dimensions of indices " + ind.ToString() + " and data " + x.ToString() + " differ");
    }
  }
  KEEL_RETURN_IF_ERROR(CheckConstantIndices(node, 1, [&](int64_t i) { return x.shape[static_cast<size_t>(b + i % k)]; }));
  std::vector<int64_t> out(ind.shape.begin(), ind.shape.end() - 1);
  out.insert(out.end(), x.shape.begin() + b + k, x.shape.end());
  return One({x.dtype, out});
}

Status DefineGatherND(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* in, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* ind, ctx.Input(node, 1));
  KEEL_ASSIGN_OR_RETURN(int64_t b, node.attrs().GetInt("batch_dims", 0));
  TensorFn fn;
  fn.type = node.output(0)->type();
  const size_t q = ind->type.shape.size();
  const int64_t k = ind->type.shape.back();
  fn.at = [in, ind, b, q, k](const std::vector<Expr>& idx) {
    std::vector<Expr> lead(idx.begin(), idx.begin() + static_cast<int64_t>(q - 1));
    std::vector<Expr> src(idx.begin(), idx.begin() + b);
    for (int64_t j = 0; j < k; ++j) {
      std::vector<Expr> ii = lead;
      ii.push_back(Expr(j));
      src.push_back(WrapIndex(ind->at(ii), in->type.shape[static_cast<size_t>(b + j)]));
    }
    src.insert(src.end(), idx.begin() + static_cast<int64_t>(q - 1), idx.end());
    return in->at(src);
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

// ---- scatters ----------------------------------------------------------------------------------------

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Result<Reduction> ReductionOf(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(std::string r, node.attrs().GetString("reduction", "none"));
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  return NodeError(node, "unknown reduction '" + r + "'");
}

bool IsND(const ir::Node& node) { return node.op_type() == "ScatterND"; }

Result<std::vector<ir::TensorType>> InferScatter(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 3, 3));
  const ir::TensorType& x = InputType(node, 0);
  const ir::TensorType& ind = InputType(node, 1);
  const ir::TensorType& upd = InputType(node, 2);
  KEEL_RETURN_IF_ERROR(CheckIndexDType(node, 1));
  KEEL_ASSIGN_OR_RETURN(Reduction red, ReductionOf(node));
  if (upd.dtype != x.dtype) return NodeError(node, "updates dtype differs from the data's");
  if (x.dtype == ir::DType::kBool && red != Reduction::kNone) return NodeUnsupported(node, "reductions on bool data");
  if (IsND(node)) {
    if (ind.shape.empty()) return NodeError(node, "indices must have rank >= 1");
    const int64_t k = ind.shape.back();
    if (k < 1 || k > static_cast<int64_t>(x.shape.size())) return NodeError(node, "indices' last dimension is out of range");
    std::vector<int64_t> want(ind.shape.begin(), ind.shape.end() - 1);
    want.insert(want.end(), x.shape.begin() + k, x.shape.end());
    if (upd.shape != want) return NodeError(node, "updates " + upd.ToString() + " should have shape " + ShapeString(want));
    KEEL_RETURN_IF_ERROR(CheckConstantIndices(node, 1, [&](int64_t i) { return x.shape[static_cast<size_t>(i % k)]; }));
  } else {
    KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
    if (ind.shape != upd.shape) return NodeError(node, "indices " + ind.ToString() + " and updates " + upd.ToString() + " differ in shape");
    if (ind.shape.size() != x.shape.size()) return NodeError(node, "indices and data differ in rank");
    for (size_t d = 0; d < x.shape.size(); ++d) {
      if (static_cast<int64_t>(d) != axis && ind.shape[d] > x.shape[d]) {
        return NodeError(node, "indices " + ind.ToString() + " exceed data " + x.ToString() + " on axis " + std::to_string(d));
      }
    }
    const int64_t dim = x.shape[static_cast<size_t>(axis)];
    KEEL_RETURN_IF_ERROR(CheckConstantIndices(node, 1, [dim](int64_t) { return dim; }));
  }
  return One(x);
}

Expr Combine(Reduction red, Expr old, Expr v) {
  switch (red) {
    case Reduction::kNone: return v;
    case Reduction::kAdd: return old + v;
    case Reduction::kMul: return old * v;
    case Reduction::kMax: return codegen::Max(old, v);
    case Reduction::kMin: return codegen::Min(old, v);
  }
  return v;
}

Result<Stmt> LowerScatter(codegen::LowerContext& ctx, const ir::Node& node, const codegen::StoreFn& store) {
  codegen::KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* data, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* ind, ctx.Input(node, 1));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* upd, ctx.Input(node, 2));
  KEEL_ASSIGN_OR_RETURN(Reduction red, ReductionOf(node));
  const std::vector<int64_t> shape = data->type.shape;
  const ir::DType ct = ComputeType(data->type.dtype);
  const int ws = k.AddWorkspace("scatter_acc", ct, shape);
  std::vector<Stmt> stmts;
  stmts.push_back(codegen::LoopNest(ctx, shape, [&](const std::vector<Expr>& idx) {
    return k.Store(ws, idx, codegen::Cast(data->at(idx), ct));
  }));
  // One serial loop over the update elements, in row-major order.
  const std::vector<int64_t> ushape = upd->type.shape;
  Expr u = k.NewVar("u");
  std::vector<Expr> ui = codegen::Delinearize(ushape, u);
  std::vector<Expr> target;
  Expr valid;
  auto add_index = [&](Expr g, int64_t dim) {
    g = codegen::Cast(g, ir::DType::kI64);
    Expr ok = IndexInRange(g, dim);
    valid = valid.is_null() ? ok : (valid && ok);
    target.push_back(WrapIndex(g, dim));
  };
  if (IsND(node)) {
    const size_t q = ind->type.shape.size();
    const int64_t kk = ind->type.shape.back();
    std::vector<Expr> lead(ui.begin(), ui.begin() + static_cast<int64_t>(q - 1));
    for (int64_t j = 0; j < kk; ++j) {
      std::vector<Expr> ii = lead;
      ii.push_back(Expr(j));
      add_index(ind->at(ii), shape[static_cast<size_t>(j)]);
    }
    target.insert(target.end(), ui.begin() + static_cast<int64_t>(q - 1), ui.end());
  } else {
    KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
    Expr g = ind->at(ui);
    for (size_t d = 0; d < shape.size(); ++d) {
      if (static_cast<int64_t>(d) == axis) {
        add_index(g, shape[d]);
      } else {
        target.push_back(ui[d]);
      }
    }
  }
  Expr v = Combine(red, k.Load(ws, target), codegen::Cast(upd->at(ui), ct));
  Stmt write = k.Store(ws, target, v);
  const int64_t nu = codegen::NumElements(ushape);
  if (nu > 0 && codegen::NumElements(shape) > 0) {
    stmts.push_back(codegen::For(u, 0, nu, codegen::LoopKind::kSerial, valid.is_null() ? write : codegen::If(valid, write)));
  }
  stmts.push_back(codegen::LoopNest(ctx, shape, [&](const std::vector<Expr>& idx) { return store(idx, k.Load(ws, idx)); }));
  return codegen::Block(std::move(stmts));
}

// The naive reference: the same algorithm on host tensors (integers stay exact).
Result<std::vector<ir::TensorDataPtr>> EvaluateScatter(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                       const std::vector<ir::TensorType>& out_types) {
  const ir::TensorData& data = *in[0];
  const ir::TensorData& ind = *in[1];
  const ir::TensorData& upd = *in[2];
  KEEL_ASSIGN_OR_RETURN(Reduction red, ReductionOf(node));
  auto out = NewTensor(out_types[0]);
  out->bytes = data.bytes;
  const std::vector<int64_t> shape = data.type.shape;
  const std::vector<int64_t> strides = Strides(shape);
  const std::vector<int64_t>& ushape = upd.type.shape;
  const bool is_float = IsFloatType(data.type.dtype);
  const int64_t nu = upd.type.NumElements();
  for (int64_t u = 0; u < nu; ++u) {
    std::vector<int64_t> ui(ushape.size());
    for (size_t d = ushape.size(), rest = static_cast<size_t>(u); d-- > 0;) {
      ui[d] = static_cast<int64_t>(rest) % ushape[d];
      rest /= static_cast<size_t>(ushape[d]);
    }
    std::vector<int64_t> target;
    bool valid = true;
    auto add = [&](int64_t g, int64_t dim) {
      if (g < -dim || g >= dim) valid = false;
      target.push_back(g < 0 ? g + dim : g);
    };
    if (IsND(node)) {
      const size_t q = ind.type.shape.size();
      const int64_t kk = ind.type.shape.back();
      int64_t base = 0;
      for (size_t d = 0; d + 1 < q; ++d) base = base * ind.type.shape[d] + ui[d];
      for (int64_t j = 0; j < kk; ++j) add(ElementAsInt(ind, base * kk + j), shape[static_cast<size_t>(j)]);
      target.insert(target.end(), ui.begin() + static_cast<int64_t>(q - 1), ui.end());
    } else {
      KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
      const int64_t g = ElementAsInt(ind, u);
      for (size_t d = 0; d < shape.size(); ++d) {
        if (static_cast<int64_t>(d) == axis) add(g, shape[d]);
        else target.push_back(ui[d]);
      }
    }
    if (!valid) continue;
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d) off += target[d] * strides[d];
    if (is_float) {
      const double a = ElementAsDouble(*out, off), b = ElementAsDouble(upd, u);
      double r = b;
      if (red == Reduction::kAdd) r = a + b;
      if (red == Reduction::kMul) r = a * b;
      if (red == Reduction::kMax) r = std::max(a, b);
      if (red == Reduction::kMin) r = std::min(a, b);
      StoreDouble(*out, off, r);
    } else {
      const int64_t a = ElementAsInt(*out, off), b = ElementAsInt(upd, u);
      int64_t r = b;
      if (red == Reduction::kAdd) r = static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
      if (red == Reduction::kMul) r = static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
      if (red == Reduction::kMax) r = std::max(a, b);
      if (red == Reduction::kMin) r = std::min(a, b);
      StoreInt(*out, off, r);
    }
  }
  return std::vector<ir::TensorDataPtr>{out};
}

OpDef ScatterDef(const std::string& name, std::vector<int> versions) {
  OpDef def;
  def.name = name;
  def.versions = std::move(versions);
  def.fusion = FusionClass::kAnchor;
  def.infer = InferScatter;
  def.evaluate = EvaluateScatter;
  def.kernel = [](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
    return LowerScatter(ctx, node, stores[0]);
  };
  return def;
}

}  // namespace

void RegisterMovementGatherScatterOps(Registry& r) {
  {
    OpDef def;
    def.name = "GatherElements";
    def.versions = {11, 13};
    def.fusion = FusionClass::kInjective;
    def.canonicalize = [](ir::Node& node) -> Status {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 2));
      return CanonicalizeAxisAttr(node, "axis", 0, static_cast<int64_t>(InputType(node, 0).shape.size()));
    };
    def.infer = InferGatherElements;
    def.injective = DefineGatherElements;
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "GatherND";
    def.versions = {11, 12, 13};
    def.fusion = FusionClass::kInjective;
    def.infer = InferGatherND;
    def.injective = DefineGatherND;
    r.Add(std::move(def));
  }
  auto axis_canon = [](ir::Node& node) -> Status {
    KEEL_RETURN_IF_ERROR(CheckArity(node, 3, 3));
    return CanonicalizeAxisAttr(node, "axis", 0, static_cast<int64_t>(InputType(node, 0).shape.size()));
  };
  {
    OpDef def = ScatterDef("ScatterElements", {11, 13, 16, 18});
    def.canonicalize = axis_canon;
    r.Add(std::move(def));
  }
  {
    // Deprecated since opset 11: ScatterElements without a reduction.
    OpDef def = ScatterDef("Scatter", {9, 11});
    def.canonicalize = axis_canon;
    r.Add(std::move(def));
  }
  {
    OpDef def = ScatterDef("ScatterND", {11, 13, 16, 18});
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
