// vm/cuda/conv_kernel.cc — see conv_kernel.h.
#include "vm/cuda/conv_kernel.h"

#include <cstdint>
#include <string>
#include <vector>

#include "common/conv_geometry.h"
#include "serialization/library_ops.h"
#include "vm/cuda/cuda_driver.h"
#include "vm/cuda/cuda_errors.h"
#include "vm/cuda/library_attrs.h"
#include "vm/cuda/library_calls_conv.h"
#include "vm/cuda/library_dtypes.h"

namespace keel::vm_internal {
namespace {

namespace lo = ser::library_ops;
namespace cl = cuda_lib;
static_assert(cl::kConvMaxChannels == lo::kKeelConvMaxChannels && cl::kConvMaxOutputs == lo::kKeelConvMaxOutputs,
              "one limit for the compiler and the VM");

class KeelConv final : public CudaLaunchState {
 public:
  KeelConv(CudaDevice& dev, std::string name) : dev_(dev), name_(std::move(name)) {}
  Status Plan(const KernelEntry& k);
  Status Launch(void* const* args) override;

 private:
  Status Error(const std::string& what) const {
    return InvalidExecutable("kernel " + name_ + " (keel.conv2d): " + what);
  }

  CudaDevice& dev_;
  std::string name_, call_;
  CUfunction fn_ = nullptr;
  cl::ConvKernelArgs args_;
  cl::ConvKernelLaunch launch_;
  int bias_arg_ = -1, res_arg_ = -1, y_arg_ = 2;
};

Status KeelConv::Plan(const KernelEntry& k) {
  if (k.args.empty() || k.args[0].shape.size() != 4) return Error("X must have rank 4 ([N,H,W,C])");
  KEEL_ASSIGN_OR_RETURN(const ConvAttrs at, ReadConvAttrs(k, 2));
  if (!at.nhwc) return Unsupported("kernel " + name_ + " (keel.conv2d): takes layout nhwc only");
  if (at.group != 1) return Unsupported("kernel " + name_ + " (keel.conv2d): takes group 1 only");
  if (at.activation == lo::value::kActivationClip && at.clip_min != 0.0) {
    return Unsupported("kernel " + name_ + " (keel.conv2d): clip_min must be 0");
  }
  bias_arg_ = at.bias_arg;
  res_arg_ = at.res_arg;
  y_arg_ = at.y_arg;
  if (k.args.size() != static_cast<size_t>(at.args)) {
    return Error("expected " + std::to_string(at.args) + " arguments, got " + std::to_string(k.args.size()));
  }
  KEEL_ASSIGN_OR_RETURN(const LibraryDType t, LibraryDTypeOfArg(k, 0, "X"));
  if (!t.half) return Unsupported("kernel " + name_ + " (keel.conv2d): takes f16 or bf16, got " + t.name);
  KEEL_RETURN_IF_ERROR(RequireDType(k, 1, "W", t));
  KEEL_RETURN_IF_ERROR(RequireDType(k, static_cast<size_t>(y_arg_), "Y", t));
  const std::vector<int64_t>& xs = k.args[0].shape;
  const std::vector<int64_t>& ys = k.args[static_cast<size_t>(y_arg_)].shape;
  Result<common::CudnnConvGeometry> g =
      common::MakeCudnnConvGeometry(common::ChannelsFirstShape(xs), common::ChannelsFirstShape(k.args[1].shape),
                                    common::ChannelsFirstShape(ys), at.pads, at.strides, at.dilations, at.group);
  if (!g.ok()) return g.status().WithContext("kernel " + name_ + " (keel.conv2d)");
  const int64_t out_channels = ys[3];
  if (at.has_bias) {
    KEEL_RETURN_IF_ERROR(RequireDType(k, static_cast<size_t>(bias_arg_), "bias", t));
    if (k.args[static_cast<size_t>(bias_arg_)].bytes != t.bytes * static_cast<uint64_t>(out_channels)) {
      return Error(std::string("bias must be ") + t.name + " [" + std::to_string(out_channels) + "]");
    }
  }
  if (at.has_residual) {
    KEEL_RETURN_IF_ERROR(RequireDType(k, static_cast<size_t>(res_arg_), "residual", t));
    if (k.args[static_cast<size_t>(res_arg_)].shape != ys) return Error("the residual must have Y's shape");
  }
  // The geometry check bounded every value to int32.
  args_.n = static_cast<int>(xs[0]);
  args_.h = static_cast<int>(xs[1]);
  args_.w_in = static_cast<int>(xs[2]);
  args_.c = static_cast<int>(xs[3]);
  args_.oh = static_cast<int>(ys[1]);
  args_.ow = static_cast<int>(ys[2]);
  args_.k = static_cast<int>(out_channels);
  args_.r = static_cast<int>(k.args[1].shape[1]);
  args_.s = static_cast<int>(k.args[1].shape[2]);
  args_.sh = static_cast<int>(at.strides[0]);
  args_.sw = static_cast<int>(at.strides[1]);
  args_.ph = static_cast<int>(at.pads[0]);
  args_.pw = static_cast<int>(at.pads[1]);
  args_.dh = static_cast<int>(at.dilations[0]);
  args_.dw = static_cast<int>(at.dilations[1]);
  args_.act = at.activation == lo::value::kActivationRelu ? 1 : at.activation == lo::value::kActivationClip ? 2 : 0;
  args_.clip_max = static_cast<float>(at.clip_max);
  launch_ = cl::ConvKernelPlan(&args_);
  if (const char* why = cl::ConvKernelRefusal(args_, launch_)) {
    return Unsupported("kernel " + name_ + " (keel.conv2d): " + why);
  }
  const std::string fn = cl::ConvKernelName(t.element, args_.c, args_.k);
  KEEL_ASSIGN_OR_RETURN(fn_, dev_.RuntimeFunction(fn.c_str()));
  // Every kernel of this type and class shares the function: its limit is the
  // largest any of them may take, not this one's need.
  KEEL_RETURN_IF_ERROR(CuStatus(Driver().FuncSetAttribute(fn_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                          static_cast<int>(cl::kConvMaxShared)),
                                "cuFuncSetAttribute")
                           .WithContext("kernel " + name_));
  call_ = cl::ConvKernelCallName(fn, launch_);
  return Status::Ok();
}

Status KeelConv::Launch(void* const* args) {
  // The kernel copies X and W in 16-byte chunks and stores channel pairs. The
  // memory plan aligns every tensor to 256 bytes; anything else is refused,
  // never read misaligned.
  auto address = [](const void* p) { return reinterpret_cast<uintptr_t>(p); };
  const uintptr_t pairs = address(args[y_arg_]) | (res_arg_ >= 0 ? address(args[res_arg_]) : 0);
  if (((address(args[0]) | address(args[1])) & 15) != 0 || (pairs & 3) != 0) {
    return InvalidArgument("kernel " + name_ + " (keel.conv2d): X and W must be 16-byte aligned, Y and the residual " +
                           "4-byte aligned");
  }
  dev_.Bind();
  dev_.BeginOp();
  args_.x = args[0];
  args_.w = args[1];
  args_.bias = bias_arg_ >= 0 ? args[bias_arg_] : nullptr;
  args_.res = res_arg_ >= 0 ? args[res_arg_] : nullptr;
  args_.y = args[y_arg_];
  void* params[] = {&args_};
  const CUresult r =
      dev_.LaunchRuntimeKernel(fn_, static_cast<unsigned>(launch_.blocks), launch_.threads, params, launch_.shared);
  if (r != CUDA_SUCCESS) return CuStatus(r, "cuLaunchKernel").WithContext("kernel " + name_);
  dev_.EndLaunch(call_, name_);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<CudaLaunchState>> MakeKeelConv(CudaDevice& dev, const KernelEntry& kernel) {
  auto c = std::make_unique<KeelConv>(dev, kernel.name);
  KEEL_RETURN_IF_ERROR(c->Plan(kernel));
  return std::unique_ptr<CudaLaunchState>(std::move(c));
}

}  // namespace keel::vm_internal
