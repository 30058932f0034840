// compiler/ops/registry.cc — the registry (see registry.h) and version resolution.
#include "compiler/ops/registry.h"

#include <algorithm>

#include "compiler/ops/all_ops.h"

namespace keel::ops {

const char* FusionClassName(FusionClass c) {
  switch (c) {
    case FusionClass::kElementwise: return "elementwise";
    case FusionClass::kInjective: return "injective";
    case FusionClass::kAnchor: return "anchor";
    case FusionClass::kView: return "view";
    case FusionClass::kNone: return "none";
  }
  return "?";
}

bool OpDef::SupportsVersion(int version) const {
  if (std::find(versions.begin(), versions.end(), version) == versions.end()) return false;
  return supported.empty() || std::find(supported.begin(), supported.end(), version) != supported.end();
}

HalfPolicy ResolveHalfPolicy(const OpDef& def, std::string* reason) {
  HalfPolicy policy = def.half;
  std::string why = def.keep_f32_reason;
  if (policy == HalfPolicy::kAuto) {
    switch (def.fusion) {
      case FusionClass::kElementwise:
      case FusionClass::kInjective:
      case FusionClass::kView: policy = HalfPolicy::kHalf; break;
      case FusionClass::kAnchor:
      case FusionClass::kNone:
        policy = HalfPolicy::kKeepF32;
        why = "kernel not yet checked with half operands";
        break;
    }
  }
  if (reason) *reason = policy == HalfPolicy::kKeepF32 ? why : std::string();
  return policy;
}

void KeepF32(OpDef& def, std::string reason) {
  def.half = HalfPolicy::kKeepF32;
  def.keep_f32_reason = std::move(reason);
}

const Registry& Registry::Get() {
  static const Registry* registry = [] {
    auto* r = new Registry();
    RegisterAllOps(*r);
    return r;
  }();
  return *registry;
}

void Registry::Add(OpDef def) {
  if (ops_.count(def.name)) {
    if (registration_error_.ok()) registration_error_ = Internal("op '" + def.name + "' is registered twice");
    return;
  }
  if (def.half == HalfPolicy::kKeepF32 && def.keep_f32_reason.empty() && registration_error_.ok()) {
    registration_error_ = Internal("op '" + def.name + "' keeps f32 without saying why (keep_f32_reason)");
  }
  std::string name = def.name;
  ops_.emplace(std::move(name), std::make_unique<const OpDef>(std::move(def)));
}

const OpDef* Registry::Find(std::string_view op_type) const {
  auto it = ops_.find(op_type);
  return it == ops_.end() ? nullptr : it->second.get();
}

std::vector<const OpDef*> Registry::All() const {
  std::vector<const OpDef*> out;
  for (const auto& [name, def] : ops_) out.push_back(def.get());
  return out;
}

const OpDef* FindOp(const ir::Node& node) { return Registry::Get().Find(node.op_type()); }

namespace {
std::string JoinVersions(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}
}  // namespace

Result<int> ResolveVersion(const OpDef& def, int opset) {
  int since = 0;
  for (int v : def.versions) {
    if (v <= opset) since = v;
  }
  if (since == 0) {
    return Unsupported("op " + def.name + " does not exist at opset " + std::to_string(opset) +
                       " (its first version is " + (def.versions.empty() ? std::string("unknown") : std::to_string(def.versions[0])) + ")");
  }
  if (!def.SupportsVersion(since)) {
    std::vector<int> ok;
    for (int v : def.versions) {
      if (def.SupportsVersion(v)) ok.push_back(v);
    }
    return Unsupported(def.name + "-" + std::to_string(since) + " (selected by opset " + std::to_string(opset) +
                       ") is not supported; Keel implements " + def.name + " versions " + JoinVersions(ok));
  }
  return since;
}

bool WidensHalfToF32(const ir::Node& node) {
  const OpDef* def = FindOp(node);
  if (!def || def->pattern_role != PatternRole::kConvert || node.outputs().size() != 1 || !node.input(0)) return false;
  const ir::TensorType& in = node.input(0)->type();
  const ir::TensorType& out = node.output(0)->type();
  return (in.dtype == ir::DType::kF16 || in.dtype == ir::DType::kBF16) && out.dtype == ir::DType::kF32 &&
         out.shape == in.shape;
}

std::string SupportedOpsetsText() {
  return "opsets " + std::to_string(kMinOpset) + "-" + std::to_string(kMaxOpset) + " of the default ONNX domain";
}

}  // namespace keel::ops
