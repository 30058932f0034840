// tests/conformance/case_runner.cc — see the header.
#include "tests/conformance/case_runner.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "compiler/driver/compile.h"
#include "keel/vm.h"
#include "tests/conformance/compare.h"
#include "vm/device.h"

namespace keel::conformance {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

Result<std::vector<uint8_t>> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return IoError("cannot open '" + path + "'");
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void ReplaceAll(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
}

// The compiler's message without the (machine-specific) model path the driver and
// the importer prefix it with, on one line: reasons are compared across runs.
std::string OneLine(std::string msg, const std::string& model_path) {
  ReplaceAll(msg, "model '" + model_path + "': ", "");
  ReplaceAll(msg, model_path + ": ", "");
  ReplaceAll(msg, model_path, "model.onnx");
  for (char& ch : msg) {
    if (ch == '\n' || ch == '\t' || ch == '\r') ch = ' ';
  }
  return msg;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// Compiles with frozen-input retries. Returns the failure as a finished result.
bool Compile(const Case& c, const RunOptions& o, const std::string& model_path, const std::string& out_path,
             CaseResult& r) {
  driver::CompileOptions co;
  co.model_path = model_path;
  co.output_path = out_path;
  co.target = o.target;
  static const std::regex kNeedsConstant(R"(input \d+ \('([^']*)'\) must be a compile-time constant)");
  const auto start = Clock::now();
  for (size_t attempt = 0;; ++attempt) {
    auto summary = driver::CompileModel(co);
    if (summary.ok()) break;
    const Status& s = summary.status();
    std::smatch m;
    const std::string msg = s.message();
    if (std::regex_search(msg, m, kNeedsConstant) && attempt < c.inputs.size()) {
      const std::string name = m[1].str();
      const TensorSpec* in = nullptr;
      for (const TensorSpec& t : c.inputs) in = t.name == name ? &t : in;
      if (in && !co.import.frozen_inputs.count(name)) {
        auto bytes = ReadFile(o.cases_dir + "/" + c.name + "/" + in->file);
        if (bytes.ok()) {
          co.import.frozen_inputs[name] = std::move(*bytes);
          r.frozen.push_back(name);
          continue;
        }
      }
    }
    r.compile_seconds = Since(start);
    // Internal errors and failed tools are bugs, not refusals.
    const bool refusal = s.code() == StatusCode::kUnsupported || s.code() == StatusCode::kInvalidArgument;
    r.status = refusal ? "refused" : "error";
    r.reason = (refusal ? "" : std::string("compile: ") + StatusCodeName(s.code()) + ": ") + OneLine(msg, model_path);
    return false;
  }
  r.compile_seconds = Since(start);
  return true;
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
    auto bytes = ReadFile(o.cases_dir + "/" + c.name + "/" + in.file);
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
    auto expected = ReadFile(o.cases_dir + "/" + c.name + "/" + want.file);
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

CaseResult RunCase(const Case& c, const RunOptions& o) {
  CaseResult r;
  std::error_code ec;
  fs::create_directories(o.work_dir, ec);
  const std::string model_path = o.cases_dir + "/" + c.name + "/model.onnx";
  // A distinct file per case: the VM dlopens the library, and a reused path could
  // hand back a still-loaded earlier library.
  const std::string out_path = o.work_dir + "/" + c.name + ".keel";
  if (Compile(c, o, model_path, out_path, r)) Execute(c, o, out_path, r);
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
  return r.status == "pass" || r.status == "refused" || r.status == "mismatch" || r.status == "error";
}

}  // namespace keel::conformance
