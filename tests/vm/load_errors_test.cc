// tests/vm/load_errors_test.cc — every malformed executable or library is
// rejected at load with its own clear error, never a crash.
#include <gtest/gtest.h>

#include <filesystem>

#include "keel/vm.h"
#include "tests/vm/test_programs.h"

namespace keel {
namespace {
using vmtest::AddProgramSpec;

Status LoadBytes(const std::vector<uint8_t>& bytes, const std::string& library = KEEL_TEST_KERNELS) {
  LoadOptions o;
  o.library_path = library;
  return Executable::LoadMemory(bytes, o).status();
}

Status LoadSpec(const AddProgramSpec& spec, const ser::FinishOptions& finish = {},
                const std::string& library = KEEL_TEST_KERNELS) {
  auto bytes = vmtest::AddProgram(spec, finish);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return LoadBytes(*bytes, library);
}

void ExpectError(const Status& s, StatusCode code, const std::string& fragment) {
  EXPECT_EQ(s.code(), code) << s.ToString();
  EXPECT_NE(s.message().find(fragment), std::string::npos) << "message \"" << s.message() << "\" lacks \""
                                                         << fragment << "\"";
}

TEST(LoadErrorsTest, ValidProgramLoadsAndRuns) {
  auto bytes = vmtest::AddProgram({});
  ASSERT_TRUE(bytes.ok());
  LoadOptions o;
  o.library_path = KEEL_TEST_KERNELS;
  auto exe = Executable::LoadMemory(*bytes, o);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  auto vm = VirtualMachine::Create(*exe);
  ASSERT_TRUE(vm.ok());
  const float x[4] = {1, 2, 3, 4};
  const int64_t shape[] = {4};
  ASSERT_TRUE((*vm)->SetInput(0, x, 16, shape, DataType::kF32).ok());
  ASSERT_TRUE((*vm)->Run().ok());
  auto y = (*vm)->GetOutput("y");
  ASSERT_TRUE(y.ok());
  const auto c = vmtest::ConstC();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(static_cast<const float*>(y->data)[i], x[i] + c[i]);
}

TEST(LoadErrorsTest, EmptyAndTruncatedFiles) {
  EXPECT_EQ(LoadBytes({}).code(), StatusCode::kInvalidExecutable);
  auto bytes = *vmtest::AddProgram({});
  for (size_t n : {size_t{3}, size_t{8}, bytes.size() / 2, bytes.size() - 1}) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<long>(n));
    Status s = LoadBytes(cut);
    EXPECT_EQ(s.code(), StatusCode::kInvalidExecutable) << n << ": " << s.ToString();
    EXPECT_FALSE(s.message().empty());
  }
  const auto dir = std::filesystem::temp_directory_path();
  const std::string empty = (dir / ("keel_empty_" + std::to_string(::getpid()) + ".keel")).string();
  ASSERT_TRUE(vmtest::WriteBytes(empty, {}));
  EXPECT_EQ(Executable::LoadFile(empty).status().code(), StatusCode::kInvalidExecutable);
  std::filesystem::remove(empty);
  ExpectError(Executable::LoadFile("/nonexistent/model.keel").status(), StatusCode::kNotFound,
              "/nonexistent/model.keel");
}

TEST(LoadErrorsTest, WrongIdentifierAndNewerMajorVersion) {
  ser::FinishOptions f;
  f.file_identifier = "NOPE";
  EXPECT_EQ(LoadSpec({}, f).code(), StatusCode::kInvalidExecutable);
  ser::FinishOptions v;
  v.version_major = ser::kFormatVersionMajor + 1;
  EXPECT_EQ(LoadSpec({}, v).code(), StatusCode::kUnsupported);
  ser::FinishOptions minor;
  minor.version_minor = ser::kFormatVersionMinor + 1;  // newer minor: accepted
  EXPECT_TRUE(LoadSpec({}, minor).ok());
}

// Format 1.2's allow_tf32 (keelc --precision tf32) reads back; a 1.1 file (no
// such field) and a file that does not set it mean false.
TEST(LoadErrorsTest, Tf32FlagReadsBackAndDefaultsToOff) {
  for (bool allow : {false, true}) {
    AddProgramSpec spec;
    spec.allow_tf32 = allow;
    auto bytes = vmtest::AddProgram(spec);
    ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
    LoadOptions o;
    o.library_path = KEEL_TEST_KERNELS;
    auto exe = Executable::LoadMemory(*bytes, o);
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    EXPECT_EQ((*exe)->allow_tf32(), allow);
    VmOptions vo;  // allow_tf32 unset: the executable's choice (a CPU VM ignores it)
    EXPECT_TRUE(VirtualMachine::Create(*exe, vo).ok());
  }
  ser::FinishOptions older;
  older.version_minor = 1;
  auto bytes = vmtest::AddProgram({}, older);
  ASSERT_TRUE(bytes.ok());
  LoadOptions o;
  o.library_path = KEEL_TEST_KERNELS;
  auto exe = Executable::LoadMemory(*bytes, o);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  EXPECT_FALSE((*exe)->allow_tf32());
}

TEST(LoadErrorsTest, IndicesOutOfRange) {
  AddProgramSpec reg;
  reg.storage_dst = 9;
  reg.view_storage = 9;
  ExpectError(LoadSpec(reg), StatusCode::kInvalidExecutable, "9");
  AddProgramSpec kernel;
  kernel.kernel = 42;
  ExpectError(LoadSpec(kernel), StatusCode::kInvalidExecutable, "42");
  AddProgramSpec constant;
  constant.const_index = 5;
  ExpectError(LoadSpec(constant), StatusCode::kInvalidExecutable, "5");
  AddProgramSpec slot;
  slot.plan_slot = 3;
  ExpectError(LoadSpec(slot), StatusCode::kInvalidExecutable, "3");
  AddProgramSpec ret;
  ret.ret_reg = 100;
  ExpectError(LoadSpec(ret), StatusCode::kInvalidExecutable, "100");
}

TEST(LoadErrorsTest, ViewPastStorageAndSizeOverflow) {
  AddProgramSpec past;
  past.view_offset = 8;
  EXPECT_EQ(LoadSpec(past).code(), StatusCode::kInvalidExecutable);
  AddProgramSpec overflow;
  overflow.view_shape = {int64_t{1} << 62, 8};
  EXPECT_EQ(LoadSpec(overflow).code(), StatusCode::kInvalidExecutable);
  AddProgramSpec negative;
  negative.view_shape = {-4};
  EXPECT_EQ(LoadSpec(negative).code(), StatusCode::kInvalidExecutable);
}

TEST(LoadErrorsTest, KernelLibraryProblems) {
  AddProgramSpec missing_symbol;
  missing_symbol.add_kernel_name = "no_such_kernel";
  Status s = LoadSpec(missing_symbol);
  ExpectError(s, StatusCode::kNotFound, "no_such_kernel");
  ExpectError(s, StatusCode::kNotFound, KEEL_TEST_KERNELS);

  AddProgramSpec other_id;
  other_id.library_id = "some-other-build";
  ExpectError(LoadSpec(other_id), StatusCode::kInvalidExecutable, "some-other-build");
  ExpectError(LoadSpec({}, {}, KEEL_TEST_KERNELS_OTHER_ID), StatusCode::kInvalidExecutable, "different builds");
  ExpectError(LoadSpec({}, {}, KEEL_TEST_KERNELS_BAD_ABI), StatusCode::kInvalidExecutable, "ABI version");
  ExpectError(LoadSpec({}, {}, "/nonexistent/lib.so"), StatusCode::kNotFound, "/nonexistent/lib.so");
  // From memory with no library path given.
  ExpectError(LoadSpec({}, {}, ""), StatusCode::kInvalidArgument, "library_path");
}

TEST(LoadErrorsTest, RuntimeSafetyChecks) {
  ser::TensorSigDesc x{"x", {4}, ser::DType::kF32, ser::DeviceKind::kCpu};
  auto make = [&](bool write_const, bool use_after_free) {
    ser::ExecutableWriter w;
    w.SetKernelLibraryId(vmtest::kLibraryId);
    vmtest::AddTestKernels(w);
    const auto c = vmtest::ConstC();
    w.AddConstant("c", ser::DType::kF32, {4}, ser::DeviceKind::kCpu,
                  {reinterpret_cast<const uint8_t*>(c.data()), 16});
    ser::MemoryPlanDesc mp;
    mp.strategy = "dynamic";
    mp.storages.push_back(ser::PlannedStorageDesc{16, 64, ser::DeviceKind::kCpu, -1, 0});
    w.SetMemoryPlan(mp);
    auto& f = w.AddFunction("main", {x}, {x}, 4);
    f.LoadConst(1, 0).AllocStorage(2, 0).AllocTensor(3, 2, 0, {4}, ser::DType::kF32);
    if (write_const) f.Invoke(vmtest::kAdd, {0, 0, 1});  // writes into the constant
    if (use_after_free) f.FreeStorage(2).Invoke(vmtest::kAdd, {0, 1, 3});
    if (!use_after_free) f.FreeStorage(2);
    f.Ret({0});
    return *w.Finish();
  };
  EXPECT_TRUE(LoadBytes(make(false, false)).ok());
  ExpectError(LoadBytes(make(true, false)), StatusCode::kInvalidExecutable, "constant");
  EXPECT_EQ(LoadBytes(make(false, true)).code(), StatusCode::kInvalidExecutable);
}

}  // namespace
}  // namespace keel
