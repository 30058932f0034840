// compiler/codegen/kernel_dedup.cc — see kernel_dedup.h.
#include "compiler/codegen/kernel_dedup.h"

namespace keel::codegen {

std::string KernelDedup::FindOrAdd(const KernelSpec& spec) {
  if (!spec.kernel) return "";
  // The printed kernel with its name cut off: signature, buffers, body.
  std::string text = spec.kernel->ToString();
  const size_t open = text.find('(');
  std::string key = (open == std::string::npos ? text : text.substr(open)) + "|" + std::to_string(spec.workspace_bytes);
  // Baked constants print by name and shape only: their bytes are part of the identity.
  for (const Buffer& b : spec.kernel->buffers()) {
    if (b.scope == BufferScope::kConstant) key.append(b.constant_data.begin(), b.constant_data.end());
  }
  auto [it, inserted] = by_body_.emplace(std::move(key), spec.name);
  return inserted ? std::string() : it->second;
}

}  // namespace keel::codegen
