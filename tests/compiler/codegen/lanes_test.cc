// LoopKind::kLanes: the CPU back end's explicit SIMD emission. A hand-built
// kernel exercises every access form a lanes body can take (unit-stride vector
// load/store, lane-invariant scalar load, strided loads, an indirect gather, a
// scatter, a lane-invariant store, (e / S, e % S) index pairs, casts, selects
// and a library call per lane), compared with the same loop written in plain
// C++ here. The verifier's kLanes rules are checked too.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/compiler/codegen/codegen_test_util.h"

namespace keel::codegen::testing {
namespace {

constexpr int64_t kL = 16;  // lanes
constexpr int64_t kLast3 = 4 * kL - 3 * (kL - 1) - 1;  // stride-3 read whose last lane is in[4 * kL - 1]

std::shared_ptr<KernelFunc> LanesKernel() {
  auto k = std::make_shared<KernelFunc>("k0_lanes");
  int in = k->AddArg("in", DType::kF32, {4 * kL}, ArgAccess::kRead);
  int idx = k->AddArg("idx", DType::kI32, {kL}, ArgAccess::kRead);
  int o_unit = k->AddArg("o_unit", DType::kF32, {kL}, ArgAccess::kWrite);
  int o_scatter = k->AddArg("o_scatter", DType::kF32, {kL}, ArgAccess::kWrite);
  int o_last = k->AddArg("o_last", DType::kF32, {1}, ArgAccess::kWrite);
  int o_2d = k->AddArg("o_2d", DType::kF32, {4, kL / 4}, ArgAccess::kWrite);
  Expr j = k->NewVar("j");
  Expr base = FloatConst(0.5);
  Expr unit = k->Load(in, {j + 3});                                         // unit stride, offset
  Expr strided = k->Load(in, {j * 2 + 1});                                  // stride 2: masked load + shuffle
  Expr strided3 = k->Load(in, {j * 3 + (kLast3)});                          // stride 3, last lane at the end
  Expr indirect = k->Load(in, {Cast(k->Load(idx, {j}), DType::kI64) + kL});  // indirect gather
  Expr uniform = k->Load(in, {Expr(7)});                                    // lane-invariant
  Expr v = Select(unit > strided, unit - strided, indirect * uniform) + base;
  Stmt body = Block({
      k->Store(o_unit, {j}, v + Unary(UnaryOp::kTanh, strided) - strided3),
      k->Store(o_scatter, {Cast(k->Load(idx, {j}), DType::kI64)}, unit * FloatConst(2.0)),
      k->Store(o_last, {Expr(0)}, Cast(j, DType::kF32) + indirect),
      k->Store(o_2d, {j / (kL / 4), j % (kL / 4)}, Max(unit, indirect)),
  });
  k->set_body(For(j, 0, kL, LoopKind::kLanes, body));
  return k;
}

TEST(Lanes, MatchesScalarSemantics) {
  std::shared_ptr<KernelFunc> k = LanesKernel();
  ASSERT_TRUE(k->Verify().ok()) << k->Verify().ToString();
  const KernelSpec spec = SpecOf(k, 2);
  auto lib = CompileAndLoad({spec}, "lanes");
  ASSERT_NE(lib, nullptr);
  keel_cpu_kernel_fn fn = lib->Kernel(spec.name);
  ASSERT_NE(fn, nullptr);

  std::vector<float> in(4 * kL);
  for (size_t i = 0; i < in.size(); ++i) in[i] = std::sin(static_cast<float>(i) * 0.7f) * 3.0f;
  std::vector<int32_t> idx(kL);
  for (int64_t i = 0; i < kL; ++i) idx[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7 + 3) % kL);  // a permutation
  std::vector<float> unit(kL, -1), scatter(kL, -1), last(1, -1), two_d(kL, -1);
  std::vector<void*> args = {in.data(), idx.data(), unit.data(), scatter.data(), last.data(), two_d.data()};
  keel_cpu_kernel_ctx ctx{nullptr, nullptr};
  ASSERT_EQ(fn(args.data(), &ctx), 0);

  for (int64_t jj = 0; jj < kL; ++jj) {
    const size_t j = static_cast<size_t>(jj);
    float u = in[j + 3], s = in[j * 2 + 1], ind = in[static_cast<size_t>(idx[j]) + kL], uni = in[7];
    float v = (u > s ? u - s : ind * uni) + 0.5f;
    EXPECT_NEAR(unit[j], v + std::tanh(s) - in[j * 3 + kLast3], 1e-5) << "lane " << j;
    EXPECT_NEAR(scatter[static_cast<size_t>(idx[j])], u * 2.0f, 1e-6) << "lane " << j;
    EXPECT_NEAR(two_d[j], std::max(u, ind), 1e-6) << "lane " << j;
  }
  // A serial loop leaves the last iteration's value.
  EXPECT_NEAR(last[0], static_cast<float>(kL - 1) + in[static_cast<size_t>(idx[kL - 1]) + kL], 1e-5);
}

// exp / log / erf of a kLanes statement (libmvec's vector variants on AVX2 and
// AVX-512 hosts, in parts of the target's width with a padded last part): lane
// counts below, at and between the widths, against libm.
TEST(Lanes, VectorMathMatchesLibm) {
  for (int64_t lanes : {3, 8, 12, 20, 32}) {
    auto k = std::make_shared<KernelFunc>("k0_lanes_math");
    int in = k->AddArg("in", DType::kF32, {lanes}, ArgAccess::kRead);
    int o_exp = k->AddArg("o_exp", DType::kF32, {lanes}, ArgAccess::kWrite);
    int o_log = k->AddArg("o_log", DType::kF32, {lanes}, ArgAccess::kWrite);
    int o_erf = k->AddArg("o_erf", DType::kF32, {lanes}, ArgAccess::kWrite);
    Expr j = k->NewVar("j");
    Expr x = k->Load(in, {j});
    k->set_body(For(j, 0, lanes, LoopKind::kLanes,
                    Block({k->Store(o_exp, {j}, Unary(UnaryOp::kExp, x)),
                           k->Store(o_log, {j}, Unary(UnaryOp::kLog, Unary(UnaryOp::kAbs, x) + FloatConst(0.25))),
                           k->Store(o_erf, {j}, Unary(UnaryOp::kErf, x))})));
    ASSERT_TRUE(k->Verify().ok()) << k->Verify().ToString();
    const KernelSpec spec = SpecOf(k, 1);
    auto lib = CompileAndLoad({spec}, "lanes_math_" + std::to_string(lanes));
    ASSERT_NE(lib, nullptr);
    keel_cpu_kernel_fn fn = lib->Kernel(spec.name);
    ASSERT_NE(fn, nullptr);
    std::vector<float> x_in(static_cast<size_t>(lanes)), e(x_in.size(), -1), l(x_in.size(), -1), r(x_in.size(), -1);
    for (size_t i = 0; i < x_in.size(); ++i) x_in[i] = std::sin(static_cast<float>(i) * 1.3f) * 9.0f;
    std::vector<void*> args = {x_in.data(), e.data(), l.data(), r.data()};
    keel_cpu_kernel_ctx ctx{nullptr, nullptr};
    ASSERT_EQ(fn(args.data(), &ctx), 0);
    for (size_t i = 0; i < x_in.size(); ++i) {
      EXPECT_NEAR(e[i], std::exp(x_in[i]), 2e-6 * std::exp(x_in[i])) << lanes << " lanes, lane " << i;
      EXPECT_NEAR(l[i], std::log(std::fabs(x_in[i]) + 0.25f), 2e-6) << lanes << " lanes, lane " << i;
      EXPECT_NEAR(r[i], std::erf(x_in[i]), 2e-6) << lanes << " lanes, lane " << i;
    }
  }
}

// Runs the unary `op` over `xs` (padded to whole parts of 20 lanes) on every ISA this host
// runs (x86-64: SSE2 without FMA, x86-64-v3, x86-64-v4), as kLanes statements of 20 lanes and as
// a plain loop; `check(cpu, x, got)` sees each input with both results.
template <typename Check>
void UnaryOnEveryIsa(UnaryOp op, const std::string& name, std::vector<float> xs, Check check) {
  constexpr int64_t kLanes = 20;
  while (xs.size() % kLanes != 0) xs.push_back(0.5f);
  const int64_t n = static_cast<int64_t>(xs.size());
  auto k = std::make_shared<KernelFunc>("k0_" + name);
  int in = k->AddArg("in", DType::kF32, {n}, ArgAccess::kRead);
  int o_lanes = k->AddArg("o_lanes", DType::kF32, {n}, ArgAccess::kWrite);
  int o_loop = k->AddArg("o_loop", DType::kF32, {n}, ArgAccess::kWrite);
  Expr i = k->NewVar("i"), j = k->NewVar("j"), e = k->NewVar("e");
  Expr at = i * kLanes + j;
  k->set_body(Block({For(i, 0, n / kLanes, LoopKind::kSerial,
                         For(j, 0, kLanes, LoopKind::kLanes, k->Store(o_lanes, {at}, Unary(op, k->Load(in, {at}))))),
                     For(e, 0, n, LoopKind::kSerial, k->Store(o_loop, {e}, Unary(op, k->Load(in, {e}))))}));
  ASSERT_TRUE(k->Verify().ok()) << k->Verify().ToString();
  const KernelSpec spec = SpecOf(k, 1);
  for (const char* cpu : {"x86-64", "x86-64-v3", "x86-64-v4"}) {
    if (std::string(cpu) == "x86-64-v3" && !__builtin_cpu_supports("avx2")) continue;
    if (std::string(cpu) == "x86-64-v4" && !__builtin_cpu_supports("avx512f")) continue;
    auto lib = CompileAndLoad({spec}, name + "_" + cpu, cpu);
    ASSERT_NE(lib, nullptr) << cpu;
    keel_cpu_kernel_fn fn = lib->Kernel(spec.name);
    ASSERT_NE(fn, nullptr) << cpu;
    std::vector<float> lanes(xs.size(), -7), loop(xs.size(), -7);
    std::vector<void*> args = {xs.data(), lanes.data(), loop.data()};
    keel_cpu_kernel_ctx ctx{nullptr, nullptr};
    ASSERT_EQ(fn(args.data(), &ctx), 0) << cpu;
    for (size_t t = 0; t < xs.size(); ++t) {
      check(cpu, xs[t], lanes[t]);
      check(cpu, xs[t], loop[t]);
    }
  }
}

// f32 erf is emitted inline (llvm_math.h), its exp included: checked on every
// ISA (SSE2 without FMA and its truncating rounding, AVX2, AVX-512), as kLanes
// statements of 20 lanes (a padded last part on each ISA) and as a plain loop,
// on a dense grid over [-6, 6] and the special values, against erf in double.
TEST(Lanes, InlineErfOnEveryIsa) {
  std::vector<float> xs;
  for (int i = -6000; i <= 6000; ++i) xs.push_back(static_cast<float>(i) * 1e-3f);
  for (float v : {0.0f, -0.0f, 3.9f, 3.8999f, -3.9001f, 1e-40f, -1e-30f, 1e30f, -1e30f, INFINITY, -INFINITY, NAN})
    xs.push_back(v);
  UnaryOnEveryIsa(UnaryOp::kErf, "inline_erf", xs, [](const char* cpu, float x, float got) {
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(got)) << cpu << ": erf(NaN) = " << got;
      return;
    }
    // 9.1e-8 is the bound without FMAs (llvm_math.h); the sign of zero is kept.
    EXPECT_NEAR(got, std::erf(static_cast<double>(x)), 1e-7) << cpu << ", x = " << x;
    if (x == 0) {
      EXPECT_EQ(std::signbit(got), std::signbit(x)) << cpu;
    }
  });
}

// f32 tanh is emitted inline too (llvm_math.h EmitTanhF32): every ISA, kLanes statements of 20
// lanes and a plain loop, on a dense grid over [-10, 10], tiny values (returned as they are), the
// clamp's edges and the special values, against tanh in double: absolute and relative error.
TEST(Lanes, InlineTanhOnEveryIsa) {
  std::vector<float> xs;
  for (int i = -10000; i <= 10000; ++i) xs.push_back(static_cast<float>(i) * 1e-3f);
  for (float v : {0.0f, -0.0f, 3.9e-4f, -4.1e-4f, 1e-6f, -1e-30f, 1e-40f, 8.9f, 9.0f, -9.1f, 30.0f, 1e30f, -1e30f, INFINITY,
                  -INFINITY, NAN})
    xs.push_back(v);
  std::map<std::string, std::pair<double, double>> max_err;  // per ISA: absolute, relative
  UnaryOnEveryIsa(UnaryOp::kTanh, "inline_tanh", xs, [&](const char* cpu, float x, float got) {
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(got)) << cpu << ": tanh(NaN) = " << got;
      return;
    }
    const double want = std::tanh(static_cast<double>(x));
    auto& [max_abs, max_rel] = max_err[cpu];
    max_abs = std::max(max_abs, std::fabs(got - want));
    if (want != 0) max_rel = std::max(max_rel, std::fabs(got - want) / std::fabs(want));
    EXPECT_LE(std::fabs(got), 1.0f) << cpu << ", x = " << x;
    if (x == 0) {
      EXPECT_EQ(std::signbit(got), std::signbit(x)) << cpu;
    }
  });
  ASSERT_FALSE(max_err.empty());
  for (const auto& [cpu, err] : max_err) {
    // The bounds of llvm_math.h.
    EXPECT_LE(err.first, 3.5e-7) << cpu;
    EXPECT_LE(err.second, 3.5e-7) << cpu;
    std::printf("%s: tanh max abs error %.3g, max rel error %.3g\n", cpu.c_str(), err.first, err.second);
  }
}

TEST(Lanes, VerifierRules) {
  {
    KernelFunc k("k_bad_body");
    int out = k.AddArg("out", DType::kF32, {8}, ArgAccess::kWrite);
    Expr j = k.NewVar("j"), i = k.NewVar("i");
    k.set_body(For(j, 0, 8, LoopKind::kLanes, For(i, 0, 1, LoopKind::kSerial, k.Store(out, {j}, FloatConst(1)))));
    EXPECT_FALSE(k.Verify().ok());
  }
  {
    KernelFunc k("k_bad_bounds");
    int out = k.AddArg("out", DType::kF32, {8}, ArgAccess::kWrite);
    Expr j = k.NewVar("j"), i = k.NewVar("i");
    k.set_body(For(i, 0, 2, LoopKind::kSerial, For(j, 0, i + 4, LoopKind::kLanes, k.Store(out, {j}, FloatConst(1)))));
    EXPECT_FALSE(k.Verify().ok());
  }
  {
    KernelFunc k("k_too_wide");
    int out = k.AddArg("out", DType::kF32, {kMaxLanes + 1}, ArgAccess::kWrite);
    Expr j = k.NewVar("j");
    k.set_body(For(j, 0, kMaxLanes + 1, LoopKind::kLanes, k.Store(out, {j}, FloatConst(1))));
    EXPECT_FALSE(k.Verify().ok());
  }
  {
    KernelFunc k("k_ok");
    int out = k.AddArg("out", DType::kF32, {8}, ArgAccess::kWrite);
    Expr j = k.NewVar("j");
    k.set_body(For(j, 0, 8, LoopKind::kLanes, Block({k.Store(out, {j}, FloatConst(1))})));
    EXPECT_TRUE(k.Verify().ok()) << k.Verify().ToString();
  }
}

}  // namespace
}  // namespace keel::codegen::testing
