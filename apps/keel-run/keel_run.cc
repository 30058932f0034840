// apps/keel-run/keel_run.cc — runs a Keel executable from the command line.
//
//   keel-run model.keel [--library model.keel.so] [--input name=file.bin ...]
//            [--output-dir DIR] [--device cpu|cuda] [--trace] [--iterations N]
//            [--threads N] [--tuning-file PATH] [--verify] [--help]
//
// Prints each output's name, shape, dtype and a checksum (sum and L2 norm of the
// values), optionally writes outputs as raw .bin files, and with --trace one line
// per executed instruction (the device operation, bytes, time). Inputs not given
// are filled with a deterministic pattern (and the tool says so). Any error ends
// the program with exit code 1 and a one-line reason (2 for bad usage).
// Runs through the public API (keel/vm.h) only; --verify reads the executable with
// the serialization reader so that the library is never loaded.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "apps/keel-run/verify.h"
#include "apps/common/vm_env.h"
#include "common/regular_file.h"
#include "keel/vm.h"

namespace {

constexpr const char* kUsage =
    "usage: keel-run model.keel [--library model.keel.so] [--input name=file.bin ...]\n"
    "                [--output-dir DIR] [--device cpu|cuda] [--trace] [--iterations N]\n"
    "                [--threads N] [--tuning-file PATH] [--verify] [--help]\n"
    "  --library     kernel library (default: <model>.so next to the model)\n"
    "  --input       raw little-endian bytes of an input (missing inputs get a deterministic pattern)\n"
    "  --output-dir  write each output as DIR/<name>.bin\n"
    "  --device      cpu (default), cuda or cuda:N\n"
    "  --trace       print the set-up's device operations (arenas, weight uploads) and one line per\n"
    "                executed instruction of the first iteration\n"
    "  --no-cuda-graph  cuda: interpret every run (no CUDA graph capture/replay)\n"
    "  --allow-tf32  cuda: let cuBLAS/cuDNN use TF32 tensor cores for f32 (default: what keelc\n"
    "                recorded; on for executables compiled with --precision tf32)\n"
    "  --no-tf32     cuda: never TF32, even for an executable compiled with --precision tf32\n"
    "  --tuning-file PATH  cuda: reuse the cuDNN/cuBLASLt choices recorded in PATH; choices timed\n"
    "                now are added to it (vm/cuda/autotune.h has the format)\n"
    "  --iterations  run N times and report the mean time per run (default 1)\n"
    "  --threads     CPU worker threads (default: hardware concurrency)\n"
    "  --verify      check that the kernel library matches the executable (size and SHA-256\n"
    "                recorded by keelc) without loading it, then exit (0: it matches)\n";

struct Args {
  std::string model, library, output_dir, device = "cpu", tuning_file;
  std::vector<std::pair<std::string, std::string>> inputs;
  bool trace = false;
  bool cuda_graph = true;
  std::optional<bool> allow_tf32;  // unset: the executable's choice
  bool verify = false;
  int iterations = 1;
  int threads = 0;
};

int Fail(const std::string& message) {
  std::fprintf(stderr, "keel-run: error: %s\n", message.c_str());
  return 1;
}

int UsageError(const std::string& message) {
  std::fprintf(stderr, "keel-run: %s\n%s", message.c_str(), kUsage);
  return 2;
}

bool ParseInt(const char* s, int* out) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < 0 || v > 1000000000) return false;
  *out = static_cast<int>(v);
  return true;
}

// Returns -1 on success, else the exit code.
int ParseArgs(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) return nullptr;
      (void)flag;
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--trace") {
      a.trace = true;
    } else if (arg == "--no-cuda-graph") {
      a.cuda_graph = false;
    } else if (arg == "--verify") {
      a.verify = true;
    } else if (arg == "--allow-tf32") {
      a.allow_tf32 = true;
    } else if (arg == "--no-tf32") {
      a.allow_tf32 = false;
    } else if (arg == "--library" || arg == "--output-dir" || arg == "--device" || arg == "--input" ||
               arg == "--iterations" || arg == "--threads" || arg == "--tuning-file") {
      const char* v = value(arg.c_str());
      if (v == nullptr) return UsageError(arg + " needs a value");
      if (arg == "--library") a.library = v;
      if (arg == "--output-dir") a.output_dir = v;
      if (arg == "--device") a.device = v;
      if (arg == "--tuning-file") a.tuning_file = v;
      if (arg == "--input") {
        const char* eq = std::strchr(v, '=');
        if (eq == nullptr || eq == v) return UsageError(std::string("--input expects name=file.bin, got ") + v);
        a.inputs.emplace_back(std::string(v, eq), std::string(eq + 1));
      }
      if (arg == "--iterations" && (!ParseInt(v, &a.iterations) || a.iterations < 1)) {
        return UsageError(std::string("--iterations expects a positive integer, got ") + v);
      }
      if (arg == "--threads" && !ParseInt(v, &a.threads)) {
        return UsageError(std::string("--threads expects a non-negative integer, got ") + v);
      }
    } else if (!arg.empty() && arg[0] == '-') {
      return UsageError("unknown option " + arg);
    } else if (a.model.empty()) {
      a.model = arg;
    } else {
      return UsageError("more than one model given: " + arg);
    }
  }
  if (a.model.empty()) return UsageError("no model given");
  return -1;
}

std::string ShapeString(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// A deterministic, dtype-aware fill (values in [-0.5, 0.5) for floats).
void FillPattern(const keel::TensorInfo& info, std::vector<uint8_t>& buf) {
  const size_t n = info.byte_size / std::max<size_t>(1, keel::DataTypeSize(info.dtype));
  for (size_t i = 0; i < n; ++i) {
    const int64_t k = static_cast<int64_t>((i * 37) % 101);
    switch (info.dtype) {
      case keel::DataType::kF32: reinterpret_cast<float*>(buf.data())[i] = static_cast<float>(k) / 101.0f - 0.5f; break;
      case keel::DataType::kF64: reinterpret_cast<double*>(buf.data())[i] = static_cast<double>(k) / 101.0 - 0.5; break;
      case keel::DataType::kI32: reinterpret_cast<int32_t*>(buf.data())[i] = static_cast<int32_t>(k % 7); break;
      case keel::DataType::kI64: reinterpret_cast<int64_t*>(buf.data())[i] = k % 7; break;
      default: break;
    }
  }
  if (info.dtype != keel::DataType::kF32 && info.dtype != keel::DataType::kF64 &&
      info.dtype != keel::DataType::kI32 && info.dtype != keel::DataType::kI64) {
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>((i * 37) % 7);
  }
}

// Sum and L2 norm of the values as doubles; false for dtypes without a checksum here.
bool Checksum(const keel::DataType dt, const std::vector<uint8_t>& buf, double* sum, double* l2) {
  *sum = 0;
  *l2 = 0;
  auto acc = [&](double v) {
    *sum += v;
    *l2 += v * v;
  };
  const size_t es = keel::DataTypeSize(dt);
  if (es == 0) return false;
  const size_t n = buf.size() / es;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = buf.data() + i * es;
    switch (dt) {
      case keel::DataType::kF32: { float v; std::memcpy(&v, p, 4); acc(v); break; }
      case keel::DataType::kF64: { double v; std::memcpy(&v, p, 8); acc(v); break; }
      case keel::DataType::kI32: { int32_t v; std::memcpy(&v, p, 4); acc(v); break; }
      case keel::DataType::kI64: { int64_t v; std::memcpy(&v, p, 8); acc(static_cast<double>(v)); break; }
      case keel::DataType::kI16: { int16_t v; std::memcpy(&v, p, 2); acc(v); break; }
      case keel::DataType::kU16: { uint16_t v; std::memcpy(&v, p, 2); acc(v); break; }
      case keel::DataType::kU32: { uint32_t v; std::memcpy(&v, p, 4); acc(v); break; }
      case keel::DataType::kU64: { uint64_t v; std::memcpy(&v, p, 8); acc(static_cast<double>(v)); break; }
      case keel::DataType::kI8: acc(static_cast<int8_t>(*p)); break;
      case keel::DataType::kU8: case keel::DataType::kBool: acc(*p); break;
      default: return false;
    }
  }
  *l2 = std::sqrt(*l2);
  return true;
}

class PrintTrace final : public keel::TraceObserver {
 public:
  void OnInstruction(const keel::TraceEvent& e) override { std::printf("trace %s\n", keel::FormatTraceEvent(e).c_str()); }
  void OnSetup(std::string_view what, const keel::DeviceOp& op) override {
    std::printf("trace %s\n", keel::FormatSetupEvent(what, op).c_str());
  }
};

std::string SafeFileName(const std::string& name) {
  std::string s = name.empty() ? "output" : name;
  for (char& c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  }
  return s;
}

int RunMain(int argc, char** argv) {
  Args a;
  if (int rc = ParseArgs(argc, argv, a); rc >= 0) return rc;
  if (a.verify) return keel::run::VerifyPair(a.model, a.library);

  keel::LoadOptions lo;
  lo.library_path = a.library;
  auto exe = keel::Executable::LoadFile(a.model, lo);
  if (!exe.ok()) return Fail(exe.status().ToString());
  keel::VmOptions vo;
  vo.device = a.device;
  vo.num_threads = a.threads;
  vo.cuda_graph = a.cuda_graph;
  vo.allow_tf32 = a.allow_tf32;
  vo.tuning_file = a.tuning_file;
  keel::tools::ApplyEnvironmentOverrides(vo);  // KEEL_CUDA_AUTOTUNE, KEEL_CUDA_PDL, ... (apps/common/vm_env.h)
  PrintTrace tracer;
  if (a.trace) vo.trace = &tracer;  // also reports the set-up: arenas, weight uploads, input buffers
  auto vm = keel::VirtualMachine::Create(*exe, vo);
  if (!vm.ok()) return Fail(vm.status().ToString());

  const keel::Executable& e = **exe;
  std::vector<std::vector<uint8_t>> input_bytes(e.num_inputs());
  std::vector<bool> given(e.num_inputs(), false);
  for (const auto& [name, file] : a.inputs) {
    auto idx = e.FindInput(name);
    if (!idx.ok()) return Fail(idx.status().ToString());
    const keel::TensorInfo& info = e.input(*idx);
    // A regular file only, opened without blocking: a directory, a FIFO or a
    // device is a one-line error, never a hang or a bogus size.
    auto in = keel::common::RegularFile::Open(file, "input \"" + name + "\": file");
    if (!in.ok()) return Fail(in.status().ToString());
    if (in->size() != info.byte_size) {
      return Fail("input \"" + name + "\": file " + file + " has " + std::to_string(in->size()) + " bytes, expected " +
                  std::to_string(info.byte_size) + " (" + ShapeString(info.shape) + " " +
                  keel::DataTypeName(info.dtype) + ")");
    }
    auto bytes = in->ReadAll("input \"" + name + "\": file " + file);
    if (!bytes.ok()) return Fail(bytes.status().ToString());
    input_bytes[*idx] = std::move(*bytes);
    given[*idx] = true;
  }
  for (size_t i = 0; i < e.num_inputs(); ++i) {
    const keel::TensorInfo& info = e.input(i);
    if (!given[i]) {
      input_bytes[i].assign(info.byte_size, 0);
      FillPattern(info, input_bytes[i]);
      std::printf("input %s %s %s: not given, filled with a deterministic pattern\n", info.name.c_str(),
                  ShapeString(info.shape).c_str(), keel::DataTypeName(info.dtype));
    }
    keel::Status s = (*vm)->SetInput(i, input_bytes[i].data(), input_bytes[i].size(), info.shape, info.dtype);
    if (!s.ok()) return Fail(s.ToString());
  }

  double total_ms = 0;
  for (int it = 0; it < a.iterations; ++it) {
    (*vm)->SetTraceObserver(a.trace && it == 0 ? &tracer : nullptr);
    const auto t0 = std::chrono::steady_clock::now();
    keel::Status s = (*vm)->Run();
    const auto t1 = std::chrono::steady_clock::now();
    if (!s.ok()) return Fail(s.ToString());
    total_ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
  }
  std::printf("ran %d iteration(s) on %s (%d thread(s)): %.3f ms per run\n", a.iterations, a.device.c_str(),
              (*vm)->num_threads(), total_ms / a.iterations);

  for (size_t i = 0; i < e.num_outputs(); ++i) {
    const keel::TensorInfo& info = e.output(i);
    std::vector<uint8_t> host(info.byte_size);
    keel::Status s = (*vm)->CopyOutputToHost(i, host.data(), host.size());
    if (!s.ok()) return Fail(s.ToString());
    double sum = 0, l2 = 0;
    if (Checksum(info.dtype, host, &sum, &l2)) {
      std::printf("output %s %s %s sum=%.6g l2=%.6g\n", info.name.c_str(), ShapeString(info.shape).c_str(),
                  keel::DataTypeName(info.dtype), sum, l2);
    } else {
      std::printf("output %s %s %s (no checksum for this dtype)\n", info.name.c_str(), ShapeString(info.shape).c_str(),
                  keel::DataTypeName(info.dtype));
    }
    if (!a.output_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(a.output_dir, ec);
      if (ec) return Fail("cannot create output directory " + a.output_dir + ": " + ec.message());
      const std::string path = a.output_dir + "/" + SafeFileName(info.name) + ".bin";
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(host.data()), static_cast<std::streamsize>(host.size()));
      if (!out) return Fail("cannot write " + path);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return RunMain(argc, argv);
  } catch (const std::exception& ex) {
    return Fail(std::string("unexpected: ") + ex.what());
  }
}
