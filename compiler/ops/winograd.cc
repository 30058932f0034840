// compiler/ops/winograd.cc — see winograd.h.
#include "compiler/ops/winograd.h"

#include <cstring>
#include <memory>

#include "compiler/codegen/winograd_matrices.h"
#include "compiler/ops/channels_last.h"
#include "compiler/ops/op_def.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/semantics.h"

namespace keel::ops {

int64_t WinogradTile(const ir::Node& node) {
  if (node.op_type() != "Conv") return 0;  // only Conv has the form (models cannot set keel.* attributes)
  auto v = node.attrs().GetInt(kWinogradAttr, 0);
  return v.ok() ? *v : 0;
}

bool WinogradApplies(const ir::Node& conv) {
  if (conv.op_type() != "Conv" || WinogradTile(conv) != 0 || conv.inputs().size() < 2) return false;
  if (IsChannelsLast(conv)) return false;
  const ir::Value* x = conv.input(0);
  const ir::Value* w = conv.input(1);
  if (!x || !w || !x->has_type() || !w->is_constant() || conv.outputs().size() != 1) return false;
  if (x->type().dtype != ir::DType::kF32 || w->type().dtype != ir::DType::kF32) return false;
  const std::vector<int64_t>& ws = w->type().shape;
  if (x->type().shape.size() != 4 || ws.size() != 4 || ws[2] != 3 || ws[3] != 3) return false;
  const std::vector<int64_t> ones{1, 1};
  auto strides = conv.attrs().GetInts("strides", ones);
  auto dilations = conv.attrs().GetInts("dilations", ones);
  auto group = conv.attrs().GetInt("group", 1);
  return strides.ok() && *strides == ones && dilations.ok() && *dilations == ones && group.ok() && *group == 1;
}

namespace {

std::vector<float> Floats(const ir::TensorData& t) {
  std::vector<float> v(static_cast<size_t>(t.type.NumElements()));
  std::memcpy(v.data(), t.bytes.data(), v.size() * sizeof(float));
  return v;
}

ir::TensorDataPtr FromFloats(std::vector<int64_t> shape, const std::vector<float>& v) {
  auto out = std::make_shared<ir::TensorData>();
  out->type = {ir::DType::kF32, std::move(shape)};
  out->bytes.resize(v.size() * sizeof(float));
  std::memcpy(out->bytes.data(), v.data(), out->bytes.size());
  return out;
}

// out (p x p, row-major) = M · in · M^T for M of shape p x q and in of q x q, in double.
void Sandwich(const double* mat, int64_t p, int64_t q, const double* in, double* out) {
  std::vector<double> t(static_cast<size_t>(p * q), 0.0);  // M · in
  for (int64_t i = 0; i < p; ++i)
    for (int64_t j = 0; j < q; ++j)
      for (int64_t a = 0; a < q; ++a) t[static_cast<size_t>(i * q + j)] += mat[i * q + a] * in[a * q + j];
  for (int64_t i = 0; i < p; ++i)
    for (int64_t j = 0; j < p; ++j) {
      double s = 0;
      for (int64_t b = 0; b < q; ++b) s += t[static_cast<size_t>(i * q + b)] * mat[j * q + b];
      out[i * p + j] = s;
    }
}

// Recovering g from U: R (3 x n) on both sides, R · U · R^T.
void RecoverTile(const codegen::WinogradMatrices& mx, const double* u, double* g) {
  const int64_t n = mx.n;
  std::vector<double> t(static_cast<size_t>(3 * n), 0.0);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t a = 0; a < n; ++a) t[static_cast<size_t>(i * n + j)] += mx.recover[i * n + a] * u[a * n + j];
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      double s = 0;
      for (int64_t b = 0; b < n; ++b) s += t[static_cast<size_t>(i * n + b)] * mx.recover[j * n + b];
      g[i * 3 + j] = s;
    }
}

// The plain Conv twin of a Winograd-form node: one node in a new graph whose
// operands are typed values, the weight typed [Co, Ci, 3, 3] (op_twin.h).
Result<OpTwin> MakeConvTwin(const ir::Node& node) {
  const int64_t m = WinogradTile(node);
  const codegen::WinogradMatrices mx = codegen::WinogradFor(m);
  if (mx.m == 0) return InvalidArgument(ir::NodeDescription(node) + ": keel.winograd must be 2 or 4, got " + std::to_string(m));
  if (node.inputs().size() < 2 || !node.input(1) || !node.input(1)->has_type()) {
    return InvalidArgument(ir::NodeDescription(node) + ": Winograd form needs a typed weight");
  }
  const ir::TensorType& u = node.input(1)->type();
  if (u.dtype != ir::DType::kF32 || u.shape.size() != 3 || u.shape[0] != mx.n * mx.n) {
    return InvalidArgument(ir::NodeDescription(node) + ": Winograd F(" + std::to_string(m) +
                           ",3) weight must be f32 [" + std::to_string(mx.n * mx.n) + ", Co, Ci], got " + u.ToString());
  }
  return MakeOpTwin(node, kWinogradAttr, [&u](ir::Graph& g, size_t i, const ir::Value& in) -> Result<ir::Value*> {
    ir::TensorType type = in.type();
    if (i == 1) type.shape = {u.shape[1], u.shape[2], 3, 3};
    return g.AddInput(in.name(), type);
  });
}

}  // namespace

Result<ir::TensorDataPtr> WinogradWeight(const ir::TensorData& w, int64_t m) {
  const codegen::WinogradMatrices mx = codegen::WinogradFor(m);
  const std::vector<int64_t>& s = w.type.shape;
  if (mx.m == 0 || w.type.dtype != ir::DType::kF32 || s.size() != 4 || s[2] != 3 || s[3] != 3) {
    return InvalidArgument("Winograd weight transform: needs an f32 [Co, Ci, 3, 3] weight and m = 2 or 4, got " +
                           w.type.ToString() + " and m = " + std::to_string(m));
  }
  const int64_t co = s[0], ci = s[1], nn = mx.n * mx.n, plane = co * ci;
  const std::vector<float> g = Floats(w);
  std::vector<float> u(static_cast<size_t>(nn * plane));
  std::vector<double> gd(9), ud(static_cast<size_t>(nn));
  for (int64_t f = 0; f < plane; ++f) {
    for (int64_t i = 0; i < 9; ++i) gd[static_cast<size_t>(i)] = g[static_cast<size_t>(f * 9 + i)];
    Sandwich(mx.g, mx.n, 3, gd.data(), ud.data());
    for (int64_t x = 0; x < nn; ++x) u[static_cast<size_t>(x * plane + f)] = static_cast<float>(ud[static_cast<size_t>(x)]);
  }
  return FromFloats({nn, co, ci}, u);
}

Result<ir::TensorDataPtr> WeightFromWinograd(const ir::TensorData& u, int64_t m) {
  const codegen::WinogradMatrices mx = codegen::WinogradFor(m);
  const std::vector<int64_t>& s = u.type.shape;
  if (mx.m == 0 || u.type.dtype != ir::DType::kF32 || s.size() != 3 || s[0] != mx.n * mx.n) {
    return InvalidArgument("Winograd weight: needs f32 [(m+2)^2, Co, Ci] and m = 2 or 4, got " + u.type.ToString() +
                           " and m = " + std::to_string(m));
  }
  const int64_t nn = s[0], plane = s[1] * s[2];
  const std::vector<float> uv = Floats(u);
  std::vector<float> g(static_cast<size_t>(plane * 9));
  std::vector<double> ud(static_cast<size_t>(nn)), gd(9);
  for (int64_t f = 0; f < plane; ++f) {
    for (int64_t x = 0; x < nn; ++x) ud[static_cast<size_t>(x)] = uv[static_cast<size_t>(x * plane + f)];
    RecoverTile(mx, ud.data(), gd.data());
    for (int64_t i = 0; i < 9; ++i) g[static_cast<size_t>(f * 9 + i)] = static_cast<float>(gd[static_cast<size_t>(i)]);
  }
  return FromFloats({s[1], s[2], 3, 3}, g);
}

Status CanonicalizeWinograd(const OpDef& /*def*/, ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(OpTwin t, MakeConvTwin(node));
  KEEL_RETURN_IF_ERROR(CanonicalizeNode(*t.twin));
  const int64_t m = WinogradTile(node);
  node.attrs() = t.twin->attrs();
  node.attrs().Set(kWinogradAttr, m);
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferWinograd(const OpDef& /*def*/, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(OpTwin t, MakeConvTwin(node));
  return InferNodeTypes(*t.twin);
}

Result<std::vector<ir::TensorDataPtr>> EvaluateWinograd(const OpDef& /*def*/, const ir::Node& node,
                                                        const std::vector<ir::TensorDataPtr>& inputs) {
  KEEL_ASSIGN_OR_RETURN(OpTwin t, MakeConvTwin(node));
  std::vector<ir::TensorDataPtr> args = inputs;
  if (args.size() < 2 || !args[1]) return NodeError(node, "missing value for the Winograd weight");
  KEEL_ASSIGN_OR_RETURN(args[1], WeightFromWinograd(*args[1], WinogradTile(node)));
  return EvaluateNode(*t.twin, args);
}

}  // namespace keel::ops
