// tests/compiler/ops/movement_test.cc — the data-movement ops (movement_*.cc,
// einsum.cc): reference values small enough to check by hand, canonical forms
// (idempotent), and refusals that name the node.
#include <gtest/gtest.h>

#include "compiler/ops/reference.h"
#include "compiler/ops/semantics.h"

namespace keel::ops {
namespace {

using namespace keel::ir;  // NOLINT: the test builds IR graphs throughout

// A one-node graph; inputs are constants, or typed graph inputs where `data` is null.
class Net {
 public:
  Net(const std::string& op, std::vector<TensorDataPtr> constants, std::vector<TensorType> runtime = {},
      size_t outputs = 1) {
    std::vector<Value*> vals;
    for (size_t i = 0; i < constants.size(); ++i) {
      if (constants[i]) {
        vals.push_back(g_.AddConstant("c" + std::to_string(i), constants[i]));
      } else {
        vals.push_back(g_.AddInput("x" + std::to_string(i), runtime.at(i)));
      }
    }
    node_ = g_.AddNode(op, "n", vals, outputs);
  }
  Node& node() { return *node_; }
  Result<std::vector<TensorType>> Types() {
    KEEL_RETURN_IF_ERROR(CanonicalizeNode(*node_));
    KEEL_RETURN_IF_ERROR(CanonicalizeNode(*node_));  // idempotent
    return InferNodeTypes(*node_);
  }
  Result<std::vector<TensorDataPtr>> Run() {
    KEEL_RETURN_IF_ERROR(Types().status());
    std::vector<TensorDataPtr> args;
    for (Value* v : node_->inputs()) args.push_back(v ? v->constant() : nullptr);
    return EvaluateNode(*node_, args);
  }

 private:
  Graph g_;
  Node* node_;
};

std::vector<double> D(const TensorDataPtr& t) { return TensorToDoubles(*t); }

TEST(MovementTest, PadReflectAndEdge) {
  Net n("Pad", {MakeTensorF32({3}, {1, 2, 3}), MakeTensorI64({2}, {2, 3})});
  n.node().attrs().Set("mode", std::string("reflect"));
  auto r = n.Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(D((*r)[0]), (std::vector<double>{3, 2, 1, 2, 3, 2, 1, 2}));
  Net e("Pad", {MakeTensorF32({3}, {1, 2, 3}), MakeTensorI64({2}, {-1, 2})});
  e.node().attrs().Set("mode", std::string("edge"));
  auto re = e.Run();
  ASSERT_TRUE(re.ok()) << re.status().ToString();
  EXPECT_EQ(D((*re)[0]), (std::vector<double>{2, 3, 3, 3}));
}

TEST(MovementTest, PadNeedsConstantPads) {
  Net n("Pad", {MakeTensorF32({3}, {1, 2, 3}), nullptr}, {{}, {DType::kI64, {2}}});
  auto r = n.Types();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("must be a compile-time constant"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("Pad 'n'"), std::string::npos);
}

TEST(MovementTest, SplitFromDeclaredOutputsUneven) {
  Net n("Split", {MakeTensorF32({5}, {0, 1, 2, 3, 4})}, {}, 2);
  n.node().attrs().Set("keel.num_outputs", int64_t{3});  // what the importer records
  auto r = n.Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);  // trailing unused output dropped
  EXPECT_EQ(D((*r)[0]), (std::vector<double>{0, 1}));
  EXPECT_EQ(D((*r)[1]), (std::vector<double>{2, 3}));
}

TEST(MovementTest, ScatterNDAddsDuplicatesInOrder) {
  Net n("ScatterND", {MakeTensorF32({4}, {1, 1, 1, 1}), MakeTensorI64({3, 1}, {1, -1, 1}), MakeTensorF32({3}, {5, 7, 2})});
  n.node().attrs().Set("reduction", std::string("add"));
  auto r = n.Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(D((*r)[0]), (std::vector<double>{1, 8, 1, 8}));
}

TEST(MovementTest, ScatterConstantIndexOutOfRangeRefused) {
  Net n("ScatterElements", {MakeTensorF32({3}, {1, 2, 3}), MakeTensorI64({1}, {3}), MakeTensorF32({1}, {9})});
  auto r = n.Types();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("out of range"), std::string::npos) << r.status().message();
}

TEST(MovementTest, GatherNDBatchDims) {
  Net n("GatherND", {MakeTensorF32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7}), MakeTensorI64({2, 1}, {1, 0})});
  n.node().attrs().Set("batch_dims", int64_t{1});
  auto r = n.Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)[0]->type.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(D((*r)[0]), (std::vector<double>{2, 3, 4, 5}));
}

TEST(MovementTest, OneHotCanonicalIsIdempotent) {
  Net n("OneHot", {MakeTensorI64({3}, {0, -1, 5}), MakeTensorI64({}, {3}), MakeTensorF32({2}, {0, 1})});
  auto r = n.Run();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(D((*r)[0]), (std::vector<double>{1, 0, 0, 0, 0, 1, 0, 0, 0}));
}

TEST(MovementTest, EinsumDiagonalAndImplicitOutput) {
  Net d("Einsum", {MakeTensorF32({2, 2}, {1, 2, 3, 4})});
  d.node().attrs().Set("equation", std::string("ii->i"));
  auto rd = d.Run();
  ASSERT_TRUE(rd.ok()) << rd.status().ToString();
  EXPECT_EQ(D((*rd)[0]), (std::vector<double>{1, 4}));
  Net m("Einsum", {MakeTensorF32({2, 2}, {1, 2, 3, 4}), MakeTensorF32({2}, {1, 1})});
  m.node().attrs().Set("equation", std::string("ij,j"));  // implicit: "->i"
  auto rm = m.Run();
  ASSERT_TRUE(rm.ok()) << rm.status().ToString();
  EXPECT_EQ(D((*rm)[0]), (std::vector<double>{3, 7}));
}

TEST(MovementTest, EinsumBadEquationNamesNode) {
  Net n("Einsum", {MakeTensorF32({2, 2}, {1, 2, 3, 4})});
  n.node().attrs().Set("equation", std::string("ijk->i"));
  auto r = n.Types();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("Einsum 'n'"), std::string::npos) << r.status().message();
}

TEST(MovementTest, CompressNeedsConstantCondition) {
  Net n("Compress", {MakeTensorF32({3}, {1, 2, 3}), nullptr}, {{}, {DType::kBool, {3}}});
  auto r = n.Types();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("must be a compile-time constant"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace keel::ops
