// compiler/driver/model_lifetimes.cc — the front half of a compilation, stopping
// at buffer lifetimes (see the header).
#include "compiler/driver/model_lifetimes.h"

#include <memory>
#include <utility>

#include "compiler/driver/phase.h"
#include "compiler/lower/concat_in_place.h"

namespace keel::driver {

Result<lower::BufferAssignmentOptions> BufferOptionsForTarget(const std::string& target) {
  lower::BufferAssignmentOptions options;
  if (target == "cpu") {
    options.device = memory::Device::kCpu;
    options.alignment = 64;
    options.host_io = false;
  } else if (target == "cuda") {
    // Same rule as LowerProgram: a non-CPU device keeps params/results on the host.
    options.device = memory::Device::kCuda;
    options.alignment = 256;
    options.host_io = true;
  } else {
    return InvalidArgument("unknown target '" + target + "' (expected cpu or cuda)");
  }
  return options;
}

Result<std::vector<lower::StepKernel>> SelectStepKernels(const ir::Graph& graph, Backend& backend,
                                                         uint32_t alignment, size_t* num_views) {
  std::vector<lower::StepKernel> steps;
  size_t views = 0;
  int64_t index = 0;
  const std::vector<std::vector<uint64_t>> concat_offsets = lower::InPlaceConcatOffsets(graph, alignment);
  for (const ir::Node* node : graph.nodes()) {
    if (lower::IsViewOp(*node) || !concat_offsets[static_cast<size_t>(index)].empty()) {
      lower::StepKernel view;
      view.is_view = true;
      steps.push_back(std::move(view));
      ++views;
    } else {
      auto step = backend.SelectKernel(*node, index);
      if (!step.ok()) {
        return step.status().WithContext("node '" + node->name() + "' (" + node->op_type() + ")");
      }
      steps.push_back(std::move(step).value());
    }
    ++index;
  }
  if (num_views != nullptr) *num_views = views;
  return steps;
}

namespace {

Status Compute(const LifetimeOptions& options, ModelLifetimes& out) {
  KEEL_ASSIGN_OR_RETURN(lower::BufferAssignmentOptions assign, BufferOptionsForTarget(options.target));
  SetPhase("import");
  KEEL_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, frontend::ImportOnnx(options.model_path, options.import));
  // Workspaces come from the target's kernels; a build without that backend
  // falls back to the CPU kernels' scratch sizes (said in workspace_note).
  auto backend = CreateBackend(options.target, options.backend);
  out.workspace_backend = options.target;
  if (!backend.ok() && backend.status().code() == StatusCode::kUnsupported && options.target != "cpu") {
    out.workspace_note = "no " + options.target + " backend in this build (" + backend.status().message() +
                         "); workspace sizes from the cpu backend's kernels";
    out.workspace_backend = "cpu";
    backend = CreateBackend("cpu", options.backend);
  }
  if (!backend.ok()) return backend.status();
  SetPhase("passes");
  passes::PipelineOptions pipeline = options.pipeline;
  SetTargetRules(**backend, options.backend.layout, &pipeline);
  KEEL_RETURN_IF_ERROR(passes::RunDefaultPipeline(*graph, pipeline));
  SetPhase("kernel selection");
  KEEL_ASSIGN_OR_RETURN(std::vector<lower::StepKernel> steps,
                        SelectStepKernels(*graph, **backend, assign.alignment, nullptr));

  for (const lower::StepKernel& k : steps) assign.workspace_bytes.push_back(k.is_view ? 0 : k.workspace_bytes);
  assign.in_place_steps = lower::InPlaceCapableSteps(steps);  // exactly as LowerProgram decides
  SetPhase("buffer assignment");
  KEEL_ASSIGN_OR_RETURN(lower::BufferAssignment buffers, lower::AssignBuffers(*graph, assign));
  SetPhase("memory planning");

  out.tensors = std::move(buffers.buffers);
  out.num_steps = buffers.num_steps;
  for (const ir::Node* node : graph->nodes()) out.step_names.push_back(node->op_type() + ":" + node->name());
  return Status::Ok();
}

}  // namespace

Result<ModelLifetimes> ComputeModelLifetimes(const LifetimeOptions& options) {
  ModelLifetimes out;
  out.model_path = options.model_path;
  out.target = options.target;
  Status status = Compute(options, out);
  if (!status.ok()) return status.WithContext(options.model_path);
  return out;
}

}  // namespace keel::driver
