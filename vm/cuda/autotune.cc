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
#include "vm/cuda/library_calls_tuning.h"

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

Result<double> TimeInGraph(cudaStream_t stream, int reps, const std::function<bool()>& enqueue) {
  g_timings.fetch_add(1);
  cudaEvent_t start = nullptr, end = nullptr;
  if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&end) != cudaSuccess) {
    if (start != nullptr) (void)cudaEventDestroy(start);
    (void)cudaGetLastError();
    return DeviceError("cudaEventCreate failed while autotuning");
  }
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  bool ok = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
  if (ok) {
    for (int i = 0; i < reps && ok; ++i) ok = enqueue();
    // Ends the capture even after a failed call (which invalidates it).
    ok = cudaStreamEndCapture(stream, &graph) == cudaSuccess && ok && graph != nullptr;
  }
  ok = ok && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
  ok = ok && cudaGraphLaunch(exec, stream) == cudaSuccess && cudaStreamSynchronize(stream) == cudaSuccess;
  double us = -1;
  float ms = 0;
  if (ok && cudaEventRecord(start, stream) == cudaSuccess && cudaGraphLaunch(exec, stream) == cudaSuccess &&
      cudaEventRecord(end, stream) == cudaSuccess && cudaEventSynchronize(end) == cudaSuccess &&
      cudaEventElapsedTime(&ms, start, end) == cudaSuccess) {
    us = 1000.0 * ms / reps;
  }
  (void)cudaStreamSynchronize(stream);
  if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(end);
  (void)cudaGetLastError();  // a refused candidate must not poison later calls
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
  std::string error;
  if (!cuda_lib::ParseTuningText(text, path, &table, &error)) return InvalidArgument(error);
  return table;
}

std::string FormatTuning(const TuningTable& table) { return cuda_lib::FormatTuningText(table); }

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
