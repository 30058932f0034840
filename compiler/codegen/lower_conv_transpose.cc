// compiler/codegen/lower_conv_transpose.cc — ConvTranspose: the stride-1 convolution with the
// flipped kernel over the input scattered at the stride (an implicit GEMM over that image,
// lower_conv_implicit.h), or on the GPU the direct gather (GpuDirectConvTranspose).
#include <vector>

#include "compiler/codegen/lower_conv_direct.h"
#include "compiler/codegen/lower_conv_implicit.h"
#include "compiler/codegen/lower_ops.h"

namespace keel::codegen {

Result<Stmt> LowerConvTranspose(LowerContext& ctx, const ir::Node& node, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(ConvOperands in, ReadConvOperands(ctx, node, "ConvTranspose"));
  TensorFn X = in.x, Wt = in.w;
  const TensorFn* bias = in.bias;
  const std::vector<int64_t>& xs = X.type.shape;
  const std::vector<int64_t>& ws = Wt.type.shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  const size_t sp = xs.size() - 2;
  const ConvGeom& t = in.window;  // the transposed convolution's own attributes
  const std::vector<int64_t>& pads = in.pads;
  // The equivalent stride-1 convolution over the scattered image: input channels
  // of a group = Cin/group, output channels = W's dim 1 per group.
  ConvGeom c;
  c.B = xs[0]; c.C = xs[1]; c.groups = t.groups;
  c.Cg = c.C / c.groups; c.Mg = ws[1]; c.Co = c.Mg * c.groups;
  if (c.C % c.groups != 0 || ws[0] != c.C || os[1] != c.Co)
    return InvalidArgument(NodeLabel(node) + ": inconsistent channels/groups");
  c.in.assign(xs.begin() + 2, xs.end());
  c.out.assign(os.begin() + 2, os.end());
  c.k.assign(ws.begin() + 2, ws.end());
  c.d = t.d;
  c.s.assign(sp, 1);
  c.pb.assign(sp, 0);
  if (ctx.options().gpu_direct_conv) return GpuDirectConvTranspose(ctx, c, t.s, pads, X, Wt, bias, store);
  ImageConv ic;
  ic.c = c;
  ic.P.resize(sp);
  std::vector<int64_t> border(sp);  // image coordinate of input position 0
  for (size_t d = 0; d < sp; ++d) {
    border[d] = (c.k[d] - 1) * c.d[d] - pads[d];
    ic.P[d] = c.out[d] + (c.k[d] - 1) * c.d[d];
  }
  const int64_t KK = NumElements(c.k);
  IndexFn w_at = Wt.at;
  ic.a = [w_at, c, KK](Expr m, Expr kk, Expr gi) {
    std::vector<Expr> idx{gi * c.Cg + kk / KK, m};
    const std::vector<Expr> kpos = Delinearize(c.k, kk % KK);
    for (size_t d = 0; d < c.sp(); ++d) idx.push_back((c.k[d] - 1) - kpos[d]);  // flipped
    return w_at(idx);
  };
  KernelFunc* kp = &k;
  const std::vector<int64_t> s = t.s;
  // No bands here (ic.bands stays false): the whole scattered image, row_off 0.
  ic.fill = [kp, &ctx, c, s, border, X](int src, int64_t lead, Expr bi, Expr gi, const std::vector<int64_t>& P,
                                        Expr /*row_off*/, int64_t /*phases: 1, stride 1*/) -> Stmt {
    KernelFunc& k = *kp;
    const size_t sp = c.sp(), last = sp - 1;
    std::vector<int64_t> row_dims{c.Cg};
    row_dims.insert(row_dims.end(), P.begin(), P.end() - 1);
    const int64_t rows = NumElements(row_dims);
    Expr r = k.NewVar("r"), w = k.NewVar("w");
    std::vector<Expr> rix = Delinearize(row_dims, r);
    rix.push_back(w);
    std::vector<Expr> xi{bi, gi * c.Cg + rix[0]};
    Expr ok;
    for (size_t d = 0; d < sp; ++d) {
      // Image coordinate j holds input position (j - border) / stride when that divides.
      Expr z = rix[1 + d] - border[d];
      ok = And(ok, (z >= 0) && Binary(BinaryOp::kEq, z % s[d], Expr(0)) && (z < (c.in[d] - 1) * s[d] + 1));
      xi.push_back(Clamp(s[d] == 1 ? z : z / s[d], 0, c.in[d] - 1));
    }
    Stmt row = For(w, 0, P[last], LoopKind::kSerial,
                   k.Store(src, {r * P[last] + lead + w}, Select(ok, Cast(X.at(xi), DType::kF32), FloatConst(0))));
    bool par = rows > 1 && rows * P[last] >= ctx.options().min_parallel_elements;
    return For(r, 0, rows, par ? LoopKind::kParallel : LoopKind::kSerial, row);
  };
  return ImplicitGemmConv(ctx, ic, X, bias, store);
}

}  // namespace keel::codegen
