// compiler/ops/signal_dft.cc — the Fourier transforms: DFT (opsets 17, 20) and
// STFT (17).
//
// Both are composite ops (expansion.h). A DFT along one axis is a matrix
// product: the signal, with the transformed axis and its [re, im] pair moved
// last and flattened ([P, L*c]), times a constant [L*c, K*c'] matrix of the
// cosines and sines, gives [P, K*c'], which is reshaped and transposed back.
// The matrix also does the truncation (rows past dft_length are zero) and the
// zero padding (fewer rows than dft_length), the 1/N of the inverse and the
// Hermitian completion of the one-sided inverse. That is O(L*K) per row, which
// is what the small transforms of audio front ends (n_fft in the hundreds)
// want anyway, and it runs on the MatMul path. Angles are reduced exactly
// (k*n mod N) and quarter turns are exact, so bins that are zero in exact
// arithmetic (the imaginary parts of DC and Nyquist) come out zero.
//
// DFT canonical form (onnx/reference/ops/op_dft.py): one input x [..., c]
// with c = 1 (real) or 2 (complex); ints axis (non-negative, < rank-1),
// inverse, onesided (0/1) and dft_length (default: the axis length, or
// 2*(length-1) for the one-sided inverse). Opset 17 has axis as an attribute
// (default 1), opset 20 as an optional input (default -2); dft_length and the
// axis input must be compile-time constants (they decide the output shape).
// Output: forward: K = N (N/2+1 when onesided) bins, c' = 2; inverse: N
// samples, c' = 2, or c' = 1 for the one-sided inverse (irfft).
//
// STFT canonical form: signal [batch, length, c], window (optional, [W]);
// ints keel.frame_step, keel.frame_length, onesided (default 1). Frames are
// gathered with constant indices, weighted by the window and transformed by
// a DFT along the frame axis: output [batch, frames, K, 2].
#include <cmath>
#include <numeric>

#include "compiler/ops/expansion.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using ir::Value;

// The dense matrix's size limit: beyond it the expansion would be a large
// constant and an O(N^2) product, not what a dense DFT is for.
constexpr int64_t kMaxMatrixElements = int64_t{1} << 24;

// Moves constant one-value integer input `index` into int attribute `attr`.
Status LiftOne(ir::Node& node, size_t index, const std::string& attr, const std::string& why) {
  if (!HasInput(node, index)) return Status::Ok();
  const ir::TensorData* c = ConstantInput(node, index);
  if (!c) return NeedsConstant(node, index, why);
  if (IsFloatType(c->type.dtype)) return NodeError(node, attr + " must be an integer");
  KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> v, ReadInts(*c));
  if (v.size() != 1) return NodeError(node, attr + " must be one value, got " + std::to_string(v.size()));
  node.attrs().Set(attr, v[0]);
  node.SetInput(index, nullptr);
  TrimTrailingNulls(node);
  return Status::Ok();
}

Status SetFlag(ir::Node& node, const std::string& name, int64_t def) {
  KEEL_ASSIGN_OR_RETURN(int64_t v, node.attrs().GetInt(name, def));
  node.attrs().Set(name, v != 0 ? int64_t{1} : int64_t{0});
  return Status::Ok();
}

// cos and sin of 2*pi*m/n, exact at quarter turns.
void UnitRoot(int64_t m, int64_t n, double& c, double& s) {
  m %= n;
  if ((4 * m) % n == 0) {
    static const double kc[4] = {1, 0, -1, 0}, ks[4] = {0, 1, 0, -1};
    c = kc[(4 * m) / n];
    s = ks[(4 * m) / n];
    return;
  }
  const double a = 2 * M_PI * static_cast<double>(m) / static_cast<double>(n);
  c = std::cos(a);
  s = std::sin(a);
}

// ---- DFT ---------------------------------------------------------------------------------

struct DftShape {
  int64_t axis = 0, len = 0, n = 0, bins = 0, channels = 0, out_channels = 0;
  bool inverse = false, onesided = false;
};

Status CanonicalizeDft(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 3));
  KEEL_RETURN_IF_ERROR(LiftOne(node, 2, "axis", "the transformed axis decides the output shape"));
  KEEL_RETURN_IF_ERROR(LiftOne(node, 1, "dft_length", "dft_length decides the output shape"));
  const std::vector<int64_t>& shape = InputType(node, 0).shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank < 2 || (shape.back() != 1 && shape.back() != 2)) {
    return NodeError(node, "input must be [..., 1] (real) or [..., 2] (complex), got " + ShapeString(shape));
  }
  KEEL_RETURN_IF_ERROR(CanonicalizeAxisAttr(node, "axis", 1, rank));
  const int64_t axis = *node.attrs().GetInt("axis", 1);
  if (axis == rank - 1) return NodeError(node, "axis cannot be the last ([re, im]) dimension");
  KEEL_RETURN_IF_ERROR(SetFlag(node, "inverse", 0));
  KEEL_RETURN_IF_ERROR(SetFlag(node, "onesided", 0));
  if (!node.attrs().Has("dft_length")) {
    const int64_t len = shape[static_cast<size_t>(axis)];
    const bool irfft = *node.attrs().GetInt("inverse", 0) && *node.attrs().GetInt("onesided", 0);
    node.attrs().Set("dft_length", irfft ? 2 * (len - 1) : len);
  }
  return Status::Ok();
}

Result<DftShape> DftDims(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  if (!IsFloatType(x.dtype)) return NodeUnsupported(node, std::string(node.op_type()) + " on " + ir::DTypeName(x.dtype));
  DftShape d;
  KEEL_ASSIGN_OR_RETURN(d.axis, node.attrs().GetInt("axis", 1));
  KEEL_ASSIGN_OR_RETURN(d.n, node.attrs().GetInt("dft_length", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t inverse, node.attrs().GetInt("inverse", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t onesided, node.attrs().GetInt("onesided", 0));
  d.inverse = inverse != 0;
  d.onesided = onesided != 0;
  if (d.axis < 0 || d.axis + 1 >= static_cast<int64_t>(x.shape.size())) return NodeError(node, "axis is out of range");
  if (d.n < 1) return NodeError(node, "dft_length must be positive, got " + std::to_string(d.n));
  d.len = x.shape[static_cast<size_t>(d.axis)];
  d.channels = x.shape.back();
  d.bins = (d.onesided && !d.inverse) ? d.n / 2 + 1 : d.n;
  d.out_channels = (d.onesided && d.inverse) ? 1 : 2;
  const double matrix = static_cast<double>(d.len * d.channels) * static_cast<double>(d.bins * d.out_channels);
  if (matrix > static_cast<double>(kMaxMatrixElements)) {
    return NodeUnsupported(node, "a transform of " + std::to_string(d.len) + " x " + std::to_string(d.n) +
                                     " points is too large for the dense DFT expansion");
  }
  return d;
}

Result<std::vector<ir::TensorType>> InferDft(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(DftShape d, DftDims(node));
  std::vector<int64_t> shape = InputType(node, 0).shape;
  shape[static_cast<size_t>(d.axis)] = d.bins;
  shape.back() = d.out_channels;
  return One({InputType(node, 0).dtype, shape});
}

// W[(n, ci), (k, co)]: the coefficient of input point n, channel ci (re, im)
// in output point k, channel co.
std::vector<double> DftMatrix(const DftShape& d) {
  const int64_t cols = d.bins * d.out_channels;
  std::vector<double> w(static_cast<size_t>(d.len * d.channels * cols), 0.0);
  auto at = [&](int64_t n, int64_t ci, int64_t k, int64_t co) -> double& {
    return w[static_cast<size_t>((n * d.channels + ci) * cols + k * d.out_channels + co)];
  };
  const double scale = d.inverse ? 1.0 / static_cast<double>(d.n) : 1.0;
  // The one-sided inverse reads bins 0..N/2 and mirrors the rest (irfft).
  const int64_t used = std::min(d.len, d.inverse && d.onesided ? d.n / 2 + 1 : d.n);
  for (int64_t n = 0; n < used; ++n) {
    double weight = scale;
    if (d.inverse && d.onesided && n > 0 && 2 * n != d.n) weight *= 2;
    for (int64_t k = 0; k < d.bins; ++k) {
      double c, s;
      UnitRoot(k * n, d.n, c, s);
      if (!d.inverse) s = -s;  // forward: e^{-i theta}
      // (R + iI)(c + is) = (Rc - Is) + i(Rs + Ic)
      at(n, 0, k, 0) = weight * c;
      if (d.out_channels == 2) at(n, 0, k, 1) = weight * s;
      if (d.channels == 2) {
        at(n, 1, k, 0) = -weight * s;
        if (d.out_channels == 2) at(n, 1, k, 1) = weight * c;
      }
    }
  }
  return w;
}

Result<std::vector<Value*>> ExpandDft(Expander& b, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(DftShape d, DftDims(node));
  Value* x = node.input(0);
  const ir::DType dt = x->type().dtype;
  const std::vector<int64_t> shape = x->type().shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  // perm: the other dimensions, then the axis, then the [re, im] pair.
  std::vector<int64_t> perm, others;
  for (int64_t i = 0; i + 1 < rank; ++i) {
    if (i != d.axis) {
      perm.push_back(i);
      others.push_back(shape[static_cast<size_t>(i)]);
    }
  }
  perm.push_back(d.axis);
  perm.push_back(rank - 1);
  const bool moved = d.axis != rank - 2;
  if (moved) {
    KEEL_ASSIGN_OR_RETURN(x, b.Op("Transpose", {x}, {{"perm", perm}}));
  }
  const int64_t rows = std::accumulate(others.begin(), others.end(), int64_t{1}, std::multiplies<int64_t>());
  KEEL_ASSIGN_OR_RETURN(x, b.Op("Reshape", {x, b.Ints({rows, d.len * d.channels})}));
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr w, TensorFromDoubles({dt, {d.len * d.channels, d.bins * d.out_channels}},
                                                               DftMatrix(d)));
  KEEL_ASSIGN_OR_RETURN(Value* y, b.Op("MatMul", {x, b.Const(w)}));
  std::vector<int64_t> out = others;
  out.push_back(d.bins);
  out.push_back(d.out_channels);
  KEEL_ASSIGN_OR_RETURN(y, b.Op("Reshape", {y, b.Ints(out)}));
  if (moved) {
    std::vector<int64_t> inv(perm.size());
    for (size_t p = 0; p < perm.size(); ++p) inv[static_cast<size_t>(perm[p])] = static_cast<int64_t>(p);
    KEEL_ASSIGN_OR_RETURN(y, b.Op("Transpose", {y}, {{"perm", inv}}));
  }
  return std::vector<Value*>{y};
}

Status NormalizeDft(ir::Node& node, int version) {
  if (version >= 20) {
    if (node.attrs().Has("axis")) return NodeError(node, "axis is an input since opset 20");
    if (!HasInput(node, 2)) node.attrs().Set("axis", int64_t{-2});
  } else if (!node.attrs().Has("axis")) {
    node.attrs().Set("axis", int64_t{1});
  }
  return Status::Ok();
}

// ---- STFT --------------------------------------------------------------------------------

Status CanonicalizeStft(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 4));
  if (!node.attrs().Has("keel.frame_step")) {
    const ir::TensorData* c = ConstantInput(node, 1);
    if (!c) return NeedsConstant(node, 1, "frame_step decides the number of frames");
    KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> v, ReadInts(*c));
    if (v.size() != 1) return NodeError(node, "frame_step must be one value");
    node.attrs().Set("keel.frame_step", v[0]);
  }
  KEEL_RETURN_IF_ERROR(LiftOne(node, 3, "keel.frame_length", "frame_length decides the output shape"));
  const std::vector<int64_t>& s = InputType(node, 0).shape;
  if (s.size() != 3 || (s[2] != 1 && s[2] != 2)) {
    return NodeError(node, "signal must be [batch, length, 1 or 2], got " + ShapeString(s));
  }
  if (!node.attrs().Has("keel.frame_length")) {
    node.attrs().Set("keel.frame_length", HasInput(node, 2) && InputType(node, 2).shape.size() == 1
                                              ? InputType(node, 2).shape[0]
                                              : s[1]);
  }
  return SetFlag(node, "onesided", 1);
}

struct StftShape {
  int64_t batch = 0, len = 0, channels = 0, step = 0, frame = 0, frames = 0, bins = 0;
};

Result<StftShape> StftDims(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 3));
  const ir::TensorType& x = InputType(node, 0);
  if (!IsFloatType(x.dtype)) return NodeUnsupported(node, std::string("STFT on ") + ir::DTypeName(x.dtype));
  StftShape d;
  d.batch = x.shape[0];
  d.len = x.shape[1];
  d.channels = x.shape[2];
  KEEL_ASSIGN_OR_RETURN(d.step, node.attrs().GetInt("keel.frame_step", 0));
  KEEL_ASSIGN_OR_RETURN(d.frame, node.attrs().GetInt("keel.frame_length", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t onesided, node.attrs().GetInt("onesided", 1));
  if (d.step < 1) return NodeError(node, "frame_step must be positive, got " + std::to_string(d.step));
  if (d.frame < 1 || d.frame > d.len) {
    return NodeError(node, "frame_length " + std::to_string(d.frame) + " must be in [1, " + std::to_string(d.len) + "]");
  }
  if (HasInput(node, 2)) {
    const ir::TensorType& w = InputType(node, 2);
    if (w.shape != std::vector<int64_t>{d.frame}) {
      return NodeError(node, "window " + ShapeString(w.shape) + " must be [frame_length] = [" + std::to_string(d.frame) + "]");
    }
    if (w.dtype != x.dtype) return NodeError(node, "window and signal dtypes differ");
  }
  d.frames = 1 + (d.len - d.frame) / d.step;
  d.bins = onesided ? d.frame / 2 + 1 : d.frame;
  return d;
}

Result<std::vector<ir::TensorType>> InferStft(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(StftShape d, StftDims(node));
  return One({InputType(node, 0).dtype, {d.batch, d.frames, d.bins, 2}});
}

Result<std::vector<Value*>> ExpandStft(Expander& b, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(StftShape d, StftDims(node));
  std::vector<int64_t> idx(static_cast<size_t>(d.frames * d.frame));
  for (int64_t f = 0; f < d.frames; ++f) {
    for (int64_t j = 0; j < d.frame; ++j) idx[static_cast<size_t>(f * d.frame + j)] = f * d.step + j;
  }
  // [batch, frames, frame, c]
  KEEL_ASSIGN_OR_RETURN(Value* frames, b.Op("Gather", {node.input(0), b.Const(MakeTensorI64({d.frames, d.frame}, idx))},
                                            {{"axis", int64_t{1}}}));
  if (HasInput(node, 2)) {
    KEEL_ASSIGN_OR_RETURN(Value* w, b.Op("Reshape", {node.input(2), b.Ints({d.frame, 1})}));
    KEEL_ASSIGN_OR_RETURN(frames, b.Op("Mul", {frames, w}));
  }
  KEEL_ASSIGN_OR_RETURN(int64_t onesided, node.attrs().GetInt("onesided", 1));
  KEEL_ASSIGN_OR_RETURN(Value* y, b.Op("DFT", {frames}, {{"axis", int64_t{2}},
                                                          {"inverse", int64_t{0}},
                                                          {"onesided", onesided},
                                                          {"dft_length", d.frame}}));
  return std::vector<Value*>{y};
}

}  // namespace

void RegisterSignalDftOps(Registry& r) {
  {
    OpDef def;
    def.name = "DFT";
    def.versions = {17, 20};
    def.removed_by = "shape-inference (expansion)";
    def.normalize = NormalizeDft;
    def.canonicalize = CanonicalizeDft;
    def.infer = InferDft;
    def.expand = ExpandDft;
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "STFT";
    def.versions = {17};
    def.removed_by = "shape-inference (expansion)";
    def.canonicalize = CanonicalizeStft;
    def.infer = InferStft;
    def.expand = ExpandStft;
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
