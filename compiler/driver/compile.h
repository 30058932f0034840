// compiler/driver/compile.h — the whole compilation: ONNX file → model.keel + model.keel.so.
//
//   ImportOnnx → passes (RunDefaultPipeline) → per node: view (view ops, in-place concats)
//   or Backend::SelectKernel
//   → LowerProgram (buffers, planner, checked plan, bytecode) → ExecutableWriter
//   → Backend::EmitLibrary
//
// The kernel library is written to `<output>.so` (model.keel → model.keel.so),
// the executable to `output`; both are replaced atomically-ish (each written to
// its final path only when complete). The library id recorded in both files is a
// hash of the target and of every kernel's IR, so a mismatched pair is refused at
// load. Output is deterministic: the same model and options give byte-identical files.
//
// Thread-safety: concurrent CompileModel calls on distinct outputs are safe.
// Errors: whatever stage failed, with the model path as context.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/driver/backend.h"
#include "compiler/frontend/onnx_importer.h"
#include "compiler/lower/lower_program.h"
#include "compiler/passes/pass_manager.h"
#include "keel/status.h"

namespace keel::driver {

struct CompileOptions {
  std::string model_path;
  std::string output_path;          // model.keel; the library goes to output_path + ".so"
  std::string target = "cpu";       // cpu | cuda
  std::string memory_plan = "auto";  // compiler/memory/auto_planner.h
  double planner_time_limit_seconds = 10.0;
  frontend::ImportOptions import;
  // Storage precision and half model I/O: pipeline.mixed_precision (keelc --precision,
  // --precision-io); the report lands in CompileSummary::precision.
  passes::PipelineOptions pipeline;
  BackendOptions backend;
};

struct CompileSummary {
  std::string model_path;
  std::string target;
  std::map<std::string, int> imported_ops;  // ONNX op histogram of the input model
  size_t graph_nodes = 0;                   // after the passes
  size_t num_kernels = 0;
  size_t num_invokes = 0;
  size_t num_views = 0;
  size_t num_instructions = 0;
  uint64_t constant_bytes = 0;
  std::string plan_strategy;
  uint64_t arena_bytes = 0;                 // total planned bytes
  uint64_t lower_bound_peak_live = 0;
  size_t num_device_allocations = 0;        // arenas + dynamic storages
  uint64_t executable_bytes = 0;
  std::string library_id;
  TargetInfo target_info;
  passes::MixedPrecisionReport precision;  // what the mixed-precision pass did
  double seconds = 0;
};

Result<CompileSummary> CompileModel(const CompileOptions& options);

// One screen: ops, kernels, constant bytes, arena bytes.
std::string FormatSummary(const CompileSummary& summary);


}  // namespace keel::driver
