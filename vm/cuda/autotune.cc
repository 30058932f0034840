// vm/cuda/autotune.cc — see autotune.h.
#include "vm/cuda/autotune.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include <unistd.h>

#include "vm/cuda/cuda_driver.h"
#include "vm/cuda/cuda_errors.h"
#include "vm/cuda/device_memory.h"
#include "vm/cuda/library_calls_engine_choice.h"

namespace keel::vm_internal {

namespace {
std::atomic<uint64_t> g_timings{0};
}  // namespace

uint64_t TimingsSoFar() { return g_timings.load(); }

Result<double> TimeOnStream(cudaStream_t stream, CUfunction spin, int reps, const std::function<bool()>& enqueue) {
  g_timings.fetch_add(1);
  // Host overhead per library call (tens of microseconds for cuDNN) would
  // dominate batch-1 timings of back-to-back calls, while the VM replays a CUDA
  // graph where it does not exist. So the GPU first spins while the host queues
  // all `reps` calls; the events around them then see device time only. (Graph
  // capture of each candidate would do the same, but some cuDNN algorithms hang
  // or crash when captured before they ever ran in the process.)
  auto clean = [&]() {
    (void)cudaStreamSynchronize(stream);
    (void)cudaGetLastError();  // a refused candidate must not poison later calls
  };
  // One plain call first: the libraries' lazy initialization is not timed.
  if (!enqueue() || cudaStreamSynchronize(stream) != cudaSuccess) {
    clean();
    return -1.0;
  }
  cudaEvent_t start = nullptr, end = nullptr;
  if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&end) != cudaSuccess) {
    if (start != nullptr) (void)cudaEventDestroy(start);
    clean();
    return DeviceError("cudaEventCreate failed while autotuning");
  }
  double us = -1;
  // The host must have queued every call while the GPU still spun (the start
  // event not yet reached), else the events measured host time too and the
  // candidates' order is noise: then the spin is made 4x longer and the run
  // repeated (a slow or busy host needs longer; at most 4 tries).
  unsigned long long spin_ns = 300000ull + 100000ull * static_cast<unsigned long long>(reps);
  for (int attempt = 0; attempt < 4; ++attempt, spin_ns *= 4) {
    void* params[] = {&spin_ns};
    bool ok = Driver().LaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, reinterpret_cast<CUstream>(stream), params, nullptr) ==
              CUDA_SUCCESS;
    ok = ok && cudaEventRecord(start, stream) == cudaSuccess;
    for (int i = 0; i < reps && ok; ++i) ok = enqueue();
    const bool host_kept_up = ok && cudaEventQuery(start) == cudaErrorNotReady;
    float ms = 0;
    if (ok && cudaEventRecord(end, stream) == cudaSuccess && cudaEventSynchronize(end) == cudaSuccess &&
        cudaEventElapsedTime(&ms, start, end) == cudaSuccess) {
      us = 1000.0 * ms / reps;
    }
    (void)cudaGetLastError();  // cudaErrorNotReady from the query is not an error
    if (!ok || host_kept_up) break;
  }
  clean();
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(end);
  return us;
}

int PickFastest(const std::vector<double>& us) {
  double best = -1;
  for (double t : us)
    if (t >= 0 && (best < 0 || t < best)) best = t;
  if (best < 0) return -1;
  for (size_t i = 0; i < us.size(); ++i)
    if (us[i] >= 0 && us[i] <= best * 1.03) return static_cast<int>(i);
  return -1;
}

ScratchBuffers::~ScratchBuffers() {
  for (void* p : blocks_) DeviceFree(allocator_, p);
  (void)cudaGetLastError();
}

Result<void*> ScratchBuffers::Get(uint64_t bytes) {
  blocks_.reserve(blocks_.size() + 1);  // the push_back below cannot fail once the block exists
  KEEL_ASSIGN_OR_RETURN(void* p, DeviceMalloc(allocator_, bytes, 256, "for autotuning"));
  blocks_.push_back(p);
  if (cudaMemset(p, 0, bytes == 0 ? 1 : bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    return DeviceError("cudaMemset of an autotuning buffer failed");
  }
  return p;
}

// ---- problem keys and the tuning file ----------------------------------------

namespace {

std::string Dims(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

// cudnnConvolutionFwdAlgo_t by value (the cuDNN ABI fixes these numbers).
constexpr const char* kConvAlgoNames[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM",     "DIRECT",
                                          "FFT",           "FFT_TILING",            "WINOGRAD", "WINOGRAD_NONFUSED"};
constexpr int64_t kNumConvAlgos = sizeof kConvAlgoNames / sizeof kConvAlgoNames[0];
// cudnnConvolutionBwdDataAlgo_t by value (cudnn.conv_transpose).
constexpr const char* kConvDataAlgoNames[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
constexpr int64_t kNumConvDataAlgos = sizeof kConvDataAlgoNames / sizeof kConvDataAlgoNames[0];

// A convolution kind's algorithm names ("conv" or "conv_transpose").
const char* const* AlgoNames(std::string_view kind, int64_t* count) {
  *count = kind == "conv" ? kNumConvAlgos : kNumConvDataAlgos;
  return kind == "conv" ? kConvAlgoNames : kConvDataAlgoNames;
}

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, static_cast<uint64_t>(c - '0'), &v)) return false;
  }
  *out = v;
  return true;
}

bool ParseHexWords(std::string_view s, std::vector<int64_t>* out) {
  if (s.size() != 16 * kGemmAlgoWords) return false;
  for (size_t w = 0; w < kGemmAlgoWords; ++w) {
    uint64_t v = 0;
    for (size_t i = 0; i < 16; ++i) {
      const char c = s[16 * w + i];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return false;
      v = (v << 4) | static_cast<uint64_t>(d);
    }
    out->push_back(static_cast<int64_t>(v));
  }
  return true;
}

std::vector<std::string_view> SplitSpaces(std::string_view line) {
  std::vector<std::string_view> t;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) t.push_back(line.substr(i, j - i));
    i = j;
  }
  return t;
}

// The problem kind of a key "<device> <problem>": "conv", "conv_transpose" or
// "gemm" (else empty).
std::string_view Kind(std::string_view problem) {
  const size_t bar = problem.find('|');
  const std::string_view k = problem.substr(0, bar);
  return bar != std::string_view::npos && (k == "conv" || k == "conv_transpose" || k == "gemm") ? k
                                                                                                  : std::string_view();
}

// "" for f32 (keys as before half support), else "|<dtype name>".
std::string DTypeSegment(DataType dtype) {
  return dtype == DataType::kF32 ? std::string() : std::string("|") + DataTypeName(dtype);
}

}  // namespace

std::string ConvProblemKey(const std::vector<int64_t>& x, const std::vector<int64_t>& w, const std::vector<int64_t>& y,
                           const std::vector<int64_t>& pads, const std::vector<int64_t>& strides,
                           const std::vector<int64_t>& dilations, int64_t group, bool bias, bool residual,
                           int act_kind, bool tf32, DataType dtype, bool nhwc, bool transposed) {
  return std::string(transposed ? "conv_transpose|" : "conv|") + Dims(x) + Dims(w) + Dims(y) + Dims(pads) +
         Dims(strides) + Dims(dilations) + "|g" + std::to_string(group) + "|b" + std::to_string(bias ? 1 : 0) + "|r" + std::to_string(residual ? 1 : 0) +
         "|a" + std::to_string(act_kind) + (nhwc ? "|nhwc" : "") + DTypeSegment(dtype) + "|tf32" +
         std::to_string(tf32 ? 1 : 0);
}

std::string GemmProblemKey(int64_t m, int64_t n, int64_t k, int64_t batch, int64_t trans_a, int64_t trans_b,
                           int64_t stride_a, int64_t stride_b, const std::string& bias_mode, bool has_bias,
                           bool has_residual, const std::string& epilogue, double alpha, double beta, bool tf32,
                           DataType dtype, bool f32_out) {
  return "gemm|" + std::to_string(m) + "," + std::to_string(n) + "," + std::to_string(k) + "," +
         std::to_string(batch) + "," + std::to_string(trans_a) + std::to_string(trans_b) + "," +
         std::to_string(stride_a) + "," + std::to_string(stride_b) + "|" + bias_mode + std::to_string(has_bias ? 1 : 0) +
         (has_residual ? "+res" : "") + "|" + epilogue + "|" + std::to_string(alpha) + "," + std::to_string(beta) + DTypeSegment(dtype) + (f32_out && dtype != DataType::kF32 ? "|to_f32" : "") + "|tf32" +
         std::to_string(tf32 ? 1 : 0);
}

std::string TuningKey(int compute_capability, const char* library, uint64_t library_version,
                      const std::string& problem) {
  return "sm" + std::to_string(compute_capability) + "-" + library + std::to_string(library_version) + " " + problem;
}

Result<TuningTable> ParseTuning(std::string_view text, const std::string& path) {
  TuningTable table;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto bad = [&](const std::string& what) {
      return InvalidArgument("tuning file " + path + " line " + std::to_string(line_no) + ": " + what);
    };
    const std::vector<std::string_view> tok = SplitSpaces(line);
    if (tok.empty() || tok[0][0] == '#') continue;
    if (tok.size() < 3) return bad("expected \"<device> <problem> <choice...>\"");
    const std::string_view kind = Kind(tok[1]);
    if (kind.empty()) {
      return bad("unknown problem \"" + std::string(tok[1].substr(0, 40)) + "\" (conv|..., conv_transpose|... or gemm|...)");
    }
    const bool conv = kind != "gemm";
    std::map<std::string_view, std::string_view> fields;
    for (size_t i = 2; i < tok.size(); ++i) {
      const size_t eq = tok[i].find('=');
      if (eq == std::string_view::npos || eq == 0) return bad("expected name=value, got \"" + std::string(tok[i]) + "\"");
      if (!fields.emplace(tok[i].substr(0, eq), tok[i].substr(eq + 1)).second) {
        return bad("field " + std::string(tok[i].substr(0, eq)) + " appears twice");
      }
    }
    auto field = [&](const char* name) -> std::string_view {
      auto it = fields.find(name);
      return it == fields.end() ? std::string_view() : it->second;
    };
    const std::vector<const char*> required =
        conv ? std::vector<const char*>{"algo", "mode", "workspace"} : std::vector<const char*>{"workspace", "algo"};
    // A forward convolution's engine verdict (library_calls_engine_choice.h), when recorded.
    const std::vector<const char*> optional =
        kind == "conv" ? std::vector<const char*>{"engine", "knobs"} : std::vector<const char*>{};
    for (const auto& [name, value] : fields) {
      bool ok = false;
      for (const char* a : required) ok = ok || name == a;
      for (const char* a : optional) ok = ok || name == a;
      if (!ok) return bad("unknown field \"" + std::string(name) + "\" for a " + std::string(kind) + " problem");
    }
    for (const char* a : required) {
      if (field(a).empty()) return bad(std::string("missing field ") + a + "=");
    }
    uint64_t ws = 0;
    if (!ParseU64(field("workspace"), &ws) || ws > (uint64_t{1} << 62)) {
      return bad("workspace must be a byte count, got \"" + std::string(field("workspace")) + "\"");
    }
    std::vector<int64_t> value;
    if (conv) {
      int64_t algo = -1, count = 0;
      const char* const* names = AlgoNames(kind, &count);
      for (int64_t a = 0; a < count; ++a) {
        if (field("algo") == names[a]) algo = a;
      }
      if (algo < 0) return bad("unknown cuDNN algorithm \"" + std::string(field("algo")) + "\"");
      const std::string_view mode = field("mode");
      if ((mode != "fused" || kind != "conv") && mode != "conv+epilogue") {
        return bad(std::string("mode must be ") + (kind == "conv" ? "fused or " : "") + "conv+epilogue, got \"" +
                   std::string(mode) + "\"");
      }
      value = {algo, mode == "fused" ? 0 : 1, static_cast<int64_t>(ws)};
      if (fields.count("engine") != 0 || fields.count("knobs") != 0) {
        std::vector<int64_t> tail;
        std::string why;
        if (!cuda_lib::ParseEngineTuning(std::string(field("engine")), fields.count("knobs") != 0,
                                         std::string(field("knobs")), &tail, &why)) {
          return bad(why);
        }
        value.insert(value.end(), tail.begin(), tail.end());
      }
    } else {
      value.push_back(static_cast<int64_t>(ws));
      if (!ParseHexWords(field("algo"), &value)) {
        return bad("algo must be " + std::to_string(16 * kGemmAlgoWords) + " lowercase hex digits");
      }
    }
    std::string key = std::string(tok[0]) + " " + std::string(tok[1]);
    if (!table.emplace(std::move(key), std::move(value)).second) return bad("a second entry for the same problem");
  }
  return table;
}

std::string FormatTuning(const TuningTable& table) {
  std::string out =
      "# keel CUDA tuning file (vm/cuda/autotune.h): <device> <problem> <choice>, one problem per line.\n";
  for (const auto& [key, v] : table) {
    const size_t space = key.find(' ');
    if (space == std::string::npos) continue;
    const std::string_view kind = Kind(std::string_view(key).substr(space + 1));
    int64_t count = 0;
    const char* const* names = kind.empty() || kind == "gemm" ? nullptr : AlgoNames(kind, &count);
    std::string engine;  // the engine verdict's fields (forward convolutions)
    if (names != nullptr && v.size() >= cuda_lib::kConvTuningLegacyValues && v[0] >= 0 && v[0] < count &&
        (v[1] == 1 || (v[1] == 0 && kind == "conv")) && v[2] >= 0 && cuda_lib::EngineTuningText(v, &engine) &&
        (engine.empty() || kind == "conv")) {
      out += key + " algo=" + names[v[0]] + " mode=" + (v[1] == 0 ? "fused" : "conv+epilogue") +
             " workspace=" + std::to_string(v[2]) + engine + "\n";
    } else if (kind == "gemm" && v.size() == 1 + kGemmAlgoWords && v[0] >= 0) {
      out += key + " workspace=" + std::to_string(v[0]) + " algo=";
      for (size_t i = 1; i < v.size(); ++i) {
        char buf[17];
        std::snprintf(buf, sizeof buf, "%016" PRIx64, static_cast<uint64_t>(v[i]));
        out += buf;
      }
      out += "\n";
    }
  }
  return out;
}

Result<TuningTable> ReadTuningFile(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return TuningTable{};
  std::ifstream in(path, std::ios::binary);
  if (!in) return IoError("cannot read tuning file " + path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return IoError("cannot read tuning file " + path);
  return ParseTuning(text, path);
}

Status WriteTuningFile(const std::string& path, const TuningTable& table) {
  // A unique temporary name in the same folder (rename is atomic within a file
  // system): two processes tuning at once each replace the file whole.
  const std::string tmp = path + ".tmp." + std::to_string(static_cast<long long>(::getpid()));
  const std::string text = FormatTuning(table);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return IoError("cannot write tuning file " + tmp);
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return IoError("cannot rename " + tmp + " to tuning file " + path);
  }
  return Status::Ok();
}

}  // namespace keel::vm_internal
