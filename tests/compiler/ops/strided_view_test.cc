// tests/compiler/ops/strided_view_test.cc — compiler/ops/strided_view.h: views
// composed through transposes, slices, reshapes and broadcasts address exactly
// the elements the ops would move (checked against explicit index arithmetic on
// random op chains), the multi-head attention split is one view, the
// compositions that are not strided views are refused, and the batch
// refinement helpers.
#include "compiler/ops/strided_view.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

namespace keel::ops {
namespace {

// A tensor of element numbers (what each element of a view should read).
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<int64_t> v;
  int64_t At(const std::vector<int64_t>& idx) const {
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d) off = off * shape[d] + idx[d];
    return v[static_cast<size_t>(off)];
  }
};

Tensor Iota(std::vector<int64_t> shape) {
  Tensor t{std::move(shape), {}};
  int64_t n = 1;
  for (int64_t e : t.shape) n *= e;
  t.v.resize(static_cast<size_t>(n));
  std::iota(t.v.begin(), t.v.end(), 0);
  return t;
}

// Calls f on every index of `shape` in row-major order.
template <class F>
void ForEach(const std::vector<int64_t>& shape, F f) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t e : shape)
    if (e == 0) return;
  while (true) {
    f(idx);
    size_t d = shape.size();
    while (d > 0 && ++idx[d - 1] == shape[d - 1]) idx[--d] = 0;
    if (d == 0) return;
  }
}

Tensor Transpose(const Tensor& t, const std::vector<int64_t>& perm) {
  Tensor o;
  for (int64_t p : perm) o.shape.push_back(t.shape[static_cast<size_t>(p)]);
  ForEach(o.shape, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> src(idx.size());
    for (size_t i = 0; i < perm.size(); ++i) src[static_cast<size_t>(perm[i])] = idx[i];
    o.v.push_back(t.At(src));
  });
  return o;
}

Tensor Slice(const Tensor& t, int64_t axis, int64_t start, int64_t len, int64_t step) {
  Tensor o{t.shape, {}};
  o.shape[static_cast<size_t>(axis)] = len;
  ForEach(o.shape, [&](const std::vector<int64_t>& idx) {
    std::vector<int64_t> src = idx;
    src[static_cast<size_t>(axis)] = start + idx[static_cast<size_t>(axis)] * step;
    o.v.push_back(t.At(src));
  });
  return o;
}

void ExpectSameElements(const StridedView& view, const Tensor& t) {
  ASSERT_EQ(view.Shape(), t.shape);
  ForEach(t.shape, [&](const std::vector<int64_t>& idx) { ASSERT_EQ(view.ElementOffset(idx), t.At(idx)); });
}

TEST(StridedView, MultiHeadSplitIsOneView) {
  // [S, B, 3E] -> slice K part -> [S, B*H, D] -> transpose [1, 2, 0] (K^T of PyTorch's export).
  const int64_t S = 5, B = 2, H = 3, D = 4, E = H * D;
  Tensor x = Iota({S, B, 3 * E});
  Tensor k = Slice(x, 2, E, E, 1);
  std::optional<StridedView> v = SliceView(DenseView(x.shape), 2, E, E, 1);
  ASSERT_TRUE(v);
  v = ReshapeView(*v, {S, B * H, D});
  ASSERT_TRUE(v);
  k.shape = {S, B * H, D};
  ASSERT_EQ(v->dims[1].size(), 2u) << "B*H merges two strides";
  EXPECT_EQ(v->dims[1][0], (ViewFactor{B, 3 * E}));
  EXPECT_EQ(v->dims[1][1], (ViewFactor{H, D}));
  v = PermuteView(*v, {1, 2, 0});
  ASSERT_TRUE(v);
  ExpectSameElements(*v, Transpose(k, {1, 2, 0}));
}

TEST(StridedView, RandomChainsMatchTheOps) {
  std::mt19937 rng(7);
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint32_t>(n)); };
  int composed = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Tensor t = Iota({2 + pick(3), 2 + pick(3), 1 + pick(4)});
    std::optional<StridedView> v = DenseView(t.shape);
    for (int step = 0; step < 4 && v; ++step) {
      const int64_t rank = static_cast<int64_t>(t.shape.size());
      switch (pick(3)) {
        case 0: {
          std::vector<int64_t> perm(static_cast<size_t>(rank));
          std::iota(perm.begin(), perm.end(), 0);
          std::shuffle(perm.begin(), perm.end(), rng);
          t = Transpose(t, perm);
          v = PermuteView(*v, perm);
          break;
        }
        case 1: {
          const int64_t axis = pick(rank), dim = t.shape[static_cast<size_t>(axis)];
          const int64_t step_len = 1 + pick(2), start = pick(dim);
          const int64_t len = (dim - start + step_len - 1) / step_len;
          std::optional<StridedView> s = SliceView(*v, axis, start, len, step_len);
          if (!s) continue;  // a slice of merged axes: refused, nothing to compare
          t = Slice(t, axis, start, len, step_len);
          v = s;
          break;
        }
        default: {
          // Split or merge adjacent dims.
          std::vector<int64_t> shape = t.shape;
          const int64_t axis = pick(rank);
          if (rank > 1 && axis + 1 < rank && pick(2) == 0) {
            shape[static_cast<size_t>(axis)] *= shape[static_cast<size_t>(axis) + 1];
            shape.erase(shape.begin() + axis + 1);
          } else if (shape[static_cast<size_t>(axis)] % 2 == 0) {
            shape[static_cast<size_t>(axis)] /= 2;
            shape.insert(shape.begin() + axis + 1, 2);
          }
          std::optional<StridedView> r = ReshapeView(*v, shape);
          if (!r) continue;
          t.shape = shape;  // a reshape keeps the row-major element order
          v = r;
        }
      }
    }
    if (!v) continue;
    ++composed;
    ExpectSameElements(*v, t);
  }
  EXPECT_GT(composed, 250);
}

TEST(StridedView, RefusesWhatIsNotAView) {
  // A transposed [2, 3] flattened: two factors, (3, 1) then (2, 3).
  std::optional<StridedView> v = PermuteView(DenseView({2, 3}), {1, 0});
  ASSERT_TRUE(v);
  std::optional<StridedView> flat = ReshapeView(*v, {6});
  ASSERT_TRUE(flat);
  EXPECT_EQ(flat->dims[0].size(), 2u);
  EXPECT_TRUE(ReshapeView(*flat, {3, 2}).has_value()) << "splits at the factor boundary";
  EXPECT_FALSE(ReshapeView(*flat, {2, 3}).has_value()) << "2 x 3 cuts the (3, 1) factor";
  EXPECT_FALSE(ReshapeView(*flat, {4, 1, 1, 1}).has_value()) << "element count differs";
  EXPECT_FALSE(SliceView(*flat, 0, 1, 2, 1).has_value()) << "a partial slice of merged axes";
  EXPECT_FALSE(BroadcastView(DenseView({3}), {2, 4}).has_value());
  std::optional<StridedView> b = BroadcastView(DenseView({3, 1}), {2, 3, 5});
  ASSERT_TRUE(b);
  EXPECT_EQ(b->ElementOffset({1, 2, 4}), 2);
  EXPECT_EQ(b->dims[0][0].stride, 0);
  EXPECT_EQ(b->dims[2][0].stride, 0);
}

TEST(StridedView, BatchRefinement) {
  EXPECT_EQ(CommonRefinement({{8, 12}, {96}}), (std::vector<int64_t>{8, 12}));
  EXPECT_EQ(CommonRefinement({{2, 12}, {8, 3}}), (std::vector<int64_t>{2, 4, 3}));
  EXPECT_FALSE(CommonRefinement({{2, 3}, {3, 2}}).has_value());
  EXPECT_FALSE(CommonRefinement({{4}, {5}}).has_value());
  EXPECT_EQ(CommonRefinement({{1}, {1}}), (std::vector<int64_t>{1}));
  // A dense [96] dim refined as 8 x 12; B*H strides kept per factor.
  EXPECT_EQ(RefineFactors({{96, 64}}, {8, 12}), (std::vector<ViewFactor>{{8, 768}, {12, 64}}));
  EXPECT_EQ(RefineFactors({{8, 2304}, {12, 64}}, {8, 12}), (std::vector<ViewFactor>{{8, 2304}, {12, 64}}));
  EXPECT_FALSE(RefineFactors({{8, 2304}, {12, 64}}, {96}).has_value()) << "not one stride";
  EXPECT_EQ(RefineFactors({{8, 768}, {12, 64}}, {96}), (std::vector<ViewFactor>{{96, 64}}));
}

}  // namespace
}  // namespace keel::ops
