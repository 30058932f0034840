// compiler/ops/quantize_conv.cc — integer convolutions: ConvInteger (int32
// result of conv(x - x_zp, w - w_zp)) and QLinearConv (its quantized form,
// requantized to y's type with x_scale * w_scale / y_scale, the int32 bias
// added before).
//
// ConvInteger is an anchor with its own direct kernel accumulating in i32:
// Conv's lowering (compiler/codegen/lower_conv.cc) computes in f32, exact
// only while partial sums stay below 2^24, which int8 products over a few
// hundred taps exceed. One output element per iteration of a parallel loop,
// the reduction over input channels and kernel taps in serial loops; padded
// taps read the zero point, i.e. contribute 0 (the ONNX reference subtracts
// the zero point before padding). x_zp is per tensor; w_zp per tensor or per
// output channel (1-D of M entries).
//
// QLinearConv is a composite: ConvInteger, + B (int32, per output channel),
// then f64(acc) * (x_scale * w_scale / y_scale) + y_zp rounded half-to-even
// and saturated through keel.QuantizeLinear with a unit scale.
#include <algorithm>

#include "compiler/codegen/lower_context.h"
#include "compiler/ops/expansion.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/quantize_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/window.h"

namespace keel::ops {
namespace {

using codegen::Expr;
using ir::DType;
using ir::Value;

// Window attributes canonical for data input `xi` and weight input `wi`.
Status CanonicalizeIntConv(ir::Node& node, size_t xi, size_t wi) {
  const ir::TensorType& x = InputType(node, xi);
  const ir::TensorType& w = InputType(node, wi);
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

int64_t Count(const std::vector<int64_t>& s) { return NumElementsOf(s); }

// Output shape [N, M, spatial...] after the channel / zero point checks.
Result<std::vector<int64_t>> IntConvShape(const ir::Node& node, size_t xi, size_t wi, size_t xzp, size_t wzp) {
  const ir::TensorType& x = InputType(node, xi);
  const ir::TensorType& w = InputType(node, wi);
  for (size_t i : {xi, wi}) {
    if (!IsQuantizedType(InputType(node, i).dtype)) {
      return NodeUnsupported(node, "input " + std::to_string(i) + " has dtype " + ir::DTypeName(InputType(node, i).dtype) +
                                       "; int8, uint8, int16 or uint16 expected");
    }
  }
  KEEL_ASSIGN_OR_RETURN(int64_t group, node.attrs().GetInt("group", 1));
  if (group <= 0 || x.shape[1] != w.shape[1] * group || w.shape[0] % group != 0) {
    return NodeError(node, "input channels " + std::to_string(x.shape[1]) + " do not match weight " + w.ToString() +
                               " with group " + std::to_string(group));
  }
  if (HasInput(node, xzp)) {
    const ir::TensorType& z = InputType(node, xzp);
    if (z.dtype != x.dtype) return NodeError(node, "x zero point dtype differs from x's");
    if (Count(z.shape) != 1) return NodeUnsupported(node, "x zero point " + z.ToString() + " is not per tensor");
  }
  if (HasInput(node, wzp)) {
    const ir::TensorType& z = InputType(node, wzp);
    if (z.dtype != w.dtype) return NodeError(node, "w zero point dtype differs from w's");
    if (Count(z.shape) != 1 && !(z.shape.size() == 1 && z.shape[0] == w.shape[0])) {
      return NodeError(node, "w zero point " + z.ToString() + " is neither per tensor nor per output channel");
    }
  }
  KEEL_ASSIGN_OR_RETURN(auto sp, WindowOutput(node, {x.shape.begin() + 2, x.shape.end()}, false));
  std::vector<int64_t> out{x.shape[0], w.shape[0]};
  out.insert(out.end(), sp.begin(), sp.end());
  KEEL_RETURN_IF_ERROR(CheckedElements(node, out).status());
  return out;
}

// ---- ConvInteger -----------------------------------------------------------------------

Result<std::vector<ir::TensorType>> InferConvInteger(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 4));
  KEEL_ASSIGN_OR_RETURN(auto out, IntConvShape(node, 0, 1, 2, 3));
  return One({DType::kI32, out});
}

Result<std::vector<ir::TensorDataPtr>> EvaluateConvInteger(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                           const std::vector<ir::TensorType>& out_types) {
  const ir::TensorType& yt = out_types[0];
  KEEL_ASSIGN_OR_RETURN(WindowND w, MakeWindow(node, in[0]->type.shape, yt.shape));
  KEEL_ASSIGN_OR_RETURN(int64_t group, node.attrs().GetInt("group", 1));
  const size_t sp = w.rank();
  const int64_t m = in[1]->type.shape[0], cin_g = in[1]->type.shape[1], m_g = m / group;
  const int64_t kvol = NumElementsOf(w.k), ivol = NumElementsOf(w.in), ovol = NumElementsOf(w.out);
  const bool has_xzp = in.size() > 2 && in[2], has_wzp = in.size() > 3 && in[3];
  const int64_t xzp = has_xzp ? ElementAsInt(*in[2], 0) : 0;
  std::shared_ptr<ir::TensorData> y = NewTensor(yt);
  int64_t yi = 0;
  for (int64_t n = 0; n < w.n; ++n) {
    for (int64_t oc = 0; oc < m; ++oc) {
      const int64_t g = oc / m_g;
      const int64_t wzp = has_wzp ? ElementAsInt(*in[3], in[3]->type.NumElements() == 1 ? 0 : oc) : 0;
      std::vector<int64_t> o(sp, 0);
      for (int64_t oi = 0; oi < ovol; ++oi, NextIndex(o, w.out)) {
        int64_t acc = 0;
        for (int64_t ic = 0; ic < cin_g; ++ic) {
          const int64_t xbase = (n * w.c + g * cin_g + ic) * ivol, wbase = (oc * cin_g + ic) * kvol;
          std::vector<int64_t> kp(sp, 0);
          for (int64_t ki = 0; ki < kvol; ++ki, NextIndex(kp, w.k)) {
            int64_t flat = 0;
            bool inside = true;
            for (size_t d = 0; d < sp && inside; ++d) {
              const int64_t id = o[d] * w.s[d] - w.pb[d] + kp[d] * w.d[d];
              inside = id >= 0 && id < w.in[d];
              flat = flat * w.in[d] + id;
            }
            if (inside) acc += (ElementAsInt(*in[0], xbase + flat) - xzp) * (ElementAsInt(*in[1], wbase + ki) - wzp);
          }
        }
        StoreInt(*y, yi++, static_cast<int32_t>(static_cast<uint32_t>(acc)));  // int32 wrap-around
      }
    }
  }
  return std::vector<ir::TensorDataPtr>{y};
}

Result<codegen::Stmt> LowerConvInteger(codegen::LowerContext& ctx, const ir::Node& node,
                                       const std::vector<codegen::StoreFn>& stores) {
  codegen::KernelFunc& kf = ctx.kernel();
  std::vector<const codegen::TensorFn*> fn(4, nullptr);
  for (size_t i = 0; i < 4; ++i) {
    if (!HasInput(node, i)) continue;
    KEEL_ASSIGN_OR_RETURN(fn[i], ctx.Input(node, i));
  }
  KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> out, IntConvShape(node, 0, 1, 2, 3));
  KEEL_ASSIGN_OR_RETURN(WindowND w, MakeWindow(node, fn[0]->type.shape, out));
  KEEL_ASSIGN_OR_RETURN(int64_t group, node.attrs().GetInt("group", 1));
  const size_t sp = w.rank();
  const int64_t m = out[1], cin_g = fn[1]->type.shape[1], m_g = m / group;
  const DType i32 = DType::kI32;
  Expr t = kf.NewVar("t"), ic = kf.NewVar("ic");
  const std::vector<Expr> o = codegen::Delinearize(out, t);
  std::vector<Expr> kv;
  for (size_t d = 0; d < sp; ++d) kv.push_back(kf.NewVar(codegen::IndexedName("k", static_cast<int64_t>(d))));
  const Expr oc = o[1], g = oc / m_g;
  // x at the tap, 0 outside (the index is clamped first: loads stay in bounds).
  std::vector<Expr> xi = {o[0], g * cin_g + ic};
  Expr inside;
  for (size_t d = 0; d < sp; ++d) {
    Expr id = o[d + 2] * w.s[d] - w.pb[d] + kv[d] * w.d[d];
    Expr ok = (id >= Expr(0)) && (id < Expr(w.in[d]));
    inside = inside.is_null() ? ok : (inside && ok);
    xi.push_back(codegen::Clamp(id, 0, w.in[d] - 1));
  }
  auto zeros = [&](size_t i) { return std::vector<Expr>(InputType(node, i).shape.size(), Expr(0)); };
  Expr xv = codegen::Cast(fn[0]->at(xi), i32);
  if (fn[2]) xv = xv - codegen::Cast(fn[2]->at(zeros(2)), i32);
  xv = codegen::Select(inside, xv, codegen::IntConst(0, i32));
  std::vector<Expr> wi = {oc, ic};
  wi.insert(wi.end(), kv.begin(), kv.end());
  Expr wv = codegen::Cast(fn[1]->at(wi), i32);
  if (fn[3]) {
    const bool per_channel = Count(fn[3]->type.shape) != 1;
    wv = wv - codegen::Cast(fn[3]->at(per_channel ? std::vector<Expr>{oc} : zeros(3)), i32);
  }
  int acc = kf.AddLocal("convi_acc", i32, {1});
  Expr cur = kf.Load(acc, {Expr(0)});
  codegen::Stmt tap = kf.Store(acc, {Expr(0)}, cur + xv * wv);
  for (size_t d = sp; d-- > 0;) tap = codegen::For(kv[d], 0, w.k[d], codegen::LoopKind::kSerial, tap);
  codegen::Stmt body = codegen::Block({
      kf.Store(acc, {Expr(0)}, codegen::IntConst(0, i32)),
      codegen::For(ic, 0, cin_g, codegen::LoopKind::kSerial, tap),
      stores[0](o, cur),
  });
  const int64_t total = Count(out);
  const int64_t work = total * cin_g * NumElementsOf(w.k);
  const bool parallel = total > 1 && work >= ctx.options().min_parallel_elements;
  return codegen::For(t, 0, total, parallel ? codegen::LoopKind::kParallel : codegen::LoopKind::kSerial, body);
}

// ---- QLinearConv -----------------------------------------------------------------------

enum QInput : size_t { kX, kXScale, kXZp, kW, kWScale, kWZp, kYScale, kYZp, kBias };

Result<DType> QLinearConvOutType(const ir::Node& node) {
  const DType t = HasInput(node, kYZp) ? InputType(node, kYZp).dtype : InputType(node, kX).dtype;
  if (!IsQuantizedType(t)) return NodeUnsupported(node, std::string("output dtype ") + ir::DTypeName(t));
  return t;
}

Result<std::vector<ir::TensorType>> InferQLinearConv(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 7, 9));
  for (size_t i : {kXScale, kWScale, kYScale}) {
    if (!HasInput(node, i)) return NodeError(node, "input " + std::to_string(i) + " (a scale) is missing");
    if (!IsFloatType(InputType(node, i).dtype)) {
      return NodeUnsupported(node, "scale input " + std::to_string(i) + " has dtype " +
                                       ir::DTypeName(InputType(node, i).dtype));
    }
  }
  KEEL_ASSIGN_OR_RETURN(auto out, IntConvShape(node, kX, kW, kXZp, kWZp));
  const int64_t m = out[1];
  const ir::TensorType& ws = InputType(node, kWScale);
  if (Count(ws.shape) != 1 && !(ws.shape.size() == 1 && ws.shape[0] == m)) {
    return NodeError(node, "w_scale " + ws.ToString() + " is neither per tensor nor per output channel");
  }
  for (size_t i : {kXScale, kYScale}) {
    if (Count(InputType(node, i).shape) != 1) return NodeUnsupported(node, "input " + std::to_string(i) + " is not per tensor");
  }
  if (HasInput(node, kBias)) {
    const ir::TensorType& b = InputType(node, kBias);
    if (b.dtype != DType::kI32 || b.shape != std::vector<int64_t>{m}) {
      return NodeError(node, "bias " + b.ToString() + " is not an i32 vector of " + std::to_string(m) + " entries");
    }
  }
  KEEL_ASSIGN_OR_RETURN(DType t, QLinearConvOutType(node));
  return One({t, out});
}

// A per-tensor value as a scalar; a per-output-channel vector as [1, M, 1...] (rank `rank`).
Result<Value*> ChannelShaped(Expander& b, Value* v, size_t rank) {
  const std::vector<int64_t>& s = v->type().shape;
  if (s.empty()) return v;
  std::vector<int64_t> shape;
  if (Count(s) != 1) {
    shape.assign(rank, 1);
    shape[1] = Count(s);
  }
  return b.Op("Reshape", {v, b.Ints(shape)});
}

Result<std::vector<Value*>> ExpandQLinearConv(Expander& b, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(DType out, QLinearConvOutType(node));
  const size_t rank = InputType(node, kX).shape.size();
  auto in = [&](size_t i) { return HasInput(node, i) ? node.input(i) : nullptr; };
  AttrList attrs;
  for (const char* a : {"kernel_shape", "strides", "pads", "dilations"}) {
    KEEL_ASSIGN_OR_RETURN(auto v, node.attrs().GetInts(a, {}));
    attrs.push_back({a, v});
  }
  KEEL_ASSIGN_OR_RETURN(int64_t group, node.attrs().GetInt("group", 1));
  attrs.push_back({"group", group});
  KEEL_ASSIGN_OR_RETURN(Value* y, b.Op("ConvInteger", {in(kX), in(kW), in(kXZp), in(kWZp)}, attrs));
  if (HasInput(node, kBias)) {
    KEEL_ASSIGN_OR_RETURN(Value* bias, ChannelShaped(b, node.input(kBias), rank));
    KEEL_ASSIGN_OR_RETURN(y, b.Op("Add", {y, bias}));
  }
  const DType f64 = DType::kF64;
  KEEL_ASSIGN_OR_RETURN(Value* ws, ChannelShaped(b, node.input(kWScale), rank));
  KEEL_ASSIGN_OR_RETURN(Value* xs, ChannelShaped(b, node.input(kXScale), rank));
  KEEL_ASSIGN_OR_RETURN(Value* ys, ChannelShaped(b, node.input(kYScale), rank));
  KEEL_ASSIGN_OR_RETURN(Value* mult, b.Op("Mul", {xs, ws}));
  KEEL_ASSIGN_OR_RETURN(mult, b.Op("Div", {mult, ys}));
  KEEL_ASSIGN_OR_RETURN(mult, b.Op("Cast", {mult}, {{"to", std::string("f64")}}));
  KEEL_ASSIGN_OR_RETURN(y, b.Op("Cast", {y}, {{"to", std::string("f64")}}));
  KEEL_ASSIGN_OR_RETURN(y, b.Op("Mul", {y, mult}));
  if (HasInput(node, kYZp)) {
    KEEL_ASSIGN_OR_RETURN(Value* zp, ChannelShaped(b, node.input(kYZp), rank));
    KEEL_ASSIGN_OR_RETURN(zp, b.Op("Cast", {zp}, {{"to", std::string("f64")}}));
    KEEL_ASSIGN_OR_RETURN(y, b.Op("Add", {y, zp}));
  }
  KEEL_ASSIGN_OR_RETURN(y, b.Op("keel.QuantizeLinear", {y, b.Scalar(1.0, f64)}, {{"to", std::string(ir::DTypeName(out))}}));
  return std::vector<Value*>{y};
}

}  // namespace

void RegisterQuantizeConvOps(Registry& r) {
  {
    OpDef def;
    def.name = "ConvInteger";
    def.versions = {10};
    def.fusion = FusionClass::kAnchor;
    def.canonicalize = [](ir::Node& node) -> Status {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 4));
      return CanonicalizeIntConv(node, 0, 1);
    };
    def.infer = InferConvInteger;
    def.evaluate = EvaluateConvInteger;
    def.kernel = LowerConvInteger;
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "QLinearConv";
    def.versions = {10};
    def.removed_by = "shape-inference (expansion)";
    def.canonicalize = [](ir::Node& node) -> Status {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 7, 9));
      return CanonicalizeIntConv(node, kX, kW);
    };
    def.infer = InferQLinearConv;
    def.expand = ExpandQLinearConv;
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
