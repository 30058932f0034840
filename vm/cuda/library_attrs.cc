// vm/cuda/library_attrs.cc — see library_attrs.h.
#include "vm/cuda/library_attrs.h"

#include <climits>

#include "serialization/library_ops.h"

namespace keel::vm_internal {

const AttrEntry* AttrReader::Find(std::string_view key) {
  for (size_t i = 0; i < k_.attrs.size(); ++i) {
    if (k_.attrs[i].key == key) {
      used_[i] = true;
      return &k_.attrs[i];
    }
  }
  return nullptr;
}

Result<int64_t> AttrReader::Int(std::string_view key, int64_t def, int64_t min, int64_t max) {
  const AttrEntry* a = Find(key);
  if (a == nullptr) return def;
  if (a->ints.size() != 1 || !a->floats.empty() || !a->str.empty()) return Error(key, "must be one integer");
  const int64_t v = a->ints[0];
  if (v < min || v > max) {
    return Error(key, "is " + std::to_string(v) + ", outside [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return v;
}

Result<int64_t> AttrReader::RequiredInt(std::string_view key, int64_t min, int64_t max) {
  bool present = false;
  for (const AttrEntry& a : k_.attrs) present = present || a.key == key;
  if (!present) return Error(key, "is required");
  return Int(key, 0, min, max);
}

Result<std::vector<int64_t>> AttrReader::Ints(std::string_view key, size_t n, std::vector<int64_t> def, int64_t min,
                                              int64_t max) {
  const AttrEntry* a = Find(key);
  if (a == nullptr) return def;
  if (a->ints.size() != n || !a->floats.empty() || !a->str.empty()) {
    return Error(key, "must be a list of " + std::to_string(n) + " integers");
  }
  for (int64_t v : a->ints) {
    if (v < min || v > max) return Error(key, "has value " + std::to_string(v) + " out of range");
  }
  return a->ints;
}

Result<std::vector<int64_t>> AttrReader::IntList(std::string_view key, size_t max_n, int64_t min, int64_t max) {
  const AttrEntry* a = Find(key);
  if (a == nullptr) return std::vector<int64_t>{};
  if (a->ints.size() > max_n || !a->floats.empty() || !a->str.empty()) {
    return Error(key, "must be a list of at most " + std::to_string(max_n) + " integers");
  }
  return Ints(key, a->ints.size(), {}, min, max);
}

bool AttrReader::Has(std::string_view key) const {
  for (const AttrEntry& a : k_.attrs)
    if (a.key == key) return true;
  return false;
}

Result<double> AttrReader::Float(std::string_view key, double def) {
  const AttrEntry* a = Find(key);
  if (a == nullptr) return def;
  if (a->floats.size() != 1 || !a->ints.empty() || !a->str.empty()) return Error(key, "must be one float");
  return a->floats[0];
}

Result<std::string> AttrReader::Str(std::string_view key, const char* def, std::vector<std::string_view> allowed) {
  const AttrEntry* a = Find(key);
  std::string v;
  if (a == nullptr) {
    if (def == nullptr) return Error(key, "is required");
    v = def;
  } else {
    if (!a->ints.empty() || !a->floats.empty()) return Error(key, "must be a string");
    v = a->str;
  }
  for (std::string_view ok : allowed) {
    if (v == ok) return v;
  }
  std::string list;
  for (std::string_view ok : allowed) list += (list.empty() ? "\"" : ", \"") + std::string(ok) + "\"";
  return Error(key, "is \"" + v + "\", expected one of " + list);
}

Status AttrReader::Finish() const {
  for (size_t i = 0; i < used_.size(); ++i) {
    if (!used_[i]) {
      return InvalidExecutable("kernel " + k_.name + " (" + k_.library_op + "): unknown attribute \"" +
                               k_.attrs[i].key + "\"");
    }
  }
  return Status::Ok();
}

namespace lo = ser::library_ops;

Result<bool> ReadLayout(AttrReader& at) {
  KEEL_ASSIGN_OR_RETURN(const std::string layout,
                        at.Str(lo::attr::kLayout, lo::value::kLayoutNchw, {lo::value::kLayoutNchw, lo::value::kLayoutNhwc}));
  return layout == lo::value::kLayoutNhwc;
}

Result<ConvAttrs> ReadConvAttrs(const KernelEntry& k, size_t spatial) {
  AttrReader at(k);
  ConvAttrs c;
  KEEL_ASSIGN_OR_RETURN(c.pads, at.Ints(lo::attr::kPads, 2 * spatial, std::vector<int64_t>(2 * spatial, 0), 0, INT32_MAX));
  KEEL_ASSIGN_OR_RETURN(c.strides, at.Ints(lo::attr::kStrides, spatial, std::vector<int64_t>(spatial, 1), 1, INT32_MAX));
  KEEL_ASSIGN_OR_RETURN(c.dilations, at.Ints(lo::attr::kDilations, spatial, std::vector<int64_t>(spatial, 1), 1, INT32_MAX));
  KEEL_ASSIGN_OR_RETURN(c.group, at.Int(lo::attr::kGroup, 1, 1, INT32_MAX));
  KEEL_ASSIGN_OR_RETURN(const int64_t has_bias, at.Int(lo::attr::kHasBias, 0, 0, 1));
  KEEL_ASSIGN_OR_RETURN(const int64_t has_res, at.Int(lo::attr::kHasResidual, 0, 0, 1));
  c.has_bias = has_bias != 0;
  c.has_residual = has_res != 0;
  const lo::EpilogueArgs order = lo::EpilogueArgOrder(c.has_bias, c.has_residual);
  c.bias_arg = order.bias;
  c.res_arg = order.residual;
  c.y_arg = order.y;
  c.args = order.count();
  KEEL_ASSIGN_OR_RETURN(c.activation,
                        at.Str(lo::attr::kActivation, "", {lo::value::kActivationNone, lo::value::kActivationRelu,
                                                           lo::value::kActivationClip}));
  KEEL_ASSIGN_OR_RETURN(c.clip_min, at.Float(lo::attr::kClipMin, 0.0));
  KEEL_ASSIGN_OR_RETURN(c.clip_max, at.Float(lo::attr::kClipMax, 6.0));
  KEEL_ASSIGN_OR_RETURN(c.nhwc, ReadLayout(at));
  KEEL_RETURN_IF_ERROR(at.Finish());
  return c;
}

}  // namespace keel::vm_internal
