// compiler/passes/cse.cc — common-subexpression elimination (see cse.h).
#include "compiler/passes/cse.h"

#include <cstdio>
#include <functional>
#include <map>
#include <string_view>
#include <unordered_map>

namespace keel::passes {
namespace {

// A textual key of the attributes; tensors are keyed by type + content hash (a
// collision only costs a failed full comparison below).
std::string AttrKey(const ir::Attributes& attrs) {
  std::string key;
  for (const auto& [name, value] : attrs.all()) {
    key += name;
    key += '=';
    if (const auto* t = std::get_if<ir::TensorDataPtr>(&value)) {
      if (*t) {
        key += (*t)->type.ToString();
        std::string_view bytes(reinterpret_cast<const char*>((*t)->bytes.data()), (*t)->bytes.size());
        key += '#';
        key += std::to_string(std::hash<std::string_view>{}(bytes));
      }
    } else if (const auto* i = std::get_if<int64_t>(&value)) {
      key += std::to_string(*i);
    } else if (const auto* d = std::get_if<double>(&value)) {
      char buf[40];
      std::snprintf(buf, sizeof(buf), "%.17g", *d);
      key += buf;
    } else if (const auto* s = std::get_if<std::string>(&value)) {
      key += '"';
      key += *s;
      key += '"';
    } else if (const auto* is = std::get_if<std::vector<int64_t>>(&value)) {
      for (int64_t x : *is) {
        key += std::to_string(x);
        key += ',';
      }
    } else if (const auto* ds = std::get_if<std::vector<double>>(&value)) {
      for (double x : *ds) {
        char buf[40];
        std::snprintf(buf, sizeof(buf), "%.17g,", x);
        key += buf;
      }
    } else if (const auto* ss = std::get_if<std::vector<std::string>>(&value)) {
      for (const auto& x : *ss) {
        key += '"';
        key += x;
        key += "\",";
      }
    }
    key += ';';
  }
  return key;
}

void MergeConstants(ir::Graph& graph) {
  // Bucket by (type, content hash); compare bytes within a bucket.
  std::map<std::string, std::vector<ir::Value*>> buckets;
  for (ir::Value* v : graph.values()) {
    if (!v->is_constant() || v->uses().empty()) continue;
    const ir::TensorData& t = *v->constant();
    std::string_view bytes(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
    std::string key = t.type.ToString();
    key += '#';
    key += std::to_string(std::hash<std::string_view>{}(bytes));
    std::vector<ir::Value*>& bucket = buckets[key];
    ir::Value* same = nullptr;
    for (ir::Value* c : bucket) {
      if (c->constant() == v->constant() || c->constant()->bytes == t.bytes) {
        same = c;
        break;
      }
    }
    if (same && !graph.IsGraphOutput(v)) {
      graph.ReplaceAllUsesWith(v, same);
    } else {
      bucket.push_back(v);
    }
  }
}

}  // namespace

Status CsePass::Run(ir::Graph& graph) {
  MergeConstants(graph);
  std::unordered_map<std::string, std::vector<ir::Node*>> seen;
  for (ir::Node* n : graph.nodes()) {
    if (n->body()) continue;
    std::string key = n->op_type();
    key += '(';
    for (ir::Value* in : n->inputs()) {
      key += in ? std::to_string(in->id()) : std::string("_");
      key += ',';
    }
    key += ')';
    key += std::to_string(n->outputs().size());
    key += '{';
    key += AttrKey(n->attrs());
    key += '}';
    std::vector<ir::Node*>& candidates = seen[key];
    ir::Node* same = nullptr;
    for (ir::Node* c : candidates) {
      if (c->attrs() == n->attrs()) {
        same = c;
        break;
      }
    }
    if (!same) {
      candidates.push_back(n);
      continue;
    }
    bool replaced_all = true;
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      ir::Value* out = n->output(i);
      if (graph.IsGraphOutput(out)) {
        replaced_all = false;  // keep the node: the output name is part of the interface
        continue;
      }
      graph.ReplaceAllUsesWith(out, same->output(i));
    }
    if (replaced_all) KEEL_RETURN_IF_ERROR(graph.RemoveNode(n));
  }
  graph.RemoveDeadValues();
  return Status::Ok();
}

}  // namespace keel::passes
