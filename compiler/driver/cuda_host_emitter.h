// compiler/driver/cuda_host_emitter.h — keelc --emit=cuda-host: a compiled CUDA
// executable (model.keel + model.keel.so) as a standalone, readable C++/CUDA host
// program that makes, in order, exactly the device calls the Keel VM makes for it.
//
// The program is generated from the finished executable, read back and verified
// with serialization/executable_reader.h (the single source of truth), so it
// mirrors the bytecode instruction by instruction:
//   * load, in the VM's order (vm/interpreter.cc Init): device and stream
//     (CudaDevice::Init); every kernel of the kernel table — generated kernels from
//     the library's embedded cubin (PTX fallback) with cuModuleLoadData /
//     cuModuleGetFunction, library kernels through the VM's own cuBLASLt / cuDNN
//     calls (vm/cuda/library_calls*.h: descriptors, heuristic queries, math
//     modes, launches; compiled into the VM and pasted verbatim into the
//     program) with literal attributes, in f32, f16 or bf16 as the executable
//     says (keelc --precision fp16|bf16), and the VM's workspace growth; one
//     allocation per arena; one cudaMalloc + cudaMemcpyAsync per device constant,
//     read from the mapped model.keel at offsets baked in as literals (no
//     FlatBuffers dependency); the input buffers; page-locking of host blocks;
//   * the run: one block per instruction, commented with its index, opcode and
//     debug_name (the graph node): arena slices, cudaMalloc/cudaFree of dynamic
//     storages exactly where alloc_storage/free_storage are, views, copies
//     (cudaMemcpyAsync on the one stream), cuLaunchKernel with the kernel table's
//     grid/block/shared bytes, cublasLtMatmul / cuDNN calls;
//   * outputs written as <output-dir>/<name>.bin (keel-run's names), a checksum
//     line per output, and a summary of cudaMalloc calls/bytes at load and during
//     the run. With --trace the program prints keel-run --trace's line for every
//     instruction, without times and addresses, so the two can be diffed.
//   * the library kernels as the VM runs them now: cudnn.conv2d as cuDNN's fused
//     call or cudnnConvolutionForward + the VM's own epilogue kernel
//     (keel_bias_act_f32[x4] / _f16 / _bf16: vm/cuda/runtime_kernels.cu, pasted verbatim into the
//     program and compiled by nvcc), or the cuDNN backend-API engine configuration the VM
//     chose (vm/cuda/library_calls_cudnn_engine.h) + that epilogue, cuBLASLt with the
//     VM's algorithm; generated
//     and runtime kernels launched as programmatic dependents (cuLaunchKernelEx)
//     exactly where the VM does (sm_90+, the library's keel_cuda_grid_dependency,
//     KEEL_CUDA_PDL != 0), plain launches otherwise.
// Choices: with --tuning-file PATH (vm/cuda/autotune.h's format, read only) the
// program uses what keel-run --tuning-file recorded there for this GPU and library
// versions (a convolution's cuDNN engine by its identity); without it, or for
// problems the file lacks, the heuristics' choices — what the VM makes with
// KEEL_CUDA_AUTOTUNE=0 (no engine competition). The program never times anything.
// It runs eagerly (keel-run's --no-cuda-graph); keel-run's default CUDA graph
// replays the same recorded calls.
//
// Building the output: nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90
//   -gencode arch=compute_80,code=compute_80 model_host.cu -o model_host -lcublasLt
//   -lcudnn -lcuda -ldl (with -L for the cuDNN and the libcuda stub folders as
//   needed). The -gencode pair is the VM's own for its runtime kernels: the sm_90
//   code waits for its predecessor (griddepcontrol.wait), which programmatic
//   launches need; the epilogue's arithmetic is exactly rounded, so results do not
//   depend on the SASS.
//
// The implementation is split by concept: cuda_host_emitter_internal.h lists the files.
// Errors: kInvalidExecutable (via ReadExecutable) for a malformed file or library
// attributes the VM would refuse; kUnsupported for executables the program cannot
// mirror (CPU-generated kernels: CPU-target executables; unknown library ops;
// library kernels on types other than f32/f16/bf16 or mixing types).
// Output is deterministic (a function of the executable bytes and the options).
// Thread-safety: reentrant; no shared state.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "keel/status.h"

namespace keel::driver {

struct CudaHostOptions {
  // Defaults baked into the program for its --keel and --library arguments.
  std::string keel_path = "model.keel";
  std::string library_path = "model.keel.so";
  // Shown in the header comment (e.g. the ONNX model it came from); optional.
  std::string source_name;
};

// The program's source text for the executable file image `keel_file` (the whole
// model.keel, 8-byte aligned, as ReadExecutable needs). kUnsupported, naming the
// kernel and the dtype, for a library kernel whose tensors are not f32 (the
// f16/bf16 library calls of --precision fp16|bf16 run in the VM only).
Result<std::string> EmitCudaHostSource(std::span<const uint8_t> keel_file, const CudaHostOptions& options);

// Reads options.keel_path, emits, and writes `out_path` (written to a temporary
// name first, renamed when complete). File errors are kIoError naming the path;
// emission errors as EmitCudaHostSource, with the path as context.
Status WriteCudaHostProgram(const CudaHostOptions& options, const std::string& out_path);

// The model-independent first part of every emitted program (cuda_host_emitter_prelude.cc;
// the runtime kernels and the library-kernel prelude follow it).
const char* CudaHostPrelude();

}  // namespace keel::driver
