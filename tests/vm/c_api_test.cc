// tests/vm/c_api_test.cc — the C API end to end and its error reporting.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "keel/c_api.h"
#include "tests/vm/test_programs.h"

namespace {

TEST(CApiTest, EndToEnd) {
  auto bytes = keel::vmtest::FullProgram(keel::vmtest::Plan::kStatic);
  ASSERT_TRUE(bytes.ok());
  keel_executable_t* exe = nullptr;
  ASSERT_EQ(keel_executable_load_memory(bytes->data(), bytes->size(), KEEL_TEST_KERNELS, 0, &exe), KEEL_OK)
      << keel_last_error_message();
  size_t n_in = 0, n_out = 0;
  ASSERT_EQ(keel_executable_num_inputs(exe, &n_in), KEEL_OK);
  ASSERT_EQ(keel_executable_num_outputs(exe, &n_out), KEEL_OK);
  EXPECT_EQ(n_in, 3u);
  EXPECT_EQ(n_out, 3u);
  const char* name = nullptr;
  ASSERT_EQ(keel_executable_input_name(exe, 2, &name), KEEL_OK);
  EXPECT_STREQ(name, "z");
  const int64_t* dims = nullptr;
  size_t rank = 0;
  ASSERT_EQ(keel_executable_input_shape(exe, 0, &dims, &rank), KEEL_OK);
  ASSERT_EQ(rank, 2u);
  EXPECT_EQ(dims[0], 2);
  EXPECT_EQ(dims[1], 3);
  keel_dtype_t dt;
  ASSERT_EQ(keel_executable_output_dtype(exe, 1, &dt), KEEL_OK);
  EXPECT_EQ(dt, KEEL_F32);
  size_t idx = 0;
  ASSERT_EQ(keel_executable_find_output(exe, "matmul", &idx), KEEL_OK);
  EXPECT_EQ(idx, 1u);

  keel_vm_options_t opts;
  ASSERT_EQ(keel_vm_options_init(&opts), KEEL_OK);
  opts.num_threads = 2;
  keel_vm_t* vm = nullptr;
  ASSERT_EQ(keel_vm_create(exe, "cpu", &opts, &vm), KEEL_OK) << keel_last_error_message();
  keel_executable_release(exe);  // the VM keeps it alive

  const auto in = keel::vmtest::MakeFullInputs(9);
  const int64_t xs[] = {2, 3}, ys[] = {4}, zs[] = {1024};
  ASSERT_EQ(keel_vm_set_input(vm, 0, in.x.data(), 24, xs, 2, KEEL_F32), KEEL_OK);
  ASSERT_EQ(keel_vm_bind_input(vm, 1, in.y.data(), 16, ys, 1, KEEL_F32), KEEL_OK);
  ASSERT_EQ(keel_vm_set_input(vm, 2, in.z.data(), 4096, zs, 1, KEEL_F32), KEEL_OK);
  float relu[4] = {};
  ASSERT_EQ(keel_vm_bind_output(vm, 0, relu, sizeof relu), KEEL_OK);
  ASSERT_EQ(keel_vm_run(vm), KEEL_OK) << keel_last_error_message();
  const auto ref = keel::vmtest::ReferenceFull(in);
  EXPECT_EQ(std::vector<float>(relu, relu + 4), ref.relu);
  const void* data = nullptr;
  size_t size = 0;
  ASSERT_EQ(keel_vm_get_output(vm, 1, &data, &size), KEEL_OK);
  ASSERT_EQ(size, 16u);
  EXPECT_EQ(std::vector<float>(static_cast<const float*>(data), static_cast<const float*>(data) + 4), ref.matmul);
  std::vector<float> scaled(1024);
  ASSERT_EQ(keel_vm_copy_output(vm, 2, scaled.data(), 4096), KEEL_OK);
  EXPECT_EQ(scaled, ref.scaled);
  keel_vm_release(vm);
}

TEST(CApiTest, ErrorsAreCodesWithMessages) {
  keel_executable_t* exe = nullptr;
  EXPECT_EQ(keel_executable_load_file("/nonexistent.keel", nullptr, &exe), KEEL_NOT_FOUND);
  EXPECT_NE(std::string(keel_last_error_message()).find("/nonexistent.keel"), std::string::npos);
  EXPECT_EQ(exe, nullptr);
  const uint8_t junk[16] = {1, 2, 3};
  EXPECT_EQ(keel_executable_load_memory(junk, sizeof junk, nullptr, 0, &exe), KEEL_INVALID_EXECUTABLE);
  EXPECT_EQ(keel_executable_load_file(nullptr, nullptr, &exe), KEEL_INVALID_ARGUMENT);
  EXPECT_EQ(keel_vm_run(nullptr), KEEL_INVALID_ARGUMENT);
  EXPECT_STREQ(keel_status_name(KEEL_NOT_FOUND), "NOT_FOUND");
  EXPECT_EQ(keel_dtype_size(KEEL_F64), 8u);

  auto bytes = keel::vmtest::FullProgram(keel::vmtest::Plan::kStatic);
  ASSERT_EQ(keel_executable_load_memory(bytes->data(), bytes->size(), KEEL_TEST_KERNELS, 0, &exe), KEEL_OK);
  size_t idx = 0;
  EXPECT_EQ(keel_executable_find_input(exe, "nope", &idx), KEEL_NOT_FOUND);
  EXPECT_NE(std::string(keel_last_error_message()).find("nope"), std::string::npos);
  const char* name = nullptr;
  EXPECT_EQ(keel_executable_input_name(exe, 99, &name), KEEL_INVALID_ARGUMENT);
  keel_vm_t* vm = nullptr;
  EXPECT_EQ(keel_vm_create(exe, "gpu9", nullptr, &vm), KEEL_INVALID_ARGUMENT);
  ASSERT_EQ(keel_vm_create(exe, nullptr, nullptr, &vm), KEEL_OK);
  float x[6] = {};
  const int64_t wrong[] = {6};
  EXPECT_EQ(keel_vm_set_input(vm, 0, x, 24, wrong, 1, KEEL_F32), KEEL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(keel_last_error_message()).find("expected shape [2,3]"), std::string::npos)
      << keel_last_error_message();
  EXPECT_EQ(keel_vm_run(vm), KEEL_FAILED_PRECONDITION);
  const void* data = nullptr;
  size_t size = 0;
  EXPECT_EQ(keel_vm_get_output(vm, 0, &data, &size), KEEL_FAILED_PRECONDITION);
  keel_vm_release(vm);
  keel_executable_release(exe);
  EXPECT_EQ(keel_vm_release(nullptr), KEEL_OK);
}

// The options structs grow without breaking callers (struct_size + init).
TEST(CApiTest, OptionsStructsAreSized) {
  EXPECT_STRNE(keel_version(), "");
  EXPECT_EQ(keel_vm_options_init(nullptr), KEEL_INVALID_ARGUMENT);
  keel_vm_options_t o;
  ASSERT_EQ(keel_vm_options_init(&o), KEEL_OK);
  EXPECT_EQ(o.struct_size, sizeof(keel_vm_options_t));
  EXPECT_EQ(o.cuda_graph, 1);  // the defaults are keel::VmOptions'
  EXPECT_EQ(o.cuda_autotune, 1);
  EXPECT_EQ(o.cudnn_engines, KEEL_CUDNN_ENGINES_AUTO);
  EXPECT_EQ(o.cuda_l2_prefetch, 0);

  auto bytes = keel::vmtest::FullProgram(keel::vmtest::Plan::kStatic);
  ASSERT_TRUE(bytes.ok());
  keel_load_options_t lo;
  ASSERT_EQ(keel_load_options_init(&lo), KEEL_OK);
  lo.library_path = KEEL_TEST_KERNELS;
  keel_executable_t* exe = nullptr;
  ASSERT_EQ(keel_executable_load_memory_with_options(bytes->data(), bytes->size(), &lo, &exe), KEEL_OK)
      << keel_last_error_message();
  keel_vm_t* vm = nullptr;

  // A caller built against the first header: struct_size and num_threads only.
  // The runtime reads those bytes and defaults the rest (arena_buffer here is
  // garbage the old caller never had: it must not be read).
  struct {
    keel_vm_options_t o;
  } old_caller;
  std::memset(&old_caller, 0x5a, sizeof old_caller);
  old_caller.o.struct_size = sizeof(size_t) + sizeof(int32_t);
  old_caller.o.num_threads = 1;
  ASSERT_EQ(keel_vm_create(exe, "cpu", &old_caller.o, &vm), KEEL_OK) << keel_last_error_message();
  keel_vm_release(vm);
  vm = nullptr;

  // init writes only the caller's size: a smaller struct is not overrun.
  unsigned char small[64];
  std::memset(small, 0x77, sizeof small);
  ASSERT_EQ(keel_vm_options_init_size(reinterpret_cast<keel_vm_options_t*>(small), 16), KEEL_OK);
  EXPECT_EQ(small[16], 0x77);

  // A caller built against a newer header: unknown fields left at their zero
  // defaults are accepted, a set one is refused.
  struct Newer {
    keel_vm_options_t o;
    int64_t future_option;
  } newer;
  ASSERT_EQ(keel_vm_options_init_size(&newer.o, sizeof newer), KEEL_OK);
  EXPECT_EQ(newer.future_option, 0);
  newer.o.num_threads = 1;
  ASSERT_EQ(keel_vm_create(exe, "cpu", &newer.o, &vm), KEEL_OK) << keel_last_error_message();
  keel_vm_release(vm);
  vm = nullptr;
  newer.future_option = 3;
  EXPECT_EQ(keel_vm_create(exe, "cpu", &newer.o, &vm), KEEL_UNSUPPORTED);
  EXPECT_NE(std::string(keel_last_error_message()).find("newer than this runtime"), std::string::npos)
      << keel_last_error_message();

  // A knob out of its range is refused, naming it.
  keel_vm_options_t far;
  ASSERT_EQ(keel_vm_options_init(&far), KEEL_OK);
  far.cuda_l2_prefetch = 65;
  EXPECT_EQ(keel_vm_create(exe, "cpu", &far, &vm), KEEL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(keel_last_error_message()).find("cuda_l2_prefetch"), std::string::npos)
      << keel_last_error_message();
  EXPECT_EQ(vm, nullptr);

  // Never initialised.
  keel_vm_options_t raw{};
  EXPECT_EQ(keel_vm_create(exe, "cpu", &raw, &vm), KEEL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(keel_last_error_message()).find("init function"), std::string::npos);
  EXPECT_EQ(vm, nullptr);
  keel_executable_release(exe);
}

}  // namespace
