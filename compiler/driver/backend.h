// compiler/driver/backend.h — what a compilation target contributes.
//
// The driver is target-neutral: it imports, runs the graph passes, then asks the
// target's Backend which kernel each node runs and, at the end, to write the
// kernel library. The CPU backend generates every kernel with LLVM (x86-64); the
// CUDA backend generates NVPTX kernels and picks cuBLAS/cuDNN library kernels.
//
// Ownership: a Backend is owned by the driver for one compilation; it may keep
// state (the kernels selected so far) between SelectKernel and EmitLibrary.
// Thread-safety: one compilation, one thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/lower/lower_program.h"
#include "compiler/passes/attention_fusion.h"
#include "compiler/passes/channels_last.h"
#include "compiler/passes/mixed_precision.h"
#include "compiler/passes/pass_manager.h"
#include "compiler/passes/weight_packing.h"
#include "compiler/passes/winograd.h"
#include "keel/status.h"
#include "serialization/executable_writer.h"

namespace keel::driver {

struct TargetInfo {
  ser::DeviceKind device = ser::DeviceKind::kCpu;
  std::string arch;       // "x86-64-v3", "sm_90"
  std::string features;   // "+avx2,+fma"
  uint32_t alignment = 64;  // of every planned buffer
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu", "cuda"
  // The kernel step `index` (the node's position in graph order) runs. View ops
  // are handled by the driver and never reach the backend.
  virtual Result<lower::StepKernel> SelectKernel(const ir::Node& node, int64_t index) = 0;
  // Writes the kernel library for every kernel selected so far.
  virtual Status EmitLibrary(const std::string& library_id, const std::string& path) = 0;
  // The target as recorded in the executable (valid after EmitLibrary).
  virtual TargetInfo target() const = 0;
  // Text that identifies every kernel selected so far (hashed into the library id).
  virtual std::string Fingerprint() const = 0;
  // Layout (passes/channels_last.h): whether this channels-first node (an op
  // with a channels-last form) should run in channels-last form, or a node
  // in the output-only form (ops::IsOutputChannelsLast) in that form; and whether
  // keelc --layout auto means channels-last for graphs stored in `precision`.
  virtual bool PrefersChannelsLast(const ir::Node& /*node*/) const { return false; }
  virtual bool ChannelsLastByDefault(passes::Precision /*precision*/) const { return false; }
  // Winograd (passes/winograd.h): the output tile side m (2 or 4) this target
  // runs a candidate 3x3 convolution with, 0 to keep the plain convolution.
  virtual int64_t WinogradTile(const ir::Node& /*conv*/) const { return 0; }
  // Weight packing (passes/weight_packing.h): the rows per panel this target's
  // GEMM reads a candidate convolution's constant weight `matrices` with, 0 to
  // keep the weight as it is.
  virtual int64_t PackedWeightRows(const ir::Node& /*conv*/, const ops::WeightMatrices& /*matrices*/) const {
    return 0;
  }
  // Space-to-depth (passes/space_to_depth.h): the input channels to run the
  // candidate convolution `conv` with after space-to-depth when the model is
  // stored in `precision` (0: keep it as it is).
  virtual int64_t SpaceToDepthChannels(const ir::Node& /*conv*/, passes::Precision /*precision*/) const { return 0; }
  // Subpixel (passes/subpixel_conv_transpose.h): whether to run the candidate
  // ConvTranspose as a forward convolution and a pixel shuffle when the model is
  // stored in `precision`.
  virtual bool SubpixelConvTranspose(const ir::Node& /*node*/, passes::Precision /*precision*/) const { return false; }
  // Im2col (passes/im2col.h): the columns to run the candidate convolution
  // `conv` with as a GEMM over its column matrix when the model is stored in
  // `precision` (0: keep it as it is).
  virtual int64_t Im2ColColumns(const ir::Node& /*conv*/, passes::Precision /*precision*/) const { return 0; }
  // The columns per panel this target's GEMM reads a candidate MatMul's or
  // Gemm's constant B with (the B-panel form), 0 to keep B as it is.
  virtual int64_t PackedBColumns(const ir::Node& /*product*/, const ops::BMatrix& /*b*/) const { return 0; }
  // Attention (passes/attention_fusion.h): whether this target runs the
  // keel.Attention problem `a` on Q/K/V of type `t` with a mask of type `mask`.
  virtual bool RunsAttention(const ops::FusedAttention& /*a*/, ir::DType /*t*/, ir::DType /*mask*/) const {
    return false;
  }
  // Reduction splitting (passes/reduction_split.h): the partial results this
  // target runs a reduction of `rows` results over `length` elements each with
  // (0: as it is).
  virtual int64_t ReductionParts(int64_t /*rows*/, int64_t /*length*/) const { return 0; }
  // Fusion (passes/fusion.h, rule 0b): whether a row normalization computes the
  // elementwise sum in front of it (a residual add) instead of the producer's epilogue.
  virtual bool SumPrologues() const { return false; }
};

// keelc --layout: auto (the target's default for the precision), nchw (keep the
// model's channels-first layout), nhwc (channels-last where the target prefers).
enum class Layout { kAuto, kChannelsFirst, kChannelsLast };
Result<Layout> ParseLayout(const std::string& text);

// keelc --winograd: auto (the target's rule), off, f2 / f4 (every candidate
// 3x3 convolution as F(2,3) / F(4,3); for measuring the rule).
enum class WinogradMode { kAuto, kOff, kF2, kF4 };
Result<WinogradMode> ParseWinogradMode(const std::string& text);

// keelc --conv-kernel (CUDA): auto (Keel's own kernel, keel.conv2d, for the
// channels-last half convolutions with few channels that cuda_backend_conv.h
// UsesKeelConv picks; cuDNN for the others) or cudnn (cuDNN for every library
// convolution: the comparison).
enum class ConvKernelMode { kAuto, kCudnn };
Result<ConvKernelMode> ParseConvKernelMode(const std::string& text);

struct BackendOptions {
  std::string cpu = "auto";  // LLVM CPU name for the CPU target
  Layout layout = Layout::kAuto;
  WinogradMode winograd = WinogradMode::kAuto;
  ConvKernelMode conv_kernel = ConvKernelMode::kAuto;
};

// The channels-last pass's predicate for `backend` (empty: the pass is off).
// `backend` must outlive the pipeline run that uses it.
passes::ChannelsLastPredicate ChannelsLastPredicateFor(const Backend& backend, Layout layout,
                                                        passes::Precision precision);

// The Winograd pass's predicate for `backend` (empty: the pass is off);
// `backend` must outlive the pipeline run that uses it.
passes::WinogradPredicate WinogradPredicateFor(const Backend& backend);

// Sets every target-dependent rule of `pipeline` from `backend`: the layout
// (ChannelsLastPredicateFor with `layout` and the pipeline's precision), the
// Winograd tiles, the weight panels, the space-to-depth convolutions (only
// with channels-last on), the attention kernel's reach and the reductions'
// parts. `backend` must outlive the pipeline run.
void SetTargetRules(const Backend& backend, Layout layout, passes::PipelineOptions* pipeline);

Result<std::unique_ptr<Backend>> CreateBackend(const std::string& target, const BackendOptions& options);

}  // namespace keel::driver
