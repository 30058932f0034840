// tests/vm/library_digest_test.cc — the kernel library's size and SHA-256 recorded
// in the executable (format 1.1) are checked before dlopen (issue 13: damaged
// libraries crashed inside dlopen with SIGBUS/SIGSEGV, or ran wrong code).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "keel/vm.h"
#include "tests/vm/test_programs.h"

namespace keel {
namespace {

namespace fs = std::filesystem;
using vmtest::AddProgramSpec;

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// A private copy of the test kernel library (dlopen dedups by inode, so each
// damaged variant is its own file) and an executable recording the good one.
struct Pair {
  std::string dir, library;
  std::vector<uint8_t> executable;
};

Pair MakePair(const std::string& name) {
  Pair p;
  p.dir = ::testing::TempDir() + "/keel_digest_" + name;
  fs::remove_all(p.dir);
  fs::create_directories(p.dir);
  p.library = p.dir + "/model.keel.so";
  fs::copy_file(KEEL_TEST_KERNELS, p.library);
  AddProgramSpec spec;
  spec.digest_of_library = p.library;
  auto bytes = vmtest::AddProgram(spec);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  p.executable = *bytes;
  return p;
}

Status Load(const Pair& p) {
  LoadOptions o;
  o.library_path = p.library;
  return Executable::LoadMemory(p.executable, o).status();
}

// dlopen never saw the file: RTLD_NOLOAD finds no loaded object for it.
bool WasLoaded(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

TEST(LibraryDigestTest, MatchingLibraryLoads) {
  Pair p = MakePair("ok");
  EXPECT_TRUE(Load(p).ok()) << Load(p).ToString();
}

TEST(LibraryDigestTest, TruncatedLibraryIsRefusedBeforeDlopen) {
  Pair p = MakePair("truncated");
  const auto good = ReadAll(p.library);
  for (size_t keep : {size_t{0}, size_t{511}, size_t{513}, good.size() / 2, good.size() - 1}) {
    fs::resize_file(p.library, keep);
    const Status s = Load(p);
    EXPECT_EQ(s.code(), StatusCode::kInvalidExecutable) << s.ToString();
    EXPECT_NE(s.message().find("has " + std::to_string(keep) + " bytes but the executable records " +
                               std::to_string(good.size())),
              std::string::npos)
        << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos);
    EXPECT_FALSE(WasLoaded(p.library));
  }
}

TEST(LibraryDigestTest, OneByteFlipIsRefusedBeforeDlopen) {
  Pair p = MakePair("flipped");
  auto bytes = ReadAll(p.library);
  for (size_t at : {size_t{0}, size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
    auto damaged = bytes;
    damaged[at] ^= 0x01;
    fs::remove(p.library);
    std::ofstream(p.library, std::ios::binary).write(reinterpret_cast<const char*>(damaged.data()),
                                                     static_cast<std::streamsize>(damaged.size()));
    const Status s = Load(p);
    EXPECT_EQ(s.code(), StatusCode::kInvalidExecutable) << s.ToString();
    EXPECT_NE(s.message().find("SHA-256"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("damaged or substituted"), std::string::npos) << s.message();
    EXPECT_FALSE(WasLoaded(p.library));
  }
}

TEST(LibraryDigestTest, OtherLibraryOfAnotherBuildIsRefusedBeforeDlopen) {
  Pair p = MakePair("substituted");
  fs::remove(p.library);
  fs::copy_file(KEEL_TEST_KERNELS_OTHER_ID, p.library);
  const Status s = Load(p);
  EXPECT_EQ(s.code(), StatusCode::kInvalidExecutable) << s.ToString();
  EXPECT_FALSE(WasLoaded(p.library));
}

TEST(LibraryDigestTest, LibraryThatIsNotARegularFileIsRefused) {
  Pair p = MakePair("directory");
  fs::remove(p.library);
  fs::create_directories(p.library);
  const Status s = Load(p);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("is a directory"), std::string::npos) << s.message();
}

TEST(LibraryDigestTest, BareNameIsTheFileInTheWorkingDirectory) {
  // "model.keel.so" without a directory is the file whose digest was checked,
  // not a name for dlopen's library search path (which does not hold it).
  Pair p = MakePair("bare");
  const fs::path before = fs::current_path();
  fs::current_path(p.dir);
  LoadOptions o;
  o.library_path = "model.keel.so";
  const Status s = Executable::LoadMemory(p.executable, o).status();
  fs::current_path(before);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(LibraryDigestTest, ExecutableWithoutDigestStillLoads) {
  // Format 1.0 executables (and writers that record nothing) are not checked.
  auto bytes = vmtest::AddProgram({});
  ASSERT_TRUE(bytes.ok());
  LoadOptions o;
  o.library_path = KEEL_TEST_KERNELS;
  EXPECT_TRUE(Executable::LoadMemory(*bytes, o).ok());
}

}  // namespace
}  // namespace keel
