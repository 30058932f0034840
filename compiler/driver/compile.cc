// compiler/driver/compile.cc — see the header.
#include "compiler/driver/compile.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "common/file_digest.h"
#include "compiler/driver/model_lifetimes.h"
#include "compiler/driver/phase.h"
#include "compiler/lower/buffer_assignment.h"
#include "compiler/memory/plan_report.h"
#include "serialization/executable_writer.h"

namespace keel::driver {
namespace {

using memory::HumanBytes;

// FNV-1a, 64-bit: a stable content hash for the library id (not security).
uint64_t Fnv1a(const std::string& text, uint64_t hash = 1469598103934665603ull) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

Status Compile(const CompileOptions& options, CompileSummary& summary) {
  SetPhase("import");
  KEEL_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph, frontend::ImportOnnx(options.model_path, options.import));
  for (const ir::Node* node : graph->nodes()) ++summary.imported_ops[node->op_type()];
  SetPhase("passes");
  KEEL_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, CreateBackend(options.target, options.backend));
  passes::PipelineOptions pipeline = options.pipeline;
  pipeline.mixed_precision_report = &summary.precision;
  summary.precision.precision = pipeline.mixed_precision.precision;
  SetTargetRules(*backend, options.backend.layout, &pipeline);
  KEEL_RETURN_IF_ERROR(passes::RunDefaultPipeline(*graph, pipeline));
  summary.graph_nodes = graph->num_nodes();

  SetPhase("kernel selection");
  // Shared with ComputeModelLifetimes (keel-plan), so both plan the same buffers.
  const TargetInfo target = backend->target();
  KEEL_ASSIGN_OR_RETURN(std::vector<lower::StepKernel> steps,
                        SelectStepKernels(*graph, *backend, target.alignment, &summary.num_views));

  summary.target_info = target;
  summary.library_id = "keel-" + Hex(Fnv1a(backend->Fingerprint(), Fnv1a(target.arch + "|" + target.features)));

  ser::ExecutableWriter writer;
  writer.SetProducer("keelc 0.1");
  writer.SetKernelLibraryId(summary.library_id);
  // Format 1.2: TF32 becomes the VM's default for this program's library GEMM/conv.
  writer.SetAllowTf32(options.pipeline.mixed_precision.precision == passes::Precision::kTf32);
  writer.AddTarget(ser::DeviceKind::kCpu, backend->name() == "cpu" ? target.arch : "host", backend->name() == "cpu" ? target.features : "");
  if (target.device != ser::DeviceKind::kCpu) writer.AddTarget(target.device, target.arch, target.features);

  lower::ProgramOptions program;
  program.memory_plan = options.memory_plan;
  program.device = target.device;
  program.alignment = target.alignment;
  program.planner_time_limit_seconds = options.planner_time_limit_seconds;
  SetPhase("lowering and memory planning");
  KEEL_ASSIGN_OR_RETURN(lower::ProgramStats stats, lower::LowerProgram(*graph, steps, program, writer));

  summary.num_kernels = stats.num_kernels;
  summary.num_invokes = stats.num_invokes;
  summary.num_instructions = stats.num_instructions;
  summary.constant_bytes = stats.constant_bytes;
  summary.plan_strategy = stats.plan.strategy;
  summary.arena_bytes = stats.plan.TotalBytes();
  summary.lower_bound_peak_live = memory::PeakLiveLowerBound(stats.lifetimes);
  summary.num_device_allocations = stats.plan.arenas.size();
  for (const memory::Storage& s : stats.plan.storages) summary.num_device_allocations += s.arena < 0 ? 1 : 0;

  SetPhase("kernel code generation");
  KEEL_RETURN_IF_ERROR(backend->EmitLibrary(summary.library_id, options.output_path + ".so"));
  SetPhase("writing the executable");
  // The VM checks the library against this before dlopen (format 1.1).
  KEEL_ASSIGN_OR_RETURN(common::FileDigest digest, common::DigestPath(options.output_path + ".so", "kernel library"));
  writer.SetKernelLibraryDigest(digest.size, digest.sha256);
  KEEL_RETURN_IF_ERROR(writer.WriteFile(options.output_path));
  SetPhase("done");
  std::error_code ec;
  summary.executable_bytes = std::filesystem::file_size(options.output_path, ec);
  return Status::Ok();
}

// The precision lines of the summary: what is stored in half, what stays f32 and why.
std::string FormatPrecision(const passes::MixedPrecisionReport& r) {
  std::ostringstream out;
  out << "  precision   " << passes::PrecisionName(r.precision);
  const ir::DType half = passes::HalfDType(r.precision);
  if (half == ir::DType::kF32) {
    out << (r.precision == passes::Precision::kTf32 ? " (f32 storage; TF32 allowed in library GEMM/conv)" : "") << "\n";
    return out.str();
  }
  const char* h = ir::DTypeName(half);
  out << ": " << r.half_constants << " weights (" << HumanBytes(r.half_constant_bytes) << ") and "
      << r.half_activations << " activations (" << HumanBytes(r.half_activation_bytes) << ", before fusion) in " << h
      << "; "
      << r.casts << " casts inserted\n";
  out << "              f32 kept: " << r.f32_constants << " weights (" << HumanBytes(r.f32_constant_bytes) << "), "
      << r.f32_activations << " activations (" << HumanBytes(r.f32_activation_bytes) << ")"
      << (r.half_io ? "; model inputs and outputs in " + std::string(h) : "; model inputs and outputs stay f32")
      << "\n";
  if (r.tanh_gelu > 0) {
    out << "              tanh Gelu x" << r.tanh_gelu << ": the erf form within 4.8e-4 (cuBLASLt's GELU epilogue)\n";
  }
  for (const auto& [op, kept] : r.kept_f32) {
    out << "              f32 " << op << " x" << kept.nodes << ": " << kept.reason << "\n";
  }
  return out.str();
}

}  // namespace

Result<CompileSummary> CompileModel(const CompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  CompileSummary summary;
  summary.model_path = options.model_path;
  summary.target = options.target;
  Status status = Compile(options, summary);
  if (!status.ok()) return status.WithContext(options.model_path);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

std::string FormatSummary(const CompileSummary& s) {
  std::ostringstream out;
  out << "keelc: " << s.model_path << " -> target " << s.target << " (" << s.target_info.arch << ")\n";
  out << "  ops in      ";
  int total = 0;
  for (const auto& [op, n] : s.imported_ops) total += n;
  out << total << " nodes:";
  for (const auto& [op, n] : s.imported_ops) out << " " << op << "x" << n;
  out << "\n";
  out << "  after passes " << s.graph_nodes << " nodes: " << s.num_invokes << " kernel calls (" << s.num_kernels
      << " distinct kernels), " << s.num_views << " views\n";
  out << "  program     " << s.num_instructions << " instructions\n";
  out << "  constants   " << HumanBytes(s.constant_bytes) << "\n";
  out << FormatPrecision(s.precision);
  char ratio[32];
  std::snprintf(ratio, sizeof(ratio), "%.3f", s.lower_bound_peak_live ? double(s.arena_bytes) / s.lower_bound_peak_live : 0.0);
  out << "  memory plan " << s.plan_strategy << ": " << HumanBytes(s.arena_bytes) << " in " << s.num_device_allocations
      << " allocation(s); peak-live lower bound " << HumanBytes(s.lower_bound_peak_live) << " (ratio " << ratio << ")\n";
  out << "  executable  " << HumanBytes(s.executable_bytes) << ", library id " << s.library_id << "\n";
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.2f", s.seconds);
  out << "  compiled in " << secs << " s\n";
  return out.str();
}

}  // namespace keel::driver
