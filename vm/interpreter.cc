// vm/interpreter.cc — VM creation (devices, arenas, constants, buffers) and the
// interpreter loop; see interpreter.h.
#include "vm/interpreter.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>

#include "common/constant_block.h"
#include "serialization/format.h"
#include "vm/cpu/cpu_device.h"

namespace keel {
using namespace vm_internal;  // NOLINT: this file implements VirtualMachine::Impl, the interpreter
namespace {

inline uint64_t NowNs() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

}  // namespace

VirtualMachine::Impl::Impl(std::shared_ptr<const Executable> exe, const LoadedExecutable* prog)
    : exe_(std::move(exe)), prog_(prog) {}

VirtualMachine::Impl::~Impl() {
  FreeDynamicStorages();
  if (devices_[1] != nullptr) {
    Status drained = devices_[1]->Synchronize();  // nothing may still use the blocks below
    (void)drained;
    for (void* p : pinned_) devices_[1]->UnpinHostMemory(p);
  }
  // Host arenas and input buffers in the caller's arena buffer are not ours to free.
  auto owned = [&](DeviceType d) { return !(host_block_borrowed_ && d == DeviceType::kCpu); };
  for (size_t i = 0; i < arena_base_.size(); ++i) {
    if (owned(prog_->arenas[i].device)) device(prog_->arenas[i].device)->Free(arena_base_[i]);
  }
  for (size_t i = 0; i < input_buffers_.size(); ++i) {
    if (owned(prog_->inputs[i].device)) device(prog_->inputs[i].device)->Free(input_buffers_[i]);
  }
  for (size_t d = 0; d < std::size(const_blocks_); ++d) {
    if (const_blocks_[d] != nullptr) device(static_cast<DeviceType>(d))->Free(const_blocks_[d]);
  }
}

Result<std::unique_ptr<VirtualMachine::Impl>> VirtualMachine::Impl::Create(std::shared_ptr<const Executable> exe,
                                                         const LoadedExecutable* prog, const VmOptions& options) {
  if (exe == nullptr) return InvalidArgument("VirtualMachine::Create: null executable");
  std::unique_ptr<Impl> vm(new Impl(std::move(exe), prog));
  KEEL_RETURN_IF_ERROR(vm->Init(options));
  return vm;
}

Status VirtualMachine::Impl::Init(const VmOptions& options) {
  const LoadedExecutable& p = *prog_;
  KEEL_RETURN_IF_ERROR(CheckAllocator(options.host_allocator, "VmOptions::host_allocator"));
  KEEL_RETURN_IF_ERROR(CheckAllocator(options.device_allocator, "VmOptions::device_allocator"));
  if (options.cuda_l2_prefetch < 0 || options.cuda_l2_prefetch > VmOptions::kMaxL2PrefetchDistance) {
    return InvalidArgument("VmOptions::cuda_l2_prefetch is " + std::to_string(options.cuda_l2_prefetch) +
                           " (expected 0 to " + std::to_string(VmOptions::kMaxL2PrefetchDistance) + ")");
  }
  // The caller's arena buffer: checked before anything is created.
  const HostBlockLayout& hb = p.host_block;
  uint8_t* const block = static_cast<uint8_t*>(options.arena_buffer);
  if (block != nullptr || options.arena_buffer_size != 0) {
    if (block == nullptr) return InvalidArgument("VmOptions::arena_buffer_size is set but arena_buffer is null");
    if (options.arena_buffer_size < hb.bytes) {
      return InvalidArgument("the arena buffer has " + std::to_string(options.arena_buffer_size) +
                             " bytes; this executable needs " + std::to_string(hb.bytes) +
                             " (Executable::memory_requirements)");
    }
    if (reinterpret_cast<uintptr_t>(block) % hb.alignment != 0) {
      return InvalidArgument("the arena buffer is not aligned to the " + std::to_string(hb.alignment) +
                             " bytes this executable needs (Executable::memory_requirements)");
    }
    host_block_borrowed_ = true;
  }
  DeviceOptions dopts;
  dopts.num_threads = options.num_threads;
  dopts.library = p.library.get();
  dopts.host_allocator = options.host_allocator;
  dopts.device_allocator = options.device_allocator;
  dopts.allow_tf32 = options.allow_tf32.value_or(p.allow_tf32);
  dopts.tuning_file = options.tuning_file;
  dopts.autotune = options.cuda_autotune;
  dopts.autotune_log = options.cuda_autotune_log;
  dopts.pdl = options.cuda_pdl;
  dopts.l2_prefetch = options.cuda_l2_prefetch;
  dopts.cudnn_engines = options.cudnn_engines;
  dopts.cudnn_engines_all = options.cudnn_engines_all;
  dopts.cudnn_engines_rtc = options.cudnn_engines_rtc;
  // The host device always exists: host inputs/outputs and CPU kernels of a CUDA
  // program run there too.
  KEEL_ASSIGN_OR_RETURN(devices_[0], CreateDevice("cpu", dopts));
  if (options.device != "cpu") {
    KEEL_ASSIGN_OR_RETURN(std::unique_ptr<Device> d, CreateDevice(options.device, dopts));
    if (d->type() == DeviceType::kCpu) return InvalidArgument("bad device \"" + options.device + "\"");
    devices_[static_cast<size_t>(d->type())] = std::move(d);
  }
  for (uint32_t t = 0; t < 2; ++t) {
    if ((p.devices_used & (1u << t)) && devices_[t] == nullptr) {
      return Unsupported(std::string("the executable needs device ") + DeviceTypeName(static_cast<DeviceType>(t)) +
                         " but the VM was created on \"" + options.device + "\"");
    }
  }
  // With an observer, every device operation of the set-up below is reported
  // (OnSetup) under the label of the object it is for; the guard detaches the
  // hooks on every exit path.
  trace_ = options.trace;
  // The label is only built with an observer: untraced creation makes no strings.
  std::string setup_what;
  auto setup = [&](const char* what, std::string_view name) {
    if (trace_ == nullptr) return;
    setup_what.assign(what);
    setup_what += name;
    setup_label_ = &setup_what;
  };
  struct SetupGuard {
    Impl* self;
    ~SetupGuard() {
      self->setup_label_ = nullptr;
      for (auto& d : self->devices_) {
        if (d != nullptr) d->set_trace_hook(nullptr);
      }
    }
  } guard{this};
  if (trace_ != nullptr) {
    for (auto& d : devices_) {
      if (d != nullptr) d->set_trace_hook(this);
    }
  }

  cpu_ctx_ = devices_[0]->cpu_kernel_ctx();
  // The pool may have fewer threads than asked if thread creation failed.
  num_threads_ = static_cast<const CpuDevice*>(devices_[0].get())->num_threads();

  kernels_.reserve(p.kernels.size());
  for (const KernelEntry& k : p.kernels) {
    Device* d = device(k.device);
    setup("kernel ", k.name);  // library kernels may reserve workspace or tune here
    KEEL_ASSIGN_OR_RETURN(KernelCallable c, d->ResolveKernel(k));
    kernels_.push_back(c);
  }
  for (auto& d : devices_) {
    if (d != nullptr) KEEL_RETURN_IF_ERROR(d->KernelsResolved());
  }

  arena_base_.reserve(p.arenas.size());
  for (size_t i = 0; i < p.arenas.size(); ++i) {
    const ArenaEntry& a = p.arenas[i];
    if (host_block_borrowed_ && a.device == DeviceType::kCpu) {
      arena_base_.push_back(block + hb.arena_offset[i]);
      continue;
    }
    setup("arena ", std::to_string(i));
    Result<void*> mem = device(a.device)->Allocate(a.size, std::max<uint64_t>(64, a.alignment));
    if (!mem.ok()) return mem.status().WithContext("arena " + std::to_string(i));
    arena_base_.push_back(static_cast<uint8_t*>(*mem));
  }
  // Static storages must be aligned inside their arena (the arena base is).
  for (size_t i = 0; i < p.storages.size(); ++i) {
    const StorageEntry& s = p.storages[i];
    if (s.arena >= 0 && s.offset % s.alignment != 0) {
      return InvalidExecutable("planned storage " + std::to_string(i) + " at offset " + std::to_string(s.offset) +
                               " breaks its alignment " + std::to_string(s.alignment));
    }
  }

  consts_.resize(p.constants.size());
  for (size_t i = 0; i < p.constants.size(); ++i) {
    const ConstantEntry& c = p.constants[i];
    Register r;
    r.bytes = c.bytes;
    r.shape = c.shape.data();
    r.rank = static_cast<uint32_t>(c.shape.size());
    r.dtype = static_cast<uint8_t>(c.dtype);
    r.device = c.device;
    // CPU constants are used in place: the file bytes are mapped read-only and live
    // as long as the Executable. Device constants are placed below.
    r.data = c.device == DeviceType::kCpu ? const_cast<uint8_t*>(c.host_data) : nullptr;
    consts_[i] = r;
  }
  // Device constants: one block per device, filled by as few copies as the file's
  // layout allows (common/constant_block.h; the host program lays it out the same way).
  for (size_t dv = 1; dv < std::size(devices_); ++dv) {
    std::vector<size_t> ids;
    std::vector<common::ConstantSpan> spans;
    for (size_t i = 0; i < p.constants.size(); ++i) {
      if (static_cast<size_t>(p.constants[i].device) != dv) continue;
      ids.push_back(i);
      spans.push_back({p.constants[i].data_offset, p.constants[i].bytes});
    }
    if (ids.empty()) continue;
    const common::ConstantBlockLayout layout = common::LayOutConstantBlock(spans);
    Device* d = devices_[dv].get();
    setup("constants", "");
    KEEL_ASSIGN_OR_RETURN(void* mem, d->Allocate(std::max<uint64_t>(layout.bytes, 1), common::kDeviceConstantAlignment));
    const_blocks_[dv] = mem;
    auto* block = static_cast<uint8_t*>(mem);
    // The data segment's start: every constant lies inside it (checked at load).
    const uint8_t* segment = p.constants[ids[0]].host_data - p.constants[ids[0]].data_offset;
    for (const common::ConstantCopy& c : layout.copies) {
      KEEL_RETURN_IF_ERROR(d->CopyHostToDevice(block + c.dst, segment + c.src, c.bytes));
    }
    for (size_t k = 0; k < ids.size(); ++k) consts_[ids[k]].data = block + layout.offset[k];
    d->ConstantsPlaced(mem, layout.bytes);
  }
  for (Device* d : {devices_[0].get(), devices_[1].get()}) {
    if (d != nullptr) KEEL_RETURN_IF_ERROR(d->Synchronize());
  }

  input_buffers_.reserve(p.inputs.size());
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const TensorInfo& in = p.inputs[i];
    if (host_block_borrowed_ && in.device == DeviceType::kCpu) {
      input_buffers_.push_back(block + hb.input_offset[i]);
      continue;
    }
    setup("input ", in.name);
    Result<void*> mem = device(in.device)->Allocate(in.byte_size, 64);
    if (!mem.ok()) return mem.status().WithContext("input \"" + in.name + "\"");
    input_buffers_.push_back(*mem);
  }
  input_ptr_.assign(p.inputs.size(), nullptr);
  input_ready_.assign(p.inputs.size(), 0);
  output_bound_.assign(p.outputs.size(), nullptr);
  outputs_.resize(p.outputs.size());
  regs_.resize(p.num_registers);
  dynamic_.assign(p.num_registers, nullptr);
  dynamic_device_.assign(p.num_registers, DeviceType::kCpu);
  args_.assign(std::max<uint32_t>(1, p.max_invoke_args), nullptr);

  // A second device (CUDA): page-lock the host blocks it copies to and from, and
  // decide whether runs can be recorded (CUDA graphs): only when all the work of
  // a run is queued on that device (no host kernels, no host copies) and the plan
  // is static, so that a recorded run is the whole run.
  if (Device* gpu = devices_[1].get(); gpu != nullptr) {
    auto pin = [&](void* ptr, uint64_t bytes) -> Status {
      if (ptr == nullptr || bytes == 0) return Status::Ok();
      setup("pin host block", {});
      KEEL_RETURN_IF_ERROR(gpu->PinHostMemory(ptr, bytes));
      pinned_.push_back(ptr);
      return Status::Ok();
    };
    pinned_.reserve(p.arenas.size() + p.inputs.size() + 1);  // push_back below cannot fail
    if (host_block_borrowed_) {
      // One registration for the caller's whole buffer (its parts may share pages).
      KEEL_RETURN_IF_ERROR(pin(block, hb.bytes));
    } else {
      for (size_t i = 0; i < p.arenas.size(); ++i) {
        if (p.arenas[i].device == DeviceType::kCpu) KEEL_RETURN_IF_ERROR(pin(arena_base_[i], p.arenas[i].size));
      }
      for (size_t i = 0; i < p.inputs.size(); ++i) {
        if (p.inputs[i].device == DeviceType::kCpu) KEEL_RETURN_IF_ERROR(pin(input_buffers_[i], p.inputs[i].byte_size));
      }
    }
    bool recordable = options.cuda_graph && gpu->SupportsRecording() && !p.has_dynamic_storage;
    for (const Instruction& in : p.instructions) {
      if (in.op == OpCode::kCopy && in.device != gpu->type()) recordable = false;
      if (in.op == OpCode::kInvoke && p.kernels[in.a].device != gpu->type()) recordable = false;
    }
    record_runs_ = recordable;
  }
  return Status::Ok();
}

void VirtualMachine::Impl::SetTraceObserver(TraceObserver* observer) { trace_ = observer; }

Status VirtualMachine::Impl::CheckInput(size_t index, uint64_t bytes, std::span<const int64_t> shape, DataType dtype) const {
  if (index >= prog_->inputs.size()) {
    return InvalidArgument("input index " + std::to_string(index) + " out of range (" +
                           std::to_string(prog_->inputs.size()) + " inputs)");
  }
  const TensorInfo& in = prog_->inputs[index];
  if (dtype != in.dtype || !std::equal(shape.begin(), shape.end(), in.shape.begin(), in.shape.end())) {
    return InvalidArgument("input \"" + in.name + "\": expected shape " + ShapeString(in.shape) + " " +
                           DataTypeName(in.dtype) + ", got " + ShapeString(shape) + " " + DataTypeName(dtype));
  }
  if (bytes != in.byte_size) {
    return InvalidArgument("input \"" + in.name + "\": expected " + std::to_string(in.byte_size) + " bytes, got " +
                           std::to_string(bytes));
  }
  return Status::Ok();
}

Status VirtualMachine::Impl::SetInput(size_t index, const void* data, uint64_t bytes, std::span<const int64_t> shape,
                             DataType dtype) {
  KEEL_RETURN_IF_ERROR(CheckInput(index, bytes, shape, dtype));
  if (data == nullptr && bytes != 0) return InvalidArgument("input \"" + prog_->inputs[index].name + "\": null data");
  Device* d = device(prog_->inputs[index].device);
  KEEL_RETURN_IF_ERROR(d->CopyHostToDevice(input_buffers_[index], data, bytes));
  KEEL_RETURN_IF_ERROR(d->Synchronize());  // the caller may reuse `data` right away
  input_ptr_[index] = input_buffers_[index];
  input_ready_[index] = 1;
  has_run_ = false;
  return Status::Ok();
}

Status VirtualMachine::Impl::BindInput(size_t index, const void* data, uint64_t bytes, std::span<const int64_t> shape,
                              DataType dtype) {
  KEEL_RETURN_IF_ERROR(CheckInput(index, bytes, shape, dtype));
  if (data == nullptr) return InvalidArgument("input \"" + prog_->inputs[index].name + "\": null buffer");
  const size_t elem = DataTypeSize(dtype);
  if (reinterpret_cast<uintptr_t>(data) % elem != 0) {
    return InvalidArgument("input \"" + prog_->inputs[index].name + "\": buffer not aligned to its element size");
  }
  input_ptr_[index] = data;
  input_ready_[index] = 1;
  has_run_ = false;
  return Status::Ok();
}

Status VirtualMachine::Impl::BindOutput(size_t index, void* data, uint64_t bytes) {
  if (index >= prog_->outputs.size()) {
    return InvalidArgument("output index " + std::to_string(index) + " out of range (" +
                           std::to_string(prog_->outputs.size()) + " outputs)");
  }
  const TensorInfo& out = prog_->outputs[index];
  if (data != nullptr && bytes != out.byte_size) {
    return InvalidArgument("output \"" + out.name + "\": expected a buffer of " + std::to_string(out.byte_size) +
                           " bytes, got " + std::to_string(bytes));
  }
  output_bound_[index] = data;
  return Status::Ok();
}

void VirtualMachine::Impl::FreeDynamicStorages() {
  for (size_t r = 0; r < dynamic_.size(); ++r) {
    if (dynamic_[r] != nullptr) {
      device(dynamic_device_[r])->Free(dynamic_[r]);
      dynamic_[r] = nullptr;
    }
  }
}

Status VirtualMachine::Impl::InstructionError(uint32_t index, const Status& status) const {
  std::string where = "instruction " + std::to_string(index) + " (" + OpCodeName(prog_->instructions[index].op);
  if (!prog_->debug_names[index].empty()) where += " " + prog_->debug_names[index];
  return status.WithContext(where + ")");
}

template <bool kTrace>
Status VirtualMachine::Impl::Execute() {
  const Instruction* const code = prog_->instructions.data();
  const uint32_t n = static_cast<uint32_t>(prog_->instructions.size());
  const uint32_t* const operands = prog_->operands.data();
  Register* const R = regs_.data();
  void** const args = args_.data();
  for (uint32_t pc = 0; pc < n; ++pc) {
    const Instruction& in = code[pc];
    uint64_t t0 = 0;
    if constexpr (kTrace) {
      last_op_ = DeviceOp{};
      trace_pc_ = pc;
      t0 = NowNs();
    }
    switch (in.op) {
      case OpCode::kAllocStorage: {
        Register& dst = R[in.a];
        if (in.arena >= 0) {
          dst.data = arena_base_[static_cast<size_t>(in.arena)] + in.offset;
          if constexpr (kTrace) {
            last_op_ = DeviceOp{DeviceOpKind::kArenaSlice, in.bytes, dst.data, CopyDirection::kHostToHost, "arena", {}};
          }
        } else {
          Result<void*> mem = device(in.device)->Allocate(in.bytes, in.offset);
          if (!mem.ok()) return InstructionError(pc, mem.status());
          dst.data = static_cast<uint8_t*>(*mem);
          dynamic_[in.a] = *mem;
          dynamic_device_[in.a] = in.device;
        }
        dst.bytes = in.bytes;
        dst.shape = nullptr;
        dst.rank = 0;
        dst.device = in.device;
        break;
      }
      case OpCode::kAllocTensor: {
        const Register& s = R[in.b];
        Register& dst = R[in.a];
        dst.data = s.data + in.offset;
        dst.bytes = in.bytes;
        dst.shape = in.shape;
        dst.rank = in.count;
        dst.dtype = in.dtype;
        dst.device = s.device;
        break;
      }
      case OpCode::kLoadConst:
        R[in.a] = consts_[in.b];
        break;
      case OpCode::kCopy: {
        Device* d = device(in.device);
        void* dst = R[in.a].data;
        const void* src = R[in.b].data;
        Status s;
        switch (in.direction) {
          case CopyDirection::kHostToHost:
          case CopyDirection::kDeviceToDevice: s = d->CopyDeviceToDevice(dst, src, in.bytes); break;
          case CopyDirection::kHostToDevice: s = d->CopyHostToDevice(dst, src, in.bytes); break;
          case CopyDirection::kDeviceToHost: s = d->CopyDeviceToHost(dst, src, in.bytes); break;
        }
        if (!s.ok()) return InstructionError(pc, s);
        if constexpr (kTrace) last_op_.direction = in.direction;
        break;
      }
      case OpCode::kInvoke: {
        const uint32_t* ops = operands + in.b;
        for (uint32_t j = 0; j < in.count; ++j) args[j] = R[ops[j]].data;
        const KernelCallable& k = kernels_[in.a];
        if (k.host_fn != nullptr) {
          const int32_t rc = k.host_fn(args, cpu_ctx_);
          if (rc != 0) [[unlikely]] {
            return InstructionError(pc, Internal("kernel " + prog_->kernels[in.a].name + " failed with code " +
                                                 std::to_string(rc)));
          }
        } else {
          Status s = k.launch(k.state, args);
          if (!s.ok()) return InstructionError(pc, s);
        }
        if constexpr (kTrace) {
          if (last_op_.kind != DeviceOpKind::kLaunch) {
            last_op_ = DeviceOp{DeviceOpKind::kLaunch, 0, nullptr, CopyDirection::kHostToHost, "call", {}};
          }
          last_op_.kernel = prog_->kernels[in.a].name;
        }
        break;
      }
      case OpCode::kFreeStorage: {
        Register& r = R[in.a];
        device(in.device)->Free(r.data);
        dynamic_[in.a] = nullptr;
        r = Register{};
        break;
      }
      case OpCode::kRet: {
        const uint32_t* ops = operands + in.b;
        for (uint32_t j = 0; j < in.count; ++j) outputs_[j] = R[ops[j]];
        break;
      }
    }
    if constexpr (kTrace) {
      TraceEvent ev;
      ev.instruction_index = pc;
      ev.opcode = in.op;
      ev.debug_name = prog_->debug_names[pc];
      ev.op = last_op_;
      if (in.op == OpCode::kCopy) ev.op.bytes = in.bytes;
      ev.duration_ns = NowNs() - t0;
      trace_->OnInstruction(ev);
    }
  }
  return Status::Ok();
}

Status VirtualMachine::Impl::Run() {
  has_run_ = false;
  for (size_t i = 0; i < input_ready_.size(); ++i) {
    if (!input_ready_[i]) {
      return FailedPrecondition("input \"" + prog_->inputs[i].name + "\" was not set before Run");
    }
  }
  // Storages a previous run left allocated (its outputs, or everything after an error).
  if (prog_->has_dynamic_storage) FreeDynamicStorages();
  for (size_t i = 0; i < input_ptr_.size(); ++i) {
    const TensorInfo& info = prog_->inputs[i];
    Register& r = regs_[i];
    r.data = static_cast<uint8_t*>(const_cast<void*>(input_ptr_[i]));
    r.bytes = info.byte_size;
    r.shape = info.shape.data();
    r.rank = static_cast<uint32_t>(info.shape.size());
    r.dtype = static_cast<uint8_t>(info.dtype);
    r.device = info.device;
  }
  Status s;
  if (record_runs_) {
    // Stage bound inputs into the VM's own buffers: the recorded copies read fixed addresses.
    for (size_t i = 0; i < input_ptr_.size(); ++i) {
      if (input_ptr_[i] != input_buffers_[i]) {
        const TensorInfo& info = prog_->inputs[i];
        KEEL_RETURN_IF_ERROR(
            device(info.device)->CopyDeviceToDevice(input_buffers_[i], input_ptr_[i], info.byte_size));
        regs_[i].data = static_cast<uint8_t*>(input_buffers_[i]);
      }
    }
    s = RunRecorded();
  } else {
    s = ExecuteMaybeTraced();
  }
  if (!s.ok()) return s;
  // Device-to-host copies into host outputs are asynchronous: wait before reading them.
  if (devices_[1] != nullptr) KEEL_RETURN_IF_ERROR(devices_[1]->Synchronize());
  for (size_t j = 0; j < outputs_.size(); ++j) {
    if (output_bound_[j] != nullptr) {
      KEEL_RETURN_IF_ERROR(
          device(outputs_[j].device)->CopyDeviceToHost(output_bound_[j], outputs_[j].data, outputs_[j].bytes));
    }
  }
  if (devices_[1] != nullptr) KEEL_RETURN_IF_ERROR(devices_[1]->Synchronize());
  has_run_ = true;
  return Status::Ok();
}

// One run through the device's recording (CUDA graph): the first run records
// (the interpreter loop queues everything, nothing runs until EndRecording
// launches it), later runs replay without interpreting. Registers, outputs_ and
// every address are the same in each run of a static plan, which is what makes
// the replay valid; inputs always come from input_buffers_ (Run stages bound ones).
Status VirtualMachine::Impl::RunRecorded() {
  Device* gpu = devices_[1].get();
  if (gpu->has_recording()) {
    const uint64_t t0 = trace_ != nullptr ? NowNs() : 0;
    if (trace_ != nullptr) gpu->set_trace_hook(this);
    last_op_ = DeviceOp{};
    Status s = gpu->Replay();
    gpu->set_trace_hook(nullptr);
    if (!s.ok()) return s.WithContext("replaying the recorded run");
    if (trace_ != nullptr) {
      TraceEvent ev;
      ev.instruction_index = 0;
      ev.opcode = OpCode::kInvoke;
      ev.debug_name = "recorded run (all instructions)";
      ev.op = last_op_;
      ev.duration_ns = NowNs() - t0;
      trace_->OnInstruction(ev);
    }
    return Status::Ok();
  }
  KEEL_RETURN_IF_ERROR(gpu->BeginRecording());
  Status s = ExecuteMaybeTraced();
  Status end = gpu->EndRecording(s.ok());
  if (!s.ok()) return s;
  return end;
}

Status VirtualMachine::Impl::ExecuteMaybeTraced() {
  if (trace_ == nullptr) return Execute<false>();
  for (auto& d : devices_) {
    if (d) d->set_trace_hook(this);
  }
  Status s = Execute<true>();
  for (auto& d : devices_) {
    if (d) d->set_trace_hook(nullptr);
  }
  return s;
}

Result<TensorView> VirtualMachine::Impl::GetOutput(size_t index) const {
  if (index >= outputs_.size()) {
    return InvalidArgument("output index " + std::to_string(index) + " out of range (" +
                           std::to_string(outputs_.size()) + " outputs)");
  }
  if (!has_run_) return FailedPrecondition("no output yet: Run has not completed successfully");
  const Register& r = outputs_[index];
  const TensorInfo& info = prog_->outputs[index];
  TensorView v;
  v.data = r.data;
  v.shape = std::span<const int64_t>(info.shape);
  v.dtype = info.dtype;
  v.device = r.device;
  v.byte_size = r.bytes;
  return v;
}

Status VirtualMachine::Impl::CopyOutputToHost(size_t index, void* data, uint64_t bytes) const {
  KEEL_ASSIGN_OR_RETURN(TensorView v, GetOutput(index));
  if (bytes != v.byte_size) {
    return InvalidArgument("output \"" + prog_->outputs[index].name + "\": expected a buffer of " +
                           std::to_string(v.byte_size) + " bytes, got " + std::to_string(bytes));
  }
  Device* d = device(v.device);
  KEEL_RETURN_IF_ERROR(d->CopyDeviceToHost(data, v.data, bytes));
  return d->Synchronize();
}

template Status VirtualMachine::Impl::Execute<true>();
template Status VirtualMachine::Impl::Execute<false>();

}  // namespace keel
