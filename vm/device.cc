// vm/device.cc — the device factory: parses a device string and creates the
// matching Device. CUDA joins through CreateCudaDevice when vm/cuda/ is built
// into keel_vm (KEEL_VM_WITH_CUDA); nothing else here knows about CUDA.
#include "vm/device.h"

#include <charconv>

#include "vm/cpu/cpu_device.h"

namespace keel::vm_internal {

Result<std::unique_ptr<Device>> CreateDevice(std::string_view spec, const DeviceOptions& options) {
  if (spec == "cpu") return std::unique_ptr<Device>(new CpuDevice(options.num_threads, options.host_allocator));
  if (spec == "cuda" || spec.starts_with("cuda:")) {
    int ordinal = 0;
    if (spec.size() > 5) {
      const char* first = spec.data() + 5;
      const char* last = spec.data() + spec.size();
      auto [ptr, ec] = std::from_chars(first, last, ordinal);
      if (ec != std::errc() || ptr != last || ordinal < 0) {
        return InvalidArgument("bad device \"" + std::string(spec) + "\" (expected cpu, cuda or cuda:N)");
      }
    }
#ifdef KEEL_VM_WITH_CUDA
    return CreateCudaDevice(ordinal, options);
#else
    return Unsupported("device \"" + std::string(spec) + "\": this Keel runtime was built without CUDA");
#endif
  }
  return InvalidArgument("unknown device \"" + std::string(spec) + "\" (expected cpu, cuda or cuda:N)");
}

}  // namespace keel::vm_internal
