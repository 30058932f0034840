// tests/compiler/frontend/external_data_test.cc — hostile external data (issue 13):
// only regular files inside the model's folder, never blocking, sizes checked.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "compiler/frontend/onnx_importer.h"
#include "tests/compiler/frontend/onnx_test_util.h"

namespace keel::frontend {
namespace {

namespace fs = std::filesystem;
using namespace keel::testing_onnx;  // NOLINT

// A fresh folder per test: <tmp>/keel_external_<name>/model.
std::string ModelDir(const std::string& name) {
  const fs::path root = fs::path(::testing::TempDir()) / ("keel_external_" + name);
  fs::remove_all(root);
  fs::create_directories(root / "model");
  return (root / "model").string();
}

void WriteBytes(const std::string& path, size_t n) {
  std::ofstream f(path, std::ios::binary);
  f << std::string(n, '\x01');
}

// x[4] + W[4], W in external data at `location` (offset/length when >= 0).
std::string WriteModelWithExternal(const std::string& dir, const std::string& location, int64_t offset = -1,
                                   int64_t length = -1) {
  auto m = NewModel(13);
  AddInput(m, "x", {4});
  auto* w = m.mutable_graph()->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add_kv = [&](const std::string& k, const std::string& v) {
    auto* kv = w->add_external_data();
    kv->set_key(k);
    kv->set_value(v);
  };
  add_kv("location", location);
  if (offset >= 0) add_kv("offset", std::to_string(offset));
  if (length >= 0) add_kv("length", std::to_string(length));
  AddNode(m, "Add", {"x", "W"}, {"y"});
  AddOutput(m, "y");
  return WriteModel(m, dir, "m.onnx");
}

// The error is one line, names the tensor and the location.
void ExpectRefused(const std::string& model, const std::string& location, const std::string& reason) {
  auto g = ImportOnnx(model, {});
  ASSERT_FALSE(g.ok()) << location << " was accepted";
  const std::string& msg = g.status().message();
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_NE(msg.find("initializer 'W'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(location), std::string::npos) << msg;
  EXPECT_NE(msg.find(reason), std::string::npos) << msg;
}

TEST(ExternalDataTest, RegularFileInsideTheFolderIsRead) {
  const std::string dir = ModelDir("ok");
  fs::create_directories(dir + "/sub");
  WriteBytes(dir + "/sub/w.bin", 32);
  auto g = ImportOnnx(WriteModelWithExternal(dir, "sub/../sub/w.bin", 16, 16), {});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
}

TEST(ExternalDataTest, SymlinkInsideTheFolderIsRead) {
  const std::string dir = ModelDir("inner_link");
  WriteBytes(dir + "/real.bin", 16);
  fs::create_symlink("real.bin", dir + "/link.bin");
  auto g = ImportOnnx(WriteModelWithExternal(dir, "link.bin"), {});
  ASSERT_TRUE(g.ok()) << g.status().ToString();
}

TEST(ExternalDataTest, FifoIsRefusedWithoutBlocking) {
  const std::string dir = ModelDir("fifo");
  ASSERT_EQ(mkfifo((dir + "/w.bin").c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  ExpectRefused(WriteModelWithExternal(dir, "w.bin"), "w.bin", "is a FIFO, not a regular file");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ExternalDataTest, AbsolutePathIsRefused) {
  const std::string dir = ModelDir("absolute");
  ExpectRefused(WriteModelWithExternal(dir, "/etc/passwd"), "/etc/passwd", "absolute path");
}

TEST(ExternalDataTest, DotDotEscapeIsRefused) {
  const std::string dir = ModelDir("dotdot");
  WriteBytes(dir + "/../outside.bin", 16);  // exists, readable: still refused
  ExpectRefused(WriteModelWithExternal(dir, "../outside.bin"), "../outside.bin", "outside the model's folder");
  ExpectRefused(WriteModelWithExternal(dir, "../../../../../../../etc/passwd"), "etc/passwd",
                "outside the model's folder");
}

TEST(ExternalDataTest, SymlinkEscapeIsRefused) {
  const std::string dir = ModelDir("symlink");
  WriteBytes(dir + "/../secret.bin", 16);
  fs::create_symlink("../secret.bin", dir + "/w.bin");
  ExpectRefused(WriteModelWithExternal(dir, "w.bin"), "w.bin", "outside the model's folder");
  // A folder symlink pointing out is just as much outside.
  fs::create_directory_symlink("/etc", dir + "/etc");
  ExpectRefused(WriteModelWithExternal(dir, "etc/passwd"), "etc/passwd", "outside the model's folder");
}

TEST(ExternalDataTest, SiblingFolderWithCommonPrefixIsOutside) {
  const std::string dir = ModelDir("prefix");
  fs::create_directories(dir + "2");
  WriteBytes(dir + "2/w.bin", 16);
  ExpectRefused(WriteModelWithExternal(dir, "../model2/w.bin"), "model2/w.bin", "outside the model's folder");
}

TEST(ExternalDataTest, ShortFileAndBadOffsetsAreRefused) {
  const std::string dir = ModelDir("short");
  WriteBytes(dir + "/w.bin", 10);
  ExpectRefused(WriteModelWithExternal(dir, "w.bin"), "w.bin", "too short");
  WriteBytes(dir + "/w.bin", 20);
  ExpectRefused(WriteModelWithExternal(dir, "w.bin", 8), "w.bin", "too short");
  ExpectRefused(WriteModelWithExternal(dir, "w.bin", int64_t{1} << 62), "w.bin", "too short");
  ExpectRefused(WriteModelWithExternal(dir, "w.bin", 0, 8), "w.bin", "length 8 but the tensor needs 16");
}

TEST(ExternalDataTest, DirectoryAndMissingFileAreRefused) {
  const std::string dir = ModelDir("dir");
  fs::create_directories(dir + "/w.bin");
  ExpectRefused(WriteModelWithExternal(dir, "w.bin"), "w.bin", "is a directory");
  ExpectRefused(WriteModelWithExternal(dir, "missing.bin"), "missing.bin", "does not exist");
}

TEST(ExternalDataTest, ModelThatIsAFifoOrDirectoryIsRefused) {
  const std::string dir = ModelDir("model_fifo");
  ASSERT_EQ(mkfifo((dir + "/m.onnx").c_str(), 0600), 0);
  auto g = ImportOnnx(dir + "/m.onnx", {});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("is a FIFO"), std::string::npos) << g.status().message();
  auto d = ImportOnnx(dir, {});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("is a directory"), std::string::npos) << d.status().message();
}

}  // namespace
}  // namespace keel::frontend
