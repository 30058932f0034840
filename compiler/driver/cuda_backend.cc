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
#include <memory>
#include <optional>
#include <map>
#include <unordered_map>
#include <utility>

#include "compiler/codegen/kernel_dedup.h"
#include "compiler/codegen/llvm_nvptx_emitter.h"
#include "compiler/codegen/lower.h"
#include "compiler/ops/channels_last.h"
#include "compiler/ops/fused_attention.h"
#include "compiler/ops/packed_weight.h"
#include "compiler/ops/registry.h"
#include "compiler/driver/backend.h"
#include "compiler/driver/cuda_backend_conv.h"
#include "compiler/driver/cuda_library_pick.h"
#include "serialization/library_ops.h"

namespace keel::driver {
namespace {

namespace lib = ser::library_ops;
using lower::StepArg;

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
  // A post-norm transformer's residual add in the LayerNorm's kernel, whose warp
  // holds the row in registers: the GEMM before it is a plain cuBLASLt call.
  bool SumPrologues() const override { return true; }

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
