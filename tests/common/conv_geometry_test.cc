// tests/common/conv_geometry_test.cc — the one check of a cudnn.conv2d kernel's
// shapes and attributes (common/conv_geometry.h), shared by the CUDA back end,
// the VM and the host-program emitter: what it accepts for 1-D, 2-D and 3-D
// convolutions, the cuDNN view it gives (1-D lifted to a unit height), and the
// error (code and words) for each kind of bad input.
#include "common/conv_geometry.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace keel::common {
namespace {

using V = std::vector<int64_t>;

TEST(ConvGeometry, SpatialDimsFromRank) {
  EXPECT_EQ(ConvSpatialDims(2), 0u);
  EXPECT_EQ(ConvSpatialDims(3), 1u);
  EXPECT_EQ(ConvSpatialDims(4), 2u);
  EXPECT_EQ(ConvSpatialDims(5), 3u);
  EXPECT_EQ(ConvSpatialDims(6), 0u);
}

TEST(ConvGeometry, TwoDIsUnchanged) {
  auto g = MakeCudnnConvGeometry({2, 8, 13, 11}, {6, 4, 3, 3}, {2, 6, 13, 6}, {2, 1, 2, 1}, {1, 2}, {2, 1}, 2);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->spatial, 2u);
  EXPECT_EQ(g->x, (V{2, 8, 13, 11}));
  EXPECT_EQ(g->w, (V{6, 4, 3, 3}));
  EXPECT_EQ(g->y, (V{2, 6, 13, 6}));
  EXPECT_EQ(g->pads, (V{2, 1}));
  EXPECT_EQ(g->strides, (V{1, 2}));
  EXPECT_EQ(g->dilations, (V{2, 1}));
  EXPECT_EQ(g->group, 2);
  EXPECT_EQ(g->rank(), 4);
  EXPECT_EQ(g->channels(), 6);
  EXPECT_EQ(g->spatial_size(), 13 * 6);
  EXPECT_EQ(g->y_elements(), 2 * 6 * 13 * 6);
}

TEST(ConvGeometry, OneDIsLiftedToAUnitHeight) {
  // L = (19 + 1 + 1 - 2*(3-1) - 1)/2 + 1 = 9.
  auto g = MakeCudnnConvGeometry({2, 4, 19}, {6, 4, 3}, {2, 6, 9}, {1, 1}, {2}, {2}, 1);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->spatial, 1u);
  EXPECT_EQ(g->x, (V{2, 4, 1, 19}));
  EXPECT_EQ(g->w, (V{6, 4, 1, 3}));
  EXPECT_EQ(g->y, (V{2, 6, 1, 9}));
  EXPECT_EQ(g->pads, (V{0, 1}));
  EXPECT_EQ(g->strides, (V{1, 2}));
  EXPECT_EQ(g->dilations, (V{1, 2}));
  EXPECT_EQ(g->rank(), 4);
  EXPECT_EQ(g->spatial_size(), 9);
}

TEST(ConvGeometry, ThreeDKeepsRankFive) {
  // mc3_18's stem: 3x7x7, strides [1,2,2], pads [1,3,3] on 8x112x112.
  auto g = MakeCudnnConvGeometry({1, 3, 8, 112, 112}, {64, 3, 3, 7, 7}, {1, 64, 8, 56, 56}, {1, 3, 3, 1, 3, 3},
                                 {1, 2, 2}, {1, 1, 1}, 1);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  EXPECT_EQ(g->rank(), 5);
  EXPECT_EQ(g->pads, (V{1, 3, 3}));
  EXPECT_EQ(g->spatial_size(), 8 * 56 * 56);
}

void ExpectError(const Result<CudnnConvGeometry>& g, StatusCode code, const std::string& words) {
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), code) << g.status().ToString();
  EXPECT_NE(g.status().message().find(words), std::string::npos) << g.status().ToString();
  EXPECT_EQ(g.status().message().find('\n'), std::string::npos) << "one line";
}

TEST(ConvGeometry, RejectsWhatTheVmMustRefuse) {
  const V x = {1, 2, 4, 5, 5}, w = {2, 2, 3, 3, 3}, y = {1, 2, 2, 3, 3};
  const V p0 = {0, 0, 0, 0, 0, 0}, s1 = {1, 1, 1};
  ASSERT_TRUE(MakeCudnnConvGeometry(x, w, y, p0, s1, s1, 1).ok());
  ExpectError(MakeCudnnConvGeometry({1, 1, 2, 2, 2, 2}, {1, 1, 1, 1, 1, 1}, {1, 1, 2, 2, 2, 2}, {}, {}, {}, 1),
              StatusCode::kInvalidExecutable, "1 to 3 spatial dims");
  ExpectError(MakeCudnnConvGeometry(x, {2, 2, 3, 3}, y, p0, s1, s1, 1), StatusCode::kInvalidExecutable, "same rank");
  ExpectError(MakeCudnnConvGeometry(x, w, y, {0, 0, 0, 0}, s1, s1, 1), StatusCode::kInvalidExecutable, "6 pads");
  ExpectError(MakeCudnnConvGeometry(x, w, y, p0, {1, 1}, s1, 1), StatusCode::kInvalidExecutable, "3 strides");
  ExpectError(MakeCudnnConvGeometry(x, w, y, p0, {1, 0, 1}, s1, 1), StatusCode::kInvalidExecutable, "strides");
  ExpectError(MakeCudnnConvGeometry(x, w, y, {0, -1, 0, 0, -1, 0}, s1, s1, 1), StatusCode::kInvalidExecutable, "pads");
  ExpectError(MakeCudnnConvGeometry(x, w, y, p0, s1, s1, 2), StatusCode::kInvalidExecutable, "group 2");
  ExpectError(MakeCudnnConvGeometry(x, w, {1, 3, 2, 3, 3}, p0, s1, s1, 1), StatusCode::kInvalidExecutable, "group");
  ExpectError(MakeCudnnConvGeometry(x, w, y, p0, {1, 2, 1}, s1, 1), StatusCode::kInvalidExecutable,
              "give spatial dim 1 = 2");
  ExpectError(MakeCudnnConvGeometry(x, w, y, p0, s1, {3, 1, 1}, 1), StatusCode::kInvalidExecutable, "nothing");
  ExpectError(MakeCudnnConvGeometry({1, 2, 4, 0, 5}, w, y, p0, s1, s1, 1), StatusCode::kInvalidExecutable,
              "outside [1, 2^31)");
  // Valid ONNX, but not cuDNN's: asymmetric pads, int32-overflowing tensors.
  ExpectError(MakeCudnnConvGeometry(x, w, {1, 2, 3, 3, 3}, {0, 0, 0, 1, 0, 0}, s1, s1, 1), StatusCode::kUnsupported,
              "asymmetric pads");
  ExpectError(MakeCudnnConvGeometry({1, 2, 1 << 16, 1 << 16}, {2, 2, 1, 1}, {1, 2, 1 << 16, 1 << 16}, {0, 0, 0, 0},
                                    {1, 1}, {1, 1}, 1),
              StatusCode::kUnsupported, "2^31 elements");
}

// A transposed convolution (ONNX ConvTranspose: X [N,C,...], W [C,K/g,...]) is
// checked as its forward convolution from Y's shape to X's: the view has x and y
// exchanged; Y's output_padding must stay below the stride.
TEST(ConvGeometry, TransposedIsItsForwardConvolution) {
  // 3x3 stride 2, pads 1: 5 -> 2*(5-1) + 3 - 2 = 9, or 10 with output_padding 1.
  for (const int64_t out : {9, 10}) {
    auto g = MakeCudnnConvTransposeGeometry({2, 8, 5, 5}, {8, 3, 3, 3}, {2, 6, out, out}, {1, 1, 1, 1}, {2, 2}, {1, 1}, 2);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_EQ(g->x, (V{2, 6, out, out}));
    EXPECT_EQ(g->y, (V{2, 8, 5, 5}));
    EXPECT_EQ(g->w, (V{8, 3, 3, 3}));
  }
  // output_padding 2 (not below the stride) and the forward problem's errors, named as such.
  auto bad = MakeCudnnConvTransposeGeometry({2, 8, 5, 5}, {8, 3, 3, 3}, {2, 6, 11, 11}, {1, 1, 1, 1}, {2, 2}, {1, 1}, 2);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidExecutable);
  EXPECT_NE(bad.status().ToString().find("forward convolution, X and Y exchanged"), std::string::npos)
      << bad.status().ToString();
}

}  // namespace
}  // namespace keel::common
