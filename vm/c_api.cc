// vm/c_api.cc — keel/c_api.h on top of keel/vm.h. Every entry point catches
// everything (a std::bad_alloc while building a message, say) so no exception
// crosses the C boundary, and records failures in a thread-local message.
#include "keel/c_api.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "keel/vm.h"

struct keel_executable {
  std::shared_ptr<const keel::Executable> exe;
};
struct keel_vm {
  std::unique_ptr<keel::VirtualMachine> vm;
};

namespace {

thread_local std::string t_last_error;

keel_status_t Fail(const keel::Status& s) {
  try {
    t_last_error = s.ToString();
  } catch (...) {
  }
  return static_cast<keel_status_t>(s.code());
}
keel_status_t Fail(keel_status_t code, const char* message) {
  try {
    t_last_error = message;
  } catch (...) {
  }
  return code;
}
keel_status_t Check(const keel::Status& s) { return s.ok() ? KEEL_OK : Fail(s); }

// Runs `body` with exceptions turned into KEEL_INTERNAL / KEEL_OUT_OF_MEMORY.
template <typename F>
keel_status_t Guard(F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Fail(KEEL_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return Fail(KEEL_INTERNAL, e.what());
  } catch (...) {
    return Fail(KEEL_INTERNAL, "unknown exception");
  }
}

#define KEEL_C_REQUIRE(cond, what) \
  if (!(cond)) return Fail(KEEL_INVALID_ARGUMENT, what)

const keel::TensorInfo* Info(const keel_executable_t* exe, size_t index, bool input) {
  if (exe == nullptr) return nullptr;
  if (input) return index < exe->exe->num_inputs() ? &exe->exe->input(index) : nullptr;
  return index < exe->exe->num_outputs() ? &exe->exe->output(index) : nullptr;
}

// keel_executable_find_input / _output; `null_message` names the entry point.
keel_status_t FindIndex(const keel_executable_t* exe, const char* name, size_t* index, bool input,
                        const char* null_message) {
  return Guard([&] {
    KEEL_C_REQUIRE(exe != nullptr && name != nullptr && index != nullptr, null_message);
    keel::Result<size_t> r = input ? exe->exe->FindInput(name) : exe->exe->FindOutput(name);
    if (!r.ok()) return Fail(r.status());
    *index = *r;
    return KEEL_OK;
  });
}

keel_status_t LoadResult(keel::Result<std::shared_ptr<const keel::Executable>> r, keel_executable_t** out) {
  if (!r.ok()) return Fail(r.status());
  *out = new keel_executable{std::move(r).value()};
  return KEEL_OK;
}

// ---- sized options structs (see c_api.h) ----

// Defaults: from the C++ option structs, the one place they are written.
keel_load_options_t LoadDefaults() {
  const keel::LoadOptions d;
  keel_load_options_t o{};
  o.struct_size = sizeof(o);
  o.borrow = d.borrow_buffer ? 1 : 0;
  o.host_allocator = d.host_allocator;
  return o;
}
keel_vm_options_t VmDefaults() {
  const keel::VmOptions d;
  keel_vm_options_t o{};
  o.struct_size = sizeof(o);
  o.num_threads = d.num_threads;
  o.cuda_graph = d.cuda_graph ? 1 : 0;
  o.allow_tf32 = -1;  // the executable's choice (keelc --precision tf32)
  o.host_allocator = d.host_allocator;
  o.device_allocator = d.device_allocator;
  o.arena_buffer = d.arena_buffer;
  o.arena_buffer_size = static_cast<size_t>(d.arena_buffer_size);
  o.cuda_autotune = d.cuda_autotune ? 1 : 0;
  o.cuda_autotune_log = d.cuda_autotune_log ? 1 : 0;
  o.cuda_pdl = d.cuda_pdl ? 1 : 0;
  o.cudnn_engines = static_cast<int32_t>(d.cudnn_engines);
  o.cudnn_engines_all = d.cudnn_engines_all ? 1 : 0;
  o.cudnn_engines_rtc = d.cudnn_engines_rtc ? 1 : 0;
  o.cuda_l2_prefetch = d.cuda_l2_prefetch;
  return o;
}

// The smallest struct_size accepted: the struct's first version (struct_size and
// one field); larger than any real struct means uninitialised memory.
constexpr size_t kMinOptionsSize = sizeof(size_t) + sizeof(int32_t);
constexpr size_t kMaxOptionsSize = 4096;

template <typename T>
keel_status_t InitSized(T* options, size_t struct_size, const T& defaults, const char* fn) {
  KEEL_C_REQUIRE(options != nullptr, fn);
  if (struct_size < kMinOptionsSize || struct_size > kMaxOptionsSize) {
    return Fail(KEEL_INVALID_ARGUMENT, "options init: struct_size is not the size of an options struct");
  }
  std::memset(static_cast<void*>(options), 0, struct_size);
  std::memcpy(static_cast<void*>(options), &defaults, std::min(struct_size, sizeof(T)));
  options->struct_size = struct_size;
  return KEEL_OK;
}

// Reads the caller's struct: its fields this runtime knows over the defaults; a
// newer caller's unknown fields must still hold their (zero) defaults.
template <typename T>
keel_status_t ReadSized(const T* in, const T& defaults, T* out, const char* what) {
  *out = defaults;
  if (in == nullptr) return KEEL_OK;
  const size_t n = in->struct_size;
  if (n < kMinOptionsSize || n > kMaxOptionsSize) {
    return Fail(KEEL_INVALID_ARGUMENT, (std::string(what) + ": struct_size " + std::to_string(n) +
                                        " is not valid (initialise the struct with its init function)")
                                           .c_str());
  }
  std::memcpy(static_cast<void*>(out), in, std::min(n, sizeof(T)));
  const auto* extra = reinterpret_cast<const unsigned char*>(in);
  for (size_t i = sizeof(T); i < n; ++i) {
    if (extra[i] != 0) {
      return Fail(KEEL_UNSUPPORTED, (std::string(what) + ": an option at byte " + std::to_string(i) +
                                     " is newer than this runtime (" + keel_version() + ")")
                                        .c_str());
    }
  }
  out->struct_size = sizeof(T);
  return KEEL_OK;
}

keel::LoadOptions ToLoadOptions(const keel_load_options_t& o) {
  keel::LoadOptions lo;
  if (o.library_path != nullptr) lo.library_path = o.library_path;
  lo.borrow_buffer = o.borrow != 0;
  lo.host_allocator = o.host_allocator;
  return lo;
}

}  // namespace

extern "C" {

const char* keel_version(void) { return KEEL_VERSION_STRING; }

keel_status_t keel_load_options_init_size(keel_load_options_t* options, size_t struct_size) {
  return InitSized(options, struct_size, LoadDefaults(), "keel_load_options_init: null options");
}
keel_status_t keel_vm_options_init_size(keel_vm_options_t* options, size_t struct_size) {
  return InitSized(options, struct_size, VmDefaults(), "keel_vm_options_init: null options");
}

const char* keel_last_error_message(void) { return t_last_error.c_str(); }

const char* keel_status_name(keel_status_t status) {
  return keel::StatusCodeName(static_cast<keel::StatusCode>(status));
}

// The C enum is spelled by hand (C cannot upper-case the list's tokens): check it against the list.
static_assert(KEEL_F32 == static_cast<int>(keel::DataType::kF32) && KEEL_F16 == static_cast<int>(keel::DataType::kF16) &&
              KEEL_BF16 == static_cast<int>(keel::DataType::kBF16) && KEEL_F64 == static_cast<int>(keel::DataType::kF64) &&
              KEEL_I8 == static_cast<int>(keel::DataType::kI8) && KEEL_I16 == static_cast<int>(keel::DataType::kI16) &&
              KEEL_I32 == static_cast<int>(keel::DataType::kI32) && KEEL_I64 == static_cast<int>(keel::DataType::kI64) &&
              KEEL_U8 == static_cast<int>(keel::DataType::kU8) && KEEL_BOOL == static_cast<int>(keel::DataType::kBool) &&
              KEEL_U16 == static_cast<int>(keel::DataType::kU16) && KEEL_U32 == static_cast<int>(keel::DataType::kU32) &&
              KEEL_U64 == static_cast<int>(keel::DataType::kU64) && KEEL_U64 == keel::kMaxDataTypeValue,
              "keel_dtype_t differs from keel/dtype_list.h");

size_t keel_dtype_size(keel_dtype_t dtype) { return keel::DataTypeSize(static_cast<keel::DataType>(dtype)); }

keel_status_t keel_executable_load_file(const char* path, const char* library_path, keel_executable_t** out) {
  return Guard([&] {
    KEEL_C_REQUIRE(path != nullptr && out != nullptr, "keel_executable_load_file: null path or out");
    *out = nullptr;
    keel::LoadOptions options;
    if (library_path != nullptr) options.library_path = library_path;
    return LoadResult(keel::Executable::LoadFile(path, options), out);
  });
}

keel_status_t keel_executable_load_memory(const void* data, size_t size, const char* library_path, int borrow,
                                          keel_executable_t** out) {
  return Guard([&] {
    KEEL_C_REQUIRE(out != nullptr && (data != nullptr || size == 0), "keel_executable_load_memory: null data or out");
    *out = nullptr;
    keel::LoadOptions options;
    if (library_path != nullptr) options.library_path = library_path;
    options.borrow_buffer = borrow != 0;
    return LoadResult(
        keel::Executable::LoadMemory(std::span<const uint8_t>(static_cast<const uint8_t*>(data), size), options), out);
  });
}

keel_status_t keel_executable_load_file_with_options(const char* path, const keel_load_options_t* options,
                                                     keel_executable_t** out) {
  return Guard([&] {
    KEEL_C_REQUIRE(path != nullptr && out != nullptr, "keel_executable_load_file_with_options: null path or out");
    *out = nullptr;
    keel_load_options_t o;
    if (keel_status_t st = ReadSized(options, LoadDefaults(), &o, "keel_load_options_t"); st != KEEL_OK) return st;
    return LoadResult(keel::Executable::LoadFile(path, ToLoadOptions(o)), out);
  });
}

keel_status_t keel_executable_load_memory_with_options(const void* data, size_t size,
                                                       const keel_load_options_t* options, keel_executable_t** out) {
  return Guard([&] {
    KEEL_C_REQUIRE(out != nullptr && (data != nullptr || size == 0),
                   "keel_executable_load_memory_with_options: null data or out");
    *out = nullptr;
    keel_load_options_t o;
    if (keel_status_t st = ReadSized(options, LoadDefaults(), &o, "keel_load_options_t"); st != KEEL_OK) return st;
    return LoadResult(
        keel::Executable::LoadMemory(std::span<const uint8_t>(static_cast<const uint8_t*>(data), size), ToLoadOptions(o)),
        out);
  });
}

keel_status_t keel_executable_release(keel_executable_t* exe) {
  delete exe;
  return KEEL_OK;
}

keel_status_t keel_executable_num_inputs(const keel_executable_t* exe, size_t* out) {
  KEEL_C_REQUIRE(exe != nullptr && out != nullptr, "keel_executable_num_inputs: null argument");
  *out = exe->exe->num_inputs();
  return KEEL_OK;
}
keel_status_t keel_executable_num_outputs(const keel_executable_t* exe, size_t* out) {
  KEEL_C_REQUIRE(exe != nullptr && out != nullptr, "keel_executable_num_outputs: null argument");
  *out = exe->exe->num_outputs();
  return KEEL_OK;
}

#define KEEL_C_INFO(fn, input, ...)                                                       \
  const keel::TensorInfo* info = Info(exe, index, input);                                 \
  KEEL_C_REQUIRE(info != nullptr, fn ": null executable or index out of range");          \
  KEEL_C_REQUIRE(__VA_ARGS__, fn ": null out-pointer")

keel_status_t keel_executable_input_name(const keel_executable_t* exe, size_t index, const char** out) {
  KEEL_C_INFO("keel_executable_input_name", true, out != nullptr);
  *out = info->name.c_str();
  return KEEL_OK;
}
keel_status_t keel_executable_output_name(const keel_executable_t* exe, size_t index, const char** out) {
  KEEL_C_INFO("keel_executable_output_name", false, out != nullptr);
  *out = info->name.c_str();
  return KEEL_OK;
}
keel_status_t keel_executable_input_shape(const keel_executable_t* exe, size_t index, const int64_t** dims,
                                          size_t* rank) {
  KEEL_C_INFO("keel_executable_input_shape", true, dims != nullptr && rank != nullptr);
  *dims = info->shape.data();
  *rank = info->shape.size();
  return KEEL_OK;
}
keel_status_t keel_executable_output_shape(const keel_executable_t* exe, size_t index, const int64_t** dims,
                                           size_t* rank) {
  KEEL_C_INFO("keel_executable_output_shape", false, dims != nullptr && rank != nullptr);
  *dims = info->shape.data();
  *rank = info->shape.size();
  return KEEL_OK;
}
keel_status_t keel_executable_input_dtype(const keel_executable_t* exe, size_t index, keel_dtype_t* out) {
  KEEL_C_INFO("keel_executable_input_dtype", true, out != nullptr);
  *out = static_cast<keel_dtype_t>(info->dtype);
  return KEEL_OK;
}
keel_status_t keel_executable_output_dtype(const keel_executable_t* exe, size_t index, keel_dtype_t* out) {
  KEEL_C_INFO("keel_executable_output_dtype", false, out != nullptr);
  *out = static_cast<keel_dtype_t>(info->dtype);
  return KEEL_OK;
}
keel_status_t keel_executable_input_size(const keel_executable_t* exe, size_t index, size_t* out) {
  KEEL_C_INFO("keel_executable_input_size", true, out != nullptr);
  *out = info->byte_size;
  return KEEL_OK;
}
keel_status_t keel_executable_output_size(const keel_executable_t* exe, size_t index, size_t* out) {
  KEEL_C_INFO("keel_executable_output_size", false, out != nullptr);
  *out = info->byte_size;
  return KEEL_OK;
}

keel_status_t keel_executable_find_input(const keel_executable_t* exe, const char* name, size_t* index) {
  return FindIndex(exe, name, index, true, "keel_executable_find_input: null argument");
}
keel_status_t keel_executable_find_output(const keel_executable_t* exe, const char* name, size_t* index) {
  return FindIndex(exe, name, index, false, "keel_executable_find_output: null argument");
}

keel_status_t keel_executable_memory_requirements(const keel_executable_t* exe, keel_memory_requirements_t* out) {
  KEEL_C_REQUIRE(exe != nullptr && out != nullptr, "keel_executable_memory_requirements: null argument");
  *out = exe->exe->memory_requirements();
  return KEEL_OK;
}

keel_status_t keel_vm_create(keel_executable_t* exe, const char* device, const keel_vm_options_t* options,
                             keel_vm_t** out) {
  return Guard([&] {
    KEEL_C_REQUIRE(exe != nullptr && out != nullptr, "keel_vm_create: null executable or out");
    *out = nullptr;
    keel_vm_options_t o;
    if (keel_status_t st = ReadSized(options, VmDefaults(), &o, "keel_vm_options_t"); st != KEEL_OK) return st;
    if (o.cudnn_engines < 0 || o.cudnn_engines > KEEL_CUDNN_ENGINES_AUTO) {
      return Fail(KEEL_INVALID_ARGUMENT, "keel_vm_create: cudnn_engines is not a keel_cudnn_engines_t");
    }
    keel::VmOptions vo;
    if (device != nullptr) vo.device = device;
    vo.num_threads = o.num_threads;
    vo.cuda_graph = o.cuda_graph != 0;
    if (o.allow_tf32 >= 0) vo.allow_tf32 = o.allow_tf32 != 0;
    if (o.tuning_file != nullptr) vo.tuning_file = o.tuning_file;
    vo.host_allocator = o.host_allocator;
    vo.device_allocator = o.device_allocator;
    vo.arena_buffer = o.arena_buffer;
    vo.arena_buffer_size = o.arena_buffer_size;
    vo.cuda_autotune = o.cuda_autotune != 0;
    vo.cuda_autotune_log = o.cuda_autotune_log != 0;
    vo.cuda_pdl = o.cuda_pdl != 0;
    vo.cudnn_engines = static_cast<keel::VmOptions::CudnnEngines>(o.cudnn_engines);
    vo.cudnn_engines_all = o.cudnn_engines_all != 0;
    vo.cudnn_engines_rtc = o.cudnn_engines_rtc != 0;
    vo.cuda_l2_prefetch = o.cuda_l2_prefetch;
    auto r = keel::VirtualMachine::Create(exe->exe, vo);
    if (!r.ok()) return Fail(r.status());
    *out = new keel_vm{std::move(r).value()};
    return KEEL_OK;
  });
}

keel_status_t keel_vm_release(keel_vm_t* vm) {
  delete vm;
  return KEEL_OK;
}

keel_status_t keel_vm_set_input(keel_vm_t* vm, size_t index, const void* data, size_t bytes, const int64_t* shape,
                                size_t rank, keel_dtype_t dtype) {
  return Guard([&] {
    KEEL_C_REQUIRE(vm != nullptr && (shape != nullptr || rank == 0), "keel_vm_set_input: null vm or shape");
    return Check(vm->vm->SetInput(index, data, bytes, std::span<const int64_t>(shape, rank),
                                  static_cast<keel::DataType>(dtype)));
  });
}
keel_status_t keel_vm_bind_input(keel_vm_t* vm, size_t index, const void* data, size_t bytes, const int64_t* shape,
                                 size_t rank, keel_dtype_t dtype) {
  return Guard([&] {
    KEEL_C_REQUIRE(vm != nullptr && (shape != nullptr || rank == 0), "keel_vm_bind_input: null vm or shape");
    return Check(vm->vm->BindInput(index, data, bytes, std::span<const int64_t>(shape, rank),
                                   static_cast<keel::DataType>(dtype)));
  });
}
keel_status_t keel_vm_bind_output(keel_vm_t* vm, size_t index, void* data, size_t bytes) {
  return Guard([&] {
    KEEL_C_REQUIRE(vm != nullptr, "keel_vm_bind_output: null vm");
    return Check(vm->vm->BindOutput(index, data, bytes));
  });
}
keel_status_t keel_vm_run(keel_vm_t* vm) {
  return Guard([&] {
    KEEL_C_REQUIRE(vm != nullptr, "keel_vm_run: null vm");
    return Check(vm->vm->Run());
  });
}
keel_status_t keel_vm_get_output(const keel_vm_t* vm, size_t index, const void** data, size_t* bytes) {
  return Guard([&] {
    KEEL_C_REQUIRE(vm != nullptr && data != nullptr && bytes != nullptr, "keel_vm_get_output: null argument");
    auto r = vm->vm->GetOutput(index);
    if (!r.ok()) return Fail(r.status());
    *data = r->data;
    *bytes = r->byte_size;
    return KEEL_OK;
  });
}
keel_status_t keel_vm_copy_output(const keel_vm_t* vm, size_t index, void* data, size_t bytes) {
  return Guard([&] {
    KEEL_C_REQUIRE(vm != nullptr && data != nullptr, "keel_vm_copy_output: null argument");
    return Check(vm->vm->CopyOutputToHost(index, data, bytes));
  });
}

}  // extern "C"
