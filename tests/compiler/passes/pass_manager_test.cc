// tests/compiler/passes/pass_manager_test.cc — registry listing, disabling passes,
// IR dumps after a named pass, and the default pipeline on a small graph.
#include "compiler/passes/pass_manager.h"

#include "tests/compiler/passes/pass_test_util.h"

namespace keel::passes {
namespace {

using namespace keel::passes::testing;  // NOLINT

std::unique_ptr<ir::Graph> SmallGraph() {
  auto g = std::make_unique<ir::Graph>();
  g->set_name("small");
  ir::Value* x = g->AddInput("x", F32({1, 2, 4, 4}));
  ir::Node* id = g->AddNode("Identity", "id", {x}, 1);
  ir::Node* conv = g->AddNode("Conv", "conv", {id->output(0), Const(*g, "w", {2, 2, 1, 1}, 1)}, 1);
  ir::Node* relu = g->AddNode("Relu", "relu", {conv->output(0)}, 1);
  ir::Node* flat = g->AddNode("Flatten", "flat", {relu->output(0)}, 1, {"y"});
  g->AddOutput(flat->output(0));
  return g;
}

TEST(PassManagerTest, ListsRegisteredPasses) {
  auto passes = ListPasses();
  std::vector<std::string> names;
  for (const auto& p : passes) {
    names.push_back(p.name);
    EXPECT_FALSE(p.description.empty());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"attention-fusion", "batchnorm-folding", "channels-last",
                                             "constant-folding", "cse", "dce",
                                             "fusion", "gelu-fusion", "im2col", "mixed-precision", "pad-folding",
                                             "reduction-split", "shape-inference", "simplify", "space-to-depth", "subpixel", "verify",
                                             "weight-packing", "winograd"}));
  EXPECT_FALSE(CreatePass("no-such-pass").ok());
}

TEST(PassManagerTest, DefaultPipelineOrderAndDump) {
  PipelineOptions opts;
  std::vector<std::string> dumped;
  opts.dump_ir_after = {"fusion"};
  opts.dump_sink = [&](const std::string& pass, const std::string& text) {
    dumped.push_back(pass);
    EXPECT_NE(text.find("keel.Fused"), std::string::npos);
  };
  auto pm = BuildDefaultPipeline(opts);
  ASSERT_TRUE(pm.ok());
  std::vector<std::string> order;
  for (const auto& p : pm->List()) order.push_back(p.name);
  EXPECT_EQ(order, (std::vector<std::string>{"simplify", "shape-inference", "constant-folding", "dce", "cse",
                                             "gelu-fusion", "batchnorm-folding", "pad-folding", "shape-inference",
                                             "simplify", "space-to-depth", "subpixel", "im2col", "reduction-split", "mixed-precision",
                                             "attention-fusion", "channels-last", "winograd", "weight-packing", "fusion", "dce",
                                             "verify"}));
  auto g = SmallGraph();
  Status s = pm->Run(*g);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(dumped, (std::vector<std::string>{"fusion"}));
  auto h = Histogram(*g);
  EXPECT_EQ(h["keel.Fused"], 1);
  EXPECT_EQ(h["keel.Reshape"], 1);
  EXPECT_EQ(g->outputs()[0]->name(), "y");
}

TEST(PassManagerTest, DisabledPassesDoNotRun) {
  PipelineOptions opts;
  opts.disabled = {"fusion"};
  auto g = SmallGraph();
  ASSERT_TRUE(RunDefaultPipeline(*g, opts).ok());
  auto h = Histogram(*g);
  EXPECT_EQ(h.count("keel.Fused"), 0u);
  EXPECT_EQ(h["Conv"], 1);

  PipelineOptions bad;
  bad.disabled = {"nonsense"};
  Status s = RunDefaultPipeline(*g, bad);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("nonsense"), std::string::npos);
  PipelineOptions no_verify;
  no_verify.disabled = {"verify"};
  EXPECT_FALSE(BuildDefaultPipeline(no_verify).ok());
}

TEST(PassManagerTest, ErrorsNameThePass) {
  ir::Graph g;
  ir::Node* add = g.AddNode("Add", "bad_add", {g.AddInput("a", F32({2})), g.AddInput("b", F32({3}))}, 1);
  g.AddOutput(add->output(0));
  Status s = RunDefaultPipeline(g, {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("pass shape-inference"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("bad_add"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace keel::passes
