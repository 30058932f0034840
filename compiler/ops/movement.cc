// compiler/ops/movement.cc — data movement that is an index function of its
// inputs: Transpose, Slice, Gather, Concat. Each is defined once, by its
// lowering (an output index -> input index map, reads clamped in bounds), which
// the code generators inline into their consumers and the reference
// interpreter executes.
#include <algorithm>

#include "compiler/ops/op_util.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using codegen::Expr;
using codegen::TensorFn;

Result<std::vector<ir::TensorType>> InferTranspose(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  KEEL_ASSIGN_OR_RETURN(auto perm, node.attrs().GetInts("perm", {}));
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (static_cast<int64_t>(perm.size()) != rank) {
    return NodeError(node, "perm " + ShapeString(perm) + " does not have the input's rank " + std::to_string(rank));
  }
  std::vector<int64_t> out(perm.size());
  std::vector<bool> seen(perm.size(), false);
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= rank || seen[static_cast<size_t>(perm[i])]) {
      return NodeError(node, "perm " + ShapeString(perm) + " is not a permutation");
    }
    seen[static_cast<size_t>(perm[i])] = true;
    out[i] = x.shape[static_cast<size_t>(perm[i])];
  }
  return One({x.dtype, out});
}

Status DefineTranspose(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* in, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(auto perm, node.attrs().GetInts("perm", {}));
  TensorFn fn;
  fn.type = node.output(0)->type();
  fn.at = [in, perm](const std::vector<Expr>& idx) {
    std::vector<Expr> r(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) r[static_cast<size_t>(perm[i])] = idx[i];
    return in->at(r);
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

// Slice's parameters are inputs since opset 10 (attributes before); canonical:
// one entry per sliced axis in starts/ends/axes/steps, clamped to the ONNX
// effective range, so element i of axis a is start + i*step.
Status CanonicalizeSlice(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 4, "steps"));
  KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 3, "axes"));
  KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 2, "ends"));
  KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 1, "starts"));
  for (size_t i = 1; i < node.inputs().size(); ++i) {
    if (HasInput(node, i)) return NeedsConstant(node, i, "slice parameters decide the output shape");
  }
  ir::Attributes& a = node.attrs();
  // Clamped values are final (a negative step's end of -1 means "before index 0",
  // not "the last element"): canonicalize once.
  if (a.Has("keel.clamped")) return Status::Ok();
  if (!a.Has("starts") || !a.Has("ends")) return NodeError(node, "starts and ends are required");
  const ir::TensorType& x = InputType(node, 0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  KEEL_ASSIGN_OR_RETURN(auto starts, a.GetInts("starts", {}));
  KEEL_ASSIGN_OR_RETURN(auto ends, a.GetInts("ends", {}));
  std::vector<int64_t> def_axes(starts.size());
  for (size_t i = 0; i < def_axes.size(); ++i) def_axes[i] = static_cast<int64_t>(i);
  KEEL_ASSIGN_OR_RETURN(auto axes, a.GetInts("axes", def_axes));
  KEEL_ASSIGN_OR_RETURN(auto steps, a.GetInts("steps", std::vector<int64_t>(starts.size(), 1)));
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
    return NodeError(node, "starts/ends/axes/steps have different lengths");
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    KEEL_ASSIGN_OR_RETURN(axes[i], NormalizeAxis(node, axes[i], rank, "axis"));
    if (seen[static_cast<size_t>(axes[i])]) return NodeError(node, "axis " + std::to_string(axes[i]) + " is sliced twice");
    seen[static_cast<size_t>(axes[i])] = true;
    const int64_t dim = x.shape[static_cast<size_t>(axes[i])];
    if (steps[i] == 0) return NodeError(node, "step 0 on axis " + std::to_string(axes[i]));
    int64_t s = starts[i], e = ends[i];
    // Clamp before adding dim so that huge values cannot overflow.
    s = std::clamp<int64_t>(s, -dim - 1, dim + 1);
    e = std::clamp<int64_t>(e, -dim - 1, dim + 1);
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (steps[i] > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    starts[i] = s;
    ends[i] = e;
  }
  a.Set("starts", starts);
  a.Set("ends", ends);
  a.Set("axes", axes);
  a.Set("steps", steps);
  a.Set("keel.clamped", int64_t{1});
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferSlice(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  const ir::Attributes& a = node.attrs();
  KEEL_ASSIGN_OR_RETURN(auto starts, a.GetInts("starts", {}));
  KEEL_ASSIGN_OR_RETURN(auto ends, a.GetInts("ends", {}));
  KEEL_ASSIGN_OR_RETURN(auto axes, a.GetInts("axes", {}));
  KEEL_ASSIGN_OR_RETURN(auto steps, a.GetInts("steps", {}));
  std::vector<int64_t> out = x.shape;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t step = steps[i];
    // Overflow-free trip count of the clamped range.
    const int64_t span = step > 0 ? ends[i] - starts[i] : starts[i] - ends[i];
    const int64_t len = span <= 0 ? 0 : (span - 1) / (step > 0 ? step : -step) + 1;
    out[static_cast<size_t>(axes[i])] = len;
  }
  return One({x.dtype, out});
}

// A canonical Slice as a view: each sliced axis keeps its output length of
// elements start, start+step, ...
std::optional<StridedView> SliceAsView(const ir::Node& node, const StridedView& in) {
  const ir::Attributes& a = node.attrs();
  auto starts = a.GetInts("starts", {});
  auto axes = a.GetInts("axes", {});
  auto steps = a.GetInts("steps", {});
  if (!starts.ok() || !axes.ok() || !steps.ok() || !node.output(0)->has_type()) return std::nullopt;
  const std::vector<int64_t>& out = node.output(0)->type().shape;
  std::optional<StridedView> v = in;
  for (size_t i = 0; i < axes->size() && v; ++i) {
    const int64_t axis = (*axes)[i];
    v = SliceView(*v, axis, (*starts)[i], out[static_cast<size_t>(axis)], (*steps)[i]);
  }
  return v;
}

Status DefineSlice(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* in, ctx.Input(node, 0));
  const ir::Attributes& a = node.attrs();
  KEEL_ASSIGN_OR_RETURN(auto starts, a.GetInts("starts", {}));
  KEEL_ASSIGN_OR_RETURN(auto axes, a.GetInts("axes", {}));
  KEEL_ASSIGN_OR_RETURN(auto steps, a.GetInts("steps", {}));
  const std::vector<int64_t> ishape = in->type.shape;
  std::vector<int64_t> start(ishape.size(), 0), step(ishape.size(), 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    start[static_cast<size_t>(axes[i])] = starts[i];
    step[static_cast<size_t>(axes[i])] = steps[i];
  }
  TensorFn fn;
  fn.type = node.output(0)->type();
  fn.at = [in, start, step, ishape](const std::vector<Expr>& idx) {
    std::vector<Expr> r(idx.size());
    for (size_t i = 0; i < idx.size(); ++i) r[i] = codegen::Clamp(start[i] + idx[i] * step[i], 0, ishape[i] - 1);
    return in->at(r);
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferGather(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 2));
  const ir::TensorType& x = InputType(node, 0);
  const ir::TensorType& ind = InputType(node, 1);
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  if (ind.dtype != ir::DType::kI64 && ind.dtype != ir::DType::kI32) {
    return NodeError(node, std::string("indices must be i32 or i64, got ") + ir::DTypeName(ind.dtype));
  }
  std::vector<int64_t> out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), ind.shape.begin(), ind.shape.end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  // Constant indices are checked here, where the model is wrong, not at run time.
  if (const ir::TensorData* c = ConstantInput(node, 1)) {
    const int64_t dim = x.shape[static_cast<size_t>(axis)];
    KEEL_ASSIGN_OR_RETURN(auto values, ReadInts(*c));
    for (int64_t v : values) {
      if (v < -dim || v >= dim) {
        return NodeError(node, "index " + std::to_string(v) + " is out of range for axis " + std::to_string(axis) +
                                   " of size " + std::to_string(dim));
      }
    }
  }
  return One({x.dtype, out});
}

Status DefineGather(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* in, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* ind, ctx.Input(node, 1));
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  const size_t r = ind->type.shape.size();
  const int64_t dim = in->type.shape[static_cast<size_t>(axis)];
  TensorFn fn;
  fn.type = node.output(0)->type();
  fn.at = [in, ind, axis, r, dim](const std::vector<Expr>& idx) {
    std::vector<Expr> ii(idx.begin() + axis, idx.begin() + axis + static_cast<int64_t>(r));
    Expr g = codegen::Cast(ind->at(ii), ir::DType::kI64);
    // Negative indices count from the end; run-time indices out of range are
    // clamped (never read out of bounds; constant ones were refused at compile time).
    g = codegen::Clamp(codegen::Select(g < 0, g + dim, g), 0, dim - 1);
    std::vector<Expr> src(idx.begin(), idx.begin() + axis);
    src.push_back(g);
    src.insert(src.end(), idx.begin() + axis + static_cast<int64_t>(r), idx.end());
    return in->at(src);
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferConcat(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, node.inputs().size()));
  const ir::TensorType& x = InputType(node, 0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  std::vector<int64_t> out = x.shape;
  for (size_t i = 1; i < node.inputs().size(); ++i) {
    if (!HasInput(node, i)) return NodeError(node, "input " + std::to_string(i) + " is missing");
    const ir::TensorType& t = InputType(node, i);
    if (t.shape.size() != x.shape.size()) {
      return NodeError(node, "input " + std::to_string(i) + " has rank " + std::to_string(t.shape.size()) +
                                 ", input 0 has rank " + std::to_string(rank));
    }
    if (t.dtype != x.dtype) {
      return NodeError(node, "input dtypes differ: input 0 is " + x.ToString() + ", input " + std::to_string(i) +
                                 " is " + t.ToString());
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && t.shape[static_cast<size_t>(d)] != x.shape[static_cast<size_t>(d)]) {
        return NodeError(node, "input " + std::to_string(i) + " " + t.ToString() + " does not match " + x.ToString() +
                                   " outside axis " + std::to_string(axis));
      }
    }
    out[static_cast<size_t>(axis)] += t.shape[static_cast<size_t>(axis)];
  }
  return One({x.dtype, out});
}

Status DefineConcat(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  std::vector<const TensorFn*> parts;
  for (size_t i = 0; i < node.inputs().size(); ++i) {
    KEEL_ASSIGN_OR_RETURN(const TensorFn* p, ctx.Input(node, i));
    parts.push_back(p);
  }
  const size_t ax = static_cast<size_t>(axis);
  TensorFn fn;
  fn.type = node.output(0)->type();
  const ir::DType dt = fn.type.dtype;
  fn.at = [parts, ax, dt](const std::vector<Expr>& idx) {
    // Select chain from the last part down; every read is clamped in bounds.
    std::vector<int64_t> offsets;
    int64_t off = 0;
    for (const TensorFn* p : parts) {
      offsets.push_back(off);
      off += p->type.shape[ax];
    }
    Expr result;
    for (size_t i = parts.size(); i-- > 0;) {
      const int64_t d = parts[i]->type.shape[ax];
      if (d == 0) continue;
      std::vector<Expr> pi = idx;
      pi[ax] = codegen::Clamp(idx[ax] - offsets[i], 0, d - 1);
      Expr v = codegen::Cast(parts[i]->at(pi), dt);
      result = result.is_null() ? v : codegen::Select(idx[ax] < offsets[i] + d, v, result);
    }
    return result.is_null() ? codegen::IntConst(0, dt) : result;
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

}  // namespace

void RegisterMovementOps(Registry& r) {
  {
    OpDef def = InjectiveOp("Transpose", {1, 13, 21, 23, 24, 25});
    def.canonicalize = [](ir::Node& node) -> Status {
      const int64_t rank = static_cast<int64_t>(InputType(node, 0).shape.size());
      if (!node.attrs().Has("perm")) {
        std::vector<int64_t> perm(static_cast<size_t>(rank));
        for (int64_t i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = rank - 1 - i;
        node.attrs().Set("perm", perm);
      }
      return CanonicalizeAxesAttr(node, "perm", rank, false);
    };
    def.infer = InferTranspose;
    def.injective = DefineTranspose;
    def.permutes_axes = true;
    def.strided_view = [](const ir::Node& node, const StridedView& in) -> std::optional<StridedView> {
      auto perm = node.attrs().GetInts("perm", {});
      if (!perm.ok()) return std::nullopt;
      return PermuteView(in, *perm);
    };
    r.Add(std::move(def));
  }
  {
    OpDef def = InjectiveOp("Slice", {1, 10, 11, 13});
    def.canonicalize = CanonicalizeSlice;
    def.infer = InferSlice;
    def.injective = DefineSlice;
    def.strided_view = SliceAsView;
    // Slicing a transposed input along axes[i] is slicing the input along perm[axes[i]]
    // (the canonical form lists its axes).
    def.permute_axes = [](ir::Node& node, const std::vector<int64_t>& perm) -> Result<bool> {
      KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> axes, node.attrs().GetInts("axes", {}));
      if (axes.empty()) return false;
      for (int64_t& a : axes) {
        if (a < 0 || a >= static_cast<int64_t>(perm.size())) return false;
        a = perm[static_cast<size_t>(a)];
      }
      node.attrs().Set("axes", axes);
      return true;
    };
    r.Add(std::move(def));
  }
  {
    OpDef def = InjectiveOp("Gather", {1, 11, 13});
    def.canonicalize = [](ir::Node& node) -> Status {
      return CanonicalizeAxisAttr(node, "axis", 0, static_cast<int64_t>(InputType(node, 0).shape.size()));
    };
    def.infer = InferGather;
    def.injective = DefineGather;
    r.Add(std::move(def));
  }
  {
    OpDef def = InjectiveOp("Concat", {1, 4, 11, 13});
    def.canonicalize = [](ir::Node& node) -> Status {
      return CanonicalizeAxisAttr(node, "axis", 0, static_cast<int64_t>(InputType(node, 0).shape.size()));
    };
    def.infer = InferConcat;
    def.injective = DefineConcat;
    def.concatenates = true;
    // Joining transposed inputs along `axis` is joining the inputs along perm[axis].
    def.permute_axes = [](ir::Node& node, const std::vector<int64_t>& perm) -> Result<bool> {
      KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
      node.attrs().Set("axis", perm[static_cast<size_t>(axis)]);
      return true;
    };
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
