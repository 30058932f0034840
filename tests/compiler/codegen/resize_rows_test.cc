// tests/compiler/codegen/resize_rows_test.cc — the CPU's separable form of a Resize alone in its
// group (ops/resize.cc ResizeInRows, LowerOptions::resize_rows) against the reference evaluator:
// linear, nearest and cubic; the coordinate transforms it takes (half_pixel, align_corners,
// asymmetric, pytorch_half_pixel, tf_half_pixel_for_nn, half_pixel_symmetric); scales 2, 8, 2.5,
// 1.5 and downscales; output sizes; rows shorter than a vector (serial columns); only one of the
// last two axes resized; a rank-3 tensor; an image tall enough for several blocks of rows, the
// last overlapping its predecessor; both vector ISAs. What the form refuses (antialiasing,
// tf_crop_and_resize, a third resized axis) and the GPU's lowering keep the injective loop nest.
#include <gtest/gtest.h>

#include "tests/compiler/codegen/codegen_test_util.h"

namespace keel::codegen::testing {
namespace {

struct Case {
  std::vector<int64_t> x;
  std::vector<float> scales;  // empty: `sizes`
  std::vector<int64_t> sizes;
  ir::Attributes attrs;
  bool rows = true;
};

ir::Attributes Mode(const std::string& mode, const std::string& ctm = "half_pixel",
                    const std::string& nearest = "round_prefer_floor") {
  return Attrs({{"mode", mode}, {"coordinate_transformation_mode", ctm}, {"nearest_mode", nearest}});
}

TEST(ResizeRows, MatchesReference) {
  ir::Attributes cubic_down = Mode("cubic");
  cubic_down.Set("exclude_outside", int64_t{1});
  cubic_down.Set("cubic_coeff_a", -0.5);
  ir::Attributes antialias = Mode("linear");
  antialias.Set("antialias", int64_t{1});
  const std::vector<Case> cases = {
      {{1, 3, 9, 20}, {1, 1, 2, 2}, {}, Mode("linear")},
      {{1, 2, 5, 4}, {1, 1, 8, 8}, {}, Mode("linear")},
      {{2, 3, 4, 6}, {1, 1, 2.5f, 1.5f}, {}, Mode("nearest", "asymmetric", "floor")},
      {{1, 2, 6, 5}, {1, 1, 1.5f, 2}, {}, Mode("cubic", "align_corners")},
      {{1, 2, 11, 13}, {1, 1, 0.6f, 0.7f}, {}, cubic_down},
      {{1, 2, 9, 8}, {}, {1, 2, 5, 13}, Mode("linear")},
      {{2, 3, 8, 7}, {}, {2, 3, 3, 17}, Mode("linear", "pytorch_half_pixel")},
      {{1, 1, 7, 9}, {}, {1, 1, 12, 20}, Mode("nearest", "tf_half_pixel_for_nn", "ceil")},
      {{1, 2, 5, 7}, {}, {1, 2, 9, 18}, Mode("linear", "half_pixel_symmetric")},
      {{1, 2, 6, 10}, {1, 1, 1, 2.5f}, {}, Mode("linear")},
      {{1, 2, 6, 10}, {1, 1, 3, 1}, {}, Mode("linear", "align_corners")},
      {{2, 3, 10}, {1, 1, 2.5f}, {}, Mode("linear")},
      {{1, 1, 37, 30}, {1, 1, 2, 2}, {}, Mode("linear")},
      {{1, 2, 16, 12}, {1, 1, 0.4f, 0.55f}, {}, antialias, false},
      {{1, 2, 4, 5, 6}, {}, {1, 2, 7, 3, 9}, Mode("linear"), false},
  };
  const LowerOptions avx2 = LowerOptionsForCpuFeatures("+avx2,+fma");
  const LowerOptions avx512 = LowerOptionsForCpuFeatures("+avx2,+fma,+avx512f");
  uint32_t seed = 80;
  for (const Case& t : cases) {
    GraphBuilder b;
    std::vector<ir::Value*> in = {b.Input("x", t.x), nullptr};
    const int64_t rank = static_cast<int64_t>(t.x.size());
    if (t.scales.empty()) {
      in.push_back(nullptr);
      in.push_back(b.ConstI64("sizes", {rank}, t.sizes));
    } else {
      in.push_back(b.ConstF32("scales", {rank}, t.scales));
    }
    ir::Node* n = b.Op("Resize", in, t.attrs);
    ASSERT_NE(n, nullptr);
    SCOPED_TRACE(n->input(0)->type().ToString() + " -> " + n->output(0)->type().ToString() + " " +
                 t.attrs.GetString("mode", "").value() + " " +
                 t.attrs.GetString("coordinate_transformation_mode", "").value());
    for (const LowerOptions* o : {&avx2, &avx512}) {
      const KernelSpec spec = CheckNodeAgainstReference(*n, seed++, 1e-5, 4, *o);
      ASSERT_NE(spec.kernel, nullptr);
      EXPECT_EQ(spec.kernel->ToString().find("rs_rows") != std::string::npos, t.rows);
    }
    const KernelSpec gpu = CheckNodeAgainstReference(*n, seed++, 1e-5, 4, LowerOptionsForCuda());
    ASSERT_NE(gpu.kernel, nullptr);
    EXPECT_EQ(gpu.kernel->ToString().find("rs_rows"), std::string::npos);
  }
}

}  // namespace
}  // namespace keel::codegen::testing
