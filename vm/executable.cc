// vm/executable.cc — loading: file bytes (mmap / copy / borrow), then
// DecodeExecutable (vm/decoder.cc), and the public keel::Executable accessors.
#include "vm/executable.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace keel {
namespace vm_internal {

FileBytes::~FileBytes() {
  if (kind_ == Kind::kMapped && size_ != 0) munmap(const_cast<uint8_t*>(data_), size_);
  if (kind_ == Kind::kHeap) HostFree(allocator_, const_cast<uint8_t*>(data_));
}

Result<std::unique_ptr<FileBytes>> FileBytes::Map(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return NotFound("executable not found: " + path);
    return IoError("cannot open " + path + ": " + std::strerror(err));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return IoError("cannot read " + path + ": not a regular file");
  }
  auto out = std::make_unique<FileBytes>();
  out->kind_ = Kind::kMapped;
  out->size_ = static_cast<size_t>(st.st_size);
  if (out->size_ != 0) {
    // Read-only and private: constants are used in place, and a stray write
    // faults instead of corrupting the file.
    void* p = mmap(nullptr, out->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      out->size_ = 0;
      return IoError("cannot mmap " + path + ": " + std::strerror(err));
    }
    out->data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return out;
}

Result<std::unique_ptr<FileBytes>> FileBytes::Copy(std::span<const uint8_t> bytes, const keel_allocator_t& allocator) {
  auto out = std::make_unique<FileBytes>();
  KEEL_ASSIGN_OR_RETURN(void* p, HostAllocate(allocator, bytes.size(), 64, "for a copy of the executable"));
  out->kind_ = Kind::kHeap;
  out->allocator_ = allocator;
  if (!bytes.empty()) std::memcpy(p, bytes.data(), bytes.size());
  out->data_ = static_cast<const uint8_t*>(p);
  out->size_ = bytes.size();
  return out;
}

std::unique_ptr<FileBytes> FileBytes::Borrow(std::span<const uint8_t> bytes) {
  auto out = std::make_unique<FileBytes>();
  out->data_ = bytes.data();
  out->size_ = bytes.size();
  return out;
}

std::string ShapeString(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace vm_internal

using vm_internal::FileBytes;

Executable::Executable(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Executable::~Executable() = default;

Result<std::shared_ptr<const Executable>> Executable::LoadFile(const std::string& path, const LoadOptions& options) {
  return vm_internal::CatchHeapExhaustion([&]() -> Result<std::shared_ptr<const Executable>> {
    KEEL_RETURN_IF_ERROR(vm_internal::CheckAllocator(options.host_allocator, "LoadOptions::host_allocator"));
    auto impl = std::make_unique<Impl>();
    KEEL_ASSIGN_OR_RETURN(impl->file, FileBytes::Map(path));
    Status s = vm_internal::DecodeExecutable(*impl, options, path + ".so");
    if (!s.ok()) return s.WithContext(path);
    return std::shared_ptr<const Executable>(new Executable(std::move(impl)));
  });
}

Result<std::shared_ptr<const Executable>> Executable::LoadMemory(std::span<const uint8_t> bytes,
                                                                 const LoadOptions& options) {
  return vm_internal::CatchHeapExhaustion([&]() -> Result<std::shared_ptr<const Executable>> {
    KEEL_RETURN_IF_ERROR(vm_internal::CheckAllocator(options.host_allocator, "LoadOptions::host_allocator"));
    auto impl = std::make_unique<Impl>();
    if (options.borrow_buffer) {
      impl->file = FileBytes::Borrow(bytes);
    } else {
      KEEL_ASSIGN_OR_RETURN(impl->file, FileBytes::Copy(bytes, options.host_allocator));
    }
    KEEL_RETURN_IF_ERROR(vm_internal::DecodeExecutable(*impl, options, std::string()));
    return std::shared_ptr<const Executable>(new Executable(std::move(impl)));
  });
}

size_t Executable::num_inputs() const { return impl_->inputs.size(); }
size_t Executable::num_outputs() const { return impl_->outputs.size(); }
const TensorInfo& Executable::input(size_t index) const { return impl_->inputs[index]; }
const TensorInfo& Executable::output(size_t index) const { return impl_->outputs[index]; }
size_t Executable::num_instructions() const { return impl_->instructions.size(); }
std::string_view Executable::plan_strategy() const { return impl_->plan_strategy; }
std::string_view Executable::producer() const { return impl_->producer; }
bool Executable::allow_tf32() const { return impl_->allow_tf32; }
const std::string& Executable::library_path() const { return impl_->library_path; }
MemoryRequirements Executable::memory_requirements() const {
  return MemoryRequirements{impl_->host_block.bytes, impl_->host_block.alignment};
}

namespace {
Result<size_t> FindByName(const std::vector<TensorInfo>& list, std::string_view name, const char* what) {
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].name == name) return i;
  }
  std::string known;
  for (const TensorInfo& t : list) known += (known.empty() ? "" : ", ") + t.name;
  return NotFound("unknown " + std::string(what) + " \"" + std::string(name) + "\" (known: " +
                  (known.empty() ? "none" : known) + ")");
}
}  // namespace

Result<size_t> Executable::FindInput(std::string_view name) const { return FindByName(impl_->inputs, name, "input"); }
Result<size_t> Executable::FindOutput(std::string_view name) const {
  return FindByName(impl_->outputs, name, "output");
}

}  // namespace keel
