// compiler/codegen/lower_deform_conv.cc — DeformConv (ONNX opset 19), 2-D:
// a convolution whose taps sample the input at learned offsets (and masks),
// lowered as a direct loop nest (internal to compiler/codegen; declared in
// lower_ops.h). Kept apart from lower_conv.cc's GEMM forms: it shares only the
// window attributes (ReadWindow, lower_conv_direct.h).
#include <algorithm>

#include "compiler/codegen/lower_conv_direct.h"

namespace keel::codegen {

// DeformConv (2-D): one output row (n, oc, i) per parallel iteration; per
// output column, input channel of the group and tap: the tap's offset and
// mask, then a bilinear sample of four clamped-and-guarded reads (zeros
// outside the image). Sample coordinates are clamped to [-2, size + 1] before
// the integer conversion (a wild offset reads zeros, never out of bounds).
Result<Stmt> LowerDeformConv(LowerContext& ctx, const ir::Node& node, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  const ir::Attributes& at = node.attrs();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Xp, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Wp, ctx.Input(node, 1));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Op, ctx.Input(node, 2));
  const TensorFn* bias = nullptr;
  const TensorFn* mask = nullptr;
  if (node.inputs().size() > 3 && node.input(3)) { KEEL_ASSIGN_OR_RETURN(bias, ctx.Input(node, 3)); }
  if (node.inputs().size() > 4 && node.input(4)) { KEEL_ASSIGN_OR_RETURN(mask, ctx.Input(node, 4)); }
  const TensorFn X = *Xp, Wt = *Wp, Off = *Op;
  const std::vector<int64_t>& xs = X.type.shape;
  const std::vector<int64_t>& ws = Wt.type.shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  if (xs.size() != 4 || ws.size() != 4 || os.size() != 4)
    return Unsupported(NodeLabel(node) + ": only 2-D deformable convolution is supported");
  ConvGeom c;
  std::vector<int64_t> pads;
  KEEL_RETURN_IF_ERROR(ReadWindow(node, 2, c, pads));
  KEEL_ASSIGN_OR_RETURN(int64_t og, at.GetInt("offset_group", 1));
  const int64_t H = xs[2], W = xs[3], M = os[1], OH = os[2], OW = os[3], KH = ws[2], KW = ws[3];
  const int64_t Cg = ws[1], Mg = M / c.groups, Cog = xs[1] / std::max<int64_t>(og, 1);
  if (og <= 0 || xs[1] != Cg * c.groups || M % c.groups != 0) return InvalidArgument(NodeLabel(node) + ": inconsistent channels/groups");
  Expr r = k.NewVar("r"), j = k.NewVar("ow"), ci = k.NewVar("ci"), a = k.NewVar("kh"), b = k.NewVar("kw");
  const std::vector<Expr> rix = Delinearize({xs[0], M, OH}, r);
  Expr n = rix[0], oc = rix[1], i = rix[2];
  Expr ic = (oc / Mg) * Cg + ci;
  Expr tap = ((ic / Cog) * KH + a) * KW + b;
  auto f32 = [](Expr e) { return Cast(std::move(e), DType::kF32); };
  Expr dy = f32(Off.at({n, tap * 2, i, j})), dx = f32(Off.at({n, tap * 2 + 1, i, j}));
  Expr mk = mask ? f32(mask->at({n, tap, i, j})) : FloatConst(1);
  Expr h = Min(Max(f32(i * c.s[0] - pads[0] + a * c.d[0]) + dy, FloatConst(-2)), FloatConst(static_cast<double>(H + 1)));
  Expr v = Min(Max(f32(j * c.s[1] - pads[1] + b * c.d[1]) + dx, FloatConst(-2)), FloatConst(static_cast<double>(W + 1)));
  Expr hf = Unary(UnaryOp::kFloor, h), vf = Unary(UnaryOp::kFloor, v);
  Expr lh = h - hf, lv = v - vf;
  Expr hi = Cast(hf, DType::kI64), vi = Cast(vf, DType::kI64);
  Expr sample;
  for (int dyc = 0; dyc < 2; ++dyc) {
    for (int dxc = 0; dxc < 2; ++dxc) {
      Expr hy = hi + dyc, vx = vi + dxc;
      Expr inside = (hy >= 0) && (hy < H) && (vx >= 0) && (vx < W);
      Expr wgt = (dyc ? lh : FloatConst(1) - lh) * (dxc ? lv : FloatConst(1) - lv);
      Expr val = Select(inside, f32(X.at({n, ic, Clamp(hy, 0, H - 1), Clamp(vx, 0, W - 1)})), FloatConst(0));
      Expr term = wgt * val;
      sample = sample.is_null() ? term : sample + term;
    }
  }
  int sum = k.AddLocal("dcn_sum", DType::kF32, {1});
  Expr s = k.Load(sum, {Expr(0)});
  Stmt taps = For(ci, 0, Cg, LoopKind::kSerial,
                  For(a, 0, KH, LoopKind::kSerial,
                      For(b, 0, KW, LoopKind::kSerial,
                          k.Store(sum, {Expr(0)}, s + f32(Wt.at({oc, ci, a, b})) * mk * sample))));
  Stmt per_out = Block({k.Store(sum, {Expr(0)}, bias ? f32(bias->at({oc})) : FloatConst(0)), taps,
                        store({n, oc, i, j}, s)});
  const int64_t rows = xs[0] * M * OH;
  bool par = rows > 1 && rows * OW * Cg * KH * KW >= ctx.options().min_parallel_elements;
  return For(r, 0, rows, par ? LoopKind::kParallel : LoopKind::kSerial, For(j, 0, OW, LoopKind::kSerial, per_out));
}

}  // namespace keel::codegen
