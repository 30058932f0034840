// tests/compiler/ops/recurrent_test.cc — RNN/GRU/LSTM: canonical activations
// (alpha/beta consumed in order by the functions that take them), the
// reference on hand-computed sequences (directions, sequence_lens) and
// refusals that name the node.
#include <gtest/gtest.h>

#include <memory>

#include "compiler/ops/reference.h"
#include "compiler/ops/semantics.h"

namespace keel::ops {
namespace {

using namespace keel::ir;  // NOLINT: the test builds IR graphs throughout

struct Recurrent {
  Graph g;
  Node* node = nullptr;
  Recurrent(const std::string& op, std::vector<TensorDataPtr> inputs, size_t outputs) {
    std::vector<Value*> vals;
    for (size_t i = 0; i < inputs.size(); ++i)
      vals.push_back(inputs[i] ? g.AddConstant("in" + std::to_string(i), inputs[i]) : nullptr);
    node = g.AddNode(op, "n", vals, outputs);
  }
  Result<std::vector<TensorDataPtr>> Run() {
    KEEL_RETURN_IF_ERROR(CanonicalizeNode(*node));
    std::vector<TensorDataPtr> args;
    for (Value* v : node->inputs()) args.push_back(v ? v->constant() : nullptr);
    return EvaluateNode(*node, args);
  }
};

std::vector<float> F(const TensorDataPtr& t) {
  return std::vector<float>(t->data<float>(), t->data<float>() + t->type.NumElements());
}

// RNN with H = I = 1, W = 2, R = 0.5, Relu, X = [1, 3] (T = 2, B = 1).
std::unique_ptr<Recurrent> SmallRnn(const std::string& direction, TensorDataPtr lens) {
  auto r = std::make_unique<Recurrent>(
      "RNN", std::vector<TensorDataPtr>{MakeTensorF32({2, 1, 1}, {1, 3}), MakeTensorF32({1, 1, 1}, {2}),
                                        MakeTensorF32({1, 1, 1}, {0.5f}), nullptr, lens},
      2);
  r->node->attrs().Set("direction", direction);
  r->node->attrs().Set("activations", std::vector<std::string>{"relu"});
  return r;
}

TEST(RecurrentTest, ForwardSteps) {
  auto r = SmallRnn("forward", nullptr);
  auto out = r->Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0]->type.shape, (std::vector<int64_t>{2, 1, 1, 1}));
  EXPECT_EQ(F((*out)[0]), (std::vector<float>{2, 7}));  // relu(2), relu(6 + 0.5 * 2)
  EXPECT_EQ(F((*out)[1]), (std::vector<float>{7}));
}

TEST(RecurrentTest, ReverseStartsAtTheEnd) {
  auto r = SmallRnn("reverse", nullptr);
  auto out = r->Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(F((*out)[0]), (std::vector<float>{5, 6}));  // t=1: relu(6); t=0: relu(2 + 3)
  EXPECT_EQ(F((*out)[1]), (std::vector<float>{5}));
}

TEST(RecurrentTest, SequenceLensMaskSteps) {
  auto fwd = SmallRnn("forward", MakeTensorI64({1}, {1}));
  auto out = fwd->Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(F((*out)[0]), (std::vector<float>{2, 0}));
  EXPECT_EQ(F((*out)[1]), (std::vector<float>{2}));
  // Reverse over a length-1 sequence: only t = 0 runs, from the initial state.
  auto rev = SmallRnn("reverse", MakeTensorI64({1}, {1}));
  out = rev->Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(F((*out)[0]), (std::vector<float>{2, 0}));
  // Length 0: nothing runs, zero final state.
  auto none = SmallRnn("forward", MakeTensorI64({1}, {0}));
  out = none->Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(F((*out)[0]), (std::vector<float>{0, 0}));
  EXPECT_EQ(F((*out)[1]), (std::vector<float>{0}));
}

TEST(RecurrentTest, ActivationParametersConsumedInOrder) {
  // GRU, bidirectional, H = 1, I = 1: W, R [2, 3, 1].
  Recurrent r("GRU", {MakeTensorF32({1, 1, 1}, {1}), MakeTensorF32({2, 3, 1}, {1, 1, 1, 1, 1, 1}),
                      MakeTensorF32({2, 3, 1}, {1, 1, 1, 1, 1, 1})}, 1);
  Attributes& a = r.node->attrs();
  a.Set("direction", std::string("bidirectional"));
  a.Set("activations", std::vector<std::string>{"LeakyRelu", "ScaledTanh", "HardSigmoid", "Tanh"});
  a.Set("activation_alpha", std::vector<double>{0.1, 0.2, 0.3});
  a.Set("activation_beta", std::vector<double>{0.4});
  ASSERT_TRUE(CanonicalizeNode(*r.node).ok());
  const Attributes first = a;
  EXPECT_EQ(std::get<std::vector<double>>(a.all().at("act_alpha")), (std::vector<double>{0.1, 0.2, 0.3, 0}));
  EXPECT_EQ(std::get<std::vector<double>>(a.all().at("act_beta")), (std::vector<double>{0, 0.4, 0.5, 0}));
  EXPECT_EQ(std::get<std::vector<std::string>>(a.all().at("activations")),
            (std::vector<std::string>{"LeakyRelu", "ScaledTanh", "HardSigmoid", "Tanh"}));
  EXPECT_FALSE(a.Has("activation_alpha"));
  ASSERT_TRUE(CanonicalizeNode(*r.node).ok());
  EXPECT_TRUE(a == first);  // idempotent
  EXPECT_EQ(a.GetInt("hidden_size", 0).value(), 1);
}

TEST(RecurrentTest, RefusalsNameTheNode) {
  auto dir = SmallRnn("sideways", nullptr);
  auto out = dir->Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("RNN 'n'"), std::string::npos) << out.status().message();
  auto act = SmallRnn("forward", nullptr);
  act->node->attrs().Set("activations", std::vector<std::string>{"Swish"});
  out = act->Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("activation 'Swish'"), std::string::npos) << out.status().message();
  Recurrent shape("LSTM", {MakeTensorF32({2, 1, 1}, {1, 3}), MakeTensorF32({1, 4, 1}, {1, 1, 1, 1}),
                           MakeTensorF32({1, 3, 1}, {1, 1, 1})}, 1);
  out = shape.Run();
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("R must have shape"), std::string::npos) << out.status().message();
}

}  // namespace
}  // namespace keel::ops
