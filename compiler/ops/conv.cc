// compiler/ops/conv.cc — Conv: N-D convolution (NCHW..., OIHW... weights) with
// groups, strides, pads (or auto_pad), dilations and an optional bias.
//
// The optimized lowering lives in compiler/codegen/lower_conv.cc (implicit GEMM
// and a direct depthwise kernel); on CUDA, cuDNN is preferred where it fits.
// The reference evaluator below is the naive rank-generic definition.
#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/window.h"
#include "compiler/ops/packed_weight.h"
#include "compiler/ops/winograd.h"

namespace keel::ops {
namespace {

Status CanonicalizeConv(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 3));
  const ir::TensorType& x = InputType(node, 0);
  const ir::TensorType& w = InputType(node, 1);
  if (w.shape.size() < 3) return NodeError(node, "weight must have rank >= 3, got " + w.ToString());
  if (x.shape.size() != w.shape.size()) {
    return NodeError(node, "input " + x.ToString() + " and weight " + w.ToString() + " ranks differ");
  }
  const std::vector<int64_t> wk(w.shape.begin() + 2, w.shape.end());
  KEEL_ASSIGN_OR_RETURN(auto kernel, node.attrs().GetInts("kernel_shape", wk));
  if (kernel != wk) return NodeError(node, "kernel_shape " + ShapeString(kernel) + " does not match weight " + w.ToString());
  KEEL_RETURN_IF_ERROR(CanonicalizeWindow(node, {x.shape.begin() + 2, x.shape.end()}, kernel, true));
  KEEL_ASSIGN_OR_RETURN(int64_t group, node.attrs().GetInt("group", 1));
  node.attrs().Set("group", group);
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferConv(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 3));
  const ir::TensorType& x = InputType(node, 0);
  const ir::TensorType& w = InputType(node, 1);
  KEEL_ASSIGN_OR_RETURN(int64_t group, node.attrs().GetInt("group", 1));
  if (group <= 0 || x.shape[1] != w.shape[1] * group || w.shape[0] % group != 0) {
    return NodeError(node, "input channels " + std::to_string(x.shape[1]) + " do not match weight " + w.ToString() +
                               " with group " + std::to_string(group));
  }
  if (x.dtype != w.dtype) return NodeError(node, "input and weight dtypes differ");
  if (HasInput(node, 2) && InputType(node, 2).NumElements() != w.shape[0]) {
    return NodeError(node, "bias " + InputType(node, 2).ToString() + " does not match " + std::to_string(w.shape[0]) +
                               " output channels");
  }
  KEEL_ASSIGN_OR_RETURN(auto sp, WindowOutput(node, {x.shape.begin() + 2, x.shape.end()}, false));
  std::vector<int64_t> out{x.shape[0], w.shape[0]};
  out.insert(out.end(), sp.begin(), sp.end());
  return One({x.dtype, out});
}

Result<std::vector<ir::TensorDataPtr>> EvaluateConv(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                    const std::vector<ir::TensorType>& out_types) {
  const ir::TensorType& yt = out_types[0];
  const std::vector<double> x = TensorToDoubles(*in[0]);
  const std::vector<double> wt = TensorToDoubles(*in[1]);
  const std::vector<double> bias = in.size() > 2 && in[2] ? TensorToDoubles(*in[2]) : std::vector<double>{};
  KEEL_ASSIGN_OR_RETURN(WindowND w, MakeWindow(node, in[0]->type.shape, yt.shape));
  KEEL_ASSIGN_OR_RETURN(int64_t group, node.attrs().GetInt("group", 1));
  const size_t sp = w.rank();
  const int64_t m = in[1]->type.shape[0], cin_g = in[1]->type.shape[1], m_g = m / group;
  const int64_t kvol = NumElementsOf(w.k), ivol = NumElementsOf(w.in), ovol = NumElementsOf(w.out);
  std::vector<double> y(static_cast<size_t>(yt.NumElements()), 0.0);
  size_t yi = 0;
  for (int64_t n = 0; n < w.n; ++n) {
    for (int64_t oc = 0; oc < m; ++oc) {
      const int64_t g = oc / m_g;
      std::vector<int64_t> o(sp, 0);
      for (int64_t oi = 0; oi < ovol; ++oi, NextIndex(o, w.out)) {
        double acc = bias.empty() ? 0.0 : bias[static_cast<size_t>(oc)];
        for (int64_t ic = 0; ic < cin_g; ++ic) {
          const double* xin = &x[static_cast<size_t>((n * w.c + g * cin_g + ic) * ivol)];
          const double* wk = &wt[static_cast<size_t>((oc * cin_g + ic) * kvol)];
          std::vector<int64_t> kp(sp, 0);
          for (int64_t ki = 0; ki < kvol; ++ki, NextIndex(kp, w.k)) {
            int64_t flat = 0;
            bool inside = true;
            for (size_t d = 0; d < sp && inside; ++d) {
              const int64_t id = o[d] * w.s[d] - w.pb[d] + kp[d] * w.d[d];
              inside = id >= 0 && id < w.in[d];
              flat = flat * w.in[d] + id;
            }
            if (inside) acc += xin[flat] * wk[ki];
          }
        }
        y[yi++] = acc;
      }
    }
  }
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr out, TensorFromDoubles(yt, y));
  return std::vector<ir::TensorDataPtr>{out};
}

// BatchNormalization folding: each output channel's filter scaled by s, its bias
// b*s + t.
Result<bool> FoldScaleShiftIntoConv(ir::Graph& g, ir::Node& node, const std::vector<double>& s,
                                    const std::vector<double>& t) {
  ir::Value* w = node.input(1);
  if (!w || !w->is_constant() || w->type().dtype != ir::DType::kF32) return false;
  if (node.input(2) && !node.input(2)->is_constant()) return false;
  std::vector<double> wv = ops::TensorToDoubles(*w->constant());
  int64_t oc = w->type().shape[0];
  if (static_cast<int64_t>(s.size()) != oc) return false;
  int64_t per = static_cast<int64_t>(wv.size()) / oc;
  for (int64_t o = 0; o < oc; ++o) {
    for (int64_t i = 0; i < per; ++i) wv[static_cast<size_t>(o * per + i)] *= s[static_cast<size_t>(o)];
  }
  std::vector<double> bv(static_cast<size_t>(oc), 0.0);
  if (node.input(2)) {
    bv = ops::TensorToDoubles(*node.input(2)->constant());
  }
  for (int64_t o = 0; o < oc; ++o) {
    size_t ou = static_cast<size_t>(o);
    bv[ou] = bv[ou] * s[ou] + t[ou];
  }
  std::vector<ir::Value*> inputs = {node.input(0), AddF32Constant(g, w->name() + "/bn_folded", w->type().shape, wv),
                                    AddF32Constant(g, node.name() + "/bn_bias", {oc}, bv)};
  node.SetInputs(inputs);
  return true;
}

}  // namespace

void RegisterConvOps(Registry& r) {
  OpDef def;
  def.name = "Conv";
  def.versions = {1, 11, 22};
  def.fusion = FusionClass::kAnchor;
  def.half = HalfPolicy::kHalf;  // f32 accumulation inside the kernel (lower_conv.cc)
  def.library = LibraryCall::kConv;
  def.canonicalize = CanonicalizeConv;
  def.infer = InferConv;
  def.evaluate = EvaluateConv;
  def.fold_scale_shift = FoldScaleShiftIntoConv;
  def.pads_with_zeros = [](ir::Node&) { return true; };
  def.channels_last_operands = {0, 1};  // X NHWC, W OHWI (channels_last.h)
  def.kernel = [](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
    const int64_t packed_rows = PackedWeightRows(node);
    if (const int64_t tile = WinogradTile(node)) return codegen::LowerWinogradConv(ctx, node, tile, packed_rows, stores[0]);
    return codegen::LowerConv(ctx, node, packed_rows, stores[0]);
  };
  r.Add(std::move(def));
}

}  // namespace keel::ops
