// Tests for in-place concats (compiler/lower/concat_in_place.h): which concat
// steps qualify, the buffers AssignBuffers gives them (one root, parts as views
// at byte offsets), their interplay with in-place reuse, and the bytecode
// LowerProgram writes for them (no kernel; parts' tensors at root + offset).
//
// The producers are plain single-op nodes (Relu, Sigmoid) or bodiless keel.Fused
// nodes: the rules look only at the concat, shapes, dtypes and producers.
#include <gtest/gtest.h>

#include <memory>

#include "compiler/lower/buffer_assignment.h"
#include "compiler/lower/concat_in_place.h"
#include "compiler/lower/lower_program.h"
#include "serialization/executable_generated.h"
#include "serialization/executable_reader.h"

namespace keel::lower {
namespace {

ir::TensorType Type(std::vector<int64_t> shape, ir::DType dtype = ir::DType::kF32) {
  return {dtype, std::move(shape)};
}

ir::Value* Op(ir::Graph& g, const std::string& op, const std::string& name, std::vector<ir::Value*> inputs,
              ir::TensorType type) {
  ir::Node* n = g.AddNode(op, name, std::move(inputs), 1, {name});
  n->output(0)->set_type(std::move(type));
  return n->output(0);
}

ir::Value* Concat(ir::Graph& g, const std::string& name, std::vector<ir::Value*> inputs, int64_t axis,
                  ir::TensorType type) {
  ir::Node* n = g.AddNode("Concat", name, std::move(inputs), 1, {name});
  n->attrs().Set("axis", axis);
  n->output(0)->set_type(std::move(type));
  return n->output(0);
}

// x[1,16,4,4] → a = Relu(x), b = Sigmoid(x) (1024 bytes each) → c = Concat(a, b, axis 1) → y = Relu(c)
struct Fire {
  ir::Graph g;
  ir::Value *x, *a, *b, *c, *y;
  explicit Fire(int64_t batch = 1) {
    x = g.AddInput("x", Type({batch, 16, 4, 4}));
    a = Op(g, "Relu", "a", {x}, Type({batch, 16, 4, 4}));
    b = Op(g, "Sigmoid", "b", {x}, Type({batch, 16, 4, 4}));
    c = Concat(g, "c", {a, b}, 1, Type({batch, 32, 4, 4}));
    y = Op(g, "Relu", "y", {c}, Type({batch, 32, 4, 4}));
    g.AddOutput(y);
  }
};

bool InPlace(const ir::Graph& g, size_t step, uint32_t alignment = 64) {
  return !InPlaceConcatOffsets(g, alignment).at(step).empty();
}

TEST(ConcatInPlace, BatchOneChannelConcatWritesItsPartsIntoOneRootBuffer) {
  Fire f;
  EXPECT_EQ(InPlaceConcatOffsets(f.g, 64).at(2), (std::vector<uint64_t>{0, 1024}));
  auto r = AssignBuffers(f.g, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->in_place_concat, (std::vector<uint8_t>{0, 0, 1, 0}));
  const ValueInfo& a = r->values.at(f.a);
  const ValueInfo& b = r->values.at(f.b);
  const ValueInfo& c = r->values.at(f.c);
  EXPECT_EQ(c.kind, ValueKind::kBuffer);
  EXPECT_EQ(a.kind, ValueKind::kView);
  EXPECT_EQ(b.kind, ValueKind::kView);
  EXPECT_EQ(a.buffer, c.buffer);
  EXPECT_EQ(b.buffer, c.buffer);
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(b.offset, 1024u);
  EXPECT_EQ(a.step, 0);
  EXPECT_EQ(b.step, 1);
  ASSERT_EQ(r->buffers.size(), 2u);  // the root and y
  const memory::TensorLifetime& root = r->buffers[c.buffer];
  EXPECT_EQ(root.size, 2048u);
  EXPECT_EQ(root.first_use, 0);  // written from the first part's step
  EXPECT_EQ(root.last_use, 3);   // read through c by y
  EXPECT_EQ(r->buffer_roots[c.buffer], f.c);
}

TEST(ConcatInPlace, BatchTwoChannelConcatIsNotContiguous) {
  Fire f(2);
  EXPECT_FALSE(InPlace(f.g, 2));
  auto r = AssignBuffers(f.g, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->in_place_concat[2], 0);
  EXPECT_EQ(r->values.at(f.a).kind, ValueKind::kBuffer);
  EXPECT_NE(r->values.at(f.a).buffer, r->values.at(f.c).buffer);
}

TEST(ConcatInPlace, LeadingAxisAndNegativeAxesQualify) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", Type({2, 16, 4}));
  ir::Value* a = Op(g, "Relu", "a", {x}, Type({2, 16, 4}));
  ir::Value* b = Op(g, "Sigmoid", "b", {x}, Type({2, 16, 4}));
  ir::Value* c = Concat(g, "c", {a, b}, -3, Type({4, 16, 4}));  // axis 0: nothing before it
  g.AddOutput(Op(g, "Relu", "y", {c}, Type({4, 16, 4})));
  EXPECT_EQ(InPlaceConcatOffsets(g, 64).at(2), (std::vector<uint64_t>{0, 512}));
}

TEST(ConcatInPlace, PartsAtUnalignedOffsetsAreCopied) {
  // 16 * 4 * 4 * 4 = 1024 bytes: aligned for 64 and 256, not for 2048.
  Fire f;
  EXPECT_TRUE(InPlace(f.g, 2, 256));
  EXPECT_FALSE(InPlace(f.g, 2, 2048));
  ir::Graph g;
  ir::Value* x = g.AddInput("x", Type({1, 5}));
  ir::Value* a = Op(g, "Relu", "a", {x}, Type({1, 5}));  // 20 bytes
  ir::Value* b = Op(g, "Sigmoid", "b", {x}, Type({1, 5}));
  g.AddOutput(Op(g, "Relu", "y", {Concat(g, "c", {a, b}, 1, Type({1, 10}))}, Type({1, 10})));
  EXPECT_FALSE(InPlace(g, 2));
}

TEST(ConcatInPlace, PartsMustBeKernelOutputsOfTheirOwn) {
  const auto build = [](const std::string& kind) {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->AddInput("x", Type({1, 16, 4, 4}));
    ir::Value* a = Op(*g, "Relu", "a", {x}, Type({1, 16, 4, 4}));
    ir::Value* b = nullptr;
    if (kind == "param") b = g->AddInput("b", Type({1, 16, 4, 4}));
    if (kind == "constant") {
      auto data = std::make_shared<ir::TensorData>();
      data->type = Type({1, 16, 4, 4});
      data->bytes.assign(1024, 0);
      b = g->AddConstant("b", data);
    }
    if (kind == "view") {
      ir::Value* flat = Op(*g, "Sigmoid", "flat", {x}, Type({256}));
      b = Op(*g, "keel.Reshape", "b", {flat}, Type({1, 16, 4, 4}));
    }
    if (kind == "output") {
      b = Op(*g, "Sigmoid", "b", {x}, Type({1, 16, 4, 4}));
      g->AddOutput(b);
    }
    ir::Value* c = Concat(*g, "c", {a, b}, 1, Type({1, 32, 4, 4}));
    g->AddOutput(Op(*g, "Relu", "y", {c}, Type({1, 32, 4, 4})));
    return g;
  };
  for (const std::string kind : {"param", "constant", "view", "output"}) {
    SCOPED_TRACE(kind);
    auto g = build(kind);
    for (const auto& offsets : InPlaceConcatOffsets(*g, 64)) EXPECT_TRUE(offsets.empty());
    auto r = AssignBuffers(*g, {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    for (uint8_t v : r->in_place_concat) EXPECT_EQ(v, 0);
  }
}

TEST(ConcatInPlace, APartHasOnePlace) {
  // The same value twice in one concat, and one value in two concats.
  ir::Graph g;
  ir::Value* x = g.AddInput("x", Type({1, 16, 4, 4}));
  ir::Value* a = Op(g, "Relu", "a", {x}, Type({1, 16, 4, 4}));
  ir::Value* b = Op(g, "Sigmoid", "b", {x}, Type({1, 16, 4, 4}));
  ir::Value* d = Op(g, "Neg", "d", {x}, Type({1, 16, 4, 4}));
  ir::Value* twice = Concat(g, "twice", {a, a}, 1, Type({1, 32, 4, 4}));
  ir::Value* c1 = Concat(g, "c1", {b, d}, 1, Type({1, 32, 4, 4}));
  ir::Value* c2 = Concat(g, "c2", {d, x}, 1, Type({1, 32, 4, 4}));
  for (ir::Value* v : {twice, c1, c2}) g.AddOutput(v);
  for (const auto& offsets : InPlaceConcatOffsets(g, 64)) EXPECT_TRUE(offsets.empty());
}

TEST(ConcatInPlace, CastsAndFusedGroupsWithMoreThanTheCopyAreCopied) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", Type({1, 16, 4, 4}));
  ir::Value* a = Op(g, "Relu", "a", {x}, Type({1, 16, 4, 4}));
  ir::Value* b = Op(g, "Cast", "b", {x}, Type({1, 16, 4, 4}, ir::DType::kI32));
  g.AddOutput(Concat(g, "c", {a, b}, 1, Type({1, 32, 4, 4})));  // not a valid ONNX Concat: dtype differs
  EXPECT_FALSE(InPlace(g, 2));

  // A keel.Fused concat qualifies only when its body is the one Concat.
  const auto fused = [](bool with_relu) {
    auto g = std::make_unique<ir::Graph>();
    ir::Value* x = g->AddInput("x", Type({1, 16, 4, 4}));
    ir::Value* a = Op(*g, "Relu", "a", {x}, Type({1, 16, 4, 4}));
    ir::Value* b = Op(*g, "Sigmoid", "b", {x}, Type({1, 16, 4, 4}));
    auto body = std::make_unique<ir::Graph>();
    ir::Value* ba = body->AddInput("a", Type({1, 16, 4, 4}));
    ir::Value* bb = body->AddInput("b", Type({1, 16, 4, 4}));
    ir::Value* bc = Concat(*body, "c", {ba, bb}, 1, Type({1, 32, 4, 4}));
    body->AddOutput(with_relu ? Op(*body, "Relu", "r", {bc}, Type({1, 32, 4, 4})) : bc);
    ir::Node* n = g->AddNode("keel.Fused", "group", {a, b}, 1, {"c"});
    n->output(0)->set_type(Type({1, 32, 4, 4}));
    n->set_body(std::move(body));
    g->AddOutput(Op(*g, "Relu", "y", {n->output(0)}, Type({1, 32, 4, 4})));
    return g;
  };
  EXPECT_TRUE(InPlace(*fused(false), 2));
  EXPECT_FALSE(InPlace(*fused(true), 2));
}

TEST(ConcatInPlace, NestedConcatsKeepTheInnerOneInPlace) {
  ir::Graph g;
  ir::Value* x = g.AddInput("x", Type({1, 16, 4, 4}));
  ir::Value* a = Op(g, "Relu", "a", {x}, Type({1, 16, 4, 4}));
  ir::Value* b = Op(g, "Sigmoid", "b", {x}, Type({1, 16, 4, 4}));
  ir::Value* inner = Concat(g, "inner", {a, b}, 1, Type({1, 32, 4, 4}));
  ir::Value* d = Op(g, "Neg", "d", {x}, Type({1, 16, 4, 4}));
  ir::Value* outer = Concat(g, "outer", {inner, d}, 1, Type({1, 48, 4, 4}));
  g.AddOutput(Op(g, "Relu", "y", {outer}, Type({1, 48, 4, 4})));
  EXPECT_TRUE(InPlace(g, 2));
  EXPECT_FALSE(InPlace(g, 4));
}

TEST(ConcatInPlace, ViewsOfAPartKeepItsOffset) {
  Fire f;
  ir::Value* flat = Op(f.g, "keel.Reshape", "flat", {f.b}, Type({256}));
  ir::Value* z = Op(f.g, "Relu", "z", {flat}, Type({256}));
  f.g.AddOutput(z);
  auto r = AssignBuffers(f.g, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ValueInfo& v = r->values.at(flat);
  EXPECT_EQ(v.kind, ValueKind::kView);
  EXPECT_EQ(v.buffer, r->values.at(f.c).buffer);
  EXPECT_EQ(v.offset, 1024u);
  EXPECT_EQ(r->buffers[v.buffer].last_use, 5);  // read through the view by z, after the concat
}

TEST(ConcatInPlace, APartIsNeverAnInPlacePartnerAwayFromItsRootsStart) {
  // b (offset 1024) is read last by an elementwise step, where the root dies:
  // its output must not take the root's bytes (it would write them from offset 0).
  ir::Graph g;
  ir::Value* x = g.AddInput("x", Type({1, 16, 4, 4}));
  ir::Value* a = Op(g, "Relu", "a", {x}, Type({1, 16, 4, 4}));
  ir::Value* b = Op(g, "Sigmoid", "b", {x}, Type({1, 16, 4, 4}));
  ir::Value* c = Concat(g, "c", {a, b}, 1, Type({1, 32, 4, 4}));
  ir::Value* y = Op(g, "Relu", "y", {c}, Type({1, 32, 4, 4}));
  ir::Node* e = g.AddNode("keel.Fused", "e", {b}, 1, {"e"});
  e->attrs().Set("keel.pattern", std::string("elementwise"));
  e->output(0)->set_type(Type({1, 16, 4, 4}));
  g.AddOutput(y);
  g.AddOutput(e->output(0));
  auto r = AssignBuffers(g, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->in_place_concat[2], 1);
  EXPECT_EQ(r->buffers[r->values.at(c).buffer].last_use, 4);
  EXPECT_EQ(r->buffers[r->values.at(e->output(0)).buffer].may_alias_with, -1);
}

// The Fire graph's kernels: the concat is a view step.
std::vector<StepKernel> FireKernels(bool concat_is_view) {
  const auto kernel = [](const std::string& name, std::vector<int64_t> in, std::vector<int64_t> out) {
    StepKernel k;
    k.kernel.name = name;
    k.kernel.args.push_back({ser::DType::kF32, std::move(in), ser::ArgAccess::kRead});
    k.kernel.args.push_back({ser::DType::kF32, std::move(out), ser::ArgAccess::kWrite});
    return k;
  };
  StepKernel concat;
  if (concat_is_view) {
    concat.is_view = true;
  } else {
    concat.kernel.name = "concat";
    concat.kernel.args = {{ser::DType::kF32, {1, 16, 4, 4}, ser::ArgAccess::kRead},
                          {ser::DType::kF32, {1, 16, 4, 4}, ser::ArgAccess::kRead},
                          {ser::DType::kF32, {1, 32, 4, 4}, ser::ArgAccess::kWrite}};
  }
  return {kernel("relu", {1, 16, 4, 4}, {1, 16, 4, 4}), kernel("sigmoid", {1, 16, 4, 4}, {1, 16, 4, 4}), concat,
          kernel("relu32", {1, 32, 4, 4}, {1, 32, 4, 4})};
}

TEST(ConcatInPlace, LoweringWritesThePartsAtTheirOffsetsAndNoConcatKernel) {
  Fire f;
  for (const std::string plan : {"greedy-size", "dynamic"}) {
    SCOPED_TRACE(plan);
    ser::ExecutableWriter writer;
    ProgramOptions options;
    options.memory_plan = plan;
    auto stats = LowerProgram(f.g, FireKernels(true), options, writer);
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    EXPECT_EQ(stats->num_invokes, 3u);
    auto bytes = writer.Finish();
    ASSERT_TRUE(bytes.ok());
    auto view = ser::ReadExecutable(*bytes);
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    // alloc_tensor in step order: a, b, c (the concat's output), y.
    std::vector<const fb::AllocTensor*> tensors;
    for (const auto* inst : *view->root->functions()->Get(0)->instructions()) {
      if (inst->op_type() == fb::Op::AllocTensor) tensors.push_back(inst->op_as_AllocTensor());
    }
    ASSERT_EQ(tensors.size(), 4u);
    EXPECT_EQ(tensors[0]->storage(), tensors[2]->storage());
    EXPECT_EQ(tensors[1]->storage(), tensors[2]->storage());
    EXPECT_EQ(tensors[0]->offset(), tensors[2]->offset());
    EXPECT_EQ(tensors[1]->offset(), tensors[2]->offset() + 1024);
  }
}

TEST(ConcatInPlace, LoweringRefusesAConcatKernelForAnInPlaceConcat) {
  Fire f;
  ser::ExecutableWriter writer;
  auto stats = LowerProgram(f.g, FireKernels(false), {}, writer);
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kInternal) << stats.status().ToString();
}

}  // namespace
}  // namespace keel::lower
