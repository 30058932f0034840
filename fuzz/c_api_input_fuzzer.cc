// fuzz/c_api_input_fuzzer.cc — libFuzzer target: the C API's input and output
// binding on a valid executable (tests/vm's full test program: inputs f32[2,3],
// f32[4], f32[1024]; static or dynamic plan) with its kernel library. Each input
// is a sequence of calls — set_input, bind_input, bind_output, run, get_output,
// copy_output, find_input — with fuzzed indices, names, shapes, ranks, dtypes and
// byte counts. Buffers always hold the byte count passed (the API's contract);
// everything else is fair game and must be an error value, never a crash.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "keel/c_api.h"
#include "tests/vm/test_programs.h"

namespace {

keel_executable_t* LoadProgram(keel::vmtest::Plan plan) {
  auto bytes = keel::vmtest::FullProgram(plan);
  if (!bytes.ok()) {
    std::fprintf(stderr, "c_api_input_fuzzer: %s\n", bytes.status().ToString().c_str());
    std::abort();
  }
  keel_executable_t* exe = nullptr;
  // The build tree's library, or $KEEL_FUZZ_KERNELS when the binary was moved.
  const char* env = std::getenv("KEEL_FUZZ_KERNELS");
  const char* library = env != nullptr ? env : KEEL_FUZZ_KERNELS;
  if (keel_executable_load_memory(bytes->data(), bytes->size(), library, 0, &exe) != KEEL_OK) {
    std::fprintf(stderr, "c_api_input_fuzzer: %s\n", keel_last_error_message());
    std::abort();
  }
  return exe;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static keel_executable_t* const programs[2] = {LoadProgram(keel::vmtest::Plan::kStatic),
                                                 LoadProgram(keel::vmtest::Plan::kDynamic)};
  keel::fuzz::FuzzInput in(data, size);
  keel_executable_t* exe = programs[in.Bool() ? 1 : 0];
  keel_vm_options_t options;
  keel_vm_options_init(&options);
  options.num_threads = 1;
  keel_vm_t* vm = nullptr;
  if (keel_vm_create(exe, in.Bool() ? "cpu" : nullptr, &options, &vm) != KEEL_OK) std::abort();
  std::vector<std::vector<uint8_t>> bound;  // bind_input/bind_output buffers live until release
  for (int step = 0; step < 16 && !in.empty(); ++step) {
    const size_t index = static_cast<size_t>(in.Range(0, 4));  // 3 inputs / 3 outputs: 3, 4 are out of range
    switch (in.Range(0, 6)) {
      case 0:
      case 1: {  // set_input / bind_input with fuzzed shape, dtype, bytes
        const size_t rank = static_cast<size_t>(in.Range(0, 9));
        std::vector<int64_t> shape(rank + 1);
        for (size_t d = 0; d < rank; ++d) shape[d] = in.Bool() ? in.Read<int64_t>() : static_cast<int64_t>(in.Range(0, 1024));
        const auto dtype = static_cast<keel_dtype_t>(in.Range(0, 15));  // 13..15: not dtypes
        const size_t bytes = static_cast<size_t>(in.Range(0, 5000));
        std::vector<uint8_t> buf = in.Bytes(0);
        buf.resize(bytes);
        for (size_t i = 0; i < buf.size(); i += 97) buf[i] = in.Read<uint8_t>();
        const void* p = (bytes == 0 && in.Bool()) ? nullptr : buf.data();
        const int64_t* s = in.Bool() && rank == 0 ? nullptr : shape.data();
        if (step % 2 == 0) {
          keel_vm_set_input(vm, index, p, bytes, s, rank, dtype);
        } else {
          bound.push_back(std::move(buf));
          keel_vm_bind_input(vm, index, p ? bound.back().data() : nullptr, bytes, s, rank, dtype);
        }
        break;
      }
      case 2: {
        const size_t bytes = static_cast<size_t>(in.Range(0, 5000));
        bound.emplace_back(bytes);
        keel_vm_bind_output(vm, index, in.Bool() ? nullptr : bound.back().data(), bytes);
        break;
      }
      case 3:
        keel_vm_run(vm);
        break;
      case 4: {
        const void* out = nullptr;
        size_t bytes = 0;
        keel_vm_get_output(vm, index, &out, &bytes);
        break;
      }
      case 5: {
        std::vector<uint8_t> host(static_cast<size_t>(in.Range(0, 5000)));
        keel_vm_copy_output(vm, index, host.data(), host.size());
        break;
      }
      case 6: {
        const std::string name = in.String(8);
        size_t found = 0;
        keel_executable_find_input(exe, name.c_str(), &found);
        break;
      }
    }
  }
  keel_vm_release(vm);
  return 0;
}
