// compiler/ops/registry.h — the op registry: every op Keel knows, by name, and
// the ONNX opset range it implements.
//
// Registry::Get() holds all ops (registered once, on first use, by the family
// files listed in all_ops.cc). Op types on ir::Nodes are ONNX names for the
// default domain ("Conv") and "keel.*" for internal ops; ops of any other ONNX
// domain are refused at import.
//
// Versions. A model declares one opset for the default domain; each op then
// runs the newest of its ONNX since-versions that is <= that opset.
// ResolveVersion picks it and checks that Keel implements it. Opsets outside
// [kMinOpset, kMaxOpset] are refused as a whole (kMaxOpset is the newest opset
// whose op versions every OpDef records).
//
// Thread-safety: Get() initializes once (thread-safe static); lookups are
// read-only. Errors: Unsupported values naming the op, the version and what is
// supported.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ops/op_def.h"

namespace keel::ops {

inline constexpr int kMinOpset = 7;
inline constexpr int kMaxOpset = 28;

class Registry {
 public:
  // All of Keel's ops.
  static const Registry& Get();

  // The op named `op_type` (an ir::Node's op type); nullptr when unknown.
  const OpDef* Find(std::string_view op_type) const;
  // Every registered op, sorted by name (deterministic listings).
  std::vector<const OpDef*> All() const;

  // Registration (all_ops.cc). A second op with the same name is a programming
  // error reported by Get() (Internal status via RegistrationError()).
  void Add(OpDef def);
  const Status& RegistrationError() const { return registration_error_; }

 private:
  std::map<std::string, std::unique_ptr<const OpDef>, std::less<>> ops_;
  Status registration_error_;
};

// The op of `node`; nullptr when unknown.
const OpDef* FindOp(const ir::Node& node);

// `node` converts one f16 or bf16 value to f32 of the same shape (an op with
// PatternRole::kConvert: mixed precision's widening Cast).
bool WidensHalfToF32(const ir::Node& node);

// The since-version that `opset` selects for `def` (newest version <= opset),
// or Unsupported naming the op, the version and the versions Keel implements.
Result<int> ResolveVersion(const OpDef& def, int opset);

// "opsets 7-28 of the default ONNX domain" (for messages).
std::string SupportedOpsetsText();

}  // namespace keel::ops
