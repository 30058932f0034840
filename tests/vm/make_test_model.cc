// tests/vm/make_test_model.cc — writes a test executable for the app tests:
//   keel_vm_make_test_model OUT.keel KERNEL_LIBRARY [static|dynamic|add]
// and copies KERNEL_LIBRARY to OUT.keel.so (keel-run's default library path).
#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/vm/test_programs.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT.keel KERNEL_LIBRARY [static|dynamic|add]\n", argv[0]);
    return 2;
  }
  const std::string kind = argc > 3 ? argv[3] : "static";
  auto bytes = kind == "add"       ? keel::vmtest::AddProgram({})
               : kind == "dynamic" ? keel::vmtest::FullProgram(keel::vmtest::Plan::kDynamic)
                                   : keel::vmtest::FullProgram(keel::vmtest::Plan::kStatic);
  if (!bytes.ok() || !keel::vmtest::WriteBytes(argv[1], *bytes)) {
    std::fprintf(stderr, "cannot write %s\n", argv[1]);
    return 1;
  }
  std::error_code ec;
  std::filesystem::copy_file(argv[2], std::string(argv[1]) + ".so",
                             std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) {
    std::fprintf(stderr, "cannot copy %s: %s\n", argv[2], ec.message().c_str());
    return 1;
  }
  return 0;
}
