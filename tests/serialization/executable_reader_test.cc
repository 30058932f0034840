// tests/serialization/executable_reader_test.cc — every rejection ReadExecutable promises.
//
// Each test builds a file broken in exactly one way (with the writer, which does
// not validate, or by patching bytes) and checks the status code and a
// distinctive part of the message.
#include <cstring>
#include <functional>
#include <limits>

#include "gtest/gtest.h"
#include "serialization/executable_reader.h"
#include "serialization/executable_writer.h"
#include "tests/serialization/sample_executables.h"

namespace keel::ser {
namespace {

using samples::ExpectReadError;
using samples::F32x4;
using samples::MinimalBase;
using samples::SampleFile;

constexpr StatusCode kInvalid = StatusCode::kInvalidExecutable;

std::vector<uint8_t> Finish(const ExecutableWriter& w, const FinishOptions& o = {}) {
  auto r = w.Finish(o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : std::vector<uint8_t>{};
}

// A valid minimal program: main(a: f32[4]) -> (f32[4]) computing k_add(a, c0) into slot 0.
void ValidMain(ExecutableWriter& w) {
  w.AddFunction("main", {F32x4("a")}, {F32x4("out")}, 4)
      .LoadConst(1, 0)
      .AllocStorage(2, 0)
      .AllocTensor(3, 2, 64, {4}, DType::kF32)
      .Invoke(0, {0, 1, 3})
      .Ret({3});
}

// MinimalBase, then `edit` (one defect outside main; none when empty), then
// ValidMain, finished with `o`.
std::vector<uint8_t> MinimalProgram(const std::function<void(ExecutableWriter&)>& edit,
                                    const FinishOptions& o = {}) {
  ExecutableWriter w;
  MinimalBase(w);
  if (edit) edit(w);
  ValidMain(w);
  return Finish(w, o);
}
std::vector<uint8_t> MinimalProgram(const FinishOptions& o = {}) { return MinimalProgram(nullptr, o); }

// MinimalProgram(edit) must be rejected as invalid with `needle` in the message.
void ExpectEditError(const std::function<void(ExecutableWriter&)>& edit, const std::string& needle) {
  ExpectReadError(MinimalProgram(edit), kInvalid, needle);
}
// The same for a program with one more kernel, `k`.
void ExpectKernelError(const KernelDesc& k, const std::string& needle) {
  ExpectEditError([&](ExecutableWriter& w) { w.AddKernel(k); }, needle);
}

TEST(ExecutableReader, AcceptsTheMinimalProgram) {
  auto r = ReadExecutable(MinimalProgram());
  EXPECT_TRUE(r.ok()) << r.status().ToString();
}

// Scalars: empty int64 shape vectors, which the FlatBuffers builder leaves at 4 mod
// 8. The reader's alignment check (issue 13, fuzzing) must not refuse them.
TEST(ExecutableReader, AcceptsScalarShapesWhateverTheirAlignment) {
  for (int extra = 0; extra < 4; ++extra) {
    auto file = MinimalProgram([&](ExecutableWriter& w) {
      const float one = 1.0f;
      for (int i = 0; i <= extra; ++i) {
        w.AddConstant("scalar" + std::to_string(i), DType::kF32, {}, DeviceKind::kCpu,
                      {reinterpret_cast<const uint8_t*>(&one), 4});
      }
    });
    auto r = ReadExecutable(file);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
  }
}

// A 1.1 executable records its library's SHA-256 beside the library id.
TEST(ExecutableReader, KernelLibraryDigestNeedsALibraryId) {
  auto ok = MinimalProgram([](ExecutableWriter& w) {
    w.SetKernelLibraryId("lib");
    w.SetKernelLibraryDigest(100, {});
  });
  auto r = ReadExecutable(ok);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->root->kernel_library_size(), 100u);
  ASSERT_NE(r->root->kernel_library_sha256(), nullptr);
  EXPECT_EQ(r->root->kernel_library_sha256()->size(), 32u);
  EXPECT_EQ(r->version_minor, kFormatVersionMinor);
  ExpectEditError([](ExecutableWriter& w) { w.SetKernelLibraryDigest(100, {}); }, "without a kernel_library_id");
}

// ---- framing, verifier, version ------------------------------------------------

TEST(ExecutableReader, RejectsEmptyFile) {
  ExpectReadError({}, kInvalid, "empty file");
}

TEST(ExecutableReader, RejectsTooSmallFile) {
  std::vector<uint8_t> file = SampleFile();
  file.resize(10);
  ExpectReadError(file, kInvalid, "too small");
}

TEST(ExecutableReader, RejectsWrongIdentifier) {
  FinishOptions o;
  o.file_identifier = "ONNX";
  ExpectReadError(MinimalProgram(o), kInvalid, "not a Keel executable");
  // A plain text file too.
  std::string text = "this is not an executable at all";
  ExpectReadError(std::vector<uint8_t>(text.begin(), text.end()), kInvalid, "not a Keel executable");
}

TEST(ExecutableReader, RejectsTruncatedFile) {
  std::vector<uint8_t> file = SampleFile();
  uint32_t prefix = 0;
  std::memcpy(&prefix, file.data(), 4);
  file.resize(prefix / 2);
  ExpectReadError(file, kInvalid, "truncated");
}

TEST(ExecutableReader, RejectsCorruptFlatBuffer) {
  std::vector<uint8_t> file = SampleFile();
  auto r = ReadExecutable(file);
  ASSERT_TRUE(r.ok());
  // Make the functions vector claim a huge length: the FlatBuffers verifier must catch it.
  const uint8_t* elems = reinterpret_cast<const uint8_t*>(r->root->functions()->Data());
  const size_t len_pos = static_cast<size_t>(elems - file.data()) - 4;
  const uint32_t huge = 0x0fffffff;
  std::memcpy(file.data() + len_pos, &huge, 4);
  ExpectReadError(file, kInvalid, "FlatBuffers verification failed");
}

TEST(ExecutableReader, RejectsCorruptRootOffset) {
  std::vector<uint8_t> file = SampleFile();
  const uint32_t bad = 0x7ffffff0;
  std::memcpy(file.data() + 4, &bad, 4);
  ExpectReadError(file, kInvalid, "root table is corrupt");
}

TEST(ExecutableReader, RejectsNewerMajorVersion) {
  FinishOptions o;
  o.version_major = kFormatVersionMajor + 1;
  const std::string want = "executable format " + std::to_string(kFormatVersionMajor + 1) +
                           ".x is newer than this runtime's " + std::to_string(kFormatVersionMajor) + ".x";
  ExpectReadError(MinimalProgram(o), StatusCode::kUnsupported, want);
}

TEST(ExecutableReader, RejectsOlderMajorVersion) {
  FinishOptions o;
  o.version_major = kFormatVersionMajor - 1;
  ExpectReadError(MinimalProgram(o), StatusCode::kUnsupported, "is older than this runtime's");
}

TEST(ExecutableReader, AcceptsNewerMinorVersion) {
  FinishOptions o;
  o.version_minor = kFormatVersionMinor + 7;
  const std::vector<uint8_t> file = MinimalProgram(o);
  auto r = ReadExecutable(file);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->version_minor, kFormatVersionMinor + 7);
}

TEST(ExecutableReader, RejectsMissingVersion) {
  FinishOptions o;
  o.omit_version = true;
  ExpectReadError(MinimalProgram(o), kInvalid, "missing format version");
}

TEST(ExecutableReader, RejectsMisalignedBuffer) {
  std::vector<uint8_t> file = SampleFile();
  std::vector<uint8_t> shifted(file.size() + 4);
  std::memcpy(shifted.data() + 4, file.data(), file.size());
  auto r = ReadExecutable(std::span<const uint8_t>(shifted.data() + 4, file.size()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("8-byte aligned"), std::string::npos);
}

// ---- data segment and constants ---------------------------------------------------

TEST(ExecutableReader, RejectsMisalignedDataSegment) {
  const std::vector<uint8_t> good_file = MinimalProgram();
  const auto good = ReadExecutable(good_file);
  ASSERT_TRUE(good.ok());
  FinishOptions o;
  o.data_segment_offset = good->root->data_segment_offset() + 8;
  ExpectReadError(MinimalProgram(o), kInvalid, "data segment offset");
  ExpectReadError(MinimalProgram(o), kInvalid, "not 64-byte aligned");
}

TEST(ExecutableReader, RejectsDataSegmentPastEndOfFile) {
  FinishOptions o;
  o.data_segment_size = 1 << 20;
  ExpectReadError(MinimalProgram(o), kInvalid, "extends past the end of the file");
  o.data_segment_size = std::numeric_limits<uint64_t>::max();  // offset + size overflows
  ExpectReadError(MinimalProgram(o), kInvalid, "extends past the end of the file");
  FinishOptions far;
  far.data_segment_offset = uint64_t{1} << 40;
  ExpectReadError(MinimalProgram(far), kInvalid, "extends past the end of the file");
}

TEST(ExecutableReader, RejectsDataSegmentOverlappingMetadata) {
  FinishOptions o;
  o.data_segment_offset = 0;
  ExpectReadError(MinimalProgram(o), kInvalid, "overlaps the FlatBuffer");
}

// One more constant (index 1), described raw (offset and size as given).
void ExpectConstantError(const RawConstantDesc& c, const std::string& needle) {
  ExpectEditError([&](ExecutableWriter& w) { w.AddRawConstant(c); }, needle);
}

TEST(ExecutableReader, RejectsConstantOutsideDataSegment) {
  ExpectConstantError({"far", DType::kF32, {4}, DeviceKind::kCpu, 1024, 16},
                      "constant 1 'far': bytes [1024, +16) lie outside the data segment");
}

TEST(ExecutableReader, RejectsConstantOffsetOverflow) {
  ExpectConstantError({"wrap", DType::kF32, {4}, DeviceKind::kCpu, std::numeric_limits<uint64_t>::max() - 63, 16},
                      "lie outside the data segment");
}

TEST(ExecutableReader, RejectsMisalignedConstant) {
  ExpectConstantError({"odd", DType::kF32, {2}, DeviceKind::kCpu, 8, 8},
                      "constant 1 'odd': offset 8 is not 64-byte aligned");
}

TEST(ExecutableReader, RejectsConstantSizeMismatch) {
  ExpectEditError(
      [](ExecutableWriter& w) {
        w.AddConstant("short", DType::kF32, {2, 3}, DeviceKind::kCpu, std::vector<uint8_t>(20, 1));
      },
      "size 20 bytes != product(shape) * dtype size = 24");
}

TEST(ExecutableReader, RejectsConstantShapeOverflowAndNegativeDims) {
  const int64_t big = int64_t{1} << 62;
  ExpectConstantError({"huge", DType::kF32, {big, big}, DeviceKind::kCpu, 0, 0}, "element count overflows");
  ExpectConstantError({"bytes", DType::kF64, {big}, DeviceKind::kCpu, 0, 0}, "byte size overflows");
  ExpectConstantError({"neg", DType::kF32, {2, -3}, DeviceKind::kCpu, 0, 0}, "dimension 1 is negative (-3)");
}

// A kernel named `name` of `kind` on `device`, without args, attributes or launch.
KernelDesc Kernel(const std::string& name, KernelKind kind, DeviceKind device) {
  KernelDesc k;
  k.name = name;
  k.kind = kind;
  k.device = device;
  return k;
}

TEST(ExecutableReader, RejectsEnumValuesOutOfRange) {
  ExpectConstantError({"x", static_cast<DType>(200), {1}, DeviceKind::kCpu, 0, 1}, "dtype value 200 out of range");
  ExpectEditError([](ExecutableWriter& w) { w.AddTarget(static_cast<DeviceKind>(9), "riscv"); },
                  "target 0: device value 9 out of range");
  ExpectKernelError(Kernel("weird", static_cast<KernelKind>(42), DeviceKind::kCpu), "kind value 42 out of range");
  KernelDesc k = Kernel("weird", KernelKind::kCpuGenerated, DeviceKind::kCpu);
  k.args = {{DType::kF32, {1}, static_cast<ArgAccess>(5)}};
  ExpectKernelError(k, "access value 5 out of range");
}

// ---- kernels and memory plan ------------------------------------------------------

TEST(ExecutableReader, RejectsBadKernels) {
  ExpectKernelError(Kernel("gemm", KernelKind::kLibrary, DeviceKind::kCuda), "library kernel without library_op");
  KernelDesc relu = Kernel("relu", KernelKind::kCudaGenerated, DeviceKind::kCuda);
  ExpectKernelError(relu, "without a launch config");
  relu.launch = LaunchDesc{{1, 0, 1}, {32, 1, 1}, 0};
  ExpectKernelError(relu, "launch grid dimension 1 is 0");
  KernelDesc dup = Kernel("dup", KernelKind::kLibrary, DeviceKind::kCuda);
  dup.library_op = "cudnn.conv2d";
  dup.attrs = {AttrDesc::Ints("pads", {1}), AttrDesc::Ints("pads", {2})};
  ExpectKernelError(dup, "key 'pads' repeated");
  ExpectKernelError(Kernel("mixed", KernelKind::kCpuGenerated, DeviceKind::kCuda),  // cpu_generated on cuda
                    "cpu_generated kernel on a non-cpu device");
}

MemoryPlanDesc OneArenaPlan() {
  MemoryPlanDesc p;
  p.strategy = "test";
  p.arenas = {{DeviceKind::kCpu, 1024, 64}};
  p.storages = {{256, 64, DeviceKind::kCpu, 0, 0}};
  return p;
}

TEST(ExecutableReader, RejectsBadMemoryPlans) {
  auto check = [](MemoryPlanDesc plan, const std::string& needle) {
    ExecutableWriter w;
    MinimalBase(w);
    w.SetMemoryPlan(std::move(plan));
    w.AddFunction("main", {}, {}, 1).Ret({});
    ExpectReadError(Finish(w), kInvalid, needle);
  };
  MemoryPlanDesc p = OneArenaPlan();
  p.storages[0].offset = 1024 - 128;  // [896, 1152) past the 1024-byte arena
  check(p, "memory plan storage 0: [896, +256) lies outside arena 0");
  p = OneArenaPlan();
  p.storages[0].offset = std::numeric_limits<uint64_t>::max() - 63;
  check(p, "lies outside arena 0");
  p = OneArenaPlan();
  p.storages[0].arena = 3;
  check(p, "arena index 3 out of range");
  p = OneArenaPlan();
  p.storages[0].arena = -2;
  check(p, "arena index -2 out of range");
  p = OneArenaPlan();
  p.storages[0].alignment = 48;
  check(p, "storage 0: alignment 48 is not a power of two");
  p = OneArenaPlan();
  p.arenas[0].alignment = 0;
  check(p, "arena 0: alignment 0 is not a power of two");
  p = OneArenaPlan();
  p.storages[0].offset = 32;
  check(p, "offset 32 is not a multiple of its alignment 64");
  p = OneArenaPlan();
  p.storages[0].device = DeviceKind::kCuda;
  check(p, "device differs from its arena's");
}

// ---- functions -----------------------------------------------------------------------

TEST(ExecutableReader, RejectsMissingFunctionsAndInstructions) {
  {
    ExecutableWriter w;
    MinimalBase(w);
    ExpectReadError(Finish(w), kInvalid, "no functions");
  }
  {
    ExecutableWriter w;
    MinimalBase(w);
    w.AddFunction("main", {}, {}, 0);
    ExpectReadError(Finish(w), kInvalid, "function 'main': has no instructions");
  }
  {
    ExecutableWriter w;
    MinimalBase(w);
    w.AddFunction("", {}, {}, 0).Ret({});
    ExpectReadError(Finish(w), kInvalid, "function 0: missing name");
  }
  {
    ExecutableWriter w;
    MinimalBase(w);
    w.AddFunction("main", {}, {}, 0).Ret({});
    w.AddFunction("main", {}, {}, 0).Ret({});
    ExpectReadError(Finish(w), kInvalid, "function name 'main' is used twice");
  }
}

// Builds MinimalBase + a main from `body`, expects `needle`.
template <typename Body>
void ExpectMainError(Body body, const std::string& needle, std::vector<TensorSigDesc> params = {},
                     std::vector<TensorSigDesc> results = {}, uint32_t num_registers = 4) {
  ExecutableWriter w;
  MinimalBase(w);
  body(w.AddFunction("main", std::move(params), std::move(results), num_registers));
  ExpectReadError(Finish(w), kInvalid, needle);
}

TEST(ExecutableReader, RejectsRegisterOutOfRange) {
  ExpectMainError([](FunctionBuilder& f) { f.AllocStorage(99, 0).Ret({}); },
                  "function 'main' instruction 0 (AllocStorage): destination register 99 out of range "
                  "(num_registers 4)");
  ExpectMainError([](FunctionBuilder& f) { f.LoadConst(0, 0).Copy(0, 4).Ret({}); },
                  "instruction 1 (Copy): source register 4 out of range");
  ExpectMainError([](FunctionBuilder& f) { f.LoadConst(0, 0).Ret({7}); },
                  "instruction 1 (Ret): result 0: register 7 out of range", {}, {F32x4("r")});
  ExpectMainError([](FunctionBuilder& f) { f.AllocStorage(0, 0).FreeStorage(12).Ret({}); },
                  "instruction 1 (FreeStorage): register 12 out of range");
}

TEST(ExecutableReader, RejectsIndicesOutOfRange) {
  ExpectMainError([](FunctionBuilder& f) { f.AllocStorage(0, 2).Ret({}); },
                  "instruction 0 (AllocStorage): plan_slot 2 out of range (memory plan has 2 storages)");
  ExpectMainError([](FunctionBuilder& f) { f.LoadConst(0, 1).Ret({}); },
                  "instruction 0 (LoadConst): const_index 1 out of range (1 constants)");
  ExpectMainError([](FunctionBuilder& f) { f.LoadConst(0, 0).Invoke(5, {0, 0, 0}).Ret({}); },
                  "instruction 1 (Invoke): kernel index 5 out of range (1 kernels)");
}

TEST(ExecutableReader, RejectsInvokeArgumentMismatch) {
  ExpectMainError([](FunctionBuilder& f) { f.LoadConst(0, 0).Invoke(0, {0, 0}).Ret({}); },
                  "instruction 1 (Invoke): 2 arguments but kernel 0 'k_add' takes 3");
  // Right count, wrong element count: a f32[2] view where the kernel wants f32[4].
  ExpectMainError(
      [](FunctionBuilder& f) {
        f.LoadConst(0, 0).AllocStorage(1, 0).AllocTensor(2, 1, 0, {2}, DType::kF32).Invoke(0, {0, 0, 2}).Ret({});
      },
      "argument 2: register 2 holds f32[2 elements] but kernel 'k_add' argument 2 expects f32[4 elements]");
  ExpectMainError(
      [](FunctionBuilder& f) {
        f.LoadConst(0, 0).AllocStorage(1, 0).AllocTensor(2, 1, 0, {4}, DType::kI32).Invoke(0, {0, 0, 2}).Ret({});
      },
      "holds i32[4 elements]");
}

TEST(ExecutableReader, RejectsViewOutsideStorage) {
  // Slot 0 has 256 bytes: f32[64] at offset 4 needs [4, 260).
  ExpectMainError([](FunctionBuilder& f) { f.AllocStorage(0, 0).AllocTensor(1, 0, 4, {64}, DType::kF32).Ret({}); },
                  "instruction 1 (AllocTensor): view [4, +256) exceeds storage register 0 (plan slot 0, 256 bytes)");
  // Offset + size overflows 64 bits.
  ExpectMainError(
      [](FunctionBuilder& f) {
        f.AllocStorage(0, 0).AllocTensor(1, 0, std::numeric_limits<uint64_t>::max() - 3, {4}, DType::kF32).Ret({});
      },
      "exceeds storage register 0");
  // Shape whose byte size overflows.
  ExpectMainError(
      [](FunctionBuilder& f) {
        f.AllocStorage(0, 0).AllocTensor(1, 0, 0, {int64_t{1} << 40, int64_t{1} << 22}, DType::kF32).Ret({});
      },
      "instruction 1 (AllocTensor): byte size overflows");
  ExpectMainError([](FunctionBuilder& f) { f.AllocStorage(0, 0).AllocTensor(1, 0, 0, {-1}, DType::kF32).Ret({}); },
                  "dimension 0 is negative");
  ExpectMainError(
      [](FunctionBuilder& f) { f.AllocStorage(0, 0).AllocTensor(1, 0, 0, {1}, static_cast<DType>(77)).Ret({}); },
      "instruction 1 (AllocTensor): dtype value 77 out of range");
}

TEST(ExecutableReader, RejectsRegisterKindConfusion) {
  ExpectMainError([](FunctionBuilder& f) { f.AllocTensor(1, 0, 0, {4}, DType::kF32).Ret({}); },
                  "storage register 0 is read before it is written");
  ExpectMainError([](FunctionBuilder& f) { f.LoadConst(0, 0).AllocTensor(1, 0, 0, {4}, DType::kF32).Ret({}); },
                  "storage register 0 holds a tensor, not a storage");
  ExpectMainError([](FunctionBuilder& f) { f.AllocStorage(0, 0).LoadConst(1, 0).Copy(1, 0).Ret({}); },
                  "instruction 2 (Copy): source register 0 holds a storage, not a tensor");
  ExpectMainError([](FunctionBuilder& f) { f.LoadConst(1, 0).FreeStorage(1).Ret({}); },
                  "register 1 holds a tensor, not a storage");
  // A freed storage can no longer be used.
  ExpectMainError(
      [](FunctionBuilder& f) { f.AllocStorage(0, 1).FreeStorage(0).AllocTensor(1, 0, 0, {4}, DType::kF32).Ret({}); },
      "instruction 2 (AllocTensor): storage register 0 is read before it is written");
}

TEST(ExecutableReader, RejectsUseOfFreedStorage) {
  // Slot 1 is dynamic (arena -1): view it, free it, then pass the view to a kernel.
  ExpectMainError(
      [](FunctionBuilder& f) {
        f.LoadConst(0, 0)
            .AllocStorage(1, 1)
            .AllocTensor(2, 1, 0, {4}, DType::kF32)
            .FreeStorage(1)
            .Invoke(0, {0, 0, 2})
            .Ret({});
      },
      "instruction 4 (Invoke): argument 2: register 2 views a storage freed by instruction 3");
  // Freeing after the last use is fine.
  ExecutableWriter w;
  MinimalBase(w);
  w.AddFunction("main", {}, {}, 3)
      .LoadConst(0, 0)
      .AllocStorage(1, 1)
      .AllocTensor(2, 1, 0, {4}, DType::kF32)
      .Invoke(0, {0, 0, 2})
      .FreeStorage(1)
      .Ret({});
  auto r = ReadExecutable(Finish(w));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
}

TEST(ExecutableReader, RejectsMisalignedView) {
  ExpectMainError([](FunctionBuilder& f) { f.AllocStorage(0, 0).AllocTensor(1, 0, 6, {4}, DType::kF32).Ret({}); },
                  "instruction 1 (AllocTensor): view offset 6 is not a multiple of the f32 element size");
}

TEST(ExecutableReader, RejectsWritesToConstants) {
  // k_add's argument 2 is kWrite.
  ExpectMainError([](FunctionBuilder& f) { f.LoadConst(0, 0).Invoke(0, {0, 0, 0}).Ret({}); },
                  "instruction 1 (Invoke): argument 2: register 0 holds constant 0, which the kernel writes");
  ExpectMainError([](FunctionBuilder& f) { f.LoadConst(0, 0).LoadConst(1, 0).Copy(1, 0).Ret({}); },
                  "instruction 2 (Copy): destination register 1 holds constant 0, which must not be written");
}

TEST(ExecutableReader, RejectsFreeOfArenaStorage) {
  ExpectMainError([](FunctionBuilder& f) { f.AllocStorage(0, 0).FreeStorage(0).Ret({}); },
                  "holds plan slot 0, which lives in an arena");
}

TEST(ExecutableReader, RejectsCopySizeMismatch) {
  ExpectMainError(
      [](FunctionBuilder& f) {
        f.LoadConst(0, 0).AllocStorage(1, 0).AllocTensor(2, 1, 0, {3}, DType::kF32).Copy(2, 0).Ret({});
      },
      "instruction 3 (Copy): destination register 2 has 12 bytes but source register 0 has 16");
}

TEST(ExecutableReader, RejectsBadRet) {
  ExpectMainError([](FunctionBuilder& f) { f.LoadConst(0, 0).Ret({0, 0}); },
                  "instruction 1 (Ret): returns 2 registers but the function has 1 results", {}, {F32x4("r")});
  ExpectMainError([](FunctionBuilder& f) { f.LoadConst(0, 0); }, "instruction 0 (LoadConst): the last instruction must be Ret");
  ExpectMainError([](FunctionBuilder& f) { f.Ret({}).LoadConst(0, 0).Ret({}); },
                  "instruction 0 (Ret): Ret before the end of the function");
  ExpectMainError([](FunctionBuilder& f) { f.Ret({1}); }, "result 0: register 1 is read before it is written", {},
                  {F32x4("r")});
  ExpectMainError([](FunctionBuilder& f) { f.Ret({0}); },
                  "register 0 holds i64[4 elements] but result 'r' expects f32[4 elements]",
                  {{"p", {4}, DType::kI64, DeviceKind::kCpu}}, {F32x4("r")});
  ExpectMainError([](FunctionBuilder& f) { f.Ret({0}); }, "register 0 is on cuda but result 'r' expects cpu",
                  {{"p", {4}, DType::kF32, DeviceKind::kCuda}}, {F32x4("r")});
}

TEST(ExecutableReader, RejectsTooManyParamsAndRegisters) {
  ExpectMainError([](FunctionBuilder& f) { f.Ret({}); }, "function 'main': 2 params but only 1 registers",
                  {F32x4("a"), F32x4("b")}, {}, 1);
  ExpectMainError([](FunctionBuilder& f) { f.Ret({}); }, "num_registers 4294967295 exceeds the limit", {}, {},
                  std::numeric_limits<uint32_t>::max());
}

TEST(ExecutableReader, RejectsEmptyOp) {
  ExpectMainError([](FunctionBuilder& f) { f.Add({EmptyInst{}, "nothing"}).Ret({}); },
                  "instruction 0 (NONE): instruction has no op");
}

TEST(ExecutableReader, ParamsAreTensors) {
  // Params occupy registers 0..P-1 and may be used directly.
  ExecutableWriter w;
  MinimalBase(w);
  w.AddFunction("main", {F32x4("a"), F32x4("b")}, {F32x4("c")}, 3)
      .AllocStorage(2, 0)
      .AllocTensor(2, 2, 0, {4}, DType::kF32)  // a register may be rebound (storage -> tensor)
      .Ret({0});
  auto r = ReadExecutable(Finish(w));
  // AllocTensor 2 reads storage 2 and rebinds 2 to a tensor view: valid.
  EXPECT_TRUE(r.ok()) << r.status().ToString();
}

}  // namespace
}  // namespace keel::ser
