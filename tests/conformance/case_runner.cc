// tests/conformance/case_runner.cc — see the header.
#include "tests/conformance/case_runner.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "keel/vm.h"
#include "tests/conformance/compare.h"
#include "vm/device.h"

namespace keel::conformance {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void ReplaceAll(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

void Execute(const Case& c, const RunOptions& o, const std::string& out_path, CaseResult& r) {
  const auto start = Clock::now();
  auto fail = [&](const std::string& status, const std::string& what, const Status& s) {
    r.status = status;
    r.reason = what + ": " + OneLine(s.ToString(), out_path);
    r.run_seconds = Since(start);
  };
  auto exe = Executable::LoadFile(out_path);
  if (!exe.ok()) return fail("error", "load", exe.status());
  VmOptions vo;
  vo.device = o.target;
  vo.num_threads = 1;  // the runner's parallelism is its worker processes
  auto vm = VirtualMachine::Create(*exe, vo);
  if (!vm.ok()) return fail("error", "vm", vm.status());
  std::vector<std::vector<uint8_t>> keep;
  for (const TensorSpec& in : c.inputs) {
    bool frozen = false;
    for (const std::string& f : r.frozen) frozen |= f == in.name;
    // Frozen inputs are constants now; an input nothing reads may be pruned.
    if (frozen || !(*exe)->FindInput(in.name).ok()) continue;
    auto bytes = ReadWholeFile(o.cases_dir + "/" + c.name + "/" + in.file);
    if (!bytes.ok()) return fail("error", "input '" + in.name + "'", bytes.status());
    Status s = (*vm)->SetInput(in.name, bytes->data(), bytes->size(), in.shape, in.dtype);
    if (!s.ok()) return fail("error", "input '" + in.name + "'", s);
  }
  Status s = (*vm)->Run();
  if (!s.ok()) return fail("error", "run", s);
  for (const TensorSpec& want : c.outputs) {
    auto index = (*exe)->FindOutput(want.name);
    if (!index.ok()) return fail("error", "output '" + want.name + "'", index.status());
    const TensorInfo& info = (*exe)->output(*index);
    if (info.dtype != want.dtype || info.shape != want.shape) {
      r.status = "mismatch";
      r.reason = "output '" + want.name + "': " + DataTypeName(info.dtype) + ShapeText(info.shape) + ", expected " +
                 DataTypeName(want.dtype) + ShapeText(want.shape);
      r.run_seconds = Since(start);
      return;
    }
    std::vector<uint8_t> got(info.byte_size);
    s = (*vm)->CopyOutputToHost(*index, got.data(), got.size());
    if (!s.ok()) return fail("error", "output '" + want.name + "'", s);
    auto expected = ReadWholeFile(o.cases_dir + "/" + c.name + "/" + want.file);
    if (!expected.ok()) return fail("error", "expected '" + want.name + "'", expected.status());
    if (expected->size() != got.size()) {
      return fail("error", "expected '" + want.name + "'",
                  IoError("file has " + std::to_string(expected->size()) + " bytes, the output " +
                          std::to_string(got.size())));
    }
    const uint64_t count = DataTypeSize(want.dtype) ? got.size() / DataTypeSize(want.dtype) : 0;
    Comparison cmp = CompareTensors(want.dtype, got.data(), expected->data(), count, c.rtol, c.atol);
    r.max_abs_error = std::max(r.max_abs_error, cmp.max_abs_error);
    if (!cmp.ok && r.status != "mismatch") {
      r.status = "mismatch";
      r.reason = "output '" + want.name + "': " + cmp.message;
    }
  }
  if (r.status.empty()) r.status = "pass";
  r.run_seconds = Since(start);
}

}  // namespace

Result<std::vector<uint8_t>> ReadWholeFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return IoError("cannot open '" + path + "'");
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// The driver and the importer prefix messages with the model path; reasons are
// compared across runs and machines, so it goes.
std::string OneLine(std::string msg, const std::string& path) {
  ReplaceAll(msg, "model '" + path + "': ", "");
  ReplaceAll(msg, path + ": ", "");
  ReplaceAll(msg, path, std::filesystem::path(path).filename().string());
  for (char& ch : msg) {
    if (ch == '\n' || ch == '\t' || ch == '\r') ch = ' ';
  }
  return msg;
}

CaseResult RunCase(const Case& c, const RunOptions& o) {
  CaseResult r;
  std::error_code ec;
  const std::string model_path = o.cases_dir + "/" + c.name + "/model.onnx";
  if (o.phase == "run") {
    auto record = o.compiled.find(c.name);
    if (record == o.compiled.end()) {
      r.status = "error";
      r.reason = "not compiled: the compile phase has no record of this case";
      return r;
    }
    r = record->second;
    if (r.status == "compiled") {
      r.status.clear();
      Execute(c, o, o.artifacts_dir + "/" + c.name + ".keel", r);
    }
    return r;
  }
  if (!o.compile) {
    r.status = "error";
    r.reason = "this runner was built without the compiler (use --phase run)";
    return r;
  }
  if (o.phase == "compile") {
    fs::create_directories(o.artifacts_dir, ec);
    if (o.compile(c, o, model_path, o.artifacts_dir + "/" + c.name + ".keel", r)) r.status = "compiled";
    return r;
  }
  fs::create_directories(o.work_dir, ec);
  // A distinct file per case: the VM dlopens the library, and a reused path could
  // hand back a still-loaded earlier library.
  const std::string out_path = o.work_dir + "/" + c.name + ".keel";
  if (o.compile(c, o, model_path, out_path, r)) Execute(c, o, out_path, r);
  fs::remove(out_path, ec);
  fs::remove(out_path + ".so", ec);
  return r;
}

bool DeviceAvailable(const std::string& target, std::string* why) {
  vm_internal::DeviceOptions options;
  options.num_threads = 1;
  auto device = vm_internal::CreateDevice(target, options);
  if (!device.ok() && why) *why = device.status().ToString();
  return device.ok();
}

std::string SerializeResult(const CaseResult& r) {
  std::ostringstream s;
  s.precision(17);
  std::string frozen;
  for (const std::string& f : r.frozen) frozen += (frozen.empty() ? "" : ",") + f;
  std::string reason = r.reason;
  for (char& ch : reason) {
    if (ch == '\n' || ch == '\t' || ch == '\r') ch = ' ';
  }
  s << r.status << '\t' << r.compile_seconds << '\t' << r.run_seconds << '\t' << r.max_abs_error << '\t'
    << (frozen.empty() ? "-" : frozen) << '\t' << reason;
  return s.str();
}

bool ParseResult(const std::string& line, CaseResult& r) {
  std::vector<std::string> f;
  size_t start = 0;
  for (int i = 0; i < 5; ++i) {
    const size_t tab = line.find('\t', start);
    if (tab == std::string::npos) return false;
    f.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
  r.status = f[0];
  r.compile_seconds = std::atof(f[1].c_str());
  r.run_seconds = std::atof(f[2].c_str());
  r.max_abs_error = std::atof(f[3].c_str());
  r.frozen.clear();
  if (f[4] != "-") {
    std::stringstream in(f[4]);
    for (std::string x; std::getline(in, x, ',');) r.frozen.push_back(x);
  }
  r.reason = line.substr(start);
  return r.status == "pass" || r.status == "refused" || r.status == "mismatch" || r.status == "error" ||
         r.status == "compiled";
}

}  // namespace keel::conformance
