// vm/interpreter.h — the state and the main loop behind keel::VirtualMachine.
//
// The interpreter is keel::VirtualMachine::Impl (keel/vm.h declares only that
// name, so no internal type reaches the public header).
//
// Created from a shared Executable on one device, it allocates everything a run
// needs up front: one block per static plan arena, one buffer per input, the
// register file, the kernel argument scratch array and the resolved kernel
// callables. Run() then walks the decoded instruction array with a switch; on a
// static plan it performs no heap allocation. Dynamic-plan storages (arena -1)
// are allocated/freed by alloc_storage/free_storage at run time; storages still
// held when Run returns (the outputs) are freed at the start of the next Run.
//
// Tracing: Run picks one of two instantiations of the loop — with or without
// trace — so an unset observer costs one branch per Run.
//
// Ownership: holds a shared_ptr to the Executable (which must outlive nothing
// else: the VM keeps it alive). Owns its devices, arenas and buffers.
// Thread-safety: not thread-safe; one thread at a time per Interpreter. Many
// Interpreters may share one Executable concurrently.
#pragma once

#include <memory>
#include <vector>

#include "keel/vm.h"
#include "vm/device.h"
#include "vm/executable.h"

namespace keel {

class VirtualMachine::Impl final : private vm_internal::DeviceTraceHook {
 public:
  // `prog` is `exe`'s decoded program (VirtualMachine, a friend of Executable, passes it).
  static Result<std::unique_ptr<Impl>> Create(std::shared_ptr<const Executable> exe,
                                              const vm_internal::LoadedExecutable* prog, const VmOptions& options);
  ~Impl() override;

  const Executable& executable() const { return *exe_; }
  Status SetInput(size_t index, const void* data, uint64_t bytes, std::span<const int64_t> shape, DataType dtype);
  Status BindInput(size_t index, const void* data, uint64_t bytes, std::span<const int64_t> shape, DataType dtype);
  Status BindOutput(size_t index, void* data, uint64_t bytes);
  Status Run();
  Result<TensorView> GetOutput(size_t index) const;
  Status CopyOutputToHost(size_t index, void* data, uint64_t bytes) const;
  void SetTraceObserver(TraceObserver* observer);
  int num_threads() const { return num_threads_; }

 private:
  // A register: a storage (shape == nullptr) or a tensor view. 32 bytes.
  struct Register {
    uint8_t* data = nullptr;
    uint64_t bytes = 0;
    const int64_t* shape = nullptr;
    uint32_t rank = 0;
    uint8_t dtype = 0;
    DeviceType device = DeviceType::kCpu;
  };

  Impl(std::shared_ptr<const Executable> exe, const vm_internal::LoadedExecutable* prog);
  Status Init(const VmOptions& options);
  Status CheckInput(size_t index, uint64_t bytes, std::span<const int64_t> shape, DataType dtype) const;
  vm_internal::Device* device(DeviceType t) const { return devices_[static_cast<size_t>(t)].get(); }
  void FreeDynamicStorages();
  Status RunRecorded();
  template <bool kTrace>
  Status Execute();
  // Execute<true> with every device reporting its calls to this VM when a trace
  // observer is set, Execute<false> otherwise.
  Status ExecuteMaybeTraced();
  Status InstructionError(uint32_t index, const Status& status) const;
  void OnDeviceOp(const DeviceOp& op) override {
    if (setup_label_ != nullptr) [[unlikely]] {  // during Init: report, don't record
      if (trace_ != nullptr) trace_->OnSetup(*setup_label_, op);
      return;
    }
    if (op.kind == DeviceOpKind::kPrefetch) {  // its own event, before the instruction's
      if (trace_ != nullptr) {
        TraceEvent ev;
        ev.instruction_index = trace_pc_;
        ev.opcode = prog_->instructions[trace_pc_].op;
        ev.debug_name = prog_->debug_names[trace_pc_];
        ev.op = op;
        trace_->OnInstruction(ev);
      }
      return;
    }
    last_op_ = op;
  }
  uint32_t trace_pc_ = 0;  // Execute<true>: the instruction being executed
  // Init: while set, device operations are reported as OnSetup(*setup_label_).
  const std::string* setup_label_ = nullptr;

  std::shared_ptr<const Executable> exe_;
  const vm_internal::LoadedExecutable* prog_;
  std::unique_ptr<vm_internal::Device> devices_[2];  // indexed by DeviceType; [kCpu] always present
  int num_threads_ = 1;
  const keel_cpu_kernel_ctx* cpu_ctx_ = nullptr;
  std::vector<vm_internal::KernelCallable> kernels_;
  std::vector<uint8_t*> arena_base_;
  std::vector<Register> consts_;
  void* const_blocks_[2] = {};        // per device (DeviceType): its constants' block, or null (freed at destruction)
  std::vector<void*> input_buffers_;  // VM-owned, one per input, on the input's device
  std::vector<const void*> input_ptr_;  // what Run binds: input_buffers_[i] or a caller buffer
  std::vector<uint8_t> input_ready_;
  std::vector<void*> output_bound_;   // caller host buffers filled after each Run, or null
  std::vector<Register> regs_;
  std::vector<void*> dynamic_;        // per register: the dynamic storage it owns, or null
  std::vector<DeviceType> dynamic_device_;
  std::vector<void*> args_;           // kernel argument scratch (max_invoke_args)
  std::vector<Register> outputs_;
  bool has_run_ = false;
  // CUDA graphs (VmOptions::cuda_graph): true when every device operation of the
  // program is on the CUDA device and the plan is static, so one recorded run
  // can be replayed. Bound inputs are then staged into input_buffers_.
  bool record_runs_ = false;
  std::vector<void*> pinned_;  // host blocks page-locked for the CUDA device
  // VmOptions::arena_buffer given: host arenas and input buffers lie in it
  // (LoadedExecutable::host_block) and are not freed by the VM.
  bool host_block_borrowed_ = false;
  TraceObserver* trace_ = nullptr;
  DeviceOp last_op_;
};

}  // namespace keel
