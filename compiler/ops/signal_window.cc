// compiler/ops/signal_window.cc — the signal-processing generators of opset 17:
// HannWindow, HammingWindow, BlackmanWindow and MelWeightMatrix.
//
// Their outputs depend only on constant scalars (the window size; the mel
// matrix's bins, rates and edges), which also decide the output shapes, so
// each is a composite op (expansion.h) that expands into one constant tensor,
// computed here in double precision and rounded once to `output_datatype`.
// A scalar that is not a compile-time constant is refused with NeedsConstant.
//
// Canonical form: the constant scalars are copied into keel.* attributes (the
// inputs stay; nothing reads them after canonicalization), output_datatype an
// ONNX type code (default float) and periodic 0/1 (default 1).
//
// Formulas (onnx/reference/ops/op_*_window.py), N = size (periodic) or size-1:
//   Hann      sin^2(pi n / N)
//   Hamming   25/46 - 21/46 cos(2 pi n / N)
//   Blackman  0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)
// MelWeightMatrix follows the reference's triangular filters over the
// HTK mel scale, including its integer rounding of the bin edges.
#include <cmath>

#include "compiler/ops/expansion.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

enum class Window { kHann, kHamming, kBlackman };

// Copies constant scalar input `index` into double attribute `attr`.
Status LiftScalarAttr(ir::Node& node, size_t index, const std::string& attr, const std::string& why) {
  if (node.attrs().Has(attr)) return Status::Ok();
  if (!HasInput(node, index)) return NodeError(node, "input " + std::to_string(index) + " is missing");
  const ir::TensorData* c = ConstantInput(node, index);
  if (!c) return NeedsConstant(node, index, why);
  if (c->type.NumElements() != 1) {
    return NodeError(node, "input " + std::to_string(index) + " must be a scalar, got " + c->type.ToString());
  }
  node.attrs().Set(attr, ElementAsDouble(*c, 0));
  return Status::Ok();
}

Result<ir::DType> OutputDType(const ir::Node& node, int64_t def) {
  KEEL_ASSIGN_OR_RETURN(int64_t code, node.attrs().GetInt("output_datatype", def));
  KEEL_ASSIGN_OR_RETURN(ir::DType dt, DTypeFromOnnx(code));
  if (!IsFloatType(dt) && !IsIntegerType(dt)) return NodeUnsupported(node, std::string("output_datatype ") + ir::DTypeName(dt));
  return dt;
}

// ---- windows ----------------------------------------------------------------------------

Status CanonicalizeWindow(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  if (IsFloatType(InputType(node, 0).dtype)) return NodeError(node, "size must be an integer");
  KEEL_RETURN_IF_ERROR(LiftScalarAttr(node, 0, "keel.size", "the window size decides the output shape"));
  KEEL_ASSIGN_OR_RETURN(int64_t periodic, node.attrs().GetInt("periodic", 1));
  node.attrs().Set("periodic", periodic != 0 ? int64_t{1} : int64_t{0});
  return Status::Ok();
}

Result<int64_t> WindowSize(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(double size, node.attrs().GetFloat("keel.size", -1));
  if (size < 0 || size > static_cast<double>(kMaxElements)) {
    return NodeError(node, "window size " + std::to_string(static_cast<int64_t>(size)) + " is out of range");
  }
  return static_cast<int64_t>(size);
}

Result<std::vector<ir::TensorType>> InferWindow(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(int64_t size, WindowSize(node));
  KEEL_ASSIGN_OR_RETURN(ir::DType dt, OutputDType(node, 1));
  return One({dt, {size}});
}

Result<std::vector<ir::Value*>> ExpandWindow(Window w, Expander& b, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(int64_t size, WindowSize(node));
  KEEL_ASSIGN_OR_RETURN(ir::DType dt, OutputDType(node, 1));
  KEEL_ASSIGN_OR_RETURN(int64_t periodic, node.attrs().GetInt("periodic", 1));
  // A symmetric window of one element divides by zero in the formula; the
  // reference gives NaN there (0/0 in the cosine), which we keep.
  const double n_1 = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> v(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    const double x = static_cast<double>(i) / n_1;
    double y = 0;
    switch (w) {
      case Window::kHann: {
        const double s = std::sin(M_PI * x);
        y = s * s;
        break;
      }
      case Window::kHamming: y = 25.0 / 46.0 - (1.0 - 25.0 / 46.0) * std::cos(2 * M_PI * x); break;
      case Window::kBlackman: y = 0.42 - 0.5 * std::cos(2 * M_PI * x) + 0.08 * std::cos(4 * M_PI * x); break;
    }
    v[static_cast<size_t>(i)] = y;
  }
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr t, TensorFromDoubles({dt, {size}}, v));
  return std::vector<ir::Value*>{b.Const(t)};
}

// ---- MelWeightMatrix -------------------------------------------------------------------

enum MelInput { kNumMelBins, kDftLength, kSampleRate, kLowerEdge, kUpperEdge };
const char* const kMelAttrs[] = {"keel.num_mel_bins", "keel.dft_length", "keel.sample_rate", "keel.lower_edge_hertz",
                                 "keel.upper_edge_hertz"};

Status CanonicalizeMel(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 5, 5));
  for (size_t i = 0; i < 5; ++i) {
    KEEL_RETURN_IF_ERROR(LiftScalarAttr(node, i, kMelAttrs[i], "the mel weights are computed at compile time"));
  }
  return Status::Ok();
}

struct MelParams {
  int64_t mel_bins = 0, dft_length = 0, sample_rate = 0;
  double lower = 0, upper = 0;
  int64_t spectrogram_bins() const { return dft_length / 2 + 1; }
};

Result<MelParams> ReadMel(const ir::Node& node) {
  double v[5];
  for (size_t i = 0; i < 5; ++i) {
    KEEL_ASSIGN_OR_RETURN(v[i], node.attrs().GetFloat(kMelAttrs[i], -1));
  }
  MelParams p;
  p.mel_bins = static_cast<int64_t>(v[kNumMelBins]);
  p.dft_length = static_cast<int64_t>(v[kDftLength]);
  p.sample_rate = static_cast<int64_t>(v[kSampleRate]);
  p.lower = v[kLowerEdge];
  p.upper = v[kUpperEdge];
  const double limit = 1 << 24;
  if (v[kNumMelBins] < 1 || v[kNumMelBins] > limit || v[kDftLength] < 1 || v[kDftLength] > limit ||
      p.sample_rate <= 0) {
    return NodeError(node, "num_mel_bins, dft_length and sample_rate must be positive (got " +
                               std::to_string(p.mel_bins) + ", " + std::to_string(p.dft_length) + ", " +
                               std::to_string(p.sample_rate) + ")");
  }
  if (!(p.lower >= 0) || !(p.upper >= p.lower)) {
    return NodeError(node, "the edges must satisfy 0 <= lower_edge_hertz <= upper_edge_hertz");
  }
  return p;
}

Result<std::vector<ir::TensorType>> InferMel(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(MelParams p, ReadMel(node));
  KEEL_ASSIGN_OR_RETURN(ir::DType dt, OutputDType(node, 1));
  std::vector<int64_t> shape = {p.spectrogram_bins(), p.mel_bins};
  KEEL_RETURN_IF_ERROR(CheckedElements(node, shape).status());
  return One({dt, shape});
}

Result<std::vector<ir::Value*>> ExpandMel(Expander& b, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(MelParams p, ReadMel(node));
  KEEL_ASSIGN_OR_RETURN(ir::DType dt, OutputDType(node, 1));
  const int64_t rows = p.spectrogram_bins(), cols = p.mel_bins;
  // Bin edges: mel_bins + 2 points evenly spaced in mel, mapped back to Hz and
  // to spectrogram bins by floor((dft_length + 1) * hz / sample_rate).
  const double low_mel = 2595 * std::log1p(p.lower / 700) / std::log(10.0);
  const double high_mel = 2595 * std::log1p(p.upper / 700) / std::log(10.0);
  const int64_t points = cols + 2;
  const double step = (high_mel - low_mel) / static_cast<double>(points);
  std::vector<int64_t> edge(static_cast<size_t>(points));
  for (int64_t i = 0; i < points; ++i) {
    const double mel = static_cast<double>(i) * step + low_mel;
    const double hz = 700 * std::expm1(mel / 2595 * std::log(10.0));
    const double bin = std::floor(static_cast<double>(p.dft_length + 1) * hz / static_cast<double>(p.sample_rate));
    if (!(bin >= 0) || bin >= static_cast<double>(rows)) {
      return NodeError(node, "mel band edge " + std::to_string(i) + " falls outside the " + std::to_string(rows) +
                                 " spectrogram bins (upper_edge_hertz above the Nyquist frequency?)");
    }
    edge[static_cast<size_t>(i)] = static_cast<int64_t>(bin);
  }
  std::vector<double> w(static_cast<size_t>(rows * cols), 0.0);
  auto at = [&](int64_t r, int64_t c) -> double& { return w[static_cast<size_t>(r * cols + c)]; };
  for (int64_t i = 0; i < cols; ++i) {
    const int64_t lo = edge[static_cast<size_t>(i)], mid = edge[static_cast<size_t>(i + 1)],
                  hi = edge[static_cast<size_t>(i + 2)];
    if (mid == lo) {
      at(mid, i) = 1;
    } else {
      for (int64_t j = lo; j <= mid; ++j) at(j, i) = static_cast<double>(j - lo) / static_cast<double>(mid - lo);
    }
    if (hi > mid) {
      for (int64_t j = mid; j < hi; ++j) at(j, i) = static_cast<double>(hi - j) / static_cast<double>(hi - mid);
    }
  }
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr t, TensorFromDoubles({dt, {rows, cols}}, w));
  return std::vector<ir::Value*>{b.Const(t)};
}

OpDef Composite(const std::string& name) {
  OpDef def;
  def.name = name;
  def.versions = {17};
  def.removed_by = "shape-inference (expansion)";
  return def;
}

}  // namespace

void RegisterSignalWindowOps(Registry& r) {
  const std::pair<const char*, Window> windows[] = {
      {"HannWindow", Window::kHann}, {"HammingWindow", Window::kHamming}, {"BlackmanWindow", Window::kBlackman}};
  for (const auto& [name, w] : windows) {
    OpDef def = Composite(name);
    def.canonicalize = CanonicalizeWindow;
    def.infer = InferWindow;
    def.expand = [w = w](Expander& b, const ir::Node& node) { return ExpandWindow(w, b, node); };
    r.Add(std::move(def));
  }
  OpDef mel = Composite("MelWeightMatrix");
  mel.canonicalize = CanonicalizeMel;
  mel.infer = InferMel;
  mel.expand = ExpandMel;
  r.Add(std::move(mel));
}

}  // namespace keel::ops
