// fuzz/make_seeds.cc — writes seed executables for keel_fuzz_executable: the VM
// test programs (tests/vm/test_programs: every instruction, static and dynamic
// plans, a dispatch loop), so mutation starts from files the reader accepts.
//
//   keel_fuzz_make_seeds OUT_DIR
#include <cstdio>
#include <string>
#include <vector>

#include "tests/vm/test_programs.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: keel_fuzz_make_seeds OUT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  using keel::vmtest::Plan;
  std::vector<std::pair<std::string, keel::Result<std::vector<uint8_t>>>> seeds;
  seeds.emplace_back("full_static.keel", keel::vmtest::FullProgram(Plan::kStatic));
  seeds.emplace_back("full_dynamic.keel", keel::vmtest::FullProgram(Plan::kDynamic));
  seeds.emplace_back("add.keel", keel::vmtest::AddProgram({}));
  keel::vmtest::AddProgramSpec dyn;
  dyn.dynamic = true;
  seeds.emplace_back("add_dynamic.keel", keel::vmtest::AddProgram(dyn));
  seeds.emplace_back("dispatch_invoke.keel", keel::vmtest::DispatchProgram(8, false));
  seeds.emplace_back("dispatch_views.keel", keel::vmtest::DispatchProgram(8, true));
  int written = 0;
  for (const auto& [name, bytes] : seeds) {
    if (!bytes.ok() || !keel::vmtest::WriteBytes(dir + "/" + name, *bytes)) {
      std::fprintf(stderr, "keel_fuzz_make_seeds: cannot write %s\n", name.c_str());
      return 1;
    }
    ++written;
  }
  std::printf("wrote %d seed executables to %s\n", written, dir.c_str());
  return 0;
}
