// compiler/ops/recurrent.cc — RNN, GRU and LSTM (one layer, forward, reverse or
// bidirectional): canonical form, type rule and the naive reference (see
// recurrent.h for the canonical form; the kernel is recurrent_kernel.cc).
//
// sequence_lens may be a runtime input: batch element b runs only the time
// steps t < len[b] (in its direction's order, so a reverse pass starts at
// len[b]-1); the state of b is frozen past its length and Y is zero there.
// Lengths are clamped to [0, seq_length] (never an out-of-bounds read).
// Versions 7, 14 (adds `layout`) and 22 (adds bf16) share one internal form.
#include "compiler/ops/recurrent.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using codegen::Expr;

struct ActivationInfo {
  const char* name;
  bool uses_alpha, uses_beta;
  double alpha, beta;  // ONNX defaults of the corresponding ops
};

constexpr ActivationInfo kActivations[] = {
    {"Sigmoid", false, false, 0, 0},      {"Tanh", false, false, 0, 0},
    {"Relu", false, false, 0, 0},         {"HardSigmoid", true, true, 0.2, 0.5},
    {"LeakyRelu", true, false, 0.01, 0},  {"ThresholdedRelu", true, false, 1.0, 0},
    {"ScaledTanh", true, true, 1.0, 1.0}, {"Affine", true, true, 1.0, 0.0},
    {"Elu", true, false, 1.0, 0},         {"Softsign", false, false, 0, 0},
    {"Softplus", false, false, 0, 0},
};

std::string Lowercase(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const ActivationInfo* FindActivation(const std::string& name) {
  for (const ActivationInfo& a : kActivations)
    if (Lowercase(a.name) == Lowercase(name)) return &a;
  return nullptr;
}

template <typename T>
const T* AttrList(const ir::Node& node, const std::string& name) {
  auto it = node.attrs().all().find(name);
  if (it == node.attrs().all().end()) return nullptr;
  return std::get_if<T>(&it->second);
}

Result<int64_t> Directions(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(std::string dir, node.attrs().GetString("direction", "forward"));
  if (dir == "forward" || dir == "reverse") return int64_t{1};
  if (dir == "bidirectional") return int64_t{2};
  return NodeError(node, "direction '" + dir + "' is not forward, reverse or bidirectional");
}

int64_t GatesOf(RnnKind kind) { return kind == RnnKind::kLstm ? 4 : kind == RnnKind::kGru ? 3 : 1; }
size_t MaxInputs(RnnKind kind) { return kind == RnnKind::kLstm ? 8 : 6; }

Status CanonicalizeRnn(ir::Node& node) {
  const RnnKind kind = RnnKindOf(node);
  KEEL_RETURN_IF_ERROR(CheckArity(node, 3, MaxInputs(kind)));
  KEEL_ASSIGN_OR_RETURN(int64_t dirs, Directions(node));
  ir::Attributes& a = node.attrs();
  KEEL_ASSIGN_OR_RETURN(int64_t layout, a.GetInt("layout", 0));
  if (layout != 0 && layout != 1) return NodeError(node, "layout must be 0 or 1, got " + std::to_string(layout));
  a.Set("layout", layout);
  const ir::TensorType& r = InputType(node, kRnnR);
  if (r.shape.size() != 3) return NodeError(node, "R must be 3-D, got " + r.ToString());
  KEEL_ASSIGN_OR_RETURN(int64_t hidden, a.GetInt("hidden_size", r.shape[2]));
  a.Set("hidden_size", hidden);
  if (a.Has("clip")) {
    KEEL_ASSIGN_OR_RETURN(double clip, a.GetFloat("clip", 0));
    if (!(clip > 0)) return NodeError(node, "clip must be positive, got " + std::to_string(clip));
    a.Set("clip", clip);
  }
  if (kind == RnnKind::kGru) {
    KEEL_ASSIGN_OR_RETURN(int64_t lbr, a.GetInt("linear_before_reset", 0));
    a.Set("linear_before_reset", int64_t{lbr != 0});
  }
  if (kind == RnnKind::kLstm) {
    KEEL_ASSIGN_OR_RETURN(int64_t f, a.GetInt("input_forget", 0));
    a.Set("input_forget", int64_t{f != 0});
  }
  return CanonicalizeRnnActivations(node, kind, dirs);
}

std::vector<int64_t> YShape(const RnnSpec& s) {
  return s.layout ? std::vector<int64_t>{s.batch, s.seq, s.dirs, s.hidden}
                  : std::vector<int64_t>{s.seq, s.dirs, s.batch, s.hidden};
}
std::vector<int64_t> StateShape(const RnnSpec& s) {
  return s.layout ? std::vector<int64_t>{s.batch, s.dirs, s.hidden} : std::vector<int64_t>{s.dirs, s.batch, s.hidden};
}

Result<std::vector<ir::TensorType>> InferRnn(const ir::Node& node) {
  const RnnKind kind = RnnKindOf(node);
  KEEL_RETURN_IF_ERROR(CheckOutputs(node, kind == RnnKind::kLstm ? 3 : 2, "the op has no such output"));
  KEEL_ASSIGN_OR_RETURN(RnnSpec s, DecodeRnn(node));
  const ir::DType dt = InputType(node, kRnnX).dtype;
  std::vector<ir::TensorType> out;
  for (size_t i = 0; i < node.outputs().size(); ++i) out.push_back({dt, i == 0 ? YShape(s) : StateShape(s)});
  return out;
}

// ---- reference ----------------------------------------------------------------------

double Clip(const RnnSpec& s, double x) { return s.has_clip ? std::min(std::max(x, -s.clip), s.clip) : x; }

Result<std::vector<ir::TensorDataPtr>> EvaluateRnn(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                   const std::vector<ir::TensorType>& out_types) {
  KEEL_ASSIGN_OR_RETURN(RnnSpec s, DecodeRnn(node));
  auto get = [&](size_t i) { return i < in.size() && in[i] ? TensorToDoubles(*in[i]) : std::vector<double>{}; };
  const std::vector<double> X = get(kRnnX), W = get(kRnnW), R = get(kRnnR), Bv = get(kRnnB), H0 = get(kRnnH0),
                            C0 = get(kRnnC0), P = get(kRnnP);
  std::vector<int64_t> lens(static_cast<size_t>(s.batch), s.seq);
  if (kRnnLens < in.size() && in[kRnnLens]) {
    KEEL_ASSIGN_OR_RETURN(lens, ReadInts(*in[kRnnLens]));
    for (int64_t& l : lens) l = std::clamp<int64_t>(l, 0, s.seq);
  }
  const int64_t T = s.seq, NB = s.batch, I = s.input, H = s.hidden, G = s.gates, D = s.dirs;
  auto xat = [&](int64_t t, int64_t b, int64_t i) {
    return X[static_cast<size_t>(s.layout ? (b * T + t) * I + i : (t * NB + b) * I + i)];
  };
  auto state_off = [&](int64_t d, int64_t b, int64_t j) { return s.layout ? (b * D + d) * H + j : (d * NB + b) * H + j; };
  auto y_off = [&](int64_t t, int64_t d, int64_t b, int64_t j) {
    return s.layout ? ((b * T + t) * D + d) * H + j : ((t * D + d) * NB + b) * H + j;
  };
  std::vector<double> Y(static_cast<size_t>(T * D * NB * H), 0.0), YH(static_cast<size_t>(D * NB * H)), YC(YH.size());
  for (int64_t d = 0; d < D; ++d) {
    const RnnActivation* act = &s.acts[static_cast<size_t>(d * s.per_dir)];
    auto w = [&](int64_t row, int64_t i) { return W[static_cast<size_t>((d * G * H + row) * I + i)]; };
    auto r = [&](int64_t row, int64_t k) { return R[static_cast<size_t>((d * G * H + row) * H + k)]; };
    auto wb = [&](int64_t row) { return Bv.empty() ? 0.0 : Bv[static_cast<size_t>(d * 2 * G * H + row)]; };
    auto rb = [&](int64_t row) { return Bv.empty() ? 0.0 : Bv[static_cast<size_t>(d * 2 * G * H + G * H + row)]; };
    auto peep = [&](int64_t g, int64_t j) { return P.empty() ? 0.0 : P[static_cast<size_t>(d * 3 * H + g * H + j)]; };
    for (int64_t b = 0; b < NB; ++b) {
      std::vector<double> h(static_cast<size_t>(H), 0.0), c(static_cast<size_t>(H), 0.0);
      for (int64_t j = 0; j < H; ++j) {
        if (!H0.empty()) h[static_cast<size_t>(j)] = H0[static_cast<size_t>(state_off(d, b, j))];
        if (!C0.empty()) c[static_cast<size_t>(j)] = C0[static_cast<size_t>(state_off(d, b, j))];
      }
      for (int64_t step = 0; step < T; ++step) {
        const int64_t t = s.reverse[d] ? T - 1 - step : step;
        if (t >= lens[static_cast<size_t>(b)]) continue;  // Y stays 0, the state is frozen
        // xw[row] = X_t W^T, hr[row] = H_{t-1} R^T.
        std::vector<double> xw(static_cast<size_t>(G * H), 0.0), hr(static_cast<size_t>(G * H), 0.0);
        for (int64_t row = 0; row < G * H; ++row) {
          for (int64_t i = 0; i < I; ++i) xw[static_cast<size_t>(row)] += xat(t, b, i) * w(row, i);
          for (int64_t k = 0; k < H; ++k) hr[static_cast<size_t>(row)] += h[static_cast<size_t>(k)] * r(row, k);
        }
        std::vector<double> hn(static_cast<size_t>(H)), cn(static_cast<size_t>(H));
        auto pre = [&](int64_t g, int64_t j) {
          const int64_t row = g * H + j;
          return xw[static_cast<size_t>(row)] + hr[static_cast<size_t>(row)] + wb(row) + rb(row);
        };
        if (s.kind == RnnKind::kRnn) {
          for (int64_t j = 0; j < H; ++j) hn[static_cast<size_t>(j)] = ApplyActivation(act[0], Clip(s, pre(0, j)));
        } else if (s.kind == RnnKind::kGru) {
          std::vector<double> z(static_cast<size_t>(H)), rr(static_cast<size_t>(H));
          for (int64_t j = 0; j < H; ++j) {
            z[static_cast<size_t>(j)] = ApplyActivation(act[0], Clip(s, pre(0, j)));
            rr[static_cast<size_t>(j)] = ApplyActivation(act[0], Clip(s, pre(1, j)));
          }
          for (int64_t j = 0; j < H; ++j) {
            const int64_t row = 2 * H + j;
            double v;
            if (s.linear_before_reset) {
              v = xw[static_cast<size_t>(row)] + wb(row) + rr[static_cast<size_t>(j)] * (hr[static_cast<size_t>(row)] + rb(row));
            } else {
              double acc = 0;
              for (int64_t k = 0; k < H; ++k) acc += rr[static_cast<size_t>(k)] * h[static_cast<size_t>(k)] * r(row, k);
              v = xw[static_cast<size_t>(row)] + acc + wb(row) + rb(row);
            }
            const double hh = ApplyActivation(act[1], Clip(s, v));
            const double zj = z[static_cast<size_t>(j)];
            hn[static_cast<size_t>(j)] = (1 - zj) * hh + zj * h[static_cast<size_t>(j)];
          }
        } else {
          for (int64_t j = 0; j < H; ++j) {
            const double cp = c[static_cast<size_t>(j)];
            const double ig = ApplyActivation(act[0], Clip(s, pre(0, j) + peep(0, j) * cp));
            const double fg = s.input_forget ? 1 - ig : ApplyActivation(act[0], Clip(s, pre(2, j) + peep(2, j) * cp));
            const double cc = ApplyActivation(act[1], Clip(s, pre(3, j)));
            const double cj = fg * cp + ig * cc;
            const double og = ApplyActivation(act[0], Clip(s, pre(1, j) + peep(1, j) * cj));
            // The cell state going into h() is not clipped (as onnxruntime).
            cn[static_cast<size_t>(j)] = cj;
            hn[static_cast<size_t>(j)] = og * ApplyActivation(act[2], cj);
          }
          c = cn;
        }
        h = hn;
        for (int64_t j = 0; j < H; ++j) Y[static_cast<size_t>(y_off(t, d, b, j))] = h[static_cast<size_t>(j)];
      }
      const bool ran = lens[static_cast<size_t>(b)] > 0;  // length 0: zero final states
      for (int64_t j = 0; j < H; ++j) {
        YH[static_cast<size_t>(state_off(d, b, j))] = ran ? h[static_cast<size_t>(j)] : 0.0;
        YC[static_cast<size_t>(state_off(d, b, j))] = ran ? c[static_cast<size_t>(j)] : 0.0;
      }
    }
  }
  std::vector<ir::TensorDataPtr> out;
  const std::vector<double>* vals[] = {&Y, &YH, &YC};
  for (size_t i = 0; i < out_types.size(); ++i) {
    KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr t, TensorFromDoubles(out_types[i], *vals[i]));
    out.push_back(t);
  }
  return out;
}

void AddRecurrent(Registry& r, const char* name, std::vector<int> versions) {
  OpDef def;
  def.name = name;
  def.versions = std::move(versions);
  def.supported = {7, 14, 22};
  def.fusion = FusionClass::kAnchor;
  KeepF32(def, "hidden state carried across time steps");
  def.canonicalize = CanonicalizeRnn;
  def.infer = InferRnn;
  def.evaluate = EvaluateRnn;
  def.kernel = LowerRecurrent;
  r.Add(std::move(def));
}

}  // namespace

int64_t RnnFunctionsPerDirection(RnnKind kind) { return kind == RnnKind::kLstm ? 3 : kind == RnnKind::kGru ? 2 : 1; }

RnnKind RnnKindOf(const ir::Node& node) {
  return node.op_type() == "LSTM" ? RnnKind::kLstm : node.op_type() == "GRU" ? RnnKind::kGru : RnnKind::kRnn;
}

Status CanonicalizeRnnActivations(ir::Node& node, RnnKind kind, int64_t dirs) {
  ir::Attributes& a = node.attrs();
  if (a.Has("act_alpha")) return Status::Ok();  // already canonical
  const int64_t per_dir = RnnFunctionsPerDirection(kind);
  std::vector<std::string> names;
  if (const auto* given = AttrList<std::vector<std::string>>(node, "activations")) {
    names = *given;
  } else if (a.Has("activations")) {
    return NodeError(node, "activations must be a list of strings");
  } else {
    names = kind == RnnKind::kRnn ? std::vector<std::string>{"Tanh"}
            : kind == RnnKind::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                    : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
  }
  // One direction's list for a bidirectional op applies to both.
  if (dirs == 2 && static_cast<int64_t>(names.size()) == per_dir) {
    const std::vector<std::string> one = names;
    names.insert(names.end(), one.begin(), one.end());
  }
  if (static_cast<int64_t>(names.size()) != per_dir * dirs) {
    return NodeError(node, "expects " + std::to_string(per_dir * dirs) + " activations, got " + std::to_string(names.size()));
  }
  const std::vector<double> no_values;
  const auto* alphas = AttrList<std::vector<double>>(node, "activation_alpha");
  const auto* betas = AttrList<std::vector<double>>(node, "activation_beta");
  if (!alphas) alphas = &no_values;
  if (!betas) betas = &no_values;
  size_t next_alpha = 0, next_beta = 0;
  std::vector<double> alpha_out, beta_out;
  for (std::string& n : names) {
    const ActivationInfo* info = FindActivation(n);
    if (!info) return NodeUnsupported(node, "activation '" + n + "'");
    n = info->name;
    double alpha = info->alpha, beta = info->beta;
    if (info->uses_alpha && next_alpha < alphas->size()) alpha = (*alphas)[next_alpha++];
    if (info->uses_beta && next_beta < betas->size()) beta = (*betas)[next_beta++];
    alpha_out.push_back(alpha);
    beta_out.push_back(beta);
  }
  a.Set("activations", names);
  a.Set("act_alpha", alpha_out);
  a.Set("act_beta", beta_out);
  a.Erase("activation_alpha");
  a.Erase("activation_beta");
  return Status::Ok();
}

Result<RnnSpec> DecodeRnn(const ir::Node& node) {
  RnnSpec s;
  s.kind = RnnKindOf(node);
  s.gates = GatesOf(s.kind);
  s.per_dir = RnnFunctionsPerDirection(s.kind);
  KEEL_RETURN_IF_ERROR(CheckArity(node, 3, MaxInputs(s.kind)));
  const ir::Attributes& a = node.attrs();
  KEEL_ASSIGN_OR_RETURN(s.dirs, Directions(node));
  KEEL_ASSIGN_OR_RETURN(std::string dir, a.GetString("direction", "forward"));
  s.reverse[0] = dir == "reverse";
  s.reverse[1] = dir == "bidirectional";
  KEEL_ASSIGN_OR_RETURN(s.layout, a.GetInt("layout", 0));
  KEEL_ASSIGN_OR_RETURN(s.hidden, a.GetInt("hidden_size", -1));
  s.has_clip = a.Has("clip");
  KEEL_ASSIGN_OR_RETURN(s.clip, a.GetFloat("clip", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t lbr, a.GetInt("linear_before_reset", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t forget, a.GetInt("input_forget", 0));
  s.linear_before_reset = lbr != 0;
  s.input_forget = forget != 0;

  const ir::TensorType& x = InputType(node, kRnnX);
  if (!IsFloatType(x.dtype)) return NodeUnsupported(node, std::string("X of dtype ") + ir::DTypeName(x.dtype));
  if (x.shape.size() != 3) return NodeError(node, "X must be 3-D, got " + x.ToString());
  s.seq = x.shape[s.layout ? 1 : 0];
  s.batch = x.shape[s.layout ? 0 : 1];
  s.input = x.shape[2];
  const int64_t H = s.hidden, GH = s.gates * H;
  if (H <= 0) return NodeError(node, "hidden_size must be positive, got " + std::to_string(H));
  auto expect = [&](size_t i, const char* what, std::vector<int64_t> shape) -> Status {
    if (!HasInput(node, i)) return Status::Ok();
    const ir::TensorType& t = InputType(node, i);
    if (i != kRnnLens && t.dtype != x.dtype) {
      return NodeError(node, std::string(what) + " has dtype " + ir::DTypeName(t.dtype) + ", X has " + ir::DTypeName(x.dtype));
    }
    if (t.shape != shape) return NodeError(node, std::string(what) + " must have shape " + ShapeString(shape) + ", got " + t.ToString());
    return Status::Ok();
  };
  KEEL_RETURN_IF_ERROR(expect(kRnnW, "W", {s.dirs, GH, s.input}));
  KEEL_RETURN_IF_ERROR(expect(kRnnR, "R", {s.dirs, GH, H}));
  KEEL_RETURN_IF_ERROR(expect(kRnnB, "B", {s.dirs, 2 * GH}));
  KEEL_RETURN_IF_ERROR(expect(kRnnLens, "sequence_lens", {s.batch}));
  if (HasInput(node, kRnnLens) && !IsIntegerType(InputType(node, kRnnLens).dtype)) {
    return NodeError(node, "sequence_lens must be integers, got " + InputType(node, kRnnLens).ToString());
  }
  const std::vector<int64_t> state = s.layout ? std::vector<int64_t>{s.batch, s.dirs, H} : std::vector<int64_t>{s.dirs, s.batch, H};
  KEEL_RETURN_IF_ERROR(expect(kRnnH0, "initial_h", state));
  if (s.kind == RnnKind::kLstm) {
    KEEL_RETURN_IF_ERROR(expect(kRnnC0, "initial_c", state));
    KEEL_RETURN_IF_ERROR(expect(kRnnP, "P", {s.dirs, 3 * H}));
  }
  KEEL_RETURN_IF_ERROR(CheckedElements(node, {s.seq, s.dirs, s.batch, GH}).status());

  const auto* names = AttrList<std::vector<std::string>>(node, "activations");
  const auto* alphas = AttrList<std::vector<double>>(node, "act_alpha");
  const auto* betas = AttrList<std::vector<double>>(node, "act_beta");
  const size_t n = static_cast<size_t>(s.per_dir * s.dirs);
  if (!names || !alphas || !betas || names->size() != n || alphas->size() != n || betas->size() != n) {
    return NodeError(node, "activations are not canonical");
  }
  for (size_t i = 0; i < n; ++i) {
    const ActivationInfo* info = FindActivation((*names)[i]);
    if (!info) return NodeUnsupported(node, "activation '" + (*names)[i] + "'");
    s.acts.push_back({info->name, (*alphas)[i], (*betas)[i]});
  }
  return s;
}

double ApplyActivation(const RnnActivation& a, double x) {
  const std::string& n = a.name;
  if (n == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (n == "Tanh") return std::tanh(x);
  if (n == "Relu") return std::max(x, 0.0);
  if (n == "HardSigmoid") return std::min(std::max(a.alpha * x + a.beta, 0.0), 1.0);
  if (n == "LeakyRelu") return x >= 0 ? x : a.alpha * x;
  if (n == "ThresholdedRelu") return x > a.alpha ? x : 0.0;
  if (n == "ScaledTanh") return a.alpha * std::tanh(a.beta * x);
  if (n == "Affine") return a.alpha * x + a.beta;
  if (n == "Elu") return x > 0 ? x : a.alpha * (std::exp(x) - 1);
  if (n == "Softsign") return x / (1 + std::fabs(x));
  return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x)));  // Softplus
}

Expr ActivationExpr(const RnnActivation& a, const Expr& x) {
  using codegen::FloatConst;
  using codegen::Unary;
  using codegen::UnaryOp;
  auto c = [](double v) { return FloatConst(v, ir::DType::kF32); };
  const std::string& n = a.name;
  if (n == "Sigmoid") return Unary(UnaryOp::kSigmoid, x);
  if (n == "Tanh") return Unary(UnaryOp::kTanh, x);
  if (n == "Relu") return codegen::Max(x, c(0));
  if (n == "HardSigmoid") return codegen::Min(codegen::Max(x * c(a.alpha) + c(a.beta), c(0)), c(1));
  if (n == "LeakyRelu") return codegen::Select(x >= c(0), x, x * c(a.alpha));
  if (n == "ThresholdedRelu") return codegen::Select(x > c(a.alpha), x, c(0));
  if (n == "ScaledTanh") return c(a.alpha) * Unary(UnaryOp::kTanh, x * c(a.beta));
  if (n == "Affine") return x * c(a.alpha) + c(a.beta);
  if (n == "Elu") return codegen::Select(x > c(0), x, c(a.alpha) * (Unary(UnaryOp::kExp, x) - c(1)));
  if (n == "Softsign") return x / (c(1) + Unary(UnaryOp::kAbs, x));
  return codegen::Max(x, c(0)) + Unary(UnaryOp::kLog, c(1) + Unary(UnaryOp::kExp, -Unary(UnaryOp::kAbs, x)));
}

std::vector<Expr> RnnXIndex(const RnnSpec& s, Expr t, Expr b, Expr i) {
  return s.layout ? std::vector<Expr>{b, t, i} : std::vector<Expr>{t, b, i};
}
std::vector<Expr> RnnYIndex(const RnnSpec& s, Expr t, Expr d, Expr b, Expr h) {
  return s.layout ? std::vector<Expr>{b, t, d, h} : std::vector<Expr>{t, d, b, h};
}
std::vector<Expr> RnnStateIndex(const RnnSpec& s, Expr d, Expr b, Expr h) {
  return s.layout ? std::vector<Expr>{b, d, h} : std::vector<Expr>{d, b, h};
}

void RegisterRecurrentOps(Registry& r) {
  AddRecurrent(r, "RNN", {1, 7, 14, 22});
  AddRecurrent(r, "GRU", {1, 3, 7, 14, 22});
  AddRecurrent(r, "LSTM", {1, 7, 14, 22});
}

}  // namespace keel::ops
