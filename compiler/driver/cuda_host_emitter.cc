// compiler/driver/cuda_host_emitter.cc — see cuda_host_emitter.h.
//
// The whole program: the header comment, the preludes (cuda_host_emitter_prelude.cc,
// the VM's runtime kernels' source, cuda_host_emitter_prelude_library.cc), then the
// model-specific text in the VM's load order: globals, ResolveKernels
// (cuda_host_emitter_kernels.cc), AllocateArenas, UploadConstants, AllocateInputs,
// PinHostBlocks, Run (cuda_host_emitter_run.cc), WriteOutputs, Cleanup, main.
#include "compiler/driver/cuda_host_emitter.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <vector>

#include "common/constant_block.h"
#include "compiler/driver/cuda_host_emitter_internal.h"
#include "serialization/library_ops.h"

namespace keel::driver {
namespace cuda_host {

namespace lo = ser::library_ops;

std::string Lit(std::string_view s) {
  std::string r = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\' || c == '?') {
      r += '\\';
      r += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      r += buf;
    } else {
      r += static_cast<char>(c);
    }
  }
  return r + "\"";
}

// Text safe inside a // comment: no control characters, no backslash (a trailing
// one would continue the comment onto the next line).
std::string Com(std::string_view s) {
  std::string r;
  for (unsigned char c : s) r += (c < 0x20 || c == 0x7f || c == '\\') ? '?' : static_cast<char>(c);
  return r;
}

std::string Str(const flatbuffers::String* s) { return s != nullptr ? s->str() : std::string(); }

std::vector<int64_t> Shape(const flatbuffers::Vector<int64_t>* v) {
  return v != nullptr ? std::vector<int64_t>(v->begin(), v->end()) : std::vector<int64_t>();
}

std::string ShapeText(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

uint64_t ByteSize(const std::vector<int64_t>& shape, fb::DType dtype) {
  uint64_t n = ser::DTypeSize(ser::FromFb(dtype));
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);  // verified by ReadExecutable
  return n;
}

// Exact float/double literals (hex), so the program uses the VM's very values.
Result<std::string> FloatLit(double v, bool single) {
  if (!std::isfinite(v)) return Unsupported("non-finite library attribute value");
  char buf[64];
  if (single) {
    std::snprintf(buf, sizeof buf, "%af", static_cast<double>(static_cast<float>(v)));
  } else {
    std::snprintf(buf, sizeof buf, "%a", v);
  }
  return std::string(buf);
}

std::string U64(uint64_t v) { return std::to_string(v) + "ull"; }

bool IsCudnnConv(const std::string& library_op) {
  return library_op == lo::kCudnnConv2d || library_op == lo::kCudnnConvTranspose;
}

// Typed access to a library kernel's attributes with library_ops.h's defaults.

Status Emitter::Check() {
  const fb::Function& f = main_fn();
  if (root().kernels() != nullptr) {
    for (const fb::Kernel* k : *root().kernels()) {
      if (k->kind() == fb::KernelKind::cpu_generated) {
        return Unsupported("kernel " + Str(k->name()) +
                           " is a CPU kernel: --emit=cuda-host needs an executable compiled for --target cuda");
      }
      if (k->kind() == fb::KernelKind::cuda_generated) needs_library_ = true;
      // Library kernels take every tensor in one of the shared calls' element types
      // (vm/cuda/library_calls.h: f32, f16, bf16; keelc --precision fp16|bf16 makes the
      // half ones); u8 is the workspace. Anything else is refused by name and dtype
      // here, as the VM refuses it at load (vm/cuda/library_dtypes.h).
      if (k->kind() == fb::KernelKind::library && k->args() != nullptr) {
        std::optional<ser::DType> data, gemm_out;
        // keel.attention's mask (argument 3 of 5) may be f32 beside half data, and
        // cublas.gemm's bias, residual and Y (arguments 2 on) f32 beside half A and B,
        // all three in one type.
        const bool f32_mask = Str(k->library_op()) == lo::kKeelAttention && k->args()->size() == 5;
        const bool gemm = Str(k->library_op()) == lo::kCublasGemm;
        for (uint32_t ai = 0; ai < k->args()->size(); ++ai) {
          const fb::KernelArg* a = k->args()->Get(ai);
          const ser::DType t = a != nullptr ? ser::FromFb(a->dtype()) : ser::DType::kF32;
          if (t == ser::DType::kU8 || (f32_mask && ai == 3 && t == ser::DType::kF32)) continue;
          if (gemm && ai >= 2 && t == ser::DType::kF32 && gemm_out.value_or(t) == t) {
            gemm_out = t;
            continue;
          }
          if (t != ser::DType::kF32 && t != ser::DType::kF16 && t != ser::DType::kBF16) {
            return Unsupported("kernel " + Str(k->name()) + " (" + Str(k->library_op()) + ") takes " +
                               ser::DTypeName(t) +
                               " tensors; --emit=cuda-host emits f32, f16 and bf16 library calls only");
          }
          if (data && *data != t) {
            return Unsupported("kernel " + Str(k->name()) + " (" + Str(k->library_op()) + ") mixes " +
                               ser::DTypeName(*data) + " and " + ser::DTypeName(t) +
                               " tensors (library kernels take every tensor in one type)");
          }
          data = t;
        }
      }
    }
  }
  if (f.params() == nullptr || f.results() == nullptr) return InvalidExecutable("main has no params/results table");
  return Status::Ok();
}

// ---- load: arenas, constants, inputs, pinning (vm/interpreter.cc Init) ----

void Emitter::EmitLoad() {
  const fb::MemoryPlan* plan = root().memory_plan();
  const auto* arenas = plan != nullptr ? plan->arenas() : nullptr;
  const size_t na = arenas != nullptr ? arenas->size() : 0;
  o_ << "// One block per arena of the static plan (" << (na == 0 ? "none: every storage is dynamic" : "")
     << (na != 0 ? std::to_string(na) + " arena(s)" : "") << ").\n"
     << "[[maybe_unused]] static uint8_t* g_arena[" << std::max<size_t>(1, na) << "] = {};\n"
     << "static void AllocateArenas() {\n";
  for (size_t i = 0; i < na; ++i) {
    const fb::Arena* a = arenas->Get(static_cast<uint32_t>(i));
    const uint64_t align = std::max<uint64_t>(64, a->alignment());
    const bool dev = a->device() != fb::DeviceKind::cpu;
    o_ << "  g_arena[" << i << "] = static_cast<uint8_t*>(" << (dev ? "DeviceMalloc(" : "HostMalloc(")
       << U64(a->size()) << ", " << align << "));  // " << (dev ? "cuda" : "cpu") << " arena " << i << "\n";
    o_ << "  TraceSetup(\"arena " << i << "\", " << Lit(std::string(" allocate ") + (dev ? "cudaMalloc " : "aligned_alloc ") +
                                                     std::to_string(a->size()) + " bytes")
       << ");\n";
  }
  o_ << "}\n\n";

  const auto* consts = root().constants();
  const size_t nc = consts != nullptr ? consts->size() : 0;
  o_ << "// Constants (weights), uploaded once; read in place from the mapped model.keel: the data\n"
     << "// segment starts at byte " << root().data_segment_offset() << ", each offset below is within it.\n"
     << "// The device's constants share one block (common/constant_block.h, as the VM lays it out).\n"
     << "[[maybe_unused]] static uint8_t* g_const[" << std::max<size_t>(1, nc) << "] = {};\n"
     << "[[maybe_unused]] static uint8_t* g_const_block = nullptr;\n"
     << "static void UploadConstants(const MappedFile& keel) {\n"
     << "  const uint8_t* data = keel.data + " << U64(root().data_segment_offset()) << ";\n";
  std::vector<size_t> dev_ids;
  std::vector<common::ConstantSpan> spans;
  for (size_t i = 0; i < nc; ++i) {
    const fb::Constant* c = consts->Get(static_cast<uint32_t>(i));
    if (c->device() == fb::DeviceKind::cpu) continue;
    dev_ids.push_back(i);
    spans.push_back({c->offset(), c->size()});
  }
  const common::ConstantBlockLayout block = common::LayOutConstantBlock(spans);
  if (!dev_ids.empty()) {
    const uint64_t bytes = std::max<uint64_t>(block.bytes, 1);
    o_ << "  g_const_block = static_cast<uint8_t*>(DeviceMalloc(" << U64(bytes) << ", "
       << common::kDeviceConstantAlignment << "));\n"
       << "  TraceSetup(\"constants\", " << Lit(" allocate cudaMalloc " + std::to_string(bytes) + " bytes") << ");\n";
    for (const common::ConstantCopy& c : block.copies) {
      o_ << "  CUDA_CHECK(cudaMemcpyAsync(g_const_block + " << U64(c.dst) << ", data + " << U64(c.src) << ", "
         << U64(c.bytes) << ", cudaMemcpyHostToDevice, g_stream));\n"
         << "  TraceSetup(\"constants\", " << Lit(" copy cudaMemcpyAsync host->device " + std::to_string(c.bytes) + " bytes")
         << ");\n";
    }
  }
  size_t next_dev = 0;
  for (size_t i = 0; i < nc; ++i) {
    const fb::Constant* c = consts->Get(static_cast<uint32_t>(i));
    o_ << "  // constant " << i << ": " << Com(Str(c->name())) << " " << ShapeText(Shape(c->shape())) << " "
       << ser::DTypeName(ser::FromFb(c->dtype())) << "\n";
    if (c->device() == fb::DeviceKind::cpu) {
      o_ << "  g_const[" << i << "] = const_cast<uint8_t*>(data + " << U64(c->offset()) << ");  // in place\n";
    } else {
      o_ << "  g_const[" << i << "] = g_const_block + " << U64(block.offset[next_dev++]) << ";\n";
    }
  }
  o_ << "  CUDA_CHECK(cudaStreamSynchronize(g_stream));\n}\n\n";

  const auto* params = main_fn().params();
  o_ << "// The VM's input buffers: one per parameter, on the parameter's device.\n"
     << "static uint8_t* g_input[" << std::max<size_t>(1, params->size()) << "] = {};\n"
     << "static void AllocateInputs() {\n";
  for (uint32_t i = 0; i < params->size(); ++i) {
    const fb::TensorSig* s = params->Get(i);
    const uint64_t bytes = ByteSize(Shape(s->shape()), s->dtype());
    o_ << "  g_input[" << i << "] = static_cast<uint8_t*>("
       << (s->device() == fb::DeviceKind::cpu ? "HostMalloc(" : "DeviceMalloc(") << U64(bytes) << ", 64));  // "
       << Com(Str(s->name())) << " " << ShapeText(Shape(s->shape())) << "\n"
       << "  TraceSetup(" << Lit("input " + Str(s->name())) << ", "
       << Lit(std::string(" allocate ") + (s->device() == fb::DeviceKind::cpu ? "aligned_alloc " : "cudaMalloc ") +
              std::to_string(bytes) + " bytes")
       << ");\n";
  }
  o_ << "}\n\n"
     << "// Host blocks the GPU copies to and from are page-locked, so the copies are truly asynchronous.\n"
     << "static void PinHostBlocks() {\n";
  for (size_t i = 0; i < na; ++i) {
    const fb::Arena* a = arenas->Get(static_cast<uint32_t>(i));
    if (a->device() == fb::DeviceKind::cpu && a->size() > 0) {
      o_ << "  CUDA_CHECK(cudaHostRegister(g_arena[" << i << "], " << U64(a->size()) << ", cudaHostRegisterDefault));\n";
    }
  }
  for (uint32_t i = 0; i < params->size(); ++i) {
    const fb::TensorSig* s = params->Get(i);
    const uint64_t bytes = ByteSize(Shape(s->shape()), s->dtype());
    if (s->device() == fb::DeviceKind::cpu && bytes > 0) {
      o_ << "  CUDA_CHECK(cudaHostRegister(g_input[" << i << "], " << U64(bytes) << ", cudaHostRegisterDefault));\n";
    }
  }
  o_ << "}\n\n";
}

void Emitter::EmitOutputsAndMain() {
  const fb::Function& f = main_fn();
  const auto* params = f.params();
  const auto* results = f.results();
  const fb::MemoryPlan* plan = root().memory_plan();
  const size_t na = plan != nullptr && plan->arenas() != nullptr ? plan->arenas()->size() : 0;

  o_ << "// Inputs: from --input name=file (raw bytes), else keel-run's deterministic pattern.\n"
     << "static const ParamInfo kParams[] = {\n";
  for (uint32_t i = 0; i < params->size(); ++i) {
    const fb::TensorSig* s = params->Get(i);
    o_ << "    {" << Lit(Str(s->name())) << ", " << static_cast<int>(s->dtype()) << ", "
       << U64(ByteSize(Shape(s->shape()), s->dtype())) << ", " << (s->device() == fb::DeviceKind::cpu ? "true" : "false")
       << "},\n";
  }
  o_ << "    {nullptr, 0, 0, true}};\n"
     << "static void ReadInputs(const Options& o) { ReadInputsInto(o, kParams, " << params->size() << ", g_input); }\n\n"
     << "// Outputs: checksums as keel-run prints them, and <output-dir>/<name>.bin (keel-run's file names).\n"
     << "static const ResultInfo kResults[] = {\n";
  for (uint32_t j = 0; j < results->size(); ++j) {
    const fb::TensorSig* s = results->Get(j);
    o_ << "    {" << Lit(Str(s->name())) << ", " << Lit(ShapeText(Shape(s->shape()))) << ", "
       << static_cast<int>(s->dtype()) << ", " << U64(ByteSize(Shape(s->shape()), s->dtype())) << ", "
       << (s->device() == fb::DeviceKind::cpu ? "true" : "false") << "},\n";
  }
  o_ << "    {nullptr, nullptr, 0, 0, true}};\n"
     << "static void WriteOutputs(const Options& o) { WriteOutputsFrom(o, kResults, " << results->size()
     << ", g_output); }\n\n";

  // Cleanup: what the VM's destructors release.
  o_ << "static void Cleanup() {\n  CUDA_CHECK(cudaStreamSynchronize(g_stream));\n"
     << "  for (auto& d : g_live_dynamic) {\n    if (d.second) DeviceFree(d.first);\n    else std::free(d.first);\n  }\n";
  const auto* kernels = root().kernels();
  for (size_t i = 0; i < plans_.size(); ++i) {
    const KernelPlan& p = plans_[i];
    if (p.kind == fb::KernelKind::cuda_generated) continue;
    const std::string k = "k" + std::to_string(i);
    // The shared calls' own destructors (vm/cuda/library_calls_*.h), as the VM's classes.
    if (p.op == lo::kCublasGemm) {
      o_ << "  cl::DestroyGemmDescriptors(" << k << ".d);\n";
    } else if (IsCudnnConv(p.op)) {
      o_ << "  DestroyConvKernel(" << k << ");\n"
         << "  if (" << k << ".zero_bias) DeviceFree(" << k << ".zero_bias);\n";
    } else if (p.op == lo::kCudnnPool2d) {
      o_ << "  cl::DestroyPoolDescriptors(" << k << ".d);\n";
    } else if (p.op == lo::kKeelAttention) {
      o_ << "  DestroyAttentionKernel(" << k << ");\n";
    }
  }
  (void)kernels;
  o_ << "  if (g_cudnn) cudnnDestroy(g_cudnn);\n  if (g_lt) cublasLtDestroy(g_lt);\n"
     << "  if (g_workspace) CUDA_CHECK(cudaFree(g_workspace));\n"
     << "  if (g_module) CU_CHECK(cuModuleUnload(g_module));\n";
  for (size_t i = 0; i < na; ++i) {
    const fb::Arena* a = plan->arenas()->Get(static_cast<uint32_t>(i));
    if (a->device() == fb::DeviceKind::cpu) {
      if (a->size() > 0) o_ << "  CUDA_CHECK(cudaHostUnregister(g_arena[" << i << "]));\n";
      o_ << "  std::free(g_arena[" << i << "]);\n";
    } else {
      o_ << "  DeviceFree(g_arena[" << i << "]);\n";
    }
  }
  for (uint32_t i = 0; i < params->size(); ++i) {
    const fb::TensorSig* s = params->Get(i);
    if (s->device() == fb::DeviceKind::cpu) {
      if (ByteSize(Shape(s->shape()), s->dtype()) > 0) o_ << "  CUDA_CHECK(cudaHostUnregister(g_input[" << i << "]));\n";
      o_ << "  std::free(g_input[" << i << "]);\n";
    } else {
      o_ << "  DeviceFree(g_input[" << i << "]);\n";
    }
  }
  o_ << "  DeviceFree(g_const_block);\n";
  o_ << "  CUDA_CHECK(cudaStreamDestroy(g_stream));\n}\n\n";

  o_ << "int main(int argc, char** argv) {\n"
     << (root().allow_tf32() ? "  g_allow_tf32 = true;  // compiled with keelc --precision tf32 (--no-tf32 turns it off)\n" : "")
     << "  const Options o = ParseArgs(argc, argv, " << Lit(opt_.keel_path) << ", " << Lit(opt_.library_path) << ");\n"
     << "  const MappedFile keel = MapFile(o.keel);\n"
     << "  CheckExecutable(keel);\n"
     << (needs_library_ ? "  OpenLibrary(o.library, kLibraryId);\n" : "  // No generated kernels: no kernel library is needed.\n")
     << "  InitDevice();\n  LoadTuning(o.tuning_file);\n  InitLaunchModes();\n  InitEngines();\n"
     << "  g_count = &g_lib;\n  ResolveKernels();\n  g_count = &g_load;\n  AllocateArenas();\n"
     << "  UploadConstants(keel);\n  AllocateInputs();\n  PinHostBlocks();\n  ReadInputs(o);\n\n"
     << "  g_count = &g_run;\n  Run();\n  // Device-to-host copies into host outputs are asynchronous: wait before reading them.\n"
     << "  CUDA_CHECK(cudaStreamSynchronize(g_stream));\n  g_count = &g_load;\n"
     << "  WriteOutputs(o);\n"
     << "  std::printf(\"cudaMalloc at load (set-up: zero biases, arenas, constants, inputs): %\" PRIu64 \" calls, %\" PRIu64 \" bytes\\n\",\n"
     << "              g_load.mallocs, g_load.bytes);\n"
     << "  std::printf(\"cudaMalloc at load (library workspace): %\" PRIu64 \" calls, %\" PRIu64 \" bytes\\n\",\n"
     << "              g_lib.mallocs, g_lib.bytes);\n"
     << "  std::printf(\"cudaMalloc during the run: %\" PRIu64 \" calls, %\" PRIu64 \" bytes; cudaFree during the run: %\" "
        "PRIu64 \" calls\\n\",\n              g_run.mallocs, g_run.bytes, g_run.frees);\n"
     << "  if (g_tuning_given) {\n"
     << "    std::printf(\"tuning file: %\" PRIu64 \" of %\" PRIu64 \" library problems found (%\" PRIu64 \" in this model)\\n\",\n"
     << "                g_tuning_found, g_tuning_lookups, " << tuned_problems_ << " + g_tuning_attentions);\n  }\n"
     << "  Cleanup();\n  return 0;\n}\n";
}

Result<std::string> Emitter::Emit() {
  KEEL_RETURN_IF_ERROR(Check());
  const fb::MemoryPlan* plan = root().memory_plan();
  const std::string strategy = plan != nullptr ? Str(plan->strategy()) : std::string();
  const std::string id = Str(root().kernel_library_id());
  o_ << "// Generated by keelc --emit=cuda-host" << (opt_.source_name.empty() ? "" : " from " + Com(opt_.source_name))
     << ": a standalone host program\n"
     << "// making, in order, the calls the Keel VM makes for " << Com(opt_.keel_path) << " (memory plan \""
     << Com(strategy) << "\",\n"
     << "// " << (main_fn().instructions() ? main_fn().instructions()->size() : 0) << " instructions, "
     << (root().kernels() ? root().kernels()->size() : 0) << " kernels). Producer: " << Com(Str(root().producer()))
     << ".\n//\n"
     << "// Build: nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=compute_80\n"
     << "//          THIS.cu -o host -lcublasLt -lcudnn -lcuda -ldl\n"
     << "//        (the -gencode pair is how the VM builds its runtime kernels, embedded below: sm_90 code that\n"
     << "//        waits for its predecessor, so it may be launched as a programmatic dependent, plus PTX)\n"
     << "// Run:   ./host [--keel model.keel] [--library model.keel.so] [--input NAME=FILE ...]\n"
     << "//               [--output-dir DIR] [--trace] [--allow-tf32] [--tuning-file PATH]\n"
     << "// It runs eagerly, like keel-run --no-cuda-graph (keel-run's CUDA graph replays these same calls).\n"
     << "// With --trace it prints keel-run --trace's line per instruction, less times and addresses.\n"
     << "// Library choices: with --tuning-file, those keel-run --tuning-file recorded there for this GPU and\n"
     << "// library versions (the file is only read); the others, and all without the file, are the\n"
     << "// heuristics' choices, as the VM makes them with KEEL_CUDA_AUTOTUNE=0. It never times anything.\n"
     << "// cuDNN engines: a convolution (an attention) runs the backend-API engine configuration its tuning entry\n"
     << "// names (\"engine=keel\": Keel's attention kernel), where\n"
     << "// KEEL_CUDNN_ENGINES (read as keel-run reads it; default auto) has the VM consider engines.\n"
     << "// Launches: programmatic dependent launches where the VM makes them (sm_90+, KEEL_CUDA_PDL != 0).\n"
     << CudaHostPrelude() << "\n"
     << "// ================= the VM's runtime kernels (vm/cuda/runtime_kernels.cu, verbatim) =================\n"
     << CudaHostRuntimeKernelsSource() << "\n"
     << "// ================= the VM's library calls (vm/cuda/library_calls*.h, verbatim) =================\n"
     << CudaHostLibraryCallsSource() << "\n"
     << CudaHostCublasLtCallsSource() << "\n"
     << CudaHostEngineChoiceSource() << "\n"
     << CudaHostTuningSource() << "\n"
     << CudaHostCudnnCallsSource() << "\n"
     << CudaHostCudnnEngineCallsSource() << "\n"
     << CudaHostAttentionCallsSource() << "\n"
     << CudaHostCudnnAttentionCallsSource() << "\n"
     << CudaHostConvCallsSource() << "\n"
     << "// ================= the VM's own tensor-core kernels (vm/cuda/mma_primitives.cuh, attention_kernel.cuh,\n"
     << "// conv_kernel.cuh, verbatim) =================\n"
     << CudaHostMmaPrimitivesSource() << "\n"
     << CudaHostAttentionKernelSource() << "\n"
     << CudaHostConvKernelSource() << "\n"
     << CudaHostLibraryPrelude() << "\n"
     << "// ================= model-specific part =================\n\n"
     << "[[maybe_unused]] static const char kLibraryId[] = " << Lit(id) << ";\n\n"
     << "// The executable must be the one this program was generated from.\n"
     << "static void CheckExecutable(const MappedFile& keel) {\n"
     << "  if (keel.size < " << U64(root().data_segment_offset() + root().data_segment_size())
     << " || std::memcmp(keel.data + 8, \"KEEL\", 4) != 0) Die(\"not the executable this program was generated from\");\n"
     << "}\n\n";
  KEEL_RETURN_IF_ERROR(EmitKernels());
  EmitLoad();
  KEEL_RETURN_IF_ERROR(EmitRun());
  EmitOutputsAndMain();
  return o_.str();
}

}  // namespace cuda_host

Result<std::string> EmitCudaHostSource(std::span<const uint8_t> keel_file, const CudaHostOptions& options) {
  KEEL_ASSIGN_OR_RETURN(const ser::ExecutableView view, ser::ReadExecutable(keel_file));
  return cuda_host::Emitter(view, options).Emit();
}

Status WriteCudaHostProgram(const CudaHostOptions& options, const std::string& out_path) {
  std::ifstream in(options.keel_path, std::ios::binary);
  if (!in) return IoError("cannot read " + options.keel_path);
  // A vector of 8-byte words keeps the image aligned as ReadExecutable needs.
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<uint64_t> words((bytes.size() + 7) / 8);
  if (!bytes.empty()) std::memcpy(words.data(), bytes.data(), bytes.size());
  const std::span<const uint8_t> file(reinterpret_cast<const uint8_t*>(words.data()), bytes.size());
  Result<std::string> source = EmitCudaHostSource(file, options);
  if (!source.ok()) return source.status().WithContext(options.keel_path);
  const std::string tmp = out_path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(source->data(), static_cast<std::streamsize>(source->size()));
    if (!out) return IoError("cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, out_path, ec);
  if (ec) return IoError("cannot rename " + tmp + " to " + out_path + ": " + ec.message());
  return Status::Ok();
}

}  // namespace keel::driver
