// Elementwise, broadcasting and data-movement ops: each generated kernel against
// the reference evaluator, with odd shapes (not multiples of the vector width)
// and 1-sized dims.
#include <gtest/gtest.h>

#include "compiler/codegen/llvm_cpu_emitter.h"
#include "tests/compiler/codegen/codegen_test_util.h"

namespace keel::codegen::testing {
namespace {

TEST(Elementwise, BinaryOpsWithBroadcast) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    GraphBuilder b;
    CheckOp(b, op, {b.Input("x", {2, 3, 5, 7}), b.Input("y", {3, 1, 7})}, {}, 1);
  }
}

TEST(Elementwise, UnaryOps) {
  for (const char* op : {"Relu", "Sigmoid", "Erf", "Tanh", "Exp", "Neg", "Identity"}) {
    GraphBuilder b;
    CheckOp(b, op, {b.Input("x", {3, 1, 37})}, {}, 2);
  }
}

// f32 Erf is an inline approximation (not libm): check it across its whole
// range, tails (|x| > 4, erf = +-1 in f32) and zero included, tightly.
TEST(Elementwise, ErfAccurateOverItsRange) {
  GraphBuilder b;
  std::vector<float> xs;
  for (int i = -24; i <= 24; ++i) xs.push_back(static_cast<float>(i) * 0.25f);
  CheckOp(b, "Erf", {b.ConstF32("x", {1, static_cast<int64_t>(xs.size())}, xs)}, {}, 3, 1e-6);
}

TEST(Elementwise, SqrtPowOnPositiveInputs) {
  GraphBuilder b;
  ir::Value* x = b.ConstF32("x", {2, 9}, {0.5f, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17});
  ir::Value* e = b.ConstF32("e", {}, {2.0f});
  ir::Value* e2 = b.Input("e2", {9});
  CheckOp(b, "Sqrt", {x}, {}, 3);
  CheckOp(b, "Pow", {x, e}, {}, 3);
  CheckOp(b, "Pow", {x, e2}, {}, 3);
}

TEST(Elementwise, ClipAndCast) {
  GraphBuilder b;
  CheckOp(b, "Clip", {b.Input("x", {4, 33})}, Attrs({{"min", 0.0}, {"max", 0.5}}), 4);
  CheckOp(b, "Cast", {b.Input("xi", {5, 3}, ir::DType::kI64)}, Attrs({{"to", std::string("f32")}}), 5);
}

TEST(Elementwise, LargeTensorRunsParallel) {
  GraphBuilder b;
  KernelSpec spec = CheckOp(b, "Add", {b.Input("x", {1, 64, 57, 59}), b.Input("y", {1, 64, 57, 59})}, {}, 6);
  ASSERT_TRUE(spec.kernel);
  EXPECT_NE(spec.kernel->ToString().find("parallel for"), std::string::npos);
}

TEST(Movement, Transpose) {
  GraphBuilder b;
  CheckOp(b, "Transpose", {b.Input("x", {2, 3, 5, 7})}, Attrs({{"perm", std::vector<int64_t>{0, 2, 3, 1}}}), 7);
}

// Transposes that move the innermost axis copy square tiles (lower_transpose.h),
// which the CPU back end transposes in registers: batches > 1, axes that are
// not whole tiles (the tail channels and the tail pixels take other loops),
// NCHW -> NHWC and back, a plain matrix, at the tile of each ISA's options
// (16 AVX-512, 8 AVX2, 4 SSE). Too few channels for a tile keeps the generic
// loop nest.
TEST(Movement, TransposeInTiles) {
  struct Case {
    std::vector<int64_t> shape, perm;
    bool tiled;  // at every tile size below
  };
  const std::vector<Case> cases = {
      {{2, 37, 9, 7}, {0, 2, 3, 1}, true},    // [2, 37, 63] -> [2, 63, 37]
      {{3, 5, 6, 20}, {0, 3, 1, 2}, true},    // NHWC -> NCHW: [3, 30, 20] -> [3, 20, 30]
      {{1, 16, 8, 4}, {0, 2, 3, 1}, true},    // whole tiles only
      {{33, 50}, {1, 0}, true},
      {{2, 3, 5, 7}, {0, 2, 3, 1}, false},    // 3 channels
  };
  const std::vector<std::string> isas = {"+avx2,+fma,+avx512f", "+avx2,+fma", "+sse4.2"};
  uint32_t seed = 40;
  for (const Case& c : cases) {
    for (const std::string& isa : isas) {
      SCOPED_TRACE(isa);
      GraphBuilder b;
      ir::Node* n = b.Op("Transpose", {b.Input("x", c.shape)}, Attrs({{"perm", c.perm}}));
      ASSERT_NE(n, nullptr);
      KernelSpec spec = CheckNodeAgainstReference(*n, seed++, 1e-7, 4, LowerOptionsForCpuFeatures(isa));
      ASSERT_NE(spec.kernel, nullptr);
      EXPECT_EQ(spec.kernel->ToString().find("in_tiles") != std::string::npos, c.tiled);
    }
  }
}

// A transpose followed by elementwise ops of its output's shape (ConvNeXt's
// NHWC -> NCHW transpose, layer scale and residual add; NCHW -> NHWC and a
// Relu) runs in the same tiles, the ops applied to each transposed row: odd
// shapes with tail channels and tail pixels, at each ISA's tile, against the
// reference evaluator. On the host's ISA the tile's loads are rows (no
// gather is left in the optimized IR where the channels fill whole tiles).
TEST(Movement, TransposeWithElementwiseEpilogueInTiles) {
  struct Case {
    std::vector<int64_t> shape, perm;
    bool whole_tiles;  // pixels and channels at the AVX-512 tile (16): no gathering tail
  };
  const std::vector<Case> cases = {
      {{2, 5, 7, 32}, {0, 3, 1, 2}, false},   // NHWC -> NCHW, 35 pixels (2 tiles + 3)
      {{1, 6, 9, 37}, {0, 3, 1, 2}, false},   // 37 channels: 2 tiles + 5
      {{2, 4, 8, 48}, {0, 3, 1, 2}, true},
      {{2, 48, 4, 8}, {0, 2, 3, 1}, true},    // NCHW -> NHWC
      {{1, 20, 5, 7}, {0, 2, 3, 1}, false},
  };
  const std::vector<std::string> isas = {"+avx2,+fma,+avx512f", "+avx2,+fma", "+sse4.2"};
  uint32_t seed = 70;
  for (const Case& c : cases) {
    for (const std::string& isa : isas) {
      SCOPED_TRACE(isa);
      std::vector<int64_t> out_shape;
      for (int64_t a : c.perm) out_shape.push_back(c.shape[static_cast<size_t>(a)]);
      const bool to_nchw = c.perm[1] == 3;
      GraphBuilder b;
      std::vector<ir::Value*> ins = {b.Input("x", c.shape), b.Input("residual", out_shape)};
      ir::Node* f = MakeFused(b.graph(), ins, [&](GraphBuilder& g, const std::vector<ir::Value*>& v) {
        ir::Node* t = g.Op("Transpose", {v[0]}, Attrs({{"perm", c.perm}}));
        if (!to_nchw) return std::vector<ir::Value*>{g.Op("Relu", {t->output(0)})->output(0)};
        const int64_t channels = out_shape[1];
        std::vector<float> scale(static_cast<size_t>(channels));
        for (int64_t i = 0; i < channels; ++i) scale[static_cast<size_t>(i)] = 0.5f + 0.01f * static_cast<float>(i);
        ir::Node* mul = g.Op("Mul", {g.ConstF32("scale", {channels, 1, 1}, scale), t->output(0)});
        return std::vector<ir::Value*>{g.Op("Add", {mul->output(0), v[1]})->output(0)};
      });
      ASSERT_NE(f, nullptr);
      KernelSpec spec = CheckNodeAgainstReference(*f, seed++, 1e-6, 4, LowerOptionsForCpuFeatures(isa));
      ASSERT_NE(spec.kernel, nullptr);
      EXPECT_NE(spec.kernel->ToString().find("in_tiles"), std::string::npos) << spec.kernel->ToString();
      if (isa == "+avx2,+fma,+avx512f" && c.whole_tiles && __builtin_cpu_supports("avx512f")) {
        CpuTargetOptions target;
        target.cpu = "x86-64-v4";
        Result<std::string> ir = EmitCpuKernelModuleIR({spec}, "transpose_epilogue", target, true);
        ASSERT_TRUE(ir.ok()) << ir.status().ToString();
        EXPECT_EQ(ir->find("masked.gather"), std::string::npos) << spec.kernel->ToString();
      }
    }
  }
}

TEST(Movement, ReshapeFlattenSqueezeUnsqueeze) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {2, 3, 4, 5});
  CheckOp(b, "Reshape", {x, b.ConstI64("shape", {3}, {6, 5, 4})}, {}, 8);
  CheckOp(b, "Flatten", {x}, Attrs({{"axis", int64_t{2}}}), 9);
  ir::Value* y = b.Input("y", {3, 1, 5});
  CheckOp(b, "Squeeze", {y}, Attrs({{"axes", std::vector<int64_t>{1}}}), 10);
  CheckOp(b, "Unsqueeze", {y}, Attrs({{"axes", std::vector<int64_t>{0, 3}}}), 11);
}

TEST(Movement, SliceWithStepsAndNegativeIndices) {
  GraphBuilder b;
  CheckOp(b, "Slice", {b.Input("x", {4, 10, 6})},
          Attrs({{"starts", std::vector<int64_t>{1, -8, 5}},
                 {"ends", std::vector<int64_t>{4, 100, 0}},
                 {"axes", std::vector<int64_t>{0, 1, 2}},
                 {"steps", std::vector<int64_t>{1, 3, -2}}}),
          12);
}

// DepthToSpace in its channels-last form (ops/channels_last.h: input and output
// NHWC; the subpixel pass's pixel shuffle between channels-last convolutions),
// both modes, against the reference (which evaluates the channels-first twin).
TEST(Movement, DepthToSpaceChannelsLast) {
  for (const char* mode : {"DCR", "CRD"}) {
    SCOPED_TRACE(mode);
    GraphBuilder b;
    CheckOp(b, "DepthToSpace", {b.Input("x", {2, 3, 5, 12})},
            Attrs({{"blocksize", int64_t{2}}, {"mode", std::string(mode)}, {"keel.channels_last", int64_t{1}}}), 16);
  }
}

TEST(Movement, GatherConstantAndRuntimeIndices) {
  GraphBuilder b;
  ir::Value* table = b.Input("table", {7, 5});
  CheckOp(b, "Gather", {table, b.ConstI64("idx", {2, 3}, {0, 6, -1, 3, 2, 2})}, {}, 13);
  CheckOp(b, "Gather", {table, b.Input("ridx", {4}, ir::DType::kI64)}, Attrs({{"axis", int64_t{1}}}), 14, 1e-5, 5);
}

TEST(Movement, Concat) {
  GraphBuilder b;
  CheckOp(b, "Concat", {b.Input("x", {2, 3, 5}), b.Input("y", {2, 1, 5}), b.Input("z", {2, 4, 5})},
          Attrs({{"axis", int64_t{1}}}), 15);
}

}  // namespace
}  // namespace keel::codegen::testing
