// compiler/lower/lower_program.cc — see the header for the instruction layout.
#include "compiler/lower/lower_program.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "compiler/lower/buffer_assignment.h"

namespace keel::lower {

ser::DType ToSerDType(ir::DType dtype) { return dtype; }  // one type (keel/data_type.h)

namespace {

memory::Device ToPlanDevice(ser::DeviceKind device) {
  return device == ser::DeviceKind::kCuda ? memory::Device::kCuda : memory::Device::kCpu;
}
ser::DeviceKind ToSerDevice(memory::Device device) {
  return device == memory::Device::kCuda ? ser::DeviceKind::kCuda : ser::DeviceKind::kCpu;
}

std::string KernelKey(const ser::KernelDesc& k) {
  // Kernels are shared when everything the VM sees of them is identical.
  std::string key = k.name + "|" + std::to_string(static_cast<int>(k.kind)) + "|" + k.library_op;
  for (const auto& a : k.args) {
    key += "|" + std::to_string(static_cast<int>(a.dtype)) + ":" + std::to_string(static_cast<int>(a.access));
    for (int64_t d : a.shape) key += "," + std::to_string(d);
  }
  for (const auto& a : k.attrs) {
    key += "|" + a.key + "=" + a.str;
    for (int64_t v : a.ints) key += "," + std::to_string(v);
    for (double v : a.floats) key += "," + std::to_string(v);
  }
  return key + "|" + std::to_string(k.workspace_bytes);
}

// Emits instructions and tracks registers for one function.
class ProgramEmitter {
 public:
  ProgramEmitter(const ir::Graph& graph, const BufferAssignment& buffers, const memory::Plan& plan,
                 const ProgramOptions& options, ser::ExecutableWriter& writer)
      : graph_(graph), buffers_(buffers), plan_(plan), options_(options), writer_(writer) {}

  Result<ProgramStats> Emit(const std::vector<StepKernel>& kernels);

 private:
  uint32_t NewRegister() { return num_registers_++; }
  uint32_t StorageRegister(int32_t storage) { return storage_register_.at(storage); }
  Result<uint32_t> ConstantRegister(const ir::Value* value);
  // alloc_tensor of `shape`/`dtype` at buffer `buffer`'s placement plus `offset` bytes.
  uint32_t EmitTensor(int32_t buffer, const std::vector<int64_t>& shape, ser::DType dtype, const std::string& debug,
                      uint64_t offset = 0);
  Result<uint32_t> InputRegister(const ir::Value* value, const std::string& debug);

  const ir::Graph& graph_;
  const BufferAssignment& buffers_;
  const memory::Plan& plan_;
  const ProgramOptions& options_;
  ser::ExecutableWriter& writer_;
  ser::FunctionBuilder* fn_ = nullptr;

  uint32_t num_registers_ = 0;
  std::vector<uint32_t> storage_register_;
  std::unordered_map<const ir::Value*, uint32_t> value_register_;
  std::unordered_map<const ir::Value*, uint32_t> param_device_register_;  // CUDA: device copy of a param
  std::map<std::string, uint32_t> kernel_index_;
  ProgramStats stats_;
};

uint32_t ProgramEmitter::EmitTensor(int32_t buffer, const std::vector<int64_t>& shape, ser::DType dtype,
                                    const std::string& debug, uint64_t offset) {
  const memory::Placement& placement = plan_.placements.at(buffer);
  const uint32_t reg = NewRegister();
  fn_->AllocTensor(reg, StorageRegister(placement.storage), placement.offset + offset, shape, dtype, debug);
  return reg;
}

Result<uint32_t> ProgramEmitter::ConstantRegister(const ir::Value* value) {
  auto it = value_register_.find(value);
  if (it != value_register_.end()) return it->second;
  const ir::TensorData& data = *value->constant();
  if (static_cast<int64_t>(data.bytes.size()) != data.type.ByteSize()) {
    return Internal("constant '" + value->name() + "' holds " + std::to_string(data.bytes.size()) +
                    " bytes for type " + data.type.ToString());
  }
  const uint32_t index = writer_.AddConstantRef(value->name(), ToSerDType(data.type.dtype), data.type.shape,
                                                options_.device, std::span<const uint8_t>(data.bytes));
  stats_.constant_bytes += data.bytes.size();
  const uint32_t reg = NewRegister();
  fn_->LoadConst(reg, index, value->name());
  value_register_[value] = reg;
  return reg;
}

Result<uint32_t> ProgramEmitter::InputRegister(const ir::Value* value, const std::string& debug) {
  const ValueInfo& info = buffers_.values.at(value);
  switch (info.kind) {
    case ValueKind::kConstant: return ConstantRegister(value);
    case ValueKind::kParam: {
      if (options_.device == ser::DeviceKind::kCpu) return value_register_.at(value);
      auto it = param_device_register_.find(value);
      if (it == param_device_register_.end()) {
        return Internal("param '" + value->name() + "' has no device copy (" + debug + ")");
      }
      return it->second;
    }
    case ValueKind::kBuffer:
    case ValueKind::kView: {
      auto it = value_register_.find(value);
      if (it == value_register_.end()) return Internal("value '" + value->name() + "' used before its tensor");
      return it->second;
    }
  }
  return Internal("unknown value kind");
}

Result<ProgramStats> ProgramEmitter::Emit(const std::vector<StepKernel>& kernels) {
  const std::vector<ir::Node*> nodes = graph_.nodes();
  std::vector<ser::TensorSigDesc> params, results;
  for (const ir::Value* input : graph_.inputs()) {
    params.push_back({input->name(), input->type().shape, ToSerDType(input->type().dtype), ser::DeviceKind::kCpu});
  }
  for (const ir::Value* output : graph_.outputs()) {
    results.push_back({output->name(), output->type().shape, ToSerDType(output->type().dtype), ser::DeviceKind::kCpu});
  }
  fn_ = &writer_.AddFunction("main", params, results, 0);
  for (const ir::Value* input : graph_.inputs()) value_register_[input] = NewRegister();

  // Storages: static ones bound at entry; dynamic ones around their lifetime.
  const int32_t num_storages = static_cast<int32_t>(plan_.storages.size());
  storage_register_.resize(num_storages);
  std::vector<int32_t> storage_first(num_storages, INT32_MAX), storage_last(num_storages, -1);
  for (size_t b = 0; b < buffers_.buffers.size(); ++b) {
    const int32_t s = plan_.placements[b].storage;
    storage_first[s] = std::min(storage_first[s], buffers_.buffers[b].first_use);
    storage_last[s] = std::max(storage_last[s], buffers_.buffers[b].last_use);
  }
  std::vector<std::vector<int32_t>> alloc_at(buffers_.num_steps + 1), free_after(buffers_.num_steps + 1);
  for (int32_t s = 0; s < num_storages; ++s) {
    storage_register_[s] = NewRegister();
    if (plan_.storages[s].arena >= 0) {
      fn_->AllocStorage(storage_register_[s], s, "storage " + std::to_string(s));
    } else {
      alloc_at[std::clamp(storage_first[s], 0, buffers_.num_steps)].push_back(s);
      if (storage_last[s] < buffers_.num_steps) free_after[storage_last[s]].push_back(s);
    }
  }
  auto alloc_dynamic = [&](int32_t step) {
    for (int32_t s : alloc_at[step]) fn_->AllocStorage(storage_register_[s], s, "storage " + std::to_string(s));
  };

  // CUDA: host inputs → device buffers, all at entry (their lifetime starts at step 0).
  alloc_dynamic(0);
  if (options_.device != ser::DeviceKind::kCpu) {
    for (size_t b = 0; b < buffers_.buffer_roots.size(); ++b) {
      const ir::Value* root = buffers_.buffer_roots[b];
      if (root == nullptr || !buffers_.values.count(root)) continue;
      const ValueInfo& info = buffers_.values.at(root);
      if (info.kind != ValueKind::kParam || info.buffer != static_cast<int32_t>(b)) continue;
      const uint32_t dev = EmitTensor(static_cast<int32_t>(b), root->type().shape, ToSerDType(root->type().dtype),
                                      root->name());
      fn_->Copy(dev, value_register_.at(root), "upload " + root->name());
      param_device_register_[root] = dev;
    }
  }

  for (size_t step = 0; step < nodes.size(); ++step) {
    const ir::Node& node = *nodes[step];
    const StepKernel& sk = kernels[step];
    if (step > 0) alloc_dynamic(static_cast<int32_t>(step));
    const std::string debug = node.name().empty() ? node.op_type() : node.name();

    if (sk.is_view) {
      const ir::Value* source = node.input(0);
      const ir::Value* output = node.output(0);
      const ValueInfo& info = buffers_.values.at(output);
      const auto dtype = ToSerDType(output->type().dtype);
      const uint32_t reg = EmitTensor(info.buffer, output->type().shape, dtype, debug, info.offset);
      if (info.materialize_copy) {
        KEEL_ASSIGN_OR_RETURN(uint32_t src, InputRegister(source, debug));
        fn_->Copy(reg, src, debug);
      }
      value_register_[output] = reg;
    } else {
      std::vector<uint32_t> ins, outs, args;
      for (const ir::Value* input : node.inputs()) {
        if (input == nullptr) continue;
        KEEL_ASSIGN_OR_RETURN(uint32_t reg, InputRegister(input, debug));
        ins.push_back(reg);
      }
      for (const ir::Value* output : node.outputs()) {
        const ValueInfo& info = buffers_.values.at(output);
        const uint32_t reg =
            EmitTensor(info.buffer, output->type().shape, ToSerDType(output->type().dtype), debug, info.offset);
        value_register_[output] = reg;
        outs.push_back(reg);
      }
      std::optional<uint32_t> ws_reg;
      if (sk.workspace_bytes > 0) {
        const int32_t ws = buffers_.workspace_of_step[step];
        ws_reg = EmitTensor(ws, {static_cast<int64_t>(sk.workspace_bytes)}, ser::DType::kU8, debug + ":workspace");
      }
      // Explicit argument lists (StepKernel::args / then) name the step's operands.
      auto map_args = [&](const std::vector<StepArg>& map) -> Result<std::vector<uint32_t>> {
        std::vector<uint32_t> r;
        for (const StepArg& a : map) {
          const std::vector<uint32_t>* from = a.kind == StepArg::Kind::kInput ? &ins : &outs;
          if (a.kind == StepArg::Kind::kWorkspace) {
            if (!ws_reg) return InvalidArgument(debug + ": kernel argument names a missing workspace");
            r.push_back(*ws_reg);
          } else if (a.index < from->size()) {
            r.push_back((*from)[a.index]);
          } else {
            return InvalidArgument(debug + ": kernel argument names operand " + std::to_string(a.index) +
                                   " out of range");
          }
        }
        return r;
      };
      if (sk.args.empty()) {
        args = ins;
        args.insert(args.end(), outs.begin(), outs.end());
        if (ws_reg) args.push_back(*ws_reg);
      } else {
        KEEL_ASSIGN_OR_RETURN(args, map_args(sk.args));
      }
      auto invoke = [&](const ser::KernelDesc& kernel, std::vector<uint32_t> kargs) {
        const std::string key = KernelKey(kernel);
        auto it = kernel_index_.find(key);
        if (it == kernel_index_.end()) it = kernel_index_.emplace(key, writer_.AddKernel(kernel)).first;
        fn_->Invoke(it->second, std::move(kargs), debug);
        ++stats_.num_invokes;
      };
      invoke(sk.kernel, std::move(args));
      for (const StepInvocation& extra : sk.then) {
        KEEL_ASSIGN_OR_RETURN(std::vector<uint32_t> extra_args, map_args(extra.args));
        invoke(extra.kernel, std::move(extra_args));
      }
    }
    for (int32_t s : free_after[step]) fn_->FreeStorage(storage_register_[s], "free storage " + std::to_string(s));
  }

  // Results: params/constants returned as is are copied into buffers; on CUDA every
  // result is copied back to a host buffer.
  alloc_dynamic(buffers_.num_steps);
  std::vector<uint32_t> ret;
  for (size_t i = 0; i < graph_.outputs().size(); ++i) {
    const ir::Value* output = graph_.outputs()[i];
    const auto dtype = ToSerDType(output->type().dtype);
    uint32_t reg;
    if (buffers_.output_copy_buffer[i] >= 0) {
      const ValueInfo& info = buffers_.values.at(output);
      uint32_t src = info.kind == ValueKind::kConstant ? 0 : value_register_.at(output);
      if (info.kind == ValueKind::kConstant) { KEEL_ASSIGN_OR_RETURN(src, ConstantRegister(output)); }
      reg = EmitTensor(buffers_.output_copy_buffer[i], output->type().shape, dtype, output->name());
      fn_->Copy(reg, src, "output " + output->name());
    } else {
      reg = value_register_.at(output);
    }
    if (buffers_.host_output_buffer.size() > i && buffers_.host_output_buffer[i] >= 0) {
      const uint32_t host = EmitTensor(buffers_.host_output_buffer[i], output->type().shape, dtype, output->name());
      fn_->Copy(host, reg, "download " + output->name());
      reg = host;
    }
    ret.push_back(reg);
  }
  fn_->Ret(ret);
  fn_->SetNumRegisters(num_registers_);
  stats_.num_instructions = fn_->instructions().size();
  stats_.num_kernels = kernel_index_.size();
  return stats_;
}

}  // namespace

std::vector<uint8_t> InPlaceCapableSteps(const std::vector<StepKernel>& kernels) {
  std::vector<uint8_t> capable;
  capable.reserve(kernels.size());
  for (const StepKernel& k : kernels) {
    const bool generated = k.kernel.kind == ser::KernelKind::kCpuGenerated ||
                           k.kernel.kind == ser::KernelKind::kCudaGenerated;
    capable.push_back(!k.is_view && generated && k.kernel.library_op.empty() && k.args.empty() &&
                              k.then.empty()
                          ? 1
                          : 0);
  }
  return capable;
}

Result<ProgramStats> LowerProgram(const ir::Graph& graph, const std::vector<StepKernel>& kernels,
                                  const ProgramOptions& options, ser::ExecutableWriter& writer) {
  const std::vector<ir::Node*> nodes = graph.nodes();
  if (kernels.size() != nodes.size()) {
    return Internal("LowerProgram: " + std::to_string(kernels.size()) + " kernels for " +
                    std::to_string(nodes.size()) + " nodes");
  }
  BufferAssignmentOptions assign;
  assign.device = ToPlanDevice(options.device);
  assign.alignment = options.alignment;
  assign.host_io = options.device != ser::DeviceKind::kCpu;
  for (const StepKernel& k : kernels) assign.workspace_bytes.push_back(k.is_view ? 0 : k.workspace_bytes);
  assign.in_place_steps = InPlaceCapableSteps(kernels);
  KEEL_ASSIGN_OR_RETURN(BufferAssignment buffers, AssignBuffers(graph, assign));
  // View steps are exactly the view ops and the in-place concats (the kernel
  // selection's and the buffer assignment's InPlaceConcatOffsets must agree).
  for (size_t step = 0; step < nodes.size(); ++step) {
    const bool view = IsViewOp(*nodes[step]) || buffers.in_place_concat[step] != 0;
    if (kernels[step].is_view != view) {
      return Internal("LowerProgram: step " + std::to_string(step) + " ('" + nodes[step]->name() + "', " +
                      nodes[step]->op_type() + ") is " + (kernels[step].is_view ? "" : "not ") +
                      "a view step, but its buffers say otherwise");
    }
  }

  KEEL_ASSIGN_OR_RETURN(auto planner, memory::CreatePlanner(options.memory_plan));
  memory::PlanOptions plan_options;
  plan_options.time_limit_seconds = options.planner_time_limit_seconds;
  KEEL_ASSIGN_OR_RETURN(memory::Plan plan, planner->MakePlan(buffers.buffers, plan_options));
  KEEL_RETURN_IF_ERROR(memory::CheckPlan(buffers.buffers, plan).WithContext(
      "memory plan '" + options.memory_plan + "' failed its check"));

  ser::MemoryPlanDesc desc;
  desc.strategy = plan.strategy;
  for (const memory::Storage& s : plan.storages) {
    desc.storages.push_back({s.size, s.alignment, ToSerDevice(s.device), s.arena, s.offset});
  }
  for (const memory::Arena& a : plan.arenas) desc.arenas.push_back({ToSerDevice(a.device), a.size, a.alignment});
  desc.lower_bound_peak_live = memory::PeakLiveLowerBound(buffers.buffers);
  desc.lower_bound_positional_max = memory::PositionalMaxLowerBound(buffers.buffers);
  writer.SetMemoryPlan(desc);

  ProgramEmitter emitter(graph, buffers, plan, options, writer);
  KEEL_ASSIGN_OR_RETURN(ProgramStats stats, emitter.Emit(kernels));
  stats.plan = std::move(plan);
  stats.lifetimes = std::move(buffers.buffers);
  return stats;
}

}  // namespace keel::lower
