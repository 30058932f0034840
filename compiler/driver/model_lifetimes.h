// compiler/driver/model_lifetimes.h — a model's planned-buffer lifetimes for a
// target, without compiling kernels or writing files.
//
// The memory planners (compiler/memory) take one TensorLifetime per buffer. The
// compiler produces that vector inside LowerProgram; tools that only want to
// study memory plans (keel-plan, benchmarks) need the same vector without paying
// for LLVM emission or files. This file runs the front half of CompileModel:
//
//   ImportOnnx → RunDefaultPipeline → per node: view or Backend::SelectKernel
//   (for its workspace bytes) → lower::AssignBuffers(target's options)
//
// so the lifetimes are exactly the ones `keelc` would plan for that target.
// Target options: cpu → alignment 64, device cpu; cuda → alignment 256, device
// cuda, host_io (params/results on the host, every intermediate on the device).
//
// The CUDA backend may be missing from a build (CreateBackend("cuda") answers
// Unsupported); workspace sizes are then taken from the CPU backend's kernels and
// ModelLifetimes::workspace_note says so (the buffers, sizes and lifetimes of
// tensors do not depend on the backend; only per-step scratch does).
//
// Thread-safety: concurrent calls are safe (each builds its own graph/backend).
// Errors: whatever stage failed (NotFound for a missing model, Unsupported for an
// op, InvalidArgument for an unknown target), with the model path as context.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/driver/backend.h"
#include "compiler/frontend/onnx_importer.h"
#include "compiler/ir/graph.h"
#include "compiler/lower/buffer_assignment.h"
#include "compiler/lower/lower_program.h"
#include "compiler/memory/planner.h"
#include "compiler/passes/pass_manager.h"
#include "keel/status.h"

namespace keel::driver {

struct LifetimeOptions {
  std::string model_path;
  std::string target = "cpu";  // cpu | cuda
  frontend::ImportOptions import;
  passes::PipelineOptions pipeline;
  BackendOptions backend;
};

struct ModelLifetimes {
  std::string model_path;
  std::string target;
  // One per planned buffer, in lower::AssignBuffers' order (by producing step,
  // then output index); these are what LowerProgram hands to the planner.
  std::vector<memory::TensorLifetime> tensors;
  int32_t num_steps = 0;               // graph nodes after the passes
  std::vector<std::string> step_names; // node name of each step ("op_type:name")
  std::string workspace_backend;       // backend whose kernels sized workspaces
  std::string workspace_note;          // non-empty when it is not the target's own
};

// The buffer-assignment options of a target (see the file comment); InvalidArgument
// for targets other than cpu and cuda.
Result<lower::BufferAssignmentOptions> BufferOptionsForTarget(const std::string& target);

// Per node of graph.nodes(): a view step for view ops and for the concats that are
// in place with buffers of `alignment` bytes (lower/concat_in_place.h: the same
// alignment buffer assignment will use), else backend.SelectKernel.
// `num_views` (may be null) receives the number of view steps. Shared with
// CompileModel so both see the same steps. Errors name the failing node.
Result<std::vector<lower::StepKernel>> SelectStepKernels(const ir::Graph& graph, Backend& backend,
                                                         uint32_t alignment, size_t* num_views);

Result<ModelLifetimes> ComputeModelLifetimes(const LifetimeOptions& options);

}  // namespace keel::driver
