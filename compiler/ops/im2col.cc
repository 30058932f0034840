// compiler/ops/im2col.cc — keel.Im2Col, the transposed column matrix of a
// convolution:
//
//   input   X [N, C, S_1..S_d] (channels first, d = 1..3)
//   output  [columns, N, O_1..O_d]: row j = tap * C + c holds, for every
//           output pixel o, X[n, c, o * stride - pad_begin + t * dilation] for
//           the kernel offset t = the tap-th of kernel_shape in row-major order;
//           0 where that position is padding, and rows C * taps and up are 0
//           (zero rows that round K up to a library's alignment).
//
// Attributes are a convolution's canonical window (ops/window.h: kernel_shape,
// strides, dilations, pads) plus `columns` (>= C * prod(kernel_shape)).
// So Conv(X, W) + B = Im2Col(X)^T x W' + B with W'[tap * C + c, o] = W[o, c, t]
// (zero rows past C * taps): passes/im2col.h rewrites a convolution over few
// input channels into that GEMM where a target prefers it. Pixels are the
// innermost axis so that neighbouring elements read neighbouring input
// positions (coalesced on a GPU) and share their row's index arithmetic.
// Internal (domain "keel"; never imported). Injective: each output element is
// one input element or zero, so its lowering is also its reference semantics.
#include "compiler/codegen/lower_context.h"
#include "compiler/ops/lowering.h"
#include "compiler/ops/movement_util.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/window.h"

namespace keel::ops {
namespace {

using codegen::Expr;
using codegen::TensorFn;

Result<std::vector<ir::TensorType>> InferIm2Col(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  if (x.shape.size() < 3 || x.shape.size() > 5) {
    return NodeError(node, "input " + x.ToString() + " is not [N, C, spatial...] with 1 to 3 spatial dims");
  }
  const std::vector<int64_t> spatial(x.shape.begin() + 2, x.shape.end());
  KEEL_ASSIGN_OR_RETURN(auto kernel, node.attrs().GetInts("kernel_shape", {}));
  if (kernel.size() != spatial.size()) return NodeError(node, "kernel_shape " + ShapeString(kernel) + " does not match " + x.ToString());
  KEEL_ASSIGN_OR_RETURN(int64_t columns, node.attrs().GetInt("columns", 0));
  const int64_t used = x.shape[1] * NumElementsOf(kernel);
  if (columns < used) {
    return NodeError(node, "columns " + std::to_string(columns) + " are fewer than the " + std::to_string(used) +
                               " the window reads");
  }
  KEEL_ASSIGN_OR_RETURN(auto out_spatial, WindowOutput(node, spatial, false));
  std::vector<int64_t> out{columns, x.shape[0]};
  out.insert(out.end(), out_spatial.begin(), out_spatial.end());
  KEEL_RETURN_IF_ERROR(CheckedElements(node, out).status());
  return One({x.dtype, out});
}

Status DefineIm2Col(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* in, ctx.Input(node, 0));
  const std::vector<int64_t>& xs = in->type.shape;
  const size_t d = xs.size() - 2;
  KEEL_ASSIGN_OR_RETURN(auto kernel, node.attrs().GetInts("kernel_shape", {}));
  KEEL_ASSIGN_OR_RETURN(auto strides, node.attrs().GetInts("strides", std::vector<int64_t>(d, 1)));
  KEEL_ASSIGN_OR_RETURN(auto dilations, node.attrs().GetInts("dilations", std::vector<int64_t>(d, 1)));
  KEEL_ASSIGN_OR_RETURN(auto pads, node.attrs().GetInts("pads", std::vector<int64_t>(2 * d, 0)));
  const int64_t C = xs[1];
  const int64_t used = C * NumElementsOf(kernel);
  const ir::DType dt = in->type.dtype;
  TensorFn fn;
  fn.type = node.output(0)->type();
  fn.at = [=](const std::vector<Expr>& idx) -> Expr {
    const Expr& col = idx[0];
    Expr tap = col / C;
    std::vector<Expr> src(d + 2);
    src[0] = idx[1];
    src[1] = col % C;
    Expr inside = col < used;
    for (size_t i = d; i-- > 0;) {  // the last kernel dim varies fastest
      const Expr t = tap % kernel[i];
      tap = tap / kernel[i];
      Expr s = idx[2 + i] * strides[i] + t * dilations[i] - pads[i];
      inside = inside && (s >= 0) && (s < xs[2 + i]);
      src[2 + i] = codegen::Clamp(s, 0, xs[2 + i] - 1);
    }
    return codegen::Select(inside, in->at(src), TypedConst(0.0, dt));
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

}  // namespace

void RegisterIm2ColOps(Registry& r) {
  OpDef def = InjectiveOp("keel.Im2Col", {});
  def.domain = "keel";
  def.infer = InferIm2Col;
  def.injective = DefineIm2Col;
  r.Add(std::move(def));
}

}  // namespace keel::ops
