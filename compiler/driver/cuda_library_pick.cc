// compiler/driver/cuda_library_pick.cc — the CUDA target's library kernels for
// a chain's head (cuda_library_pick.h).
#include "compiler/driver/cuda_library_pick.h"

#include <cmath>
#include <sstream>

#include "common/conv_geometry.h"
#include "compiler/codegen/kernel_dedup.h"
#include "compiler/codegen/lower.h"
#include "compiler/driver/cuda_backend_conv.h"
#include "compiler/ops/channels_last.h"
#include "compiler/ops/fused_attention.h"
#include "compiler/ops/registry.h"
#include "serialization/library_ops.h"

namespace keel::driver {
namespace {

namespace lib = ser::library_ops;
using lower::StepArg;

// The element types the CUDA libraries take (vm/cuda/library_dtypes.h).
bool LibraryDType(ir::DType t) { return t == ir::DType::kF32 || t == ir::DType::kF16 || t == ir::DType::kBF16; }

std::optional<double> ScalarF32(const ir::TensorData* d) {
  if (!d || d->type.dtype != ir::DType::kF32 || d->type.NumElements() != 1) return std::nullopt;
  return static_cast<double>(d->data<float>()[0]);
}

ser::KernelArgDesc ArgOf(const ir::Value* v, ser::ArgAccess access) {
  return {lower::ToSerDType(v->type().dtype), v->type().shape, access};
}

int64_t Prod(const std::vector<int64_t>& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= s[i];
  return p;
}

// The operand of binary `n` that is not `prev`; nullptr when both/neither are.
const ir::Value* OtherOperand(const ir::Node& n, const ir::Value* prev) {
  if (n.inputs().size() != 2) return nullptr;
  if (n.input(0) == prev && n.input(1) != prev) return n.input(1);
  if (n.input(1) == prev && n.input(0) != prev) return n.input(0);
  return nullptr;
}

// Gelu with approximate = "tanh" (a model's own, or a half one, see
// passes/mixed_precision.h).
bool IsTanhGelu(const ir::Node& n) {
  if (n.op_type() != "Gelu" || n.inputs().size() != 1 || n.outputs().size() != 1) return false;
  const Result<std::string> approx = n.attrs().GetString("approximate", "none");
  return approx.ok() && *approx == "tanh";
}

// The registry's epilogue role of a chain node.
ops::EpilogueRole RoleOf(const ir::Node& n) {
  const ops::OpDef* def = ops::FindOp(n);
  return def ? def->epilogue : ops::EpilogueRole::kNone;
}

bool SymmetricPads(const std::vector<int64_t>& pads) {
  return pads.size() == 4 && pads[0] == pads[2] && pads[1] == pads[3];
}

}  // namespace

bool SameLibraryDType(std::initializer_list<const ir::Value*> vs) {
  const ir::DType t = (*vs.begin())->type().dtype;
  if (!LibraryDType(t)) return false;
  for (const ir::Value* v : vs)
    if (v->type().dtype != t) return false;
  return true;
}

std::optional<LibraryPick> PickGemm(const Chain& c, int64_t index, bool is_gemm) {
  const ir::Node& a = *c.nodes[0];
  const ir::Value* A = a.input(0);
  const ir::Value* B = a.input(1);
  const ir::Value* Y = a.output(0);
  if (!A || !B || c.InputIndex(A) < 0 || c.InputIndex(B) < 0) return std::nullopt;
  if (!SameLibraryDType({A, B, Y})) return std::nullopt;
  const auto& as = A->type().shape;
  const auto& bs = B->type().shape;
  int64_t m = 0, n = 0, k = 0, batch = 1, stride_a = -1, stride_b = -1, trans_a = 0, trans_b = 0;
  double alpha = 1.0, beta = 1.0;
  // B in one-column panels [N, K, 1] (PackedBColumns): cuBLASLt's transposed B.
  const int64_t packed_n = ops::PackedColumns(a);
  const bool b_nk = packed_n > 0 && bs.size() == 3 && bs[0] == packed_n && bs[2] == 1;
  if (packed_n > 0 && !b_nk) return std::nullopt;
  if (b_nk) {  // never under transA (PackedBColumns); a MatMul has no alpha/beta (1)
    auto ta = a.attrs().GetInt("transA", 0);
    auto al = a.attrs().GetFloat("alpha", 1.0), be = a.attrs().GetFloat("beta", 1.0);
    if (!ta.ok() || *ta != 0 || !al.ok() || !be.ok() || as.size() < 2 || (is_gemm && as.size() != 2) ||
        bs[1] != as.back()) {
      return std::nullopt;
    }
    alpha = *al, beta = *be, trans_b = 1, n = packed_n, k = as.back();
    m = Prod(as, 0, as.size() - 1);
    if (!is_gemm) stride_b = 0;
  } else if (is_gemm) {
    if (as.size() != 2 || bs.size() != 2) return std::nullopt;
    auto ta = a.attrs().GetInt("transA", 0), tb = a.attrs().GetInt("transB", 0);
    auto al = a.attrs().GetFloat("alpha", 1.0), be = a.attrs().GetFloat("beta", 1.0);
    if (!ta.ok() || !tb.ok() || !al.ok() || !be.ok()) return std::nullopt;
    trans_a = *ta;
    trans_b = *tb;
    alpha = *al;
    beta = *be;
    m = trans_a ? as[1] : as[0];
    k = trans_a ? as[0] : as[1];
    n = trans_b ? bs[0] : bs[1];
  } else {
    if (as.size() < 2 || bs.size() < 2) return std::nullopt;
    m = as[as.size() - 2];
    k = as.back();
    n = bs.back();
    if (bs[bs.size() - 2] != k) return std::nullopt;
    std::vector<int64_t> ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
    if (bb.empty() || Prod(bb, 0, bb.size()) == 1) {
      m *= Prod(ab, 0, ab.size());  // [.., m, k] x [k, n]: one big GEMM
      stride_b = 0;
    } else if (ab.empty() || Prod(ab, 0, ab.size()) == 1) {
      batch = Prod(bb, 0, bb.size());
      stride_a = 0;
    } else if (ab == bb) {
      batch = Prod(ab, 0, ab.size());
    } else {
      return std::nullopt;  // broadcast batch dims: generated
    }
  }
  if (m < 1 || n < 1 || k < 1) return std::nullopt;

  LibraryPick p;
  p.kernel.kind = ser::KernelKind::kLibrary;
  p.kernel.device = ser::DeviceKind::kCuda;
  p.kernel.library_op = lib::kCublasGemm;
  p.kernel.name = codegen::IndexedName("k", index) + "_cublas_gemm";
  p.args = {In(c.InputIndex(A)), In(c.InputIndex(B))};
  p.kernel.args = {ArgOf(A, ser::ArgAccess::kRead), ArgOf(B, ser::ArgAccess::kRead)};
  const ir::Value* bias = nullptr;
  std::string broadcast = lib::value::kBiasRow;
  if (is_gemm && a.input(2)) {
    const ir::Value* C = a.input(2);
    if (c.InputIndex(C) < 0 || C->type().dtype != Y->type().dtype) return std::nullopt;
    int64_t ce = C->type().NumElements();
    const auto& cs = C->type().shape;
    bool row = ce == n && (cs.size() == 1 || (cs.size() == 2 && cs[0] == 1));
    bool full = cs.size() == 2 && cs[0] == m && cs[1] == n;
    if (row && beta == 1.0) {
      bias = C;
    } else if (full) {
      bias = C;
      broadcast = lib::value::kBiasFull;
    } else {
      return std::nullopt;
    }
  }
  std::string epilogue;
  const ir::Value* residual = nullptr;
  const ir::Value* prev = Y;
  size_t i = 1;
  for (; i < c.nodes.size(); ++i) {
    const ir::Node& e = *c.nodes[i];
    const ops::EpilogueRole role = RoleOf(e);
    if (i == 1 && e.input(0) == Y && ops::WidensHalfToF32(e)) {
      // Fusion puts this Cast first (passes/fusion.h): cuBLASLt writes D, the
      // bias and C in f32 from half A and B. Gemm's own C is half: no widening.
      if (bias) return std::nullopt;
      prev = e.output(0);
      continue;
    }
    if (!epilogue.empty()) break;
    if (role == ops::EpilogueRole::kRelu) { epilogue = lib::value::kEpilogueRelu; prev = e.output(0); continue; }
    if (IsTanhGelu(e) && e.input(0) == prev && e.output(0)->type() == prev->type()) {
      epilogue = lib::value::kEpilogueGeluTanh;  // cuBLASLt's GELU is this form (not the erf one)
      prev = e.output(0);
      continue;
    }
    const ir::Value* other = OtherOperand(e, prev);
    if (!other || e.output(0)->type() != prev->type()) break;
    const bool is_div = role == ops::EpilogueRole::kDiv;
    if ((role == ops::EpilogueRole::kMul || (is_div && e.input(0) == prev)) && !bias && !residual) {
      std::optional<double> s = ScalarF32(c.ConstantOf(other));
      if (!s || (is_div && *s == 0.0)) break;
      alpha *= is_div ? 1.0 / *s : *s;
      prev = e.output(0);
      continue;
    }
    if (role == ops::EpilogueRole::kAdd && c.InputIndex(other) >= 0 && other->type().dtype == prev->type().dtype) {
      // Y's own shape: a residual (cuBLASLt's C, factor 1), beside a row bias.
      if (!residual && broadcast != lib::value::kBiasFull && other->type() == prev->type()) {
        residual = other;
        prev = e.output(0);
        continue;
      }
      const auto& os = other->type().shape;
      bool row = other->type().NumElements() == n && !os.empty() && os.back() == n;
      if (!row || bias) break;
      bias = other;
      beta = 1.0;
      prev = e.output(0);
      continue;
    }
    break;
  }
  p.consumed = i;
  p.value = prev;
  for (const ir::Value* v : {bias, residual}) {
    if (!v) continue;
    p.args.push_back(In(c.InputIndex(v)));
    p.kernel.args.push_back(ArgOf(v, ser::ArgAccess::kRead));
  }
  p.args.push_back(Out());
  p.kernel.args.push_back(ArgOf(prev, ser::ArgAccess::kWrite));
  auto& at = p.kernel.attrs;
  at.push_back(ser::AttrDesc::Ints(lib::attr::kM, {m}));
  at.push_back(ser::AttrDesc::Ints(lib::attr::kN, {n}));
  at.push_back(ser::AttrDesc::Ints(lib::attr::kK, {k}));
  at.push_back(ser::AttrDesc::Ints(lib::attr::kBatch, {batch}));
  at.push_back(ser::AttrDesc::Ints(lib::attr::kTransA, {trans_a}));
  at.push_back(ser::AttrDesc::Ints(lib::attr::kTransB, {trans_b}));
  if (stride_a >= 0) at.push_back(ser::AttrDesc::Ints(lib::attr::kStrideA, {stride_a}));
  if (stride_b >= 0 && batch > 1) at.push_back(ser::AttrDesc::Ints(lib::attr::kStrideB, {stride_b}));
  at.push_back(ser::AttrDesc::Ints(lib::attr::kHasBias, {bias ? 1 : 0}));
  if (residual) at.push_back(ser::AttrDesc::Ints(lib::attr::kHasResidual, {1}));
  if (bias) {
    at.push_back(ser::AttrDesc::Str(lib::attr::kBiasBroadcast, broadcast));
    at.push_back(ser::AttrDesc::Floats(lib::attr::kBeta, {beta}));
  }
  at.push_back(ser::AttrDesc::Floats(lib::attr::kAlpha, {alpha}));
  at.push_back(ser::AttrDesc::Str(lib::attr::kEpilogue, epilogue));
  return p;
}

std::optional<LibraryPick> PickConv(const Chain& c, int64_t index, bool transposed, ConvKernelMode mode) {
  const ir::Node& a = *c.nodes[0];
  const ir::Value* X = a.input(0);
  const ir::Value* W = a.input(1);
  const ir::Value* B = a.input(2);
  const ir::Value* Y = a.output(0);
  if (!X || !W || c.InputIndex(X) < 0 || c.InputIndex(W) < 0 || (B && c.InputIndex(B) < 0)) return std::nullopt;
  if (!SameLibraryDType({X, W, Y})) return std::nullopt;
  const size_t spatial = common::ConvSpatialDims(X->type().shape.size());
  if (spatial == 0) return std::nullopt;
  // Channels-last form (ops/channels_last.h): cuDNN takes NHWC 2-D and NDHWC 3-D convolutions.
  const bool nhwc = ops::IsChannelsLast(a);
  if (nhwc && spatial < 2) return std::nullopt;
  auto first = [nhwc](const ir::Value* v) {
    return nhwc ? common::ChannelsFirstShape(v->type().shape) : v->type().shape;
  };
  auto pads = a.attrs().GetInts("pads", std::vector<int64_t>(2 * spatial, 0));
  auto strides = a.attrs().GetInts("strides", std::vector<int64_t>(spatial, 1));
  auto dil = a.attrs().GetInts("dilations", std::vector<int64_t>(spatial, 1));
  auto group = a.attrs().GetInt("group", 1);
  if (!pads.ok() || !strides.ok() || !dil.ok() || !group.ok()) return std::nullopt;
  if (GeneratedConv(a, transposed)) return std::nullopt;
  // Exactly what the VM accepts at load (1-3 spatial dims, symmetric pads, int32
  // sizes): anything else stays a generated kernel.
  const auto geometry = transposed ? common::MakeCudnnConvTransposeGeometry : common::MakeCudnnConvGeometry;
  const Result<common::CudnnConvGeometry> g = geometry(first(X), first(W), first(Y), *pads, *strides, *dil, *group);
  if (!g.ok()) return std::nullopt;
  // Keel's own kernel takes cudnn.conv2d's arguments and attributes.
  const bool own = !transposed && mode == ConvKernelMode::kAuto && UsesKeelConv(*g, nhwc, Y->type().dtype);

  LibraryPick p;
  p.kernel.kind = ser::KernelKind::kLibrary;
  p.kernel.device = ser::DeviceKind::kCuda;
  // Any spatial rank (serialization/library_ops.h).
  p.kernel.library_op = own ? lib::kKeelConv2d : transposed ? lib::kCudnnConvTranspose : lib::kCudnnConv2d;
  p.kernel.name = codegen::IndexedName("k", index) +
                  (own ? "_keel_conv" : transposed ? "_cudnn_conv_transpose" : "_cudnn_conv") +
                  std::to_string(spatial) + "d";
  p.args = {In(c.InputIndex(X)), In(c.InputIndex(W))};
  p.kernel.args = {ArgOf(X, ser::ArgAccess::kRead), ArgOf(W, ser::ArgAccess::kRead)};
  if (B) {
    if (B->type().dtype != Y->type().dtype || B->type().shape.size() != 1) return std::nullopt;
    p.args.push_back(In(c.InputIndex(B)));
    p.kernel.args.push_back(ArgOf(B, ser::ArgAccess::kRead));
  }
  const ir::Value* residual = nullptr;
  std::string activation;
  double clip_max = 0;
  const ir::Value* prev = Y;
  size_t i = 1;
  for (; i < c.nodes.size() && activation.empty(); ++i) {
    const ir::Node& e = *c.nodes[i];
    const ops::EpilogueRole role = RoleOf(e);
    if (role == ops::EpilogueRole::kRelu) { activation = lib::value::kActivationRelu; prev = e.output(0); continue; }
    if (role == ops::EpilogueRole::kClip) {
      auto lo = e.attrs().GetFloat("min", -INFINITY), hi = e.attrs().GetFloat("max", INFINITY);
      if (!lo.ok() || !hi.ok() || *lo != 0.0 || !std::isfinite(*hi) || e.inputs().size() != 1) break;
      activation = lib::value::kActivationClip;
      clip_max = *hi;
      prev = e.output(0);
      continue;
    }
    const ir::Value* other = OtherOperand(e, prev);
    if (role == ops::EpilogueRole::kAdd && other && !residual && c.InputIndex(other) >= 0 && other->type() == prev->type() &&
        e.output(0)->type() == prev->type()) {
      residual = other;
      prev = e.output(0);
      continue;
    }
    break;
  }
  p.consumed = i;
  p.value = prev;
  if (residual) {
    p.args.push_back(In(c.InputIndex(residual)));
    p.kernel.args.push_back(ArgOf(residual, ser::ArgAccess::kRead));
  }
  p.args.push_back(Out());
  p.kernel.args.push_back(ArgOf(prev, ser::ArgAccess::kWrite));
  auto& at = p.kernel.attrs;
  at.push_back(ser::AttrDesc::Ints(lib::attr::kPads, *pads));
  at.push_back(ser::AttrDesc::Ints(lib::attr::kStrides, *strides));
  at.push_back(ser::AttrDesc::Ints(lib::attr::kDilations, *dil));
  at.push_back(ser::AttrDesc::Ints(lib::attr::kGroup, {*group}));
  at.push_back(ser::AttrDesc::Ints(lib::attr::kHasBias, {B ? 1 : 0}));
  at.push_back(ser::AttrDesc::Ints(lib::attr::kHasResidual, {residual ? 1 : 0}));
  at.push_back(ser::AttrDesc::Str(lib::attr::kActivation, activation));
  if (activation == lib::value::kActivationClip) {
    at.push_back(ser::AttrDesc::Floats(lib::attr::kClipMin, {0.0}));
    at.push_back(ser::AttrDesc::Floats(lib::attr::kClipMax, {clip_max}));
  }
  if (nhwc) at.push_back(ser::AttrDesc::Str(lib::attr::kLayout, lib::value::kLayoutNhwc));
  return p;
}

std::optional<LibraryPick> PickPool(const Chain& c, int64_t index, bool is_max) {
  const ir::Node& a = *c.nodes[0];
  const ir::Value* X = a.input(0);
  const ir::Value* Y = a.output(0);
  if (!X || c.InputIndex(X) < 0 || X->type().shape.size() != 4) return std::nullopt;
  // MaxPool's Indices output has no cuDNN counterpart: generated.
  if (a.outputs().size() > 1 && a.output(1)) return std::nullopt;
  if (!SameLibraryDType({X, Y})) return std::nullopt;
  // Channels-last pools are generated (lower_pool.cc's pixel form), faster than cuDNN's NHWC
  // kernels: Inception-v3 b32 fp16's average pools 1,603 -> 233 us (H100), its max pools
  // 135 -> 68 us and ResNet-50's 42 -> 21 us (H200; docs/PRECISION.md).
  if (ops::IsChannelsLast(a)) return std::nullopt;
  auto kernel = a.attrs().GetInts("kernel_shape", {});
  auto pads = a.attrs().GetInts("pads", {0, 0, 0, 0});
  auto strides = a.attrs().GetInts("strides", {1, 1});
  auto dil = a.attrs().GetInts("dilations", {1, 1});
  auto ceil = a.attrs().GetInt("ceil_mode", 0);
  auto cip = a.attrs().GetInt("count_include_pad", 0);
  if (!kernel.ok() || !pads.ok() || !strides.ok() || !dil.ok() || !ceil.ok() || !cip.ok()) return std::nullopt;
  if (kernel->size() != 2 || strides->size() != 2 || !SymmetricPads(*pads)) return std::nullopt;
  for (int64_t d : *dil)
    if (d != 1) return std::nullopt;
  // ceil_mode only matters when the last window would start inside the padded
  // input but not fit: when floor mode gives the same output shape (SqueezeNet's
  // pools), the two modes compute the same windows and cuDNN's floor mode is exact.
  if (*ceil != 0) {
    const auto& xs = X->type().shape;
    const auto& ys = Y->type().shape;
    if (ys.size() != 4) return std::nullopt;
    for (size_t i = 0; i < 2; ++i) {
      const int64_t span = xs[2 + i] + (*pads)[i] + (*pads)[i + 2] - (*kernel)[i];
      if (span < 0 || (*strides)[i] < 1 || span / (*strides)[i] + 1 != ys[2 + i]) return std::nullopt;
    }
  }
  LibraryPick p;
  p.kernel.kind = ser::KernelKind::kLibrary;
  p.kernel.device = ser::DeviceKind::kCuda;
  p.kernel.library_op = lib::kCudnnPool2d;
  p.kernel.name = codegen::IndexedName("k", index) + "_cudnn_pool2d";
  p.args = {In(c.InputIndex(X)), Out()};
  p.kernel.args = {ArgOf(X, ser::ArgAccess::kRead), ArgOf(Y, ser::ArgAccess::kWrite)};
  std::string mode = is_max ? lib::value::kPoolMax
                     : *cip                   ? lib::value::kPoolAvg
                                              : lib::value::kPoolAvgExcludePad;
  p.kernel.attrs = {ser::AttrDesc::Str(lib::attr::kMode, mode), ser::AttrDesc::Ints(lib::attr::kKernel, *kernel),
                    ser::AttrDesc::Ints(lib::attr::kPads, *pads), ser::AttrDesc::Ints(lib::attr::kStrides, *strides)};
  p.consumed = 1;
  p.value = Y;
  return p;
}

std::optional<LibraryPick> PickAttention(const Chain& c, int64_t index) {
  const ir::Node& a = *c.nodes[0];
  Result<ops::FusedAttention> fa = ops::ReadFusedAttention(a);
  if (!fa.ok()) return std::nullopt;
  LibraryPick p;
  p.kernel.kind = ser::KernelKind::kLibrary;
  p.kernel.device = ser::DeviceKind::kCuda;
  p.kernel.library_op = lib::kKeelAttention;
  p.kernel.name = codegen::IndexedName("k", index) + "_attention";
  for (const ir::Value* in : a.inputs()) {
    if (!in || c.InputIndex(in) < 0) return std::nullopt;
    p.args.push_back(In(c.InputIndex(in)));
    p.kernel.args.push_back(ArgOf(in, ser::ArgAccess::kRead));
  }
  p.args.push_back(Out());
  p.kernel.args.push_back(ArgOf(a.output(0), ser::ArgAccess::kWrite));
  for (const auto& [key, value] : a.attrs().all()) {
    if (key == "shape") continue;  // the output's, not the kernel's
    if (const auto* ints = std::get_if<std::vector<int64_t>>(&value)) {
      p.kernel.attrs.push_back(ser::AttrDesc::Ints(key, *ints));
    } else if (const auto* f = std::get_if<double>(&value)) {
      p.kernel.attrs.push_back(ser::AttrDesc::Floats(key, {*f}));
    } else {
      return std::nullopt;
    }
  }
  p.consumed = 1;
  p.value = a.output(0);
  return p;
}

std::string DescribeLibrary(const ser::KernelDesc& k) {
  std::ostringstream os;
  os << k.name << "|" << k.library_op;
  for (const ser::AttrDesc& a : k.attrs) {
    os << "|" << a.key << "=" << a.str;
    for (int64_t v : a.ints) os << "," << v;
    for (double v : a.floats) os << "," << v;
  }
  for (const ser::KernelArgDesc& a : k.args) {
    os << "|" << static_cast<int>(a.dtype);
    for (int64_t d : a.shape) os << "," << d;
  }
  return os.str();
}

}  // namespace keel::driver
