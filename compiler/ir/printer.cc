// compiler/ir/printer.cc — the text dump of a Graph described in printer.h.
//
// Values print as %name (or %<id> when unnamed); constants are listed before the
// nodes with type and byte size only; fused bodies print nested and indented.
// Everything iterates in insertion / attribute-name order, so the output is
// deterministic.
#include "compiler/ir/printer.h"

#include <cstdio>
#include <sstream>

namespace keel::ir {
namespace {

std::string ValueRef(const Value* v) {
  if (v == nullptr) return "<none>";
  // Built by appending: GCC 12 warns (-Wrestrict, falsely) on "lit" + std::string at -O3.
  std::string s = "%";
  s += v->name().empty() ? std::to_string(v->id()) : v->name();
  return s;
}

std::string FormatDouble(double d) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", d);
  return buf;
}

std::string FormatAttr(const AttrValue& value) {
  struct Visitor {
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(double v) const { return FormatDouble(v); }
    std::string operator()(const std::string& v) const { return "\"" + v + "\""; }
    std::string operator()(const std::vector<int64_t>& v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) { if (i) s += ","; s += std::to_string(v[i]); }
      return s + "]";
    }
    std::string operator()(const std::vector<double>& v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) { if (i) s += ","; s += FormatDouble(v[i]); }
      return s + "]";
    }
    std::string operator()(const std::vector<std::string>& v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) { if (i) s += ","; s += "\""; s += v[i]; s += "\""; }
      return s + "]";
    }
    std::string operator()(const TensorDataPtr& t) const {
      if (!t) return "tensor<null>";
      return "tensor<" + t->type.ToString() + ">";
    }
  };
  return std::visit(Visitor{}, value);
}

std::string TypeSuffix(const Value* v) {
  return v->has_type() ? ": " + v->type().ToString() : ": ?";
}

void PrintInto(const Graph& graph, const std::string& indent, std::ostringstream& os) {
  os << indent << "graph " << graph.name() << "(";
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const Value* in = graph.inputs()[i];
    os << (i ? ", " : "") << ValueRef(in) << TypeSuffix(in);
  }
  os << ") -> (";
  for (size_t i = 0; i < graph.outputs().size(); ++i) os << (i ? ", " : "") << ValueRef(graph.outputs()[i]);
  os << ") {\n";
  for (const Value* v : graph.values()) {
    if (!v->is_constant() || (v->uses().empty() && !graph.IsGraphOutput(v))) continue;
    os << indent << "  const " << ValueRef(v) << ": " << v->constant()->type.ToString() << "  # "
       << v->constant()->bytes.size() << " bytes\n";
  }
  for (const Node* n : graph.nodes()) {
    os << indent << "  ";
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      const Value* out = n->outputs()[i];
      os << (i ? ", " : "") << ValueRef(out) << TypeSuffix(out);
    }
    os << " = " << n->op_type() << "(";
    for (size_t i = 0; i < n->inputs().size(); ++i) os << (i ? ", " : "") << ValueRef(n->inputs()[i]);
    os << ")";
    if (!n->attrs().all().empty()) {
      os << " {";
      bool first = true;
      for (const auto& [name, value] : n->attrs().all()) {
        os << (first ? "" : ", ") << name << "=" << FormatAttr(value);
        first = false;
      }
      os << "}";
    }
    if (!n->name().empty()) os << "  # " << n->name();
    os << "\n";
    if (n->body()) PrintInto(*n->body(), indent + "    ", os);
    for (const auto& [attr, sub] : n->subgraphs()) {
      os << indent << "    " << attr << ":\n";
      PrintInto(*sub, indent + "    ", os);
    }
  }
  os << indent << "}\n";
}

}  // namespace

std::string PrintGraph(const Graph& graph) {
  std::ostringstream os;
  PrintInto(graph, "", os);
  return os.str();
}

}  // namespace keel::ir
