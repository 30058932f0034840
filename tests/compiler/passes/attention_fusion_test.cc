// tests/compiler/passes/attention_fusion_test.cc — the attention pass
// (compiler/passes/attention_fusion.h) and keel.Attention
// (compiler/ops/fused_attention.h): PyTorch's multi-head export (heads split by
// slices, reshapes and transposes of one [S, B, 3E] projection, Q scaled, the
// output transposed back) and the Hugging Face form ([B, S, H, D] heads, scaled
// scores, additive mask) each become one keel.Attention reading the
// projections in place, with the same values as the unfused graph (the op's
// reference evaluator); after mixed precision too; and what must stay unfused
// (a softmax read twice, over another axis, the target refusing) does.
#include "compiler/passes/attention_fusion.h"

#include <cmath>

#include "compiler/ir/printer.h"
#include "compiler/ops/fused_attention.h"
#include "compiler/ops/reference.h"
#include "compiler/passes/mixed_precision.h"
#include "tests/compiler/passes/pass_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT

bool AcceptAll(const ops::FusedAttention&, ir::DType, ir::DType) { return true; }

std::function<Status(ir::Graph&)> Fuse(AttentionPredicate accepts) {
  return [accepts](ir::Graph& g) -> Status {
    KEEL_RETURN_IF_ERROR(InferShapes(g));
    AttentionFusionPass pass(accepts);
    KEEL_RETURN_IF_ERROR(pass.Run(g));
    return g.Verify(true);
  };
}

ir::Attributes A(std::initializer_list<std::pair<const char*, ir::AttrValue>> kv) {
  ir::Attributes a;
  for (const auto& [k, v] : kv) a.Set(k, v);
  return a;
}

using Ints = std::vector<int64_t>;

// PyTorch's nn.MultiheadAttention export: x [S, B, E] -> in-projection
// [S, B, 3E] -> slices -> [S, B*H, D] -> transposes (K to [B*H, D, S]), Q / sqrt(D),
// Softmax, P V, transpose back to [S, B*H, D] -> [S*B, E] -> out-projection.
// With `batch_first`, x is [B, S, E] and transposed to [S, B, E] first (as
// nn.TransformerEncoderLayer(batch_first=True) exports), and the projection
// has a bias. With `residual` (batch-first only), the encoder layer's tail
// follows: out-projection bias, [S*B, E] -> [S, B, E], transposed back to
// [B, S, E] and added to x.
std::unique_ptr<ir::Graph> TorchMha(int64_t S, int64_t B, int64_t H, int64_t D, bool batch_first = false,
                                    bool residual = false) {
  const int64_t E = H * D;
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x_in = g->AddInput("x", F32(batch_first ? Ints{B, S, E} : Ints{S, B, E}));
  ir::Value* x = x_in;
  if (batch_first) x = Op(*g, "Transpose", "t_in", {x}, A({{"perm", Ints{1, 0, 2}}}));
  ir::Value* qkv = Op(*g, "MatMul", "in_proj", {x, Const(*g, "w_in", {E, 3 * E}, 1)});
  if (batch_first) qkv = Op(*g, "Add", "in_bias", {qkv, Const(*g, "b_in", {3 * E}, 7)});
  ir::Value* heads[3];
  for (int64_t i = 0; i < 3; ++i) {
    ir::Value* s = Op(*g, "Slice", "slice" + std::to_string(i), {qkv},
                      A({{"starts", Ints{i * E}}, {"ends", Ints{(i + 1) * E}}, {"axes", Ints{2}}}));
    heads[i] = Op(*g, "Reshape", "reshape" + std::to_string(i), {s}, A({{"shape", Ints{S, B * H, D}}}));
  }
  ir::Value* q = Op(*g, "Transpose", "tq", {heads[0]}, A({{"perm", Ints{1, 0, 2}}}));
  q = Op(*g, "Div", "scale", {q, Scalar(*g, "sqrt_d", std::sqrt(static_cast<float>(D)))});
  ir::Value* kt = Op(*g, "Transpose", "tk", {heads[1]}, A({{"perm", Ints{1, 2, 0}}}));
  ir::Value* v = Op(*g, "Transpose", "tv", {heads[2]}, A({{"perm", Ints{1, 0, 2}}}));
  ir::Value* s = Op(*g, "MatMul", "qk", {q, kt});
  ir::Value* p = Op(*g, "Softmax", "softmax", {s}, A({{"axis", int64_t{-1}}}));
  ir::Value* o = Op(*g, "MatMul", "pv", {p, v});
  o = Op(*g, "Transpose", "tback", {o}, A({{"perm", Ints{1, 0, 2}}}));
  o = Op(*g, "Reshape", "merge", {o}, A({{"shape", Ints{S * B, E}}}));
  ir::Value* y = Op(*g, "MatMul", "out_proj", {o, Const(*g, "w_out", {E, E}, 2)});
  if (residual) {
    y = Op(*g, "Add", "out_bias", {y, Const(*g, "b_out", {E}, 8)});
    y = Op(*g, "Reshape", "regroup", {y}, A({{"shape", Ints{S, B, E}}}));
    y = Op(*g, "Transpose", "t_out", {y}, A({{"perm", Ints{1, 0, 2}}}));
    y = Op(*g, "Add", "residual", {x_in, y});
  }
  y->set_name("y");
  g->AddOutput(y);
  return g;
}

// Hugging Face BERT: q, k, v [B, S, E] each -> [B, S, H, D] -> [B, H, S, D]
// (K as [B, H, D, S]); scores / sqrt(D) + mask [B, 1, 1, S]; Softmax; P V ->
// [B, S, H, D] -> [B, S, E].
std::unique_ptr<ir::Graph> HfAttention(int64_t B, int64_t S, int64_t H, int64_t D, bool read_probs_twice = false,
                                       int64_t softmax_axis = -1) {
  const int64_t E = H * D;
  auto g = std::make_unique<ir::Graph>();
  ir::Value* x = g->AddInput("x", F32({B, S, E}));
  ir::Value* mask = g->AddInput("mask", F32({B, 1, 1, S}));
  auto heads = [&](const std::string& n, uint32_t seed, Ints perm) {
    ir::Value* p = Op(*g, "MatMul", n, {x, Const(*g, "w_" + n, {E, E}, seed)});
    p = Op(*g, "Reshape", n + "_split", {p}, A({{"shape", Ints{B, S, H, D}}}));
    return Op(*g, "Transpose", n + "_t", {p}, A({{"perm", perm}}));
  };
  ir::Value* q = heads("q", 3, {0, 2, 1, 3});
  ir::Value* kt = heads("k", 4, {0, 2, 3, 1});
  ir::Value* v = heads("v", 5, {0, 2, 1, 3});
  ir::Value* s = Op(*g, "MatMul", "qk", {q, kt});
  s = Op(*g, "Mul", "scale", {Scalar(*g, "inv_sqrt_d", 1.0f / std::sqrt(static_cast<float>(D))), s});
  s = Op(*g, "Add", "masked", {s, mask});
  ir::Value* p = Op(*g, "Softmax", "softmax", {s}, A({{"axis", softmax_axis}}));
  ir::Value* o = Op(*g, "MatMul", "pv", {p, v});
  o = Op(*g, "Transpose", "merge_t", {o}, A({{"perm", Ints{0, 2, 1, 3}}}));
  o = Op(*g, "Reshape", "merge", {o}, A({{"shape", Ints{B, S, E}}}));
  o->set_name("y");
  g->AddOutput(o);
  if (read_probs_twice) g->AddOutput(p);
  return g;
}

int Count(const ir::Graph& g, const std::string& op) {
  int n = 0;
  for (const ir::Node* node : g.nodes()) n += node->op_type() == op;
  return n;
}

TEST(AttentionFusionTest, TorchMultiHeadBecomesOneOpReadingTheProjection) {
  const int64_t S = 7, B = 2, H = 3, D = 5;
  auto x = Random({S, B, H * D}, 11);
  std::unique_ptr<ir::Graph> kept;
  ir::Graph* g = nullptr;
  const double diff = CompareAfter([&] { return TorchMha(S, B, H, D); }, Fuse(AcceptAll), {x}, &g, &kept);
  EXPECT_LT(diff, 1e-5);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Count(*g, ops::kFusedAttentionOp), 1) << ir::PrintGraph(*g);
  for (const char* gone : {"Softmax", "Slice", "Transpose", "Div"}) EXPECT_EQ(Count(*g, gone), 0) << gone;
  EXPECT_EQ(Count(*g, "MatMul"), 2);  // the projections
  for (const ir::Node* n : g->nodes()) {
    if (n->op_type() != ops::kFusedAttentionOp) continue;
    // Q, K and V are all the in-projection's output, read through views.
    EXPECT_EQ(n->input(0), n->input(1));
    EXPECT_EQ(n->input(0), n->input(2));
    auto a = ops::ReadFusedAttention(*n);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->batch, (Ints{B, H}));
    EXPECT_NEAR(a->scale, 1.0 / std::sqrt(static_cast<double>(D)), 1e-7);
    EXPECT_EQ(a->k.offset, H * D);
    EXPECT_EQ(a->q.row, B * 3 * H * D);
  }
}

TEST(AttentionFusionTest, TransposeBeforeTheProjectionMovesIntoTheViews) {
  const int64_t S = 5, B = 3, H = 2, D = 4;
  auto x = Random({B, S, H * D}, 18);
  std::unique_ptr<ir::Graph> kept;
  ir::Graph* g = nullptr;
  const double diff = CompareAfter([&] { return TorchMha(S, B, H, D, true); }, Fuse(AcceptAll), {x}, &g, &kept);
  EXPECT_LT(diff, 1e-5);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Count(*g, ops::kFusedAttentionOp), 1) << ir::PrintGraph(*g);
  EXPECT_EQ(Count(*g, "Transpose"), 0) << ir::PrintGraph(*g);
  EXPECT_EQ(Count(*g, "MatMul"), 2);
  EXPECT_EQ(Count(*g, "Add"), 1);
  for (const ir::Node* n : g->nodes()) {
    if (n->op_type() != ops::kFusedAttentionOp) continue;
    // Q, K and V are read in the model's batch-first order: the projection
    // ran on x itself.
    ASSERT_NE(n->input(0)->producer(), nullptr);
    EXPECT_EQ(n->input(0)->producer()->op_type(), "Add");
    EXPECT_EQ(n->input(0)->type().shape, (Ints{B, S, 3 * H * D}));
  }
}

TEST(AttentionFusionTest, TransposeBehindTheOutputProjectionMovesIntoTheOutputView) {
  const int64_t S = 5, B = 3, H = 2, D = 4, E = H * D;
  auto x = Random({B, S, E}, 19);
  std::unique_ptr<ir::Graph> kept;
  ir::Graph* g = nullptr;
  const double diff =
      CompareAfter([&] { return TorchMha(S, B, H, D, true, true); }, Fuse(AcceptAll), {x}, &g, &kept);
  EXPECT_LT(diff, 1e-5);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Count(*g, ops::kFusedAttentionOp), 1) << ir::PrintGraph(*g);
  EXPECT_EQ(Count(*g, "Transpose"), 0) << ir::PrintGraph(*g);
  EXPECT_EQ(Count(*g, "MatMul"), 2);
  for (const ir::Node* n : g->nodes()) {
    if (n->op_type() == "Add" && n->name() == "residual") {
      // The projection's rows arrive in x's [B, S] order: a plain add, which
      // the GEMM can take as its epilogue.
      EXPECT_EQ(n->input(1)->type().shape, (Ints{B, S, E}));
    }
    if (n->op_type() != ops::kFusedAttentionOp) continue;
    auto a = ops::ReadFusedAttention(*n);
    ASSERT_TRUE(a.ok());
    // Rows written b-major: the row (query) stride is one row of E, batch b jumps S rows.
    EXPECT_EQ(a->y.row, E);
    EXPECT_EQ(a->out_shape, (Ints{B * S, E}));
  }
}

TEST(AttentionFusionTest, HuggingFaceFormWithMask) {
  const int64_t B = 2, S = 9, H = 2, D = 4;
  auto x = Random({B, S, H * D}, 12);
  auto mask = Random({B, 1, 1, S}, 13);
  std::unique_ptr<ir::Graph> kept;
  ir::Graph* g = nullptr;
  const double diff = CompareAfter([&] { return HfAttention(B, S, H, D); }, Fuse(AcceptAll), {x, mask}, &g, &kept);
  EXPECT_LT(diff, 1e-5);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Count(*g, ops::kFusedAttentionOp), 1) << ir::PrintGraph(*g);
  EXPECT_EQ(Count(*g, "Softmax"), 0);
  EXPECT_EQ(Count(*g, "Add"), 0);
  EXPECT_EQ(Count(*g, "Transpose"), 0);
  for (const ir::Node* n : g->nodes()) {
    if (n->op_type() != ops::kFusedAttentionOp) continue;
    auto a = ops::ReadFusedAttention(*n);
    ASSERT_TRUE(a.ok());
    EXPECT_TRUE(a->has_mask);
    EXPECT_EQ(a->mask.row, 0) << "one mask row for every query";
  }
}

TEST(AttentionFusionTest, AfterMixedPrecision) {
  const int64_t B = 1, S = 6, H = 2, D = 8;
  auto x = Random({B, S, H * D}, 14);
  auto mask = Random({B, 1, 1, S}, 15);
  auto ref = HfAttention(B, S, H, D);
  ASSERT_TRUE(InferShapes(*ref).ok());
  auto want = ops::EvaluateGraph(*ref, {x, mask});
  ASSERT_TRUE(want.ok());
  auto g = HfAttention(B, S, H, D);
  ASSERT_TRUE(InferShapes(*g).ok());
  MixedPrecisionOptions mp;
  mp.precision = Precision::kFp16;
  ASSERT_TRUE(ApplyMixedPrecision(*g, mp).ok());
  ir::DType seen = ir::DType::kF32;
  AttentionFusionPass pass([&](const ops::FusedAttention&, ir::DType t, ir::DType) {
    seen = t;
    return true;
  });
  ASSERT_TRUE(pass.Run(*g).ok());
  ASSERT_TRUE(g->Verify(true).ok());
  EXPECT_EQ(seen, ir::DType::kF16);
  EXPECT_EQ(Count(*g, ops::kFusedAttentionOp), 1) << ir::PrintGraph(*g);
  EXPECT_EQ(Count(*g, "Softmax"), 0);
  auto got = ops::EvaluateGraph(*g, {x, mask});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  double num = 0, den = 0;
  for (int64_t i = 0; i < (*want)[0]->type.NumElements(); ++i) {
    const double w = ops::ElementAsDouble(*(*want)[0], i), e = ops::ElementAsDouble(*(*got)[0], i) - w;
    num += e * e;
    den += w * w;
  }
  EXPECT_LT(std::sqrt(num / den), 1e-2);
}

TEST(AttentionFusionTest, LeavesWhatItCannotFuse) {
  auto x = Random({1, 5, 6}, 16);
  auto mask = Random({1, 1, 1, 5}, 17);
  for (int variant = 0; variant < 3; ++variant) {
    SCOPED_TRACE(variant);
    std::unique_ptr<ir::Graph> kept;
    ir::Graph* g = nullptr;
    auto build = [&] { return HfAttention(1, 5, 2, 3, variant == 0, variant == 1 ? 2 : -1); };
    AttentionPredicate accepts = variant == 2 ? AttentionPredicate([](const ops::FusedAttention&, ir::DType,
                                                                        ir::DType) { return false; })
                                              : AttentionPredicate(AcceptAll);
    EXPECT_LT(CompareAfter(build, Fuse(accepts), {x, mask}, &g, &kept), 1e-6);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(Count(*g, ops::kFusedAttentionOp), 0);
    EXPECT_EQ(Count(*g, "Softmax"), 1);
  }
  // No predicate: the pass is off.
  auto g = HfAttention(1, 5, 2, 3);
  ASSERT_TRUE(InferShapes(*g).ok());
  ASSERT_TRUE(AttentionFusionPass(nullptr).Run(*g).ok());
  EXPECT_EQ(Count(*g, "Softmax"), 1);
}

TEST(AttentionFusionTest, RefusesInconsistentAttributes) {
  auto g = std::make_unique<ir::Graph>();
  ir::Value* q = g->AddInput("q", F32({2, 3, 4}));
  ir::Node* n = g->AddNode(ops::kFusedAttentionOp, "att", {q, q, q}, 1);
  ops::FusedAttention a;
  a.batch = {2};
  a.sq = a.sk = 3;
  a.d = a.dv = 4;
  a.out_shape = {2, 3, 4};
  a.q = a.k = a.v = a.y = {0, {12}, 4, 1};
  ops::SetFusedAttentionAttrs(*n, a);
  EXPECT_TRUE(ops::InferNodeTypes(*n).ok());
  a.k.row = 5;  // reads past the end
  ops::SetFusedAttentionAttrs(*n, a);
  auto bad = ops::InferNodeTypes(*n);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("K's view"), std::string::npos) << bad.status().ToString();
  a.k.row = 4;
  a.y.col = 2;  // Y places elements twice
  ops::SetFusedAttentionAttrs(*n, a);
  EXPECT_FALSE(ops::InferNodeTypes(*n).ok());
}

}  // namespace
}  // namespace keel::passes
