// vm/cuda/library_attrs.cc — see library_attrs.h.
#include "vm/cuda/library_attrs.h"

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

}  // namespace keel::vm_internal
