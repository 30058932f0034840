// tests/compiler/passes/pass_test_util.h — small helpers for building IR graphs in
// pass tests and comparing evaluations before/after a pass.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <random>

#include "compiler/ir/graph.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/semantics.h"
#include "compiler/passes/pass_manager.h"
#include "compiler/passes/shape_inference.h"

namespace keel::passes::testing {

inline ir::TensorType F32(std::vector<int64_t> shape) { return ir::TensorType{ir::DType::kF32, std::move(shape)}; }

inline std::vector<float> RandomValues(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

inline ir::TensorDataPtr Random(std::vector<int64_t> shape, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return ops::MakeTensorF32(std::move(shape), RandomValues(n, seed));
}

inline ir::Value* Const(ir::Graph& g, const std::string& name, std::vector<int64_t> shape, uint32_t seed) {
  return g.AddConstant(name, Random(std::move(shape), seed));
}

inline ir::Value* Scalar(ir::Graph& g, const std::string& name, float v) {
  return g.AddConstant(name, ops::MakeTensorF32({}, {v}));
}

// One node `op` with one output; its value.
inline ir::Value* Op(ir::Graph& g, const std::string& op, const std::string& name, std::vector<ir::Value*> in,
                     ir::Attributes attrs = {}) {
  ir::Node* n = g.AddNode(op, name, std::move(in), 1);
  n->attrs() = std::move(attrs);
  return n->output(0);
}

inline std::map<std::string, int> Histogram(const ir::Graph& g) {
  std::map<std::string, int> h;
  for (const ir::Node* n : g.nodes()) h[n->op_type()]++;
  return h;
}

inline double MaxAbsDiff(const ir::TensorData& a, const ir::TensorData& b) {
  EXPECT_EQ(a.type, b.type);
  double m = 0;
  for (int64_t i = 0; i < a.type.NumElements() && a.type == b.type; ++i) {
    m = std::max(m, std::abs(static_cast<double>(a.data<float>()[i]) - b.data<float>()[i]));
  }
  return m;
}

// Builds the graph twice: evaluates one after shape inference only (the
// reference) and one after `transform`; returns the largest output difference.
inline double CompareAfter(const std::function<std::unique_ptr<ir::Graph>()>& build,
                           const std::function<Status(ir::Graph&)>& transform,
                           const std::vector<ir::TensorDataPtr>& inputs, ir::Graph** transformed_out = nullptr,
                           std::unique_ptr<ir::Graph>* keep = nullptr) {
  auto ref = build();
  Status s = InferShapes(*ref);
  EXPECT_TRUE(s.ok()) << s.ToString();
  auto expected = ops::EvaluateGraph(*ref, inputs);
  EXPECT_TRUE(expected.ok()) << expected.status().ToString();
  auto g = build();
  s = transform(*g);
  EXPECT_TRUE(s.ok()) << s.ToString();
  auto got = ops::EvaluateGraph(*g, inputs);
  EXPECT_TRUE(got.ok()) << got.status().ToString();
  if (!expected.ok() || !got.ok()) return 1e30;
  double m = 0;
  for (size_t i = 0; i < expected->size(); ++i) m = std::max(m, MaxAbsDiff(*(*expected)[i], *(*got)[i]));
  if (transformed_out) *transformed_out = g.get();
  if (keep) *keep = std::move(g);
  return m;
}

}  // namespace keel::passes::testing
