// compiler/codegen/kernel_dedup.cc — see kernel_dedup.h.
#include "compiler/codegen/kernel_dedup.h"

#include <cstring>
#include <type_traits>
#include <variant>

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

namespace {

void AppendType(std::string& key, const ir::TensorType& t) {
  key += ir::DTypeName(t.dtype);
  for (int64_t d : t.shape) key += "," + std::to_string(d);
  key += ";";
}

void AppendAttr(std::string& key, const ir::AttrValue& v) {
  std::visit(
      [&key](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          key += "i" + std::to_string(x);
        } else if constexpr (std::is_same_v<T, double>) {
          uint64_t bits;
          std::memcpy(&bits, &x, sizeof bits);
          key += "f" + std::to_string(bits);
        } else if constexpr (std::is_same_v<T, std::string>) {
          key += "s" + std::to_string(x.size()) + ":" + x;
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          key += "I";
          for (int64_t e : x) key += std::to_string(e) + ",";
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          key += "F";
          for (double e : x) {
            uint64_t bits;
            std::memcpy(&bits, &e, sizeof bits);
            key += std::to_string(bits) + ",";
          }
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          key += "S";
          for (const std::string& e : x) key += std::to_string(e.size()) + ":" + e;
        } else {  // TensorDataPtr
          key += "T" + std::to_string(reinterpret_cast<uintptr_t>(x.get()));
        }
      },
      v);
  key += ";";
}

// `ids` numbers the values defined so far (inputs of the node or body, then
// node outputs in order); anything else is a constant or an outer input.
void AppendNode(std::string& key, const ir::Node& n, std::unordered_map<const ir::Value*, int64_t>& ids) {
  key += n.op_type() + "(";
  for (const ir::Value* in : n.inputs()) {
    if (!in) {
      key += "-;";
    } else if (auto it = ids.find(in); it != ids.end()) {
      key += "%" + std::to_string(it->second) + ";";
    } else if (in->is_constant()) {
      key += "c" + std::to_string(reinterpret_cast<uintptr_t>(in->constant().get())) + ":";
      AppendType(key, in->type());
    } else {
      key += "?";
      AppendType(key, in->type());
    }
  }
  key += "){";
  for (const auto& [name, value] : n.attrs().all()) {
    key += name + "=";
    AppendAttr(key, value);
  }
  key += "}->";
  for (const ir::Value* out : n.outputs()) {
    const int64_t id = static_cast<int64_t>(ids.size());
    ids[out] = id;
    if (out->has_type()) AppendType(key, out->type());
  }
  if (const ir::Graph* body = n.body()) {
    std::unordered_map<const ir::Value*, int64_t> inner;
    for (const ir::Value* in : body->inputs()) {
      const int64_t id = static_cast<int64_t>(inner.size());
      inner[in] = id;
      if (in->has_type()) AppendType(key, in->type());
    }
    key += "[";
    for (const ir::Node* b : body->nodes()) AppendNode(key, *b, inner);
    key += "]<-";
    for (const ir::Value* out : body->outputs()) {
      auto it = inner.find(out);
      key += it == inner.end() ? std::string("?") : std::to_string(it->second);
      key += ",";
    }
  }
  key += "|";
}

}  // namespace

std::string LoweringKey(const ir::Node& node) {
  std::string key;
  std::unordered_map<const ir::Value*, int64_t> ids;
  AppendNode(key, node, ids);
  return key;
}

}  // namespace keel::codegen
