// fuzz/executable_fuzzer.cc — libFuzzer target: bytes as a model.keel, through the
// C API as an embedding application uses it: load from memory (verification +
// decoding), introspect every input and output, create a CPU VM and run it.
// No kernel library is given, so only programs without generated kernels get
// past the load (nothing of the machine is dlopen'ed).
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "keel/c_api.h"
#include "serialization/executable_reader.h"

namespace {

// Bytes the VM would allocate at creation and during a run (arenas, dynamic
// storages, input and output buffers). A valid executable may ask for gigabytes (the VM then reports
// OUT_OF_MEMORY or gets them); the fuzzer skips running those to stay within its
// own memory limit — a limit of this harness, not of Keel.
uint64_t PlannedBytes(const uint8_t* data, size_t size) {
  auto view = keel::ser::ReadExecutable({data, size});
  if (!view.ok() || view->root->memory_plan() == nullptr) return 0;
  const auto* plan = view->root->memory_plan();
  uint64_t total = 0;
  bool overflow = false;
  if (plan->arenas()) {
    for (const auto* a : *plan->arenas()) overflow |= __builtin_add_overflow(total, a->size(), &total);
  }
  if (plan->storages()) {
    for (const auto* s : *plan->storages()) {
      if (s->arena() < 0) overflow |= __builtin_add_overflow(total, s->size(), &total);
    }
  }
  for (const auto* sigs : {view->main()->params(), view->main()->results()}) {
    if (sigs == nullptr) continue;
    for (const auto* sig : *sigs) {
      uint64_t bytes = keel::ser::DTypeSize(keel::ser::FromFb(sig->dtype()));
      if (sig->shape()) {
        for (int64_t d : *sig->shape()) overflow |= __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes);
      }
      overflow |= __builtin_add_overflow(total, bytes, &total);
    }
  }
  return overflow ? UINT64_MAX : total;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  keel_executable_t* exe = nullptr;
  if (keel_executable_load_memory(data, size, nullptr, 0, &exe) != KEEL_OK) return 0;
  size_t ni = 0, no = 0;
  keel_executable_num_inputs(exe, &ni);
  keel_executable_num_outputs(exe, &no);
  for (size_t i = 0; i < ni; ++i) {
    const char* name = nullptr;
    const int64_t* dims = nullptr;
    size_t rank = 0, bytes = 0;
    keel_dtype_t dt;
    keel_executable_input_name(exe, i, &name);
    keel_executable_input_shape(exe, i, &dims, &rank);
    keel_executable_input_dtype(exe, i, &dt);
    keel_executable_input_size(exe, i, &bytes);
    size_t found = 0;
    if (name != nullptr) keel_executable_find_input(exe, name, &found);
  }
  keel_vm_options_t options;
  keel_vm_options_init(&options);
  options.num_threads = 1;
  keel_vm_t* vm = nullptr;
  if (PlannedBytes(data, size) <= (uint64_t{1} << 28) && keel_vm_create(exe, "cpu", &options, &vm) == KEEL_OK) {
    bool inputs_ok = true;
    for (size_t i = 0; i < ni && inputs_ok; ++i) {
      const int64_t* dims = nullptr;
      size_t rank = 0, bytes = 0;
      keel_dtype_t dt;
      keel_executable_input_shape(exe, i, &dims, &rank);
      keel_executable_input_dtype(exe, i, &dt);
      keel_executable_input_size(exe, i, &bytes);
      if (bytes > (size_t{1} << 24)) break;  // the fuzzer's memory, not a Keel limit
      std::vector<uint8_t> buf(bytes, 0);
      inputs_ok = keel_vm_set_input(vm, i, buf.data(), buf.size(), dims, rank, dt) == KEEL_OK;
    }
    if (inputs_ok && keel_vm_run(vm) == KEEL_OK) {
      for (size_t o = 0; o < no; ++o) {
        const void* out = nullptr;
        size_t bytes = 0;
        keel_vm_get_output(vm, o, &out, &bytes);
      }
    }
    keel_vm_release(vm);
  }
  keel_executable_release(exe);
  return 0;
}
