// vm/virtual_machine.cc — keel::VirtualMachine: the public face of its Impl,
// the interpreter (vm/interpreter.h; pimpl keeps the public header free of internals).
#include "vm/host_memory.h"
#include "vm/interpreter.h"

namespace keel {

VirtualMachine::VirtualMachine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
VirtualMachine::~VirtualMachine() = default;

Result<std::unique_ptr<VirtualMachine>> VirtualMachine::Create(std::shared_ptr<const Executable> executable,
                                                               const VmOptions& options) {
  if (executable == nullptr) return InvalidArgument("VirtualMachine::Create: null executable");
  const vm_internal::LoadedExecutable* prog = executable->impl_.get();
  return vm_internal::CatchHeapExhaustion([&]() -> Result<std::unique_ptr<VirtualMachine>> {
    KEEL_ASSIGN_OR_RETURN(auto impl, Impl::Create(std::move(executable), prog, options));
    return std::unique_ptr<VirtualMachine>(new VirtualMachine(std::move(impl)));
  });
}

const Executable& VirtualMachine::executable() const { return impl_->executable(); }

Status VirtualMachine::SetInput(size_t index, const void* data, uint64_t bytes, std::span<const int64_t> shape,
                                DataType dtype) {
  return impl_->SetInput(index, data, bytes, shape, dtype);
}
Status VirtualMachine::SetInput(std::string_view name, const void* data, uint64_t bytes,
                                std::span<const int64_t> shape, DataType dtype) {
  KEEL_ASSIGN_OR_RETURN(size_t index, executable().FindInput(name));
  return impl_->SetInput(index, data, bytes, shape, dtype);
}
Status VirtualMachine::BindInput(size_t index, const void* data, uint64_t bytes, std::span<const int64_t> shape,
                                 DataType dtype) {
  return impl_->BindInput(index, data, bytes, shape, dtype);
}
Status VirtualMachine::BindInput(std::string_view name, const void* data, uint64_t bytes,
                                 std::span<const int64_t> shape, DataType dtype) {
  KEEL_ASSIGN_OR_RETURN(size_t index, executable().FindInput(name));
  return impl_->BindInput(index, data, bytes, shape, dtype);
}
Status VirtualMachine::BindOutput(size_t index, void* data, uint64_t bytes) {
  return impl_->BindOutput(index, data, bytes);
}
Status VirtualMachine::BindOutput(std::string_view name, void* data, uint64_t bytes) {
  KEEL_ASSIGN_OR_RETURN(size_t index, executable().FindOutput(name));
  return impl_->BindOutput(index, data, bytes);
}
Status VirtualMachine::Run() { return impl_->Run(); }
Result<TensorView> VirtualMachine::GetOutput(size_t index) const { return impl_->GetOutput(index); }
Result<TensorView> VirtualMachine::GetOutput(std::string_view name) const {
  KEEL_ASSIGN_OR_RETURN(size_t index, executable().FindOutput(name));
  return impl_->GetOutput(index);
}
Status VirtualMachine::CopyOutputToHost(size_t index, void* data, uint64_t bytes) const {
  return impl_->CopyOutputToHost(index, data, bytes);
}
void VirtualMachine::SetTraceObserver(TraceObserver* observer) { impl_->SetTraceObserver(observer); }
int VirtualMachine::num_threads() const { return impl_->num_threads(); }

}  // namespace keel
