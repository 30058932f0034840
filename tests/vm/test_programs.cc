// tests/vm/test_programs.cc — see test_programs.h.
#include "tests/vm/test_programs.h"

#include <fstream>

#include "common/file_digest.h"

namespace keel::vmtest {
namespace {
using ser::DType;
using ser::DeviceKind;

ser::KernelArgDesc Arg(std::vector<int64_t> shape, ser::ArgAccess access) {
  return ser::KernelArgDesc{DType::kF32, std::move(shape), access};
}
constexpr auto R = ser::ArgAccess::kRead;
constexpr auto W = ser::ArgAccess::kWrite;

std::span<const uint8_t> Bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}
ser::TensorSigDesc Sig(std::string name, std::vector<int64_t> shape) {
  return ser::TensorSigDesc{std::move(name), std::move(shape), DType::kF32, DeviceKind::kCpu};
}
}  // namespace

void AddTestKernels(ser::ExecutableWriter& w) {
  auto k = [&](std::string name, std::vector<ser::KernelArgDesc> args) {
    ser::KernelDesc d;
    d.name = std::move(name);
    d.args = std::move(args);
    return w.AddKernel(std::move(d));
  };
  k("test_add_f32_4", {Arg({4}, R), Arg({4}, R), Arg({4}, W)});
  k("test_relu_f32_4", {Arg({4}, R), Arg({4}, W)});
  k("test_matmul_f32_2x3x2", {Arg({2, 3}, R), Arg({3, 2}, R), Arg({2, 2}, W)});
  k("test_empty", {});
  k("test_scale_parallel_f32_1024", {Arg({1024}, R), Arg({1024}, W)});
  k("test_fail", {});
}

std::vector<float> ConstC() { return {-1.0f, -2.0f, 3.0f, 0.5f}; }
std::vector<float> ConstW() { return {1, 2, 3, 4, 5, 6}; }

Result<std::vector<uint8_t>> FullProgram(Plan plan) {
  const bool dyn = plan == Plan::kDynamic;
  ser::ExecutableWriter w;
  w.SetProducer("keel vm tests");
  w.SetKernelLibraryId(kLibraryId);
  w.AddTarget(DeviceKind::kCpu, "x86-64");
  AddTestKernels(w);
  const std::vector<float> c = ConstC(), wt = ConstW();
  w.AddConstant("c", DType::kF32, {4}, DeviceKind::kCpu, Bytes(c));
  w.AddConstant("w", DType::kF32, {3, 2}, DeviceKind::kCpu, Bytes(wt));
  ser::MemoryPlanDesc mp;
  mp.strategy = dyn ? "dynamic" : "greedy-size";
  // s2 reuses s0's bytes on the static plan: s0 is dead once relu has run.
  const uint64_t offsets[5] = {0, 64, 0, 128, 192};
  const uint64_t sizes[5] = {16, 16, 16, 16, 4096};
  for (int i = 0; i < 5; ++i) {
    mp.storages.push_back(ser::PlannedStorageDesc{sizes[i], 64, DeviceKind::kCpu, dyn ? -1 : 0, dyn ? 0 : offsets[i]});
  }
  if (!dyn) mp.arenas.push_back(ser::ArenaDesc{DeviceKind::kCpu, 192 + 4096, 64});
  w.SetMemoryPlan(mp);
  auto& f = w.AddFunction("main", {Sig("x", {2, 3}), Sig("y", {4}), Sig("z", {1024})},
                          {Sig("relu", {4}), Sig("matmul", {2, 2}), Sig("scaled", {1024})}, 15);
  f.AllocStorage(3, 0, "add.buf")
      .AllocTensor(4, 3, 0, {4}, DType::kF32)
      .LoadConst(5, 0, "c")
      .Invoke(kAdd, {1, 5, 4}, "add")
      .AllocStorage(6, 1)
      .AllocTensor(7, 6, 0, {4}, DType::kF32)
      .Invoke(kRelu, {4, 7}, "relu");
  if (dyn) f.FreeStorage(3);
  f.AllocStorage(8, 2).AllocTensor(9, 8, 0, {4}, DType::kF32).Copy(9, 7, "copy_out");
  if (dyn) f.FreeStorage(6);
  f.AllocStorage(10, 3)
      .AllocTensor(11, 10, 0, {2, 2}, DType::kF32)
      .LoadConst(12, 1, "w")
      .Invoke(kMatmul, {0, 12, 11}, "matmul")
      .Invoke(kEmpty, {}, "nothing")
      .AllocStorage(13, 4)
      .AllocTensor(14, 13, 0, {1024}, DType::kF32)
      .Invoke(kScale, {2, 14}, "scale")
      .Ret({9, 11, 14});
  return w.Finish();
}

FullInputs MakeFullInputs(int seed) {
  FullInputs in;
  for (int i = 0; i < 6; ++i) in.x.push_back(static_cast<float>((i * 7 + seed) % 5) - 2.0f);
  for (int i = 0; i < 4; ++i) in.y.push_back(static_cast<float>((i * 3 + seed) % 4) - 1.5f);
  for (int i = 0; i < 1024; ++i) in.z.push_back(static_cast<float>((i + seed) % 17) * 0.25f);
  return in;
}

FullOutputs ReferenceFull(const FullInputs& in) {
  FullOutputs out;
  const std::vector<float> c = ConstC(), w = ConstW();
  for (int i = 0; i < 4; ++i) out.relu.push_back(std::max(0.0f, in.y[i] + c[i]));
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      float s = 0;
      for (int k = 0; k < 3; ++k) s += in.x[i * 3 + k] * w[k * 2 + j];
      out.matmul.push_back(s);
    }
  }
  for (float v : in.z) out.scaled.push_back(v * 2.0f + 1.0f);
  return out;
}

Result<std::vector<uint8_t>> AddProgram(const AddProgramSpec& s, const ser::FinishOptions& finish) {
  ser::ExecutableWriter w;
  w.SetKernelLibraryId(s.library_id);
  if (!s.digest_of_library.empty()) {
    KEEL_ASSIGN_OR_RETURN(common::FileDigest d, common::DigestPath(s.digest_of_library, "kernel library"));
    w.SetKernelLibraryDigest(d.size, d.sha256);
  }
  w.SetAllowTf32(s.allow_tf32);
  AddTestKernels(w);
  if (s.add_kernel_name != "test_add_f32_4") {
    ser::KernelDesc d;
    d.name = s.add_kernel_name;
    d.args = {Arg({4}, R), Arg({4}, R), Arg({4}, W)};
    const uint32_t index = w.AddKernel(std::move(d));
    (void)index;
  }
  const std::vector<float> c = ConstC();
  w.AddConstant("c", DType::kF32, {4}, DeviceKind::kCpu, Bytes(c));
  ser::MemoryPlanDesc mp;
  mp.strategy = s.dynamic ? "dynamic" : "naive";
  mp.storages.push_back(ser::PlannedStorageDesc{s.storage_size, 64, DeviceKind::kCpu, s.dynamic ? -1 : 0, 0});
  if (!s.dynamic) mp.arenas.push_back(ser::ArenaDesc{DeviceKind::kCpu, s.storage_size, 64});
  w.SetMemoryPlan(mp);
  const uint32_t kernel = s.add_kernel_name != "test_add_f32_4" ? kFail + 1 : s.kernel;
  auto& f = w.AddFunction("main", {Sig("x", {4})}, {Sig("y", {4})}, s.num_registers);
  f.AllocStorage(s.storage_dst, s.plan_slot)
      .AllocTensor(2, s.view_storage, s.view_offset, s.view_shape, DType::kF32)
      .LoadConst(3, s.const_index)
      .Invoke(kernel, {0, 3, 2}, "add")
      .Ret({s.ret_reg});
  return w.Finish(finish);
}

Result<std::vector<uint8_t>> DispatchProgram(uint32_t n, bool alloc_tensors) {
  ser::ExecutableWriter w;
  w.SetKernelLibraryId(kLibraryId);
  AddTestKernels(w);
  ser::MemoryPlanDesc mp;
  mp.strategy = "naive";
  mp.storages.push_back(ser::PlannedStorageDesc{16, 64, DeviceKind::kCpu, 0, 0});
  mp.arenas.push_back(ser::ArenaDesc{DeviceKind::kCpu, 64, 64});
  w.SetMemoryPlan(mp);
  auto& f = w.AddFunction("main", {}, {Sig("y", {4})}, 2);
  f.AllocStorage(0, 0);
  for (uint32_t i = 0; i < n; ++i) {
    if (alloc_tensors) {
      f.AllocTensor(1, 0, 0, {4}, DType::kF32);
    } else {
      f.Invoke(kEmpty, {});
    }
  }
  f.AllocTensor(1, 0, 0, {4}, DType::kF32).Ret({1});
  return w.Finish();
}

bool WriteBytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

}  // namespace keel::vmtest
