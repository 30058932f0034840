// compiler/codegen/lower_pool.cc — MaxPool, AveragePool (2-D, NCHW; pads,
// strides, dilations, ceil_mode, count_include_pad) and GlobalAveragePool.
// Pools are memory-bound and small next to convolutions: a direct kernel,
// parallel over output rows, with clamped-and-guarded window reads.
#include <limits>

#include "compiler/codegen/lower_ops.h"

namespace keel::codegen {

Result<Stmt> LowerPool(LowerContext& ctx, const ir::Node& node, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  const ir::Attributes& at = node.attrs();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Xp, ctx.Input(node, 0));
  TensorFn X = *Xp;
  const std::vector<int64_t>& xs = X.type.shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  if (xs.size() != 4 || os.size() != 4) return Unsupported(NodeLabel(node) + ": only 2-D pooling is supported");
  if (!IsFloat(X.type.dtype)) return Unsupported(NodeLabel(node) + ": pooling on " + ir::DTypeName(X.type.dtype));
  KEEL_ASSIGN_OR_RETURN(auto kernel, at.GetInts("kernel_shape", {}));
  KEEL_ASSIGN_OR_RETURN(auto strides, at.GetInts("strides", {1, 1}));
  KEEL_ASSIGN_OR_RETURN(auto pads, at.GetInts("pads", {0, 0, 0, 0}));
  KEEL_ASSIGN_OR_RETURN(auto dil, at.GetInts("dilations", {1, 1}));
  KEEL_ASSIGN_OR_RETURN(int64_t cip, at.GetInt("count_include_pad", 0));
  if (kernel.size() != 2 || strides.size() != 2 || pads.size() != 4 || dil.size() != 2)
    return InvalidArgument(NodeLabel(node) + ": malformed window attributes");
  const bool is_max = node.op_type() == "MaxPool";
  const int64_t H = xs[2], W = xs[3], OH = os[2], OW = os[3], C = xs[1];
  const int64_t rows = xs[0] * C * OH;
  int acc = k.AddLocal("pool_acc", DType::kF32, {2});  // [value, count]
  Expr r = k.NewVar("r"), ow = k.NewVar("ow"), kh = k.NewVar("kh"), kw = k.NewVar("kw");
  Expr b = r / (C * OH), c = (r / OH) % C, oh = r % OH;
  Expr ih = oh * strides[0] - pads[0] + kh * dil[0], iw = ow * strides[1] - pads[1] + kw * dil[1];
  Expr inside = (ih >= 0) && (ih < H) && (iw >= 0) && (iw < W);
  Expr x = Cast(X.at({b, c, Clamp(ih, 0, H - 1), Clamp(iw, 0, W - 1)}), DType::kF32);
  Expr value = k.Load(acc, {Expr(0)}), count = k.Load(acc, {Expr(1)});
  Stmt update;
  if (is_max) {
    update = k.Store(acc, {Expr(0)}, Select(inside, Max(value, x), value));
  } else {
    // count_include_pad counts padded positions, never positions past the pads (ceil_mode overhang).
    Expr counted = cip ? (ih < H + pads[2]) && (iw < W + pads[3]) : inside;
    update = Block({k.Store(acc, {Expr(0)}, value + Select(inside, x, FloatConst(0))),
                    k.Store(acc, {Expr(1)}, count + Select(counted, FloatConst(1), FloatConst(0)))});
  }
  Stmt window = For(kh, 0, kernel[0], LoopKind::kSerial, For(kw, 0, kernel[1], LoopKind::kSerial, update));
  Expr result = is_max ? value : value / Max(count, FloatConst(1));
  Stmt per_out = Block({k.Store(acc, {Expr(0)}, FloatConst(is_max ? -std::numeric_limits<double>::infinity() : 0.0)),
                        k.Store(acc, {Expr(1)}, FloatConst(0)), window, store({b, c, oh, ow}, result)});
  bool par = rows > 1 && rows * OW >= ctx.options().min_parallel_elements / 4;
  return For(r, 0, rows, par ? LoopKind::kParallel : LoopKind::kSerial, For(ow, 0, OW, LoopKind::kSerial, per_out));
}

Result<Stmt> LowerGlobalAveragePool(LowerContext& ctx, const ir::Node& node, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Xp, ctx.Input(node, 0));
  TensorFn X = *Xp;
  const std::vector<int64_t>& xs = X.type.shape;
  if (xs.size() < 3) return InvalidArgument(NodeLabel(node) + ": input rank < 3");
  if (!IsFloat(X.type.dtype)) return Unsupported(NodeLabel(node) + ": pooling on " + ir::DTypeName(X.type.dtype));
  std::vector<int64_t> spatial(xs.begin() + 2, xs.end());
  const int64_t S = NumElements(spatial), BC = xs[0] * xs[1];
  int acc = k.AddLocal("gap_acc", DType::kF32, {1});
  Expr r = k.NewVar("r"), s = k.NewVar("s");
  Expr x;
  if (X.buffer >= 0) {
    int view = k.AddArgView(k.buffer(X.buffer).arg_index, "x_flat", {BC, S});
    x = k.Load(view, {r, s});
  } else {
    std::vector<Expr> idx = {r / xs[1], r % xs[1]};
    for (const Expr& e : Delinearize(spatial, s)) idx.push_back(e);
    x = X.at(idx);
  }
  std::vector<Expr> out_idx = {r / xs[1], r % xs[1]};
  for (size_t i = 0; i < spatial.size(); ++i) out_idx.push_back(Expr(0));
  Expr sum = k.Load(acc, {Expr(0)});
  Stmt body = Block({k.Store(acc, {Expr(0)}, FloatConst(0)),
                     For(s, 0, S, LoopKind::kSerial, k.Store(acc, {Expr(0)}, sum + Cast(x, DType::kF32))),
                     store(out_idx, sum / FloatConst(static_cast<double>(S)))});
  bool par = BC > 1 && BC * S >= ctx.options().min_parallel_elements;
  return For(r, 0, BC, par ? LoopKind::kParallel : LoopKind::kSerial, body);
}

}  // namespace keel::codegen
