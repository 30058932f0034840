// compiler/driver/cuda_backend_conv.cc — see cuda_backend_conv.h.
#include "compiler/driver/cuda_backend_conv.h"

#include "compiler/codegen/lower_conv_direct.h"
#include "compiler/driver/backend.h"
#include "compiler/ops/channels_last.h"
#include "serialization/library_ops.h"

namespace keel::driver {

Result<ConvKernelMode> ParseConvKernelMode(const std::string& text) {
  if (text == "auto") return ConvKernelMode::kAuto;
  if (text == "cudnn") return ConvKernelMode::kCudnn;
  return InvalidArgument("unknown convolution kernel '" + text + "' (expected auto or cudnn)");
}

// Depthwise: measured on an H200 in fp16, cuDNN's took 0.1-0.45 ms per
// ConvNeXt-T 7x7 layer at batch 32 and made the model 2.1x slower end to end
// (5.35 vs 2.58 ms), MobileNetV2's 3x3 at batch 32 2.07 vs 1.01 ms; the
// generated form reads either layout, so it runs channels-last where the model
// does (no transposes around it). fp32 too: 2.46 vs 1.95 ms (MobileNetV2, batch
// 32), 12.5 vs 10.6 ms (ConvNeXt-T). Few outputs: codegen::GpuDirectDenseConv
// says why.
bool GeneratedConv(const ir::Node& conv, bool transposed) {
  const ir::Value* w = conv.input(1);
  auto group = conv.attrs().GetInt("group", 1);
  if (!w || !w->has_type() || !group.ok() || w->type().shape.size() < 3) return false;
  const std::vector<int64_t>& ws = w->type().shape;  // OIHW, or OHWI channels-last
  if (!transposed && codegen::GpuDirectDenseConv(*group, ws[0])) return true;
  return *group > 1 && ws[ops::IsChannelsLast(conv) ? ws.size() - 1 : 1] == 1;
}

// Grouped convolutions (not depthwise: those are generated) in NHWC, as cuDNN's
// depthwise ones measured on an H200 (backend-API engines included): kernels
// beyond 3x3 (ConvNeXt's 7x7: 5.8 -> 9.5 ms at batch 32 in fp16). Not bf16 any
// more: with the backend-API engines competing, the NHWC form took ResNeXt-50
// in bf16 at batch 32 from 3.056 to 1.415 ms on an H200 (fp16 1.345), where
// NCHW also cost two transposes per convolution. 3-D grouped ones stay NCDHW
// too: the backend-API engines, which give the 2-D ones their fast NHWC
// kernels, take channels-last 2-D problems only.
bool SlowChannelsLast(const ir::Node& conv) {
  const ir::Value* w = conv.input(1);
  auto group = conv.attrs().GetInt("group", 1);
  if (!w || !group.ok() || *group == 1) return false;
  if (w->type().shape.size() == 5) return true;
  if (w->type().shape.size() != 4) return false;
  const auto& ws = w->type().shape;
  return ws[2] > 3 || ws[3] > 3;
}

// Few channels: cuDNN's tensor-core kernels tile 32 or more channels and waste
// most of their work. A UNet at batch 32 (128x128) on an H200, cuDNN's kernel
// against Keel's (Nsight Compute): 16 -> 16 3x3 44 / 30 us in f16, 60 / 30 us
// in bf16; 32 -> 16 44 / 40 and 60 / 40 us; its 64x64 layers to 32 channels
// 21 / 19-22.5 us in both types. Not 1x1 convolutions (GEMMs, which cuDNN runs
// well: MobileNetV2 at batch 32, whose one such layer, 32 -> 16 at 112x112,
// took the model from 1.003 to 1.031 ms in f16 on an H100). 2x2 and 3x3
// windows with unit stride and dilation, at most 64 input and 32 output
// channels: the kernel's shared memory (library_calls_conv.h: (2 cp + 16)
// bytes a weight row and a pixel, two input windows) then stays under 96 KB.
// Only with at least 2^17 output pixels: below that Keel's kernel runs about
// one tile a block, with nothing to overlap its copies with, and the UNet at
// batch 1 took 0.11 ms against cuDNN's 0.09 (per kernel the two were within
// 10%).
bool UsesKeelConv(const common::CudnnConvGeometry& g, bool nhwc, ir::DType t) {
  constexpr int64_t kMinPixels = int64_t{1} << 17;
  if (!nhwc || g.rank() != 4 || g.spatial != 2 || g.group != 1) return false;
  if (t != ir::DType::kF16 && t != ir::DType::kBF16) return false;
  namespace lo = ser::library_ops;
  const int64_t c = g.x[1], k = g.y[1];
  if (c % 8 != 0 || c > lo::kKeelConvMaxChannels || k % 8 != 0 || k > lo::kKeelConvMaxOutputs) return false;
  if (g.w[2] > 3 || g.w[3] > 3 || g.w[2] * g.w[3] == 1) return false;
  for (int64_t v : g.strides)
    if (v != 1) return false;
  for (int64_t v : g.dilations)
    if (v != 1) return false;
  return g.y[0] * g.y[2] * g.y[3] >= kMinPixels;
}

}  // namespace keel::driver
