// compiler/ops/movement_pad_tile.cc — injective ops that map each output
// element to (at most) one input element by per-axis index arithmetic: Pad,
// Expand, Tile, Trilu and ReverseSequence.
//
// Shape-deciding operands (pads, axes, Expand's shape, Tile's repeats) must be
// compile-time constants and are lifted into attributes; value operands (Pad's
// constant_value, Trilu's k, ReverseSequence's sequence_lens) may be run-time
// tensors. Reads are clamped in bounds and guarded with Select.
#include <algorithm>

#include "compiler/ops/movement_util.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using codegen::Expr;
using codegen::TensorFn;

// ---- Pad ------------------------------------------------------------------------------
// Canonical: input 0 = data, input 2 = constant_value (optional, run-time),
// attributes pads (begin..., end... for every axis), mode, value (opset < 11).

Status NormalizePad(ir::Node& node, int version) {
  if (version < 2 && node.attrs().Has("paddings")) {
    KEEL_ASSIGN_OR_RETURN(auto p, node.attrs().GetInts("paddings", {}));
    node.attrs().Set("pads", p);
    node.attrs().Erase("paddings");
  }
  return Status::Ok();
}

Status CanonicalizePad(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 4));
  KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 3, "axes"));
  KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 1, "pads"));
  if (HasInput(node, 1)) return NeedsConstant(node, 1, "the pads decide the output shape");
  if (HasInput(node, 3)) return NeedsConstant(node, 3, "the padded axes decide the output shape");
  if (!node.attrs().Has("pads")) return NodeError(node, "pads are required");
  const int64_t rank = static_cast<int64_t>(InputType(node, 0).shape.size());
  KEEL_ASSIGN_OR_RETURN(auto pads, node.attrs().GetInts("pads", {}));
  if (node.attrs().Has("axes")) {
    KEEL_ASSIGN_OR_RETURN(auto axes, node.attrs().GetInts("axes", {}));
    if (pads.size() != 2 * axes.size()) {
      return NodeError(node, "pads " + ShapeString(pads) + " need 2 values per axis of " + ShapeString(axes));
    }
    std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (size_t i = 0; i < axes.size(); ++i) {
      KEEL_ASSIGN_OR_RETURN(int64_t a, NormalizeAxis(node, axes[i], rank, "axis"));
      if (seen[static_cast<size_t>(a)]) return NodeError(node, "axes " + ShapeString(axes) + " repeat an axis");
      seen[static_cast<size_t>(a)] = true;
      full[static_cast<size_t>(a)] = pads[i];
      full[static_cast<size_t>(a + rank)] = pads[i + axes.size()];
    }
    node.attrs().Set("pads", full);
    node.attrs().Erase("axes");
    pads = full;
  }
  if (static_cast<int64_t>(pads.size()) != 2 * rank) {
    return NodeError(node, "pads " + ShapeString(pads) + " need 2 values per axis (rank " + std::to_string(rank) + ")");
  }
  KEEL_ASSIGN_OR_RETURN(std::string mode, node.attrs().GetString("mode", "constant"));
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    return NodeUnsupported(node, "pad mode '" + mode + "'");
  }
  node.attrs().Set("mode", mode);
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferPad(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 3));
  const ir::TensorType& x = InputType(node, 0);
  KEEL_ASSIGN_OR_RETURN(auto pads, node.attrs().GetInts("pads", {}));
  KEEL_ASSIGN_OR_RETURN(std::string mode, node.attrs().GetString("mode", "constant"));
  const size_t rank = x.shape.size();
  if (pads.size() != 2 * rank) {
    return NodeError(node, "pads " + ShapeString(pads) + " must hold 2 x " + std::to_string(rank) + " values");
  }
  std::vector<int64_t> out(rank);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t p0 = pads[d], p1 = pads[d + rank];
    if (std::abs(p0) > kMaxElements || std::abs(p1) > kMaxElements) return NodeError(node, "pads are absurdly large");
    out[d] = x.shape[d] + p0 + p1;
    if (out[d] < 0) return NodeError(node, "pads " + ShapeString(pads) + " remove more than axis " + std::to_string(d) + " holds");
    if (mode != "constant" && x.shape[d] == 0 && out[d] > 0) {
      return NodeError(node, "mode '" + mode + "' cannot pad the empty axis " + std::to_string(d));
    }
  }
  if (HasInput(node, 2)) {
    const ir::TensorType& v = InputType(node, 2);
    if (v.NumElements() != 1) return NodeError(node, "constant_value must hold one value, got " + v.ToString());
    if (v.dtype != x.dtype) return NodeError(node, "constant_value dtype differs from the data's");
  }
  return One({x.dtype, out});
}

Status DefinePad(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* in, ctx.Input(node, 0));
  const TensorFn* cv = nullptr;
  if (HasInput(node, 2)) { KEEL_ASSIGN_OR_RETURN(cv, ctx.Input(node, 2)); }
  KEEL_ASSIGN_OR_RETURN(auto pads, node.attrs().GetInts("pads", {}));
  KEEL_ASSIGN_OR_RETURN(std::string mode, node.attrs().GetString("mode", "constant"));
  KEEL_ASSIGN_OR_RETURN(double value, node.attrs().GetFloat("value", 0.0));
  const std::vector<int64_t> ishape = in->type.shape;
  const ir::DType dt = in->type.dtype;
  const size_t rank = ishape.size();
  const bool empty_input = codegen::NumElements(ishape) == 0;
  TensorFn fn;
  fn.type = node.output(0)->type();
  fn.at = [=](const std::vector<Expr>& idx) -> Expr {
    Expr fill = cv ? codegen::Cast(cv->at(std::vector<Expr>(cv->type.shape.size(), Expr(0))), dt) : TypedConst(value, dt);
    if (empty_input) return fill;  // every output element is padding
    std::vector<Expr> src(rank);
    Expr inside;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t dim = ishape[d];
      Expr s = idx[d] - pads[d];
      if (pads[d] == 0 && pads[d + rank] <= 0) {
        src[d] = s;  // no padding on this axis: always inside
        continue;
      }
      if (mode == "constant") {
        Expr ok = (s >= 0) && (s < dim);
        inside = inside.is_null() ? ok : (inside && ok);
        src[d] = codegen::Clamp(s, 0, dim - 1);
      } else if (mode == "edge") {
        src[d] = codegen::Clamp(s, 0, dim - 1);
      } else if (mode == "wrap") {
        src[d] = codegen::Clamp(((s % dim) + dim) % dim, 0, dim - 1);
      } else {  // reflect: mirror without repeating the edge element (period 2*(dim-1))
        if (dim == 1) {
          src[d] = Expr(0);
        } else {
          const int64_t p = 2 * (dim - 1);
          Expr m = ((s % p) + p) % p;
          src[d] = codegen::Clamp(codegen::Select(m < dim, m, p - m), 0, dim - 1);
        }
      }
    }
    Expr v = in->at(src);
    return inside.is_null() ? v : codegen::Select(inside, v, fill);
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

// ---- Expand ------------------------------------------------------------------------------

Result<std::vector<ir::TensorType>> InferExpand(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  KEEL_ASSIGN_OR_RETURN(auto shape, node.attrs().GetInts("shape", {}));
  for (int64_t d : shape) {
    if (d < 0) return NodeError(node, "shape " + ShapeString(shape) + " has a negative dimension");
  }
  auto out = BroadcastShapes(x.shape, shape);
  if (!out.ok()) return NodeError(node, out.status().message());
  return One({x.dtype, *out});
}

Status DefineBroadcast(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* in, ctx.Input(node, 0));
  TensorFn fn;
  fn.type = node.output(0)->type();
  const std::vector<int64_t> out = fn.type.shape;
  fn.at = [in, out](const std::vector<Expr>& idx) { return in->at(codegen::BroadcastIndex(out, in->type.shape, idx)); };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

// ---- Tile ----------------------------------------------------------------------------------

Result<std::vector<ir::TensorType>> InferTile(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  KEEL_ASSIGN_OR_RETURN(auto reps, node.attrs().GetInts("repeats", {}));
  if (reps.size() != x.shape.size()) {
    return NodeError(node, "repeats " + ShapeString(reps) + " do not have the input's rank " + std::to_string(x.shape.size()));
  }
  std::vector<int64_t> out(reps.size());
  for (size_t d = 0; d < reps.size(); ++d) {
    if (reps[d] < 0) return NodeError(node, "repeats " + ShapeString(reps) + " has a negative value");
    if (x.shape[d] != 0 && reps[d] > kMaxElements / x.shape[d]) return NodeError(node, "repeats are absurdly large");
    out[d] = x.shape[d] * reps[d];
  }
  KEEL_RETURN_IF_ERROR(CheckedElements(node, out).status());
  return One({x.dtype, out});
}

Status DefineTile(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* in, ctx.Input(node, 0));
  TensorFn fn;
  fn.type = node.output(0)->type();
  fn.at = [in](const std::vector<Expr>& idx) {
    std::vector<Expr> r(idx.size());
    for (size_t d = 0; d < idx.size(); ++d) {
      const int64_t dim = in->type.shape[d];
      // (dim 0: the output is empty too and nothing is read.)
      r[d] = dim <= 1 ? Expr(0) : codegen::Clamp(idx[d] % dim, 0, dim - 1);
    }
    return in->at(r);
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

// ---- Trilu ---------------------------------------------------------------------------------
// Keeps the elements with j - i >= k (upper) or j - i <= k (lower) of the last
// two axes; k is attribute "k" when constant, otherwise read from input 1.

Result<std::vector<ir::TensorType>> InferTrilu(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 2));
  const ir::TensorType& x = InputType(node, 0);
  if (x.shape.size() < 2) return NodeError(node, "input " + x.ToString() + " has rank < 2");
  if (HasInput(node, 1) && InputType(node, 1).NumElements() != 1) return NodeError(node, "k must hold one value");
  return One(x);
}

Status DefineTrilu(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* in, ctx.Input(node, 0));
  const TensorFn* kin = nullptr;
  if (HasInput(node, 1)) { KEEL_ASSIGN_OR_RETURN(kin, ctx.Input(node, 1)); }
  KEEL_ASSIGN_OR_RETURN(int64_t kc, node.attrs().GetInt("k", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t upper, node.attrs().GetInt("upper", 1));
  TensorFn fn;
  fn.type = node.output(0)->type();
  const ir::DType dt = fn.type.dtype;
  fn.at = [in, kin, kc, upper, dt](const std::vector<Expr>& idx) {
    const size_t r = idx.size();
    Expr k = kin ? codegen::Cast(kin->at(std::vector<Expr>(kin->type.shape.size(), Expr(0))), ir::DType::kI64) : Expr(kc);
    Expr diff = idx[r - 1] - idx[r - 2];
    Expr keep = upper ? diff >= k : diff <= k;
    return codegen::Select(keep, in->at(idx), TypedConst(0, dt));
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

// ---- ReverseSequence -------------------------------------------------------------------------

Result<std::vector<ir::TensorType>> InferReverseSequence(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 2));
  const ir::TensorType& x = InputType(node, 0);
  KEEL_RETURN_IF_ERROR(CheckIndexDType(node, 1));
  KEEL_ASSIGN_OR_RETURN(int64_t batch, node.attrs().GetInt("batch_axis", 1));
  KEEL_ASSIGN_OR_RETURN(int64_t time, node.attrs().GetInt("time_axis", 0));
  if (batch == time) return NodeError(node, "batch_axis and time_axis are the same axis");
  const ir::TensorType& lens = InputType(node, 1);
  if (lens.shape.size() != 1 || lens.shape[0] != x.shape[static_cast<size_t>(batch)]) {
    return NodeError(node, "sequence_lens " + lens.ToString() + " does not match the batch axis of " + x.ToString());
  }
  return One(x);
}

Status DefineReverseSequence(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* in, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* lens, ctx.Input(node, 1));
  KEEL_ASSIGN_OR_RETURN(int64_t batch, node.attrs().GetInt("batch_axis", 1));
  KEEL_ASSIGN_OR_RETURN(int64_t time, node.attrs().GetInt("time_axis", 0));
  TensorFn fn;
  fn.type = node.output(0)->type();
  const int64_t T = in->type.shape[static_cast<size_t>(time)];
  fn.at = [in, lens, batch, time, T](const std::vector<Expr>& idx) {
    const Expr t = idx[static_cast<size_t>(time)];
    // Lengths outside [0, T] are clamped (never read out of bounds).
    Expr len = codegen::Clamp(codegen::Cast(lens->at({idx[static_cast<size_t>(batch)]}), ir::DType::kI64), 0, T);
    std::vector<Expr> src = idx;
    src[static_cast<size_t>(time)] = codegen::Select(t < len, codegen::Clamp(len - 1 - t, 0, T - 1), t);
    return in->at(src);
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

}  // namespace

void RegisterMovementPadTileOps(Registry& r) {
  {
    OpDef def = InjectiveOp("Pad", {1, 2, 11, 13, 18, 19, 21, 23, 24, 25});
    def.normalize = NormalizePad;
    def.pads_input = true;
    def.canonicalize = CanonicalizePad;
    def.infer = InferPad;
    def.injective = DefinePad;
    // Layout: padding transposed inputs pads the moved axes (canonical pads only).
    def.permute_axes = [](ir::Node& node, const std::vector<int64_t>& perm) -> Result<bool> {
      if (node.attrs().Has("axes") || HasInput(node, 1)) return false;
      KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> pads, node.attrs().GetInts("pads", {}));
      if (pads.size() != 2 * perm.size()) return false;
      PermuteAxisValues(pads, perm);
      node.attrs().Set("pads", pads);
      return true;
    };
    r.Add(std::move(def));
  }
  {
    OpDef def = InjectiveOp("Expand", {8, 13});
    def.canonicalize = [](ir::Node& node) -> Status {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 2));
      KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 1, "shape"));
      if (HasInput(node, 1)) return NeedsConstant(node, 1, "the target shape");
      if (!node.attrs().Has("shape")) return NodeError(node, "the shape input is required");
      return Status::Ok();
    };
    def.infer = InferExpand;
    def.injective = DefineBroadcast;
    r.Add(std::move(def));
  }
  {
    OpDef def = InjectiveOp("Tile", {1, 6, 13});
    def.supported = {6, 13};
    def.canonicalize = [](ir::Node& node) -> Status {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 2));
      KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 1, "repeats"));
      if (HasInput(node, 1)) return NeedsConstant(node, 1, "the repeats decide the output shape");
      if (!node.attrs().Has("repeats")) return NodeError(node, "the repeats input is required");
      return Status::Ok();
    };
    def.infer = InferTile;
    def.injective = DefineTile;
    r.Add(std::move(def));
  }
  {
    OpDef def = InjectiveOp("Trilu", {14});
    def.canonicalize = [](ir::Node& node) -> Status {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 2));
      if (const ir::TensorData* k = ConstantInput(node, 1)) {
        KEEL_ASSIGN_OR_RETURN(auto ks, ReadInts(*k));
        if (ks.size() != 1) return NodeError(node, "k must hold one value");
        node.attrs().Set("k", ks[0]);
        node.SetInput(1, nullptr);
        TrimTrailingNulls(node);
      }
      KEEL_ASSIGN_OR_RETURN(int64_t upper, node.attrs().GetInt("upper", 1));
      node.attrs().Set("upper", upper != 0 ? int64_t{1} : int64_t{0});
      return Status::Ok();
    };
    def.infer = InferTrilu;
    def.injective = DefineTrilu;
    r.Add(std::move(def));
  }
  {
    OpDef def = InjectiveOp("ReverseSequence", {10, 28});
    def.canonicalize = [](ir::Node& node) -> Status {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 2));
      const int64_t rank = static_cast<int64_t>(InputType(node, 0).shape.size());
      if (rank < 2) return NodeError(node, "input has rank < 2");
      KEEL_RETURN_IF_ERROR(CanonicalizeAxisAttr(node, "batch_axis", 1, rank));
      return CanonicalizeAxisAttr(node, "time_axis", 0, rank);
    };
    def.infer = InferReverseSequence;
    def.injective = DefineReverseSequence;
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
