// Kernel IR: folding, printing and the verifier's checks.
#include <gtest/gtest.h>

#include "compiler/codegen/kernel_ir.h"

namespace keel::codegen {
namespace {

TEST(KernelIr, FoldsIndexArithmetic) {
  EXPECT_TRUE((Expr(3) * 4 + 2).IsIntConst(14));
  KernelFunc k("k");
  Expr i = k.NewVar("i");
  EXPECT_EQ((i + 0).get(), i.get());
  EXPECT_EQ((i * 1).get(), i.get());
  EXPECT_TRUE((i * 0).IsIntConst(0));
  EXPECT_EQ(ExprToString(k, i * 3 + 1), "((i * 3) + 1)");
}

TEST(KernelIr, PrintsAndVerifiesAKernel) {
  KernelFunc k("k1_add");
  int a = k.AddArg("a", DType::kF32, {4, 8}, ArgAccess::kRead);
  int out = k.AddArg("out", DType::kF32, {4, 8}, ArgAccess::kWrite);
  Expr r = k.NewVar("r"), j = k.NewVar("j");
  k.set_body(For(r, 0, 4, LoopKind::kParallel,
                 For(j, 0, 8, LoopKind::kVectorize, k.Store(out, {r, j}, k.Load(a, {r, j}) + FloatConst(1)))));
  ASSERT_TRUE(k.Verify().ok()) << k.Verify().ToString();
  std::string text = k.ToString();
  EXPECT_NE(text.find("kernel k1_add(a: f32[4,8] read, out: f32[4,8] write)"), std::string::npos) << text;
  EXPECT_NE(text.find("parallel for r in [0, 4)"), std::string::npos) << text;
  EXPECT_NE(text.find("out[r, j] = (a[r, j] + 1f)"), std::string::npos) << text;
}

// A prefetch reads nothing into a value: it may name a read-only argument, it
// prints as such, and its indices are checked like a load's.
TEST(KernelIr, PrefetchIsAHintOnAnAccess) {
  KernelFunc k("k_prefetch");
  int a = k.AddArg("a", DType::kF32, {4, 8}, ArgAccess::kRead);
  int out = k.AddArg("out", DType::kF32, {4, 8}, ArgAccess::kWrite);
  Expr r = k.NewVar("r"), j = k.NewVar("j");
  k.set_body(For(r, 0, 4, LoopKind::kSerial,
                 Block({k.Prefetch(a, {Min(r + 1, Expr(3)), Expr(0)}),
                        For(j, 0, 8, LoopKind::kSerial, k.Store(out, {r, j}, k.Load(a, {r, j})))})));
  ASSERT_TRUE(k.Verify().ok()) << k.Verify().ToString();
  EXPECT_NE(k.ToString().find("prefetch a["), std::string::npos) << k.ToString();
  KernelFunc bad("bad_prefetch");
  int b = bad.AddArg("b", DType::kF32, {4, 8}, ArgAccess::kRead);
  bad.set_body(bad.Prefetch(b, {Expr(0)}));
  EXPECT_EQ(bad.Verify().code(), StatusCode::kInternal);
}

TEST(KernelIr, VerifierRejectsMistakes) {
  {
    KernelFunc k("bad_rank");
    int a = k.AddArg("a", DType::kF32, {4, 8}, ArgAccess::kWrite);
    k.set_body(k.Store(a, {Expr(0)}, FloatConst(0)));
    EXPECT_EQ(k.Verify().code(), StatusCode::kInternal);
  }
  {
    KernelFunc k("bad_type");
    int a = k.AddArg("a", DType::kF32, {4}, ArgAccess::kWrite);
    k.set_body(k.Store(a, {Expr(0)}, IntConst(1, DType::kI32)));
    EXPECT_EQ(k.Verify().code(), StatusCode::kInternal);
  }
  {
    KernelFunc k("store_to_input");
    int a = k.AddArg("a", DType::kF32, {4}, ArgAccess::kRead);
    k.set_body(k.Store(a, {Expr(0)}, FloatConst(1)));
    EXPECT_EQ(k.Verify().code(), StatusCode::kInternal);
  }
  {
    KernelFunc k("nested_parallel");
    int a = k.AddArg("a", DType::kF32, {4, 4}, ArgAccess::kWrite);
    Expr i = k.NewVar("i"), j = k.NewVar("j");
    k.set_body(For(i, 0, 4, LoopKind::kParallel, For(j, 0, 4, LoopKind::kParallel, k.Store(a, {i, j}, FloatConst(1)))));
    EXPECT_EQ(k.Verify().code(), StatusCode::kInternal);
  }
  {
    KernelFunc k("unbound");
    int a = k.AddArg("a", DType::kF32, {4}, ArgAccess::kWrite);
    Expr i = k.NewVar("i");
    k.set_body(k.Store(a, {i}, FloatConst(1)));
    EXPECT_EQ(k.Verify().code(), StatusCode::kInternal);
  }
  {
    KernelFunc k("local_escapes");
    int a = k.AddArg("a", DType::kF32, {4}, ArgAccess::kWrite);
    int t = k.AddLocal("t", DType::kF32, {1});
    Expr i = k.NewVar("i");
    k.set_body(Block({For(i, 0, 4, LoopKind::kParallel, k.Store(t, {Expr(0)}, FloatConst(1))),
                      k.Store(a, {Expr(0)}, k.Load(t, {Expr(0)}))}));
    EXPECT_EQ(k.Verify().code(), StatusCode::kInternal);
  }
}

}  // namespace
}  // namespace keel::codegen
