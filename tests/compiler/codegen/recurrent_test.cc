// RNN, GRU and LSTM kernels (ops/recurrent_kernel.cc) against the reference evaluator, both
// forms of the recurrent product: output rows in SIMD lanes (LowerOptions::
// recurrent_rows_in_lanes, the CPU's default, taken where a power-of-two share of at least 4 of
// the GEMM panel width divides the hidden size) and dot products with horizontal sums (the
// option off, or hidden sizes the lanes do not divide), with the AVX2 and AVX-512 panel widths.
#include <gtest/gtest.h>

#include <string>

#include "tests/compiler/codegen/codegen_test_util.h"

namespace keel::codegen::testing {
namespace {

const LowerOptions kAvx2 = LowerOptionsForCpuFeatures("+avx2,+fma");
const LowerOptions kAvx512 = LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f");

struct Case {
  std::string op;
  int64_t gates, hidden;
  std::string direction;
  int64_t linear_before_reset;
};

// Runs `c` (T = 4, batch 3, input 5, biases and an initial state) lowered with `options`.
void CheckCase(const Case& c, const LowerOptions& options, uint32_t seed) {
  SCOPED_TRACE(c.op + " H=" + std::to_string(c.hidden) + " " + c.direction + " lbr=" +
               std::to_string(c.linear_before_reset) + " lanes=" + std::to_string(options.recurrent_rows_in_lanes) +
               " nr=" + std::to_string(options.gemm_nr));
  const int64_t D = c.direction == "bidirectional" ? 2 : 1, H = c.hidden, GH = c.gates * H;
  GraphBuilder b;
  std::vector<ir::Value*> ins = {b.Input("x", {4, 3, 5}), b.Input("w", {D, GH, 5}), b.Input("r", {D, GH, H}),
                                 b.Input("bias", {D, 2 * GH}), nullptr, b.Input("h0", {D, 3, H})};
  ir::Attributes a = Attrs({{"hidden_size", H}, {"direction", c.direction}});
  if (c.op == "GRU") a.Set("linear_before_reset", c.linear_before_reset);
  if (c.op == "LSTM") ins.push_back(b.Input("c0", {D, 3, H}));
  ir::Node* n = b.Op(c.op, ins, a, 2);
  ASSERT_NE(n, nullptr);
  CheckNodeAgainstReference(*n, seed, 1e-5, 4, options);
}

TEST(RecurrentKernel, RowsInLanesAndDotProductsMatchTheReference) {
  LowerOptions no_lanes = kAvx512;
  no_lanes.recurrent_rows_in_lanes = false;
  const LowerOptions& dots = no_lanes;
  uint32_t seed = 300;
  // Hidden sizes: 8 and 12 (lanes of 8 and 4 on both ISAs), 20 (4), 6 (too few lanes: the dot
  // products whatever the option says).
  const Case cases[] = {{"GRU", 3, 12, "bidirectional", 0}, {"GRU", 3, 8, "reverse", 1},
                        {"GRU", 3, 20, "forward", 1},       {"LSTM", 4, 12, "bidirectional", 0},
                        {"RNN", 1, 8, "bidirectional", 0},  {"GRU", 3, 6, "bidirectional", 0}};
  for (const Case& c : cases) {
    for (const LowerOptions* o : {&kAvx2, &kAvx512, &dots}) CheckCase(c, *o, ++seed);
  }
}

}  // namespace
}  // namespace keel::codegen::testing
