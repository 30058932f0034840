// compiler/driver/cuda_backend.cc — the CUDA target: library kernels where a
// vendor library does the work best, generated NVPTX kernels for the rest.
//
// Selection per node (plain or keel.Fused chain "anchor, epilogue..."):
//   Gemm / MatMul        → "cublas.gemm"; the epilogue absorbs, in chain order,
//                          a scalar Mul/Div (into alpha, before any bias), a row
//                          bias Add ([n] / [1,n], or Gemm's C), a residual Add
//                          (Y's shape: cuBLASLt's C) and a Relu.
//   Conv (1-D, 2-D or 3-D, symmetric pads) → "cudnn.conv2d" (any spatial
//                          rank, despite the name) with Conv's bias, one
//                          residual Add (same shape as the output), then Relu
//                          or Clip(min 0).
//                          Channels-last half ones with few channels →
//                          "keel.conv2d", Keel's own kernel with the same
//                          arguments (cuda_backend_conv.h UsesKeelConv).
//   ConvTranspose        → "cudnn.conv_transpose", likewise (cuDNN's data
//                          gradient of the forward convolution).
//   MaxPool/AveragePool (channels-first 2-D, no dilation, symmetric pads, no Indices;
//                          ceil_mode 0, or 1 when it changes no shape) → "cudnn.pool2d".
//   keel.Attention       → "keel.attention", the VM's own attention kernel
//                          (formed by passes/attention_fusion.h where
//                          RunsAttention says: half data, widths <= 128).
//   everything else      → a generated kernel (compiler/codegen → NVPTX).
// Library kernels take every tensor in one type, f32, f16 or bf16 (LibraryDType:
// the types vm/cuda/library_dtypes.h maps onto cuBLASLt/cuDNN, which compute
// in f32), except a half GEMM whose chain widens its result to f32 first: Y,
// the bias and the residual in f32; a node whose operands mix types otherwise,
// or use another type, is generated.
// Whatever a library kernel cannot absorb of its chain runs as a second, generated
// elementwise kernel in place on the step's output (StepKernel::then) when every
// remaining op keeps the output's shape and dtype; otherwise the node is generated. Library kernels take their arguments
// in the contract's order (serialization/library_ops.h) through
// StepKernel::args, so inputs folded into attributes are simply not passed.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <memory>
#include <optional>
#include <map>
#include <sstream>
#include <unordered_map>
#include <utility>
#include <variant>

#include "common/conv_geometry.h"
#include "compiler/codegen/kernel_dedup.h"
#include "compiler/codegen/llvm_nvptx_emitter.h"
#include "compiler/codegen/lower.h"
#include "compiler/ops/channels_last.h"
#include "compiler/ops/fused_attention.h"
#include "compiler/ops/packed_weight.h"
#include "compiler/ops/registry.h"
#include "compiler/driver/backend.h"
#include "compiler/driver/cuda_backend_conv.h"
#include "serialization/library_ops.h"

namespace keel::driver {
namespace {

namespace lib = ser::library_ops;
using lower::StepArg;

// The chain a node runs: body nodes (or the node itself) and the values it
// reads from outside, in the node's non-null input order.
struct Chain {
  std::vector<const ir::Node*> nodes;
  std::vector<const ir::Value*> inputs;  // body-side values
  std::vector<const ir::Value*> outer;   // the node's non-null inputs (same order)

  explicit Chain(const ir::Node& node) {
    for (const ir::Value* in : node.inputs())
      if (in) outer.push_back(in);
    if (node.op_type() == "keel.Fused" && node.body()) {
      for (const ir::Value* in : node.body()->inputs()) inputs.push_back(in);
      for (const ir::Node* n : node.body()->nodes()) nodes.push_back(n);
    } else {
      inputs = outer;
      nodes.push_back(&node);
    }
  }
  int InputIndex(const ir::Value* v) const {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i] == v) return static_cast<int>(i);
    return -1;
  }
  // Constant data of a body value (a constant input or a body-internal constant).
  const ir::TensorData* ConstantOf(const ir::Value* v) const {
    if (v->is_constant()) return v->constant().get();
    int i = InputIndex(v);
    if (i >= 0 && i < static_cast<int>(outer.size()) && outer[static_cast<size_t>(i)]->is_constant())
      return outer[static_cast<size_t>(i)]->constant().get();
    return nullptr;
  }
};

// The element types the CUDA libraries take (vm/cuda/library_dtypes.h).
bool LibraryDType(ir::DType t) { return t == ir::DType::kF32 || t == ir::DType::kF16 || t == ir::DType::kBF16; }

// All of `vs` in one library type.
bool SameLibraryDType(std::initializer_list<const ir::Value*> vs) {
  const ir::DType t = (*vs.begin())->type().dtype;
  if (!LibraryDType(t)) return false;
  for (const ir::Value* v : vs)
    if (v->type().dtype != t) return false;
  return true;
}

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

// A library kernel for the first `consumed` nodes of a chain.
struct LibraryPick {
  ser::KernelDesc kernel;
  std::vector<StepArg> args;
  size_t consumed = 0;
  const ir::Value* value = nullptr;  // the chain value the library kernel produces
};

StepArg In(int i) { return {StepArg::Kind::kInput, static_cast<uint32_t>(i)}; }
StepArg Out() { return {StepArg::Kind::kOutput, 0}; }

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

bool SymmetricPads(const std::vector<int64_t>& pads) {
  return pads.size() == 4 && pads[0] == pads[2] && pads[1] == pads[3];
}

// Conv, or ConvTranspose (`transposed`: the data gradient of the forward
// convolution from Y's shape to X's, which the geometry check sees).
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

// keel.Attention (ops/fused_attention.h) as the VM's "keel.attention" kernel:
// the node's attributes are the kernel's.
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

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const BackendOptions& options)
      : conv_kernel_(options.conv_kernel), lower_options_(codegen::LowerOptionsForCuda()) {}

  std::string name() const override { return "cuda"; }

  Result<lower::StepKernel> SelectKernel(const ir::Node& node, int64_t index) override {
    Chain chain(node);
    if (!chain.nodes.empty()) {
      const ops::OpDef* def = ops::FindOp(*chain.nodes[0]);
      const ops::LibraryCall call = def ? def->library : ops::LibraryCall::kNone;
      std::optional<LibraryPick> pick;
      using ops::LibraryCall;
      if (call == LibraryCall::kGemm || call == LibraryCall::kMatMul) pick = PickGemm(chain, index, call == LibraryCall::kGemm);
      else if (call == LibraryCall::kConv || call == LibraryCall::kConvTranspose)
        pick = PickConv(chain, index, call == LibraryCall::kConvTranspose, conv_kernel_);
      else if (call == LibraryCall::kMaxPool || call == LibraryCall::kAveragePool)
        pick = PickPool(chain, index, call == LibraryCall::kMaxPool);
      else if (call == LibraryCall::kAttention) pick = PickAttention(chain, index);
      if (pick) {
        Result<std::optional<lower::StepKernel>> step = WithEpilogue(node, chain, *pick, index);
        if (!step.ok()) return step.status();
        if (*step) return std::move(**step);
      }
    }
    return Generated(node, index);
  }

  Status EmitLibrary(const std::string& library_id, const std::string& path) override {
    return codegen::EmitCudaKernelLibrary(specs_, library_id, path, target_options_, &info_);
  }

  TargetInfo target() const override { return {ser::DeviceKind::kCuda, target_options_.arch, "", 256}; }

  // The VM's attention kernel (serialization/library_ops.h "keel.attention")
  // runs half data on the tensor cores; f32 attention keeps its GEMMs.
  bool RunsAttention(const ops::FusedAttention& a, ir::DType t, ir::DType mask) const override {
    const bool half = t == ir::DType::kF16 || t == ir::DType::kBF16;
    return half && (!a.has_mask || mask == t || mask == ir::DType::kF32) &&
           a.batch.size() <= static_cast<size_t>(lib::kAttentionMaxBatchDigits) &&
           a.d <= lib::kAttentionMaxHeadWidth && a.dv <= lib::kAttentionMaxHeadWidth;
  }

  // cuDNN 9 has no fast bf16 kernel for a strided convolution over a handful
  // of channels: ResNet-50's 7x7 stride-2 stem over 3 channels took 241 us in
  // bf16 at batch 32 on an H100 (an sm80 indexed implicit GEMM) against 63 us
  // in f16 (a dedicated first-layer kernel). As space-to-depth and a 4x4
  // stride-1 convolution over 16 channels (12 zero-padded to the tensor
  // cores' multiple of 8) the bf16 model went from 1.319 to 1.192 ms; f16 got
  // slower (1.148 to 1.203 ms) and keeps its kernel. Kernels of at least 4
  // (ConvNeXt-T's 4x4 stride-4 stem as a 1x1 over 48 channels: 2.099 to 2.064
  // ms); MobileNetV2's 3x3 stem measured no better (1.083 to 1.097 ms).
  //
  // A patch embedding (kernel = stride, no padding, patches of more than 64
  // values: ViT's 16x16 over 3 channels) becomes a 1x1 convolution over the
  // patches, a GEMM on the tensor cores, in f16 and bf16: cuDNN ran ViT-B/16's
  // as a 3-channel convolution, 283 us of the model's 3.17 ms at batch 32 in
  // f16 (PyTorch's takes 275 us).
  int64_t SpaceToDepthChannels(const ir::Node& conv, passes::Precision precision) const override {
    const bool half = precision == passes::Precision::kFp16 || precision == passes::Precision::kBf16;
    if (!half) return 0;
    const auto strides = conv.attrs().GetInts("strides", {1, 1});
    const auto pads = conv.attrs().GetInts("pads", {0, 0, 0, 0});
    const auto kernel = conv.input(1)->type().shape;  // [O, C, KH, KW]
    const int64_t s = strides.ok() && !strides->empty() ? (*strides)[0] : 1;
    const int64_t c = conv.input(0)->type().shape[1];
    const int64_t channels = (s * s * c + 7) / 8 * 8;
    if (c >= 8 || kernel.size() != 4) return 0;
    const bool patches = kernel[2] == s && kernel[3] == s && pads.ok() &&
                         std::all_of(pads->begin(), pads->end(), [](int64_t p) { return p == 0; });
    if (patches && s * s * c > 64) return channels;
    const bool bf16_stem = precision == passes::Precision::kBf16 && channels <= 64 && kernel[2] >= 4 && kernel[3] >= 4;
    return bf16_stem ? channels : 0;
  }

  // A convolution over fewer than 8 input channels (a model's first layer)
  // runs as keel.Im2Col and a GEMM whose K is the window rounded up to 8
  // (passes/im2col.h): cuDNN 9 has no fast bf16 kernel for it, and the GEMM
  // beats its f16 one too (H200, large batch: VGG-11 bf16 1.489 -> 1.339 ms,
  // f16 1.433 -> 1.350; mc3_18 bf16 1.428 -> 1.019, f16 1.096 -> 1.016;
  // docs/PRECISION.md). ResNet's strided 7x7 stem keeps cuDNN's dedicated f16
  // kernel (1.062 -> 1.091 ms as the GEMM; bf16 takes space-to-depth, above).
  // Windows of at most 512 values. Not wider convolutions: inside a
  // channels-last chain the transposes around keel.Im2Col (channels-first
  // only) cost more than it saves (UNet bf16 0.656 -> 1.547 ms).
  int64_t Im2ColColumns(const ir::Node& conv, passes::Precision precision) const override {
    if (precision != passes::Precision::kBf16 && precision != passes::Precision::kFp16) return 0;
    const std::vector<int64_t>& ws = conv.input(1)->type().shape;  // [O, C, k...]
    if (ws.size() < 4 || ws[1] >= 8) return 0;
    if (precision == passes::Precision::kFp16 && ws.size() == 4 && (ws[2] >= 4 || ws[3] >= 4)) {
      const auto strides = conv.attrs().GetInts("strides", {1, 1});
      if (strides.ok() && !strides->empty() && (*strides)[0] >= 2) return 0;
    }
    int64_t window = 1;
    for (size_t i = 1; i < ws.size(); ++i) window *= ws[i];
    const int64_t columns = (window + 7) / 8 * 8;
    return columns <= 512 ? columns : 0;
  }

  // Strided ConvTranspose: a forward convolution and a pixel shuffle in every
  // precision (passes/subpixel_conv_transpose.h says why).
  bool SubpixelConvTranspose(const ir::Node&, passes::Precision) const override { return true; }

  std::string Fingerprint() const override { return fingerprint_; }

  // cuDNN's convolutions and pools in half precision run on tensor cores in
  // NHWC (given NCHW they transpose inside every call): channels-last for the
  // library calls that take it, and for the generated ops with the form (global
  // pools read either layout equally fast), so that no transpose stays between them.
  bool PrefersChannelsLast(const ir::Node& node) const override {
    const ops::OpDef* def = ops::FindOp(node);
    if (def == nullptr || def->channels_last_operands.empty() || ops::IsOutputChannelsLast(node)) return false;
    const Chain chain(node);
    switch (def->library) {
      case ops::LibraryCall::kConv:
        if (GeneratedConv(node, false)) return true;  // the generated form takes either layout
        return !SlowChannelsLast(node) && PickConv(chain, 0, false, conv_kernel_).has_value();
      case ops::LibraryCall::kConvTranspose:
        return !SlowChannelsLast(node) && PickConv(chain, 0, true, conv_kernel_).has_value();
      case ops::LibraryCall::kMaxPool:  // (its Indices output counts in NCHW: kept there)
        return node.outputs().size() < 2 || node.output(1) == nullptr;
      case ops::LibraryCall::kAveragePool: return true;  // generated in NHWC (PickPool)
      case ops::LibraryCall::kNone: return true;
      default: return false;
    }
  }
  bool ChannelsLastByDefault(passes::Precision precision) const override {
    return precision == passes::Precision::kFp16 || precision == passes::Precision::kBf16;
  }
  // Half-precision products take their constant [K, N] weight as [N, K]
  // (one-column panels, ops/packed_weight.h), PyTorch's nn.Linear layout, on
  // which cuBLASLt was faster (BERT-base b8 -2%, ViT-B/16 b32 -3%, H100;
  // bench/cuda/bert_probes/gemm_weight_layout.cu, docs/PRECISION.md). Not under
  // transA: the im2col pass's GEMMs were measured with [K, N].
  int64_t PackedBColumns(const ir::Node& product, const ops::BMatrix& b) const override {
    const ir::DType t = product.input(1)->type().dtype;
    const auto ta = product.attrs().GetInt("transA", 0);
    if (b.transposed || !ta.ok() || *ta != 0 || (t != ir::DType::kF16 && t != ir::DType::kBF16)) return 0;
    return SameLibraryDType({product.input(0), product.input(1), product.output(0)}) ? 1 : 0;
  }
  // A reduction runs one block per result: fewer than 512 results (four blocks
  // for each SM of an H100) over more than 4,096 elements each leave the GPU
  // mostly idle, so they run as at least 512 partial results first.
  int64_t ReductionParts(int64_t rows, int64_t length) const override {
    constexpr int64_t kBlocks = 512;
    if (rows >= kBlocks || length <= 4096) return 0;
    return (kBlocks + rows - 1) / rows;
  }

 private:
  Result<lower::StepKernel> Generated(const ir::Node& node, int64_t index) {
    // A node like one lowered before (every layer of a deep stack) reuses its kernel unlowered.
    std::string node_key = codegen::LoweringKey(node);
    if (auto hit = generated_.find(node_key); hit != generated_.end()) return hit->second;
    KEEL_ASSIGN_OR_RETURN(codegen::KernelSpec spec, codegen::LowerNodeToKernel(node, index, lower_options_));
    lower::StepKernel step;
    step.workspace_bytes = static_cast<uint64_t>(spec.workspace_bytes);
    KEEL_ASSIGN_OR_RETURN(step.kernel, DescribeShared(std::move(spec)));
    generated_.emplace(std::move(node_key), step);
    return step;
  }

  Result<ser::KernelDesc> Describe(const codegen::KernelSpec& spec) {
    KEEL_ASSIGN_OR_RETURN(codegen::GpuMapping mapping, codegen::CudaKernelMapping(spec, target_options_));
    ser::KernelDesc k;
    k.name = spec.name;
    k.kind = ser::KernelKind::kCudaGenerated;
    k.device = ser::DeviceKind::kCuda;
    for (const codegen::KernelArg& arg : spec.args)
      k.args.push_back({lower::ToSerDType(arg.dtype), arg.shape, static_cast<ser::ArgAccess>(static_cast<uint8_t>(arg.access))});
    if (spec.workspace_bytes > 0) k.args.push_back({ser::DType::kU8, {spec.workspace_bytes}, ser::ArgAccess::kReadWrite});
    ser::LaunchDesc launch;
    launch.grid = {mapping.launch.grid, 1, 1};
    launch.block = {mapping.launch.block, 1, 1};
    launch.shared_bytes = mapping.launch.shared_bytes;
    k.launch = launch;
    return k;
  }

  // Describe + Record, reusing an identical kernel emitted earlier (kernel_dedup.h).
  Result<ser::KernelDesc> DescribeShared(codegen::KernelSpec spec) {
    const std::string same = dedup_.FindOrAdd(spec);
    if (!same.empty()) spec.name = same;
    KEEL_ASSIGN_OR_RETURN(ser::KernelDesc desc, Describe(spec));
    if (same.empty()) Record(std::move(spec));
    return desc;
  }

  void Record(codegen::KernelSpec spec) {
    fingerprint_ += spec.kernel ? spec.kernel->ToString() : spec.name;
    specs_.push_back(std::move(spec));
  }

  // The library pick alone when it consumed the whole chain; otherwise the pick
  // plus a generated in-place epilogue; nullopt when the rest cannot run in place.
  Result<std::optional<lower::StepKernel>> WithEpilogue(const ir::Node& node, const Chain& c, const LibraryPick& p,
                                                        int64_t index) {
    lower::StepKernel step;
    step.kernel = p.kernel;
    step.args = p.args;
    if (p.consumed == c.nodes.size()) {
      fingerprint_ += DescribeLibrary(p.kernel);
      return std::optional<lower::StepKernel>(std::move(step));
    }
    const ir::TensorType& t = p.value->type();
    for (size_t i = p.consumed; i < c.nodes.size(); ++i) {
      const ir::Node& e = *c.nodes[i];
      const ops::OpDef* def = ops::FindOp(e);
      const bool inlinable = def && (def->fusion == ops::FusionClass::kElementwise || def->fusion == ops::FusionClass::kInjective);
      if (!inlinable || e.outputs().size() != 1 ||
          e.output(0)->type() != t)
        return std::optional<lower::StepKernel>();
    }
    // A synthetic fused node: inputs (the library's result, then the outside
    // values the remaining ops read), body = clones of the remaining ops.
    ir::Graph g;
    auto body = std::make_unique<ir::Graph>();
    std::map<const ir::Value*, ir::Value*> map;  // chain value -> body value (lookup only)
    std::vector<ir::Value*> outer_inputs;
    std::vector<StepArg> args;
    auto add_input = [&](const ir::Value* v, StepArg arg) {
      outer_inputs.push_back(g.AddInput(v->name(), v->type()));
      map[v] = body->AddInput(v->name(), v->type());
      args.push_back(arg);
    };
    add_input(p.value, Out());
    for (size_t i = p.consumed; i < c.nodes.size(); ++i) {
      const ir::Node& e = *c.nodes[i];
      std::vector<ir::Value*> ins;
      for (const ir::Value* in : e.inputs()) {
        if (!in) { ins.push_back(nullptr); continue; }
        if (!map.count(in)) {
          int idx = c.InputIndex(in);
          if (idx >= 0) {
            add_input(in, In(idx));
          } else if (in->is_constant()) {
            map[in] = body->AddConstant(in->name(), in->constant());
          } else {
            return std::optional<lower::StepKernel>();
          }
        }
        ins.push_back(map[in]);
      }
      ir::Node* clone = body->AddNode(e.op_type(), e.name(), ins, 1);
      clone->attrs() = e.attrs();
      clone->output(0)->set_type(e.output(0)->type());
      map[e.output(0)] = clone->output(0);
    }
    body->AddOutput(map[c.nodes.back()->output(0)]);
    ir::Node* fused = g.AddNode("keel.Fused", node.name() + ":epilogue", outer_inputs, 1);
    fused->output(0)->set_type(t);
    fused->set_body(std::move(body));
    g.AddOutput(fused->output(0));
    // Distinct from every node index (kernel names must be unique).
    KEEL_ASSIGN_OR_RETURN(codegen::KernelSpec spec,
                          codegen::LowerNodeToKernel(*fused, 1000000 + index, lower_options_));
    if (spec.workspace_bytes > 0) return std::optional<lower::StepKernel>();
    lower::StepInvocation epi;
    KEEL_ASSIGN_OR_RETURN(epi.kernel, DescribeShared(std::move(spec)));
    epi.args = args;
    epi.args.push_back(Out());
    step.then.push_back(std::move(epi));
    fingerprint_ += DescribeLibrary(p.kernel);
    return std::optional<lower::StepKernel>(std::move(step));
  }

  ConvKernelMode conv_kernel_;
  codegen::LowerOptions lower_options_;
  codegen::NvptxTargetOptions target_options_;
  codegen::NvptxLibraryInfo info_;
  std::vector<codegen::KernelSpec> specs_;
  codegen::KernelDedup dedup_;
  std::unordered_map<std::string, lower::StepKernel> generated_;
  std::string fingerprint_;
};

}  // namespace

std::unique_ptr<Backend> MakeCudaBackend(const BackendOptions& options) {
  return std::unique_ptr<Backend>(new CudaBackend(options));
}

}  // namespace keel::driver
