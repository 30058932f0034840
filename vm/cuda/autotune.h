// vm/cuda/autotune.h — load-time measurement helpers for the library kernels.
//
// cuBLASLt and cuDNN heuristics pick an algorithm from a model of the GPU; on
// small and odd shapes (batch-1 inference, depthwise convolutions) that pick is
// often several times slower than the best one. The library kernels therefore
// time their candidates once, at VM creation, on scratch buffers, and keep the
// fastest (cached per VM by problem key, CudaDevice::FindTuning).
//
// Per-VM knobs (VmOptions; keel-run and keel-bench set them from the
// environment variables in parentheses):
//   cuda_autotune = false      keep the heuristics' first choice, no timing (KEEL_CUDA_AUTOTUNE=0)
//   cuda_autotune_log = true   print every candidate's time to stderr (KEEL_CUDA_AUTOTUNE_LOG=1)
//
// Timing makes choices that can differ from one process to the next (near
// ties). A tuning file (VmOptions::tuning_file) records them so that later
// processes — another keel-run, keel-bench, or the host program that
// keelc --emit=cuda-host writes — make exactly the same ones without timing.
//
// Tuning file format (plain text, one problem per line, '\n' line ends):
//   # comment            lines starting with '#' and blank lines are ignored
//   <device> <problem> <choice fields...>     single spaces between tokens
// <device>  "sm<cc>-cudnn<cudnnGetVersion()>" for cudnn.conv2d problems,
//           "sm<cc>-cublasLt<cublasLtGetVersion()>" for cublas.gemm problems
//           (e.g. "sm90-cudnn91400"). Entries of another device or library
//           version are kept in the file but never used on this one.
// <problem> ConvProblemKey / GemmProblemKey below (no spaces): the op, every
//           shape and attribute that the choice depends on, and the TF32 mode.
// choice    cudnn.conv2d: "algo=<NAME> mode=<fused|conv+epilogue> workspace=<bytes>"
//             NAME as cuDNN spells cudnnConvolutionFwdAlgo_t less its prefix
//             (IMPLICIT_GEMM, IMPLICIT_PRECOMP_GEMM, GEMM, DIRECT, FFT,
//             FFT_TILING, WINOGRAD, WINOGRAD_NONFUSED); fused = one
//             cudnnConvolutionBiasActivationForward call, conv+epilogue =
//             cudnnConvolutionForward then the VM's keel_bias_act kernel.
//             A forward convolution's engine verdict (VmOptions::cudnn_engines;
//             vm/cuda/library_calls_engine_choice.h) may follow:
//             "engine=legacy" (the algorithm above won) or "engine=<global
//             index> knobs=<type>:<value>,..." ("knobs=none"): the cuDNN
//             backend-API engine configuration that runs instead, named by
//             identity, which keelc --emit=cuda-host programs build too. An
//             entry without it records no competition (engines off, or a file
//             from before them): a VM that holds one times it and adds it.
//           cudnn.conv_transpose: the same fields (no engine), NAME as cuDNN spells
//             cudnnConvolutionBwdDataAlgo_t less its prefix (ALGO_0, ALGO_1,
//             FFT, FFT_TILING, WINOGRAD, WINOGRAD_NONFUSED), mode always
//             conv+epilogue (cudnnConvolutionBackwardData, then keel_bias_act).
//           cublas.gemm: "workspace=<bytes> algo=<128 hex digits>": the
//             opaque cublasLtMatmulAlgo_t (8 little-endian 64-bit words, each
//             as 16 hex digits), valid only for the library version named in
//             <device>.
// Lines are written sorted by device and problem (deterministic files).
//
// Thread-safety: as CudaDevice (one thread at a time). Errors: Status values
// naming the failing CUDA call; a candidate that fails to enqueue is not an
// error, it is skipped (TimeOnStream returns a negative time).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "keel/data_type.h"
#include "keel/memory.h"
#include "vm/cuda/library_calls_tuning.h"
#include "keel/status.h"

namespace keel::vm_internal {

// Mean device time in microseconds of one `enqueue` on `stream`: one untimed
// plain call (lazy library initialization), then `spin` (runtime kernel
// keel_spin) holds the GPU while the host queues `reps` calls, timed with
// cudaEvents: device time without per-call host overhead, as in the VM's graph
// replay. `enqueue` returns false when the candidate cannot run; the result is
// then -1 (and the stream's sticky error state is clean).
Result<double> TimeOnStream(cudaStream_t stream, CUfunction spin, int reps, const std::function<bool()>& enqueue);

// Mean device time in microseconds of one `enqueue` on `stream`, measured the
// way the VM runs it: `reps` calls captured into one CUDA graph, launched once
// untimed (lazy initialization) and once between two cudaEvents. Used for
// cuBLASLt: on an H100, timing its candidates with plain launches (as
// TimeOnStream does) left every later graph replay in the process slower
// (BERT-base fp16 at batch 8: 0.62 against 0.59 ms, docs/PRECISION.md "Timing
// cuBLASLt in graphs"); candidates timed inside graphs leave no such trace.
// (cuDNN keeps TimeOnStream: some of its algorithms hang when captured before
// they ever ran.) `enqueue` returns false when the candidate cannot run; the
// result is then -1, the stream is out of capture mode and its sticky error
// state is clean. Errors: kDeviceError when the events cannot be created.
Result<double> TimeInGraph(cudaStream_t stream, int reps, const std::function<bool()>& enqueue);

// How many times TimeOnStream or TimeInGraph ran in this process (tests: a VM created from a
// complete tuning file times nothing).
uint64_t TimingsSoFar();

// Index of the fastest candidate among `us` (negative entries are skipped),
// preferring the earliest (the heuristics' order) within 3% of the fastest, so
// that near-ties resolve the same way from one process to the next. -1 if none.
int PickFastest(const std::vector<double>& us);

// Device buffers for timing, zero-filled, freed with the object; from `allocator`
// (the VM's device allocator, vm/cuda/device_memory.h), which must outlive it.
class ScratchBuffers {
 public:
  explicit ScratchBuffers(const keel_allocator_t& allocator) : allocator_(allocator) {}
  ~ScratchBuffers();
  ScratchBuffers(const ScratchBuffers&) = delete;
  ScratchBuffers& operator=(const ScratchBuffers&) = delete;
  // A new zeroed buffer of `bytes` (at least 1); kOutOfMemory on failure.
  Result<void*> Get(uint64_t bytes);

 private:
  keel_allocator_t allocator_;
  std::vector<void*> blocks_;
};

// ---- problem keys and the tuning file ----------------------------------------

// cudnn.conv2d problem (1, 2 or 3 spatial dims: every dim of the kernel's own
// shapes, never cuDNN's lifted 1-D view): shapes X, W, Y, pads, strides,
// dilations, group, bias, residual, activation (0 none, 1 relu, 2 clip) and TF32
// mode, e.g. "conv|[1,3,224,224][64,3,3,3][1,64,111,111][0,0,0,0][2,2][1,1]|g1|b1|r0|a1|tf320"
// or, 3-D, "conv|[1,3,8,112,112][64,3,3,7,7][1,64,8,56,56][1,3,3,1,3,3][1,2,2][1,1,1]|g1|b0|r0|a1|tf320".
// A channels-last kernel (layout "nhwc") gives its stored shapes and a "|nhwc"
// segment after the activation: "...|a1|nhwc|f16|tf320". A cudnn.conv_transpose
// problem (`transposed`: X is the kernel's input, Y its output) has the same
// fields after "conv_transpose|" instead of "conv|".
std::string ConvProblemKey(const std::vector<int64_t>& x, const std::vector<int64_t>& w, const std::vector<int64_t>& y,
                           const std::vector<int64_t>& pads, const std::vector<int64_t>& strides,
                           const std::vector<int64_t>& dilations, int64_t group, bool bias, bool residual,
                           int act_kind, bool tf32, DataType dtype = DataType::kF32, bool nhwc = false,
                           bool transposed = false);
// cublas.gemm problem, e.g. "gemm|1,1000,512,1,01,512,512000|row1||1.000000,1.000000|tf320":
// m,n,k,batch,trans_a trans_b,stride_a,stride_b | bias mode, has_bias[, "+res" with
// a residual: keys without one are unchanged] | epilogue |
// alpha,beta (std::to_string) | TF32 mode.
// Both keys name the problem's element type (vm/cuda/library_dtypes.h) as a
// segment before the TF32 mode when it is not f32, e.g. "...|a1|f16|tf320" or
// "...|1.000000,1.000000|bf16|tf320", and "|bf16|to_f32" for a half GEMM writing
// f32 (`f32_out` with a half `dtype`): f32 and half problems never share an entry,
// and f32 keys are unchanged from before half support (older tuning files keep
// serving f32 problems; the TF32 segment stays last, which the CUDA host-program
// emitter relies on).
std::string GemmProblemKey(int64_t m, int64_t n, int64_t k, int64_t batch, int64_t trans_a, int64_t trans_b,
                           int64_t stride_a, int64_t stride_b, const std::string& bias_mode, bool has_bias,
                           bool has_residual, const std::string& epilogue, double alpha, double beta, bool tf32,
                           DataType dtype = DataType::kF32, bool f32_out = false);
// "<device> <problem>": the key of a tuning entry. `library` is "cudnn" or "cublasLt".
std::string TuningKey(int compute_capability, const char* library, uint64_t library_version,
                      const std::string& problem);

// Choices by full key. Values: conv {algo, mode (0 fused, 1 conv+epilogue),
// workspace} and the engine verdict when recorded (library_calls_engine_choice.h);
// gemm {workspace, the 8 words of cublasLtMatmulAlgo_t}.
using TuningTable = cuda_lib::TuningEntries;
constexpr size_t kGemmAlgoWords = cuda_lib::kTuningGemmAlgoWords;  // sizeof(cublasLtMatmulAlgo_t) / 8 (checked in cublas_kernels.cc)

// Parses a tuning file's text. Errors: kInvalidArgument "tuning file <path> line
// <n>: <what>" for the first malformed line (token count, unknown problem kind,
// unknown or missing field, bad number, duplicate entry).
Result<TuningTable> ParseTuning(std::string_view text, const std::string& path);
// The file's text for `table` (a header comment, then one sorted line per entry).
// Entries whose value does not fit their kind are left out.
std::string FormatTuning(const TuningTable& table);
// Reads and parses `path`; a file that does not exist is an empty table.
// Errors: kIoError when it exists but cannot be read; ParseTuning's.
Result<TuningTable> ReadTuningFile(const std::string& path);
// Writes `table` to `path` atomically (a temporary file in the same folder,
// renamed over it). Errors: kIoError naming the path.
Status WriteTuningFile(const std::string& path, const TuningTable& table);

}  // namespace keel::vm_internal
