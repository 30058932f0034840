// compiler/codegen/lower_ops.h — the per-op lowerings behind LowerNodeToKernel
// (internal to compiler/codegen). Each lower_*.cc file implements one family.
//
// Injective ops (lower_elementwise.cc) define their outputs' TensorFns in the
// context. Anchor ops (lower_gemm.cc, lower_conv.cc, lower_pool.cc,
// lower_reduce.cc) return the statements computing their output, calling
// `store(idx, value)` once per output element.
// Errors: kUnsupported naming the node for attributes/dtypes not handled.
#pragma once

#include <string>

#include "compiler/codegen/lower_context.h"

namespace keel::codegen {

bool IsElementwiseOp(const std::string& op);  // may appear in an epilogue
bool IsInjectiveOp(const std::string& op);    // elementwise + data movement
bool IsAnchorOp(const std::string& op);

Status DefineInjective(LowerContext& ctx, const ir::Node& node);

Result<Stmt> LowerAnchor(LowerContext& ctx, const ir::Node& node, const StoreFn& store);

// Shared blocked GEMM: C[m, n] = sum_k A(m, k) * B(k, n), stored through
// `store(m, n, acc)`. A is read inside the micro-kernel, B only while packing.
struct GemmOperands {
  int64_t m = 0, n = 0, k = 0;
  std::function<Expr(Expr m, Expr k)> a;
  std::function<Expr(Expr k, Expr n)> b;
  std::function<Stmt(Expr m, Expr n, Expr acc)> store;
  // Optional fast packing path for a full NR-wide panel p (columns p*NR + j):
  // where b_fast_ok(p) holds (always, when b_fast_ok is empty),
  // B(k, p*NR + j) == b_fast(k, p, j), typically built of unit-stride reads in
  // j (e.g. a conv panel's runs of output columns).
  std::function<Expr(Expr p)> b_fast_ok;
  // B(k, n) is unit-stride in k (a transposed row-major B, e.g. a classifier's
  // weights): with M == 1 the product is N dot products over contiguous rows
  // (no packing; packing would gather every element).
  bool b_unit_k = false;
  std::function<Expr(Expr k, Expr p, Expr j)> b_fast;
};
Result<Stmt> BuildBlockedGemm(LowerContext& ctx, const GemmOperands& g, const std::string& tag);

Result<Stmt> LowerGemm(LowerContext& ctx, const ir::Node& node, const StoreFn& store);
Result<Stmt> LowerMatMul(LowerContext& ctx, const ir::Node& node, const StoreFn& store);
Result<Stmt> LowerConv(LowerContext& ctx, const ir::Node& node, const StoreFn& store);
Result<Stmt> LowerPool(LowerContext& ctx, const ir::Node& node, const StoreFn& store);
Result<Stmt> LowerGlobalAveragePool(LowerContext& ctx, const ir::Node& node, const StoreFn& store);
Result<Stmt> LowerSoftmax(LowerContext& ctx, const ir::Node& node, const StoreFn& store);
Result<Stmt> LowerLayerNorm(LowerContext& ctx, const ir::Node& node, const StoreFn& store);
Result<Stmt> LowerReduce(LowerContext& ctx, const ir::Node& node, const StoreFn& store);

}  // namespace keel::codegen
