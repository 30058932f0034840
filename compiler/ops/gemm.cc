// compiler/ops/gemm.cc — Gemm (Y = alpha * A' B' + beta * C, C broadcast to
// [M, N]) and MatMul (numpy matmul: 1-D operands promoted, batch dims
// broadcast).
//
// The optimized lowering is the blocked GEMM of compiler/codegen/lower_gemm.cc;
// on CUDA, cuBLASLt is preferred where it fits. References are plain triple
// loops in double precision.
#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/packed_weight.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

Status CanonicalizeGemm(ir::Node& node) {
  ir::Attributes& a = node.attrs();
  KEEL_ASSIGN_OR_RETURN(double alpha, a.GetFloat("alpha", 1.0));
  KEEL_ASSIGN_OR_RETURN(double beta, a.GetFloat("beta", 1.0));
  KEEL_ASSIGN_OR_RETURN(int64_t ta, a.GetInt("transA", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t tb, a.GetInt("transB", 0));
  a.Set("alpha", alpha);
  a.Set("beta", beta);
  a.Set("transA", ta);
  a.Set("transB", tb);
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferGemm(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 3));
  const ir::TensorType& A = InputType(node, 0);
  const ir::TensorType& B = InputType(node, 1);
  if (A.shape.size() != 2 || B.shape.size() != 2) {
    return NodeError(node, "inputs must be 2-D, got " + A.ToString() + " and " + B.ToString());
  }
  if (A.dtype != B.dtype) {
    return NodeError(node, "input dtypes differ: '" + node.input(0)->name() + "' is " + A.ToString() + ", '" +
                               node.input(1)->name() + "' is " + B.ToString());
  }
  KEEL_ASSIGN_OR_RETURN(int64_t ta, node.attrs().GetInt("transA", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t tb, node.attrs().GetInt("transB", 0));
  const int64_t m = ta ? A.shape[1] : A.shape[0], k = ta ? A.shape[0] : A.shape[1];
  const int64_t k2 = tb ? B.shape[1] : B.shape[0], n = tb ? B.shape[0] : B.shape[1];
  if (k != k2) return NodeError(node, "inner dimensions differ: " + A.ToString() + " x " + B.ToString());
  if (HasInput(node, 2)) {
    auto b = BroadcastShapes(InputType(node, 2).shape, {m, n});
    if (!b.ok() || *b != std::vector<int64_t>{m, n}) {
      return NodeError(node, "C " + InputType(node, 2).ToString() + " does not broadcast to [" + std::to_string(m) + "," +
                                 std::to_string(n) + "]");
    }
  }
  return One({A.dtype, {m, n}});
}

Result<std::vector<ir::TensorDataPtr>> EvaluateGemm(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                    const std::vector<ir::TensorType>& out_types) {
  const std::vector<double> a = TensorToDoubles(*in[0]), b = TensorToDoubles(*in[1]);
  const bool has_c = in.size() > 2 && in[2];
  const std::vector<double> c = has_c ? TensorToDoubles(*in[2]) : std::vector<double>{};
  KEEL_ASSIGN_OR_RETURN(double alpha, node.attrs().GetFloat("alpha", 1.0));
  KEEL_ASSIGN_OR_RETURN(double beta, node.attrs().GetFloat("beta", 1.0));
  const bool ta = *node.attrs().GetInt("transA", 0) != 0, tb = *node.attrs().GetInt("transB", 0) != 0;
  const ir::TensorType& yt = out_types[0];
  const int64_t m = yt.shape[0], n = yt.shape[1], k = ta ? in[0]->type.shape[0] : in[0]->type.shape[1];
  const std::vector<int64_t> stc = has_c ? BroadcastStrides(in[2]->type.shape, 2) : std::vector<int64_t>{};
  std::vector<double> y(static_cast<size_t>(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = ta ? a[static_cast<size_t>(p * m + i)] : a[static_cast<size_t>(i * k + p)];
        const double bv = tb ? b[static_cast<size_t>(j * k + p)] : b[static_cast<size_t>(p * n + j)];
        acc += av * bv;
      }
      const double cv = has_c ? c[static_cast<size_t>(StridedOffset(i * n + j, yt.shape, stc))] : 0.0;
      y[static_cast<size_t>(i * n + j)] = alpha * acc + beta * cv;
    }
  }
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr out, TensorFromDoubles(yt, y));
  return std::vector<ir::TensorDataPtr>{out};
}

Result<std::vector<ir::TensorType>> InferMatMul(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 2));
  const ir::TensorType& A = InputType(node, 0);
  const ir::TensorType& B = InputType(node, 1);
  if (A.dtype != B.dtype) {
    return NodeError(node, "input dtypes differ: '" + node.input(0)->name() + "' is " + A.ToString() + ", '" +
                               node.input(1)->name() + "' is " + B.ToString());
  }
  std::vector<int64_t> sa = A.shape, sb = B.shape;
  if (sa.empty() || sb.empty()) return NodeError(node, "scalar operands are not allowed");
  const bool va = sa.size() == 1, vb = sb.size() == 1;
  if (va) sa.insert(sa.begin(), 1);
  if (vb) sb.push_back(1);
  if (sa.back() != sb[sb.size() - 2]) {
    return NodeError(node, "inner dimensions differ: " + A.ToString() + " x " + B.ToString());
  }
  auto batch = BroadcastShapes({sa.begin(), sa.end() - 2}, {sb.begin(), sb.end() - 2});
  if (!batch.ok()) return NodeError(node, "batch dimensions: " + batch.status().message());
  std::vector<int64_t> out = *batch;
  if (!va) out.push_back(sa[sa.size() - 2]);
  if (!vb) out.push_back(sb.back());
  return One({A.dtype, out});
}

Result<std::vector<ir::TensorDataPtr>> EvaluateMatMul(const ir::Node&, const std::vector<ir::TensorDataPtr>& in,
                                                      const std::vector<ir::TensorType>& out_types) {
  std::vector<int64_t> sa = in[0]->type.shape, sb = in[1]->type.shape;
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  const std::vector<int64_t> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> batch, BroadcastShapes(ba, bb));
  const std::vector<int64_t> sta = BroadcastStrides(ba, batch.size()), stb = BroadcastStrides(bb, batch.size());
  int64_t nbatch = 1;
  for (int64_t d : batch) nbatch *= d;
  const std::vector<double> a = TensorToDoubles(*in[0]), b = TensorToDoubles(*in[1]);
  std::vector<double> y(static_cast<size_t>(nbatch * m * n), 0.0);
  for (int64_t bi = 0; bi < nbatch; ++bi) {
    const double* pa = a.data() + StridedOffset(bi, batch, sta) * m * k;
    const double* pb = b.data() + StridedOffset(bi, batch, stb) * k * n;
    double* py = y.data() + bi * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += pa[i * k + p] * pb[p * n + j];
        py[i * n + j] = acc;
      }
    }
  }
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr out, TensorFromDoubles(out_types[0], y));
  return std::vector<ir::TensorDataPtr>{out};
}

// BatchNormalization folding: B's column j scaled by s[j], the bias beta*C*s + t
// (beta becomes 1).
Result<bool> FoldScaleShiftIntoGemm(ir::Graph& g, ir::Node& node, const std::vector<double>& s,
                                    const std::vector<double>& t) {
  ir::Value* b = node.input(1);
  if (!b || !b->is_constant() || b->type().dtype != ir::DType::kF32) return false;
  ir::Value* c = node.input(2);
  if (c && !c->is_constant()) return false;
  const int64_t n = node.output(0)->type().shape[1];
  if (static_cast<int64_t>(s.size()) != n) return false;
  KEEL_ASSIGN_OR_RETURN(double alpha, node.attrs().GetFloat("alpha", 1.0));
  KEEL_ASSIGN_OR_RETURN(double beta, node.attrs().GetFloat("beta", 1.0));
  KEEL_ASSIGN_OR_RETURN(int64_t tb, node.attrs().GetInt("transB", 0));
  std::vector<double> cv(static_cast<size_t>(n), 0.0);
  if (c) {
    const auto& cs = c->type().shape;
    bool row_broadcast = cs.empty() || (cs.size() == 1) || (cs.size() == 2 && cs[0] == 1);
    if (!row_broadcast) return false;
    std::vector<double> raw = ops::TensorToDoubles(*c->constant());
    for (int64_t j = 0; j < n; ++j) cv[static_cast<size_t>(j)] = raw.size() == 1 ? raw[0] : raw[static_cast<size_t>(j)];
  }
  std::vector<double> bv = ops::TensorToDoubles(*b->constant());
  int64_t k = static_cast<int64_t>(bv.size()) / n;
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t p = 0; p < k; ++p) {
      size_t idx = static_cast<size_t>(tb ? j * k + p : p * n + j);
      bv[idx] *= s[static_cast<size_t>(j)];
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    size_t ju = static_cast<size_t>(j);
    cv[ju] = beta * cv[ju] * s[ju] + t[ju];
  }
  (void)alpha;  // alpha scales A*B; scaling B's columns commutes with it
  std::vector<ir::Value*> inputs = {node.input(0), AddF32Constant(g, b->name() + "/bn_folded", b->type().shape, bv),
                                    AddF32Constant(g, node.name() + "/bn_bias", {n}, cv)};
  node.SetInputs(inputs);
  node.attrs().Set("beta", 1.0);
  return true;
}

}  // namespace

void RegisterGemmOps(Registry& r) {
  {
    OpDef def;
    def.name = "Gemm";
    def.versions = {1, 6, 7, 9, 11, 13};
    def.fusion = FusionClass::kAnchor;
    def.half = HalfPolicy::kHalf;  // f32 accumulation inside the kernel (lower_gemm.cc)
    def.library = LibraryCall::kGemm;
    def.canonicalize = CanonicalizeGemm;
    def.infer = InferGemm;
    def.evaluate = EvaluateGemm;
    def.fold_scale_shift = FoldScaleShiftIntoGemm;
    def.kernel = [](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
      return codegen::LowerGemm(ctx, node, PackedColumns(node), stores[0]);
    };
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "MatMul";
    def.versions = {1, 9, 13};
    def.fusion = FusionClass::kAnchor;
    def.half = HalfPolicy::kHalf;  // f32 accumulation inside the kernel (lower_gemm.cc)
    def.library = LibraryCall::kMatMul;
    def.infer = InferMatMul;
    def.evaluate = EvaluateMatMul;
    def.kernel = [](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
      return codegen::LowerMatMul(ctx, node, PackedColumns(node), stores[0]);
    };
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
