// tests/vm/cuda/cuda_test_programs.h — executables and CPU references for the
// CUDA VM tests, built with ser::ExecutableWriter the way the compiler lowers a
// --target cuda program: host parameters copied to device at entry, every
// intermediate in one cuda arena, constants on the device, results copied back
// into a host arena and returned.
//
// The expected values are computed by the plain loops below (Reference*), never
// by the VM. GpuAvailable() is how every test decides to skip.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "keel/status.h"
#include "keel/vm.h"
#include "serialization/executable_writer.h"

namespace keel::cudatest {

// True when cudaGetDeviceCount reports at least one GPU; `why` says otherwise.
bool GpuAvailable(std::string* why);
#define KEEL_SKIP_WITHOUT_GPU()                                      \
  do {                                                               \
    std::string why_;                                                \
    if (!::keel::cudatest::GpuAvailable(&why_)) GTEST_SKIP() << why_; \
  } while (0)

// Paths of the test kernel libraries; $KEEL_CUDA_TEST_LIB_DIR overrides the
// build-time folder (binaries carried to another machine).
std::string LibraryPath(const char* build_path);

inline constexpr char kLibraryId[] = "keel-cuda-test";

// One tensor of a program.
enum class Role { kInput, kConst, kOutput, kTemp };
struct TensorSpec {
  std::vector<int64_t> shape;
  Role role = Role::kTemp;
  std::vector<float> data;  // kConst: the values
};
struct OpSpec {
  uint32_t kernel = 0;
  std::vector<uint32_t> tensors;  // indices into ProgramSpec::tensors, in kernel-signature order
  std::string debug_name;
};
struct ProgramSpec {
  std::vector<ser::KernelDesc> kernels;
  std::vector<TensorSpec> tensors;
  std::vector<OpSpec> ops;
  std::string library_id;           // empty: no library
  uint64_t device_arena_override = 0;  // non-zero: the cuda arena's size (e.g. 1 PB)
  // The element type of every tensor (inputs, constants, outputs): f32, f16 or
  // bf16. TensorSpec::data and RunOnce's inputs/outputs stay floats, converted
  // (round to nearest even) at the program's edges. Set with InDType.
  ser::DType dtype = ser::DType::kF32;
  std::map<size_t, ser::DType> tensor_dtypes;  // tensor index -> its type, where not `dtype`
  ser::DType DTypeOf(size_t tensor) const {
    auto it = tensor_dtypes.find(tensor);
    return it == tensor_dtypes.end() ? dtype : it->second;
  }
};
// `p` with every tensor and every kernel argument in `t` (f32, f16 or bf16).
ProgramSpec InDType(ProgramSpec p, ser::DType t);

// Host conversions for the half tests (round to nearest even; f32 passes
// through; other types are zeros: only refusal tests build them).
std::vector<uint8_t> EncodeAs(const std::vector<float>& v, DataType t);
std::vector<float> DecodeFrom(const uint8_t* bytes, size_t count, DataType t);
// `v` rounded to `t`'s grid and widened back: a reference fed with these sees the
// inputs the device sees.
std::vector<float> RoundedTo(const std::vector<float>& v, DataType t);
// Inputs are the kInput tensors in order (named in0, in1, ...); outputs the
// kOutput tensors in order (out0, ...).
Result<std::vector<uint8_t>> BuildProgram(const ProgramSpec& spec);

// Kernel descriptors (args filled from shapes/access).
ser::KernelDesc GeneratedKernel(std::string name, std::vector<std::vector<int64_t>> arg_shapes, uint32_t grid,
                                uint32_t block);
ser::KernelDesc LibraryKernel(std::string name, std::string op, std::vector<std::vector<int64_t>> arg_shapes,
                              std::vector<ser::AttrDesc> attrs);

// Loads `bytes` (with `library` when not empty) and runs it on a new VM. Inputs
// and outputs are floats whatever the program's dtype (converted at the edges).
struct RunResult {
  Status status;
  std::vector<std::vector<float>> outputs;
};
// Creates a CUDA VM for `base`'s tensors with `k` as its one kernel, invoked on
// every tensor in order: the VM creation's status (load-time validation tests).
Status CreateOneKernelVm(const ser::KernelDesc& k, ProgramSpec base);

RunResult RunOnce(const std::vector<uint8_t>& bytes, const std::string& library,
                  const std::vector<std::vector<float>>& inputs, const VmOptions& options);

// Builds `p` and runs it on the CUDA device with and without CUDA graphs; each
// run's one output must be within relative L2 `tolerance` of `want` (gtest
// expectations, in the calling test).
// `base` gives the other options (device and cuda_graph are set here); `calls`,
// when given, receives the launches' trace names of the run without graphs.
void ExpectMatchesWithAndWithoutGraphs(const ProgramSpec& p, const std::vector<std::vector<float>>& inputs,
                                       const std::vector<float>& want, double tolerance, const VmOptions& base = {},
                                       std::vector<std::string>* calls = nullptr);

// The trace names of a VM's launches (VmOptions::trace).
class CallRecorder : public TraceObserver {
 public:
  void OnInstruction(const TraceEvent& e) override {
    if (e.op.kind == DeviceOpKind::kLaunch) calls.emplace_back(e.op.call);
  }
  std::vector<std::string> calls;
};

std::vector<float> Random(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f);
// sqrt(sum (a-b)^2 / sum b^2); infinity when sizes differ.
double RelL2(const std::vector<float>& a, const std::vector<float>& b);

// ---- CPU references (double accumulation) ------------------------------------
struct GemmRef {
  int64_t m = 1, n = 1, k = 1, batch = 1;
  bool trans_a = false, trans_b = false;
  int64_t stride_a = -1, stride_b = -1;  // -1: dense
  float alpha = 1.f, beta = 1.f;
  int bias = 0;  // 0 none, 1 row [n], 2 full [m,n]
  bool residual = false;  // a [batch,m,n] residual added before the epilogue
  std::string epilogue;
};
std::vector<float> ReferenceGemm(const GemmRef& g, const std::vector<float>& a, const std::vector<float>& b,
                                 const std::vector<float>& bias, const std::vector<float>& residual = {});
struct ConvRef {
  int64_t n = 1, c = 1, h = 1, w = 1, k = 1, r = 1, s = 1;
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, group = 1;
  std::string activation;
  float clip_max = 6.f;
  int64_t out_h() const { return (h + 2 * pad_h - dil_h * (r - 1) - 1) / stride_h + 1; }
  int64_t out_w() const { return (w + 2 * pad_w - dil_w * (s - 1) - 1) / stride_w + 1; }
};
// The same with 1, 2 or 3 spatial dims (cudnn.conv2d takes any of them): one
// entry per spatial axis in `in`, `kernel`, `pads` (symmetric: both ends),
// `strides` and `dilations`. `transposed`: ONNX ConvTranspose
// (cudnn.conv_transpose) of c input and k output channels, W [c, k/group,
// kernel...], with `output_padding` (one per axis; empty: zeros).
struct ConvNdRef {
  int64_t n = 1, c = 1, k = 1, group = 1;
  std::vector<int64_t> in, kernel, pads, strides, dilations;
  std::string activation;
  float clip_max = 6.f;
  bool transposed = false;
  std::vector<int64_t> output_padding;
  std::vector<int64_t> out() const;  // spatial output dims
};
ConvNdRef ToNd(const ConvRef& c);
std::vector<float> ReferenceConv(const ConvRef& c, const std::vector<float>& x, const std::vector<float>& w,
                                 const std::vector<float>* bias, const std::vector<float>* residual);
std::vector<float> ReferenceConvNd(const ConvNdRef& c, const std::vector<float>& x, const std::vector<float>& w,
                                   const std::vector<float>* bias, const std::vector<float>* residual);
// A one-kernel cudnn.conv2d (or cudnn.conv_transpose) program for `c` (with bias and/or residual), its inputs
// and the CPU reference output. x, w, bias and residual are Random(.., seed + 0..3).
struct ConvProgram {
  ProgramSpec spec;
  std::vector<std::vector<float>> inputs;
  std::vector<float> want;
};
ConvProgram MakeConvProgram(const ConvRef& c, bool bias, bool residual, uint32_t seed);
// `dtype` f16/bf16: every tensor in that type, the random data rounded to it
// first (the reference then sees exactly the device's inputs).
ConvProgram MakeConvNdProgram(const ConvNdRef& c, bool bias, bool residual, uint32_t seed,
                              DataType dtype = DataType::kF32);
// Row-major [a,b,c...] shapes and data as [a,c...,b]: NCHW -> NHWC, KCRS -> KRSC
// (and the 3-D NCDHW -> NDHWC, KCTRS -> KTRSC).
std::vector<int64_t> Nhwc(const std::vector<int64_t>& s);
std::vector<float> Nhwc(const std::vector<float>& v, const std::vector<int64_t>& s);
// A one-kernel program with its image tensors (rank 4 or 5), data and expected
// output moved to channels-last, and the kernel's "layout" attribute "nhwc".
void MoveToChannelsLast(ProgramSpec& p, std::vector<std::vector<float>>& inputs, std::vector<float>& want);
struct PoolRef {
  int64_t n = 1, c = 1, h = 1, w = 1, kh = 1, kw = 1, pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1;
  std::string mode;  // max | avg | avg_exclude_pad
  int64_t out_h() const { return (h + 2 * pad_h - kh) / stride_h + 1; }
  int64_t out_w() const { return (w + 2 * pad_w - kw) / stride_w + 1; }
};
// Test names print the pool's shape, not the struct's bytes.
inline void PrintTo(const PoolRef& p, std::ostream* os) {
  *os << p.mode << " " << p.n << "x" << p.c << "x" << p.h << "x" << p.w << " k" << p.kh << "x" << p.kw;
}
std::vector<float> ReferencePool(const PoolRef& p, const std::vector<float>& x);

}  // namespace keel::cudatest
