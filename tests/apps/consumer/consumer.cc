// tests/apps/consumer/consumer.cc — uses the installed package: the C++ API to
// load and run a model, the C API for a status name. Prints the outputs' sizes.
#include <cstdio>

#include "keel/c_api.h"
#include "keel/vm.h"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  auto exe = keel::Executable::LoadFile(argv[1]);
  if (!exe.ok()) {
    std::fprintf(stderr, "consumer: %s\n", exe.status().ToString().c_str());
    return 1;
  }
  auto vm = keel::VirtualMachine::Create(*exe);
  if (!vm.ok()) return 1;
  for (size_t i = 0; i < (*exe)->num_inputs(); ++i) {
    const keel::TensorInfo& in = (*exe)->input(i);
    std::vector<unsigned char> zeros(in.byte_size);
    if (!(*vm)->SetInput(i, zeros.data(), zeros.size(), in.shape, in.dtype).ok()) return 1;
  }
  if (!(*vm)->Run().ok()) return 1;
  for (size_t i = 0; i < (*exe)->num_outputs(); ++i) {
    auto out = (*vm)->GetOutput(i);
    std::printf("consumer output %s %llu bytes\n", (*exe)->output(i).name.c_str(),
                static_cast<unsigned long long>(out->byte_size));
  }
  std::printf("consumer status name: %s\n", keel_status_name(KEEL_OK));
  return 0;
}
