// compiler/codegen/lower_matmul.cc — the Gemm and MatMul ops lowered onto the
// blocked GEMM (lower_gemm.cc, BuildBlockedGemm): their operands read as
// GemmOperands (transposes, broadcast batches, a constant B already in the
// GEMM's panel form or in the CUDA back end's one-column panels), the bias and
// alpha/beta of Gemm folded into the epilogue, and the result stored through the
// caller's `store`.
#include "compiler/codegen/lower_ops.h"

namespace keel::codegen {
namespace {

// Element types whose products the kernels accumulate in f32: f32 itself and
// the half types (read widened, stored rounded). f64 would lose precision.
bool IsWidenedFloat(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A MatMul's or Gemm's B in B-panel form (`n` columns, `k` rows), checked to
// be the panels this GEMM reads, as a flat view for GemmOperands::b_packed.
Result<int> PackedBView(LowerContext& ctx, const ir::Node& node, const TensorFn& b, int64_t k, int64_t n) {
  const int64_t nr = GemmPanelWidth(ctx.options());
  const std::vector<int64_t> want = {CeilDiv(n, nr), k, nr};
  if (b.buffer < 0 || b.type.dtype != DType::kF32 || b.type.shape != want) {
    return InvalidArgument(NodeLabel(node) + ": B in panel form is " + b.type.ToString() + ", expected f32 [" +
                           std::to_string(want[0]) + ", " + std::to_string(k) + ", " + std::to_string(nr) +
                           "] (this target's panel width " + std::to_string(nr) + ")");
  }
  KernelFunc& kf = ctx.kernel();
  return kf.AddArgView(kf.buffer(b.buffer).arg_index, "b_panels", {want[0] * k * nr});
}

// A B in one-column panels, [N, K, 1], is B transposed: the CUDA back end's
// form for cuBLASLt (ops/packed_weight.h). Where such a product is generated
// instead (a target whose GEMM reads wider panels), it reads B in place as the
// [K, N] matrix it stands for, and the product is lowered as an unpacked one.
bool OneColumnPanels(LowerContext& ctx, const TensorFn& b, int64_t packed_cols) {
  const std::vector<int64_t>& s = b.type.shape;
  return packed_cols > 0 && s.size() == 3 && s[0] == packed_cols && s[2] == 1 && GemmPanelWidth(ctx.options()) != 1;
}
TensorFn FromOneColumnPanels(const TensorFn& b, int64_t packed_cols) {
  TensorFn t;
  t.type = ir::TensorType{b.type.dtype, {b.type.shape[1], packed_cols}};
  IndexFn at = b.at;
  t.at = [at](const std::vector<Expr>& kn) { return at({kn[1], kn[0], IntConst(0)}); };
  return t;
}

}  // namespace

Result<Stmt> LowerGemm(LowerContext& ctx, const ir::Node& node, int64_t packed_cols, const StoreFn& store) {
  const ir::Attributes& at = node.attrs();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* A, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* B, ctx.Input(node, 1));
  TensorFn b_kn;
  if (OneColumnPanels(ctx, *B, packed_cols)) {
    b_kn = FromOneColumnPanels(*B, packed_cols);
    B = &b_kn;
    packed_cols = 0;
  }
  const TensorFn* C = nullptr;
  if (node.input(2)) { KEEL_ASSIGN_OR_RETURN(C, ctx.Input(node, 2)); }
  KEEL_ASSIGN_OR_RETURN(int64_t ta, at.GetInt("transA", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t tb, at.GetInt("transB", 0));
  KEEL_ASSIGN_OR_RETURN(double alpha, at.GetFloat("alpha", 1.0));
  KEEL_ASSIGN_OR_RETURN(double beta, at.GetFloat("beta", 1.0));
  if (A->type.shape.size() != 2 || (packed_cols == 0 && B->type.shape.size() != 2))
    return InvalidArgument(NodeLabel(node) + ": Gemm operands must be 2-D");
  if (!IsWidenedFloat(A->type.dtype) || !IsWidenedFloat(B->type.dtype))
    return Unsupported(NodeLabel(node) + ": Gemm on " + ir::DTypeName(A->type.dtype));
  GemmOperands g;
  g.m = ta ? A->type.shape[1] : A->type.shape[0];
  g.k = ta ? A->type.shape[0] : A->type.shape[1];
  IndexFn a_at = A->at, b_at = B->at;
  g.a = [a_at, ta](Expr m, Expr k) { return ta ? a_at({k, m}) : a_at({m, k}); };
  if (packed_cols > 0) {
    if (tb) return InvalidArgument(NodeLabel(node) + ": B in panel form with transB");
    g.n = packed_cols;
    KEEL_ASSIGN_OR_RETURN(g.b_packed, PackedBView(ctx, node, *B, g.k, g.n));
    g.b_weight = true;
  } else {
    g.n = tb ? B->type.shape[0] : B->type.shape[1];
    if ((tb ? B->type.shape[1] : B->type.shape[0]) != g.k) return InvalidArgument(NodeLabel(node) + ": K mismatch");
    g.b = [b_at, tb](Expr k, Expr n) { return tb ? b_at({n, k}) : b_at({k, n}); };
    g.b_unit_k = tb && B->buffer >= 0;
  }
  std::vector<int64_t> out_shape = {g.m, g.n};
  TensorFn cfn = C ? *C : TensorFn{};
  g.store = [store, alpha, beta, cfn, out_shape](Expr m, Expr n, Expr acc) {
    Expr v = alpha == 1.0 ? acc : acc * FloatConst(alpha);
    if (cfn.at && beta != 0.0) {
      Expr c = Cast(cfn.at(BroadcastIndex(out_shape, cfn.type.shape, {m, n})), DType::kF32);
      v = v + (beta == 1.0 ? c : c * FloatConst(beta));
    }
    return store({m, n}, v);
  };
  return BuildBlockedGemm(ctx, g, "gemm");
}

Result<Stmt> LowerMatMul(LowerContext& ctx, const ir::Node& node, int64_t packed_cols, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Ap, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Bp, ctx.Input(node, 1));
  TensorFn A = *Ap, B = *Bp;
  if (OneColumnPanels(ctx, B, packed_cols)) {
    B = FromOneColumnPanels(B, packed_cols);
    packed_cols = 0;
  }
  if (!IsWidenedFloat(A.type.dtype) || !IsWidenedFloat(B.type.dtype))
    return Unsupported(NodeLabel(node) + ": MatMul on " + ir::DTypeName(A.type.dtype));
  const std::vector<int64_t> as = A.type.shape;
  const std::vector<int64_t> os = node.output(0)->type().shape;
  // B in panel form: the [K, N] matrix it stands for (K from A, N from the form).
  const std::vector<int64_t> bs = packed_cols > 0 && !as.empty() ? std::vector<int64_t>{as.back(), packed_cols} : B.type.shape;
  if (as.empty() || bs.empty()) return InvalidArgument(NodeLabel(node) + ": scalar MatMul operand");
  const bool a1 = as.size() == 1, b1 = bs.size() == 1;
  const int64_t K = as.back();
  const int64_t M = a1 ? 1 : as[as.size() - 2];
  const int64_t N = b1 ? 1 : bs.back();
  if ((b1 ? bs[0] : bs[bs.size() - 2]) != K) return InvalidArgument(NodeLabel(node) + ": K mismatch");
  const size_t out_mat_dims = (a1 ? 0 : 1) + (b1 ? 0 : 1);
  if (os.size() < out_mat_dims) return InvalidArgument(NodeLabel(node) + ": output rank");
  const std::vector<int64_t> batch(os.begin(), os.end() - static_cast<int64_t>(out_mat_dims));
  const std::vector<int64_t> a_batch = a1 ? std::vector<int64_t>{} : std::vector<int64_t>(as.begin(), as.end() - 2);
  const std::vector<int64_t> b_batch = b1 ? std::vector<int64_t>{} : std::vector<int64_t>(bs.begin(), bs.end() - 2);
  int b_panels = -1;
  if (packed_cols > 0) {
    if (a1) return InvalidArgument(NodeLabel(node) + ": B in panel form with a 1-D A");
    KEEL_ASSIGN_OR_RETURN(b_panels, PackedBView(ctx, node, B, K, N));
  }

  // B shared by every batch: fold A's batch into M (one big GEMM, B's panels
  // packed or read once). A plain A buffer is read as rows; any other A (a
  // fused producer, e.g. BERT's [S, B, E] transpose) through its index, the
  // row's batch coordinates computed once per row (invariant in the k loop).
  if (!a1 && b_batch.empty() && NumElements(a_batch) > 1) {
    int64_t MM = NumElements(as) / K;
    std::vector<int64_t> rows_shape(os.begin(), os.end() - (b1 ? 0 : 1));
    GemmOperands g;
    g.m = MM; g.n = N; g.k = K;
    KernelFunc* kp = &k;
    IndexFn b_at = B.at;
    if (A.buffer >= 0) {
      int view = k.AddArgView(k.buffer(A.buffer).arg_index, "a_rows", {MM, K});
      g.a = [kp, view](Expr m, Expr kk) { return kp->Load(view, {m, kk}); };
    } else {
      IndexFn a_at = A.at;
      const std::vector<int64_t> a_rows(as.begin(), as.end() - 1);
      g.a = [a_at, a_rows](Expr m, Expr kk) {
        std::vector<Expr> idx = Delinearize(a_rows, m);
        idx.push_back(kk);
        return a_at(idx);
      };
    }
    if (b_panels >= 0) {
      g.b_packed = b_panels;
      g.b_weight = true;
    } else {
      g.b = [b_at, b1](Expr kk, Expr n) { return b1 ? b_at({kk}) : b_at({kk, n}); };
    }
    g.store = [store, rows_shape, b1](Expr m, Expr n, Expr acc) {
      std::vector<Expr> idx = Delinearize(rows_shape, m);
      if (!b1) idx.push_back(n);
      return store(idx, acc);
    };
    return BuildBlockedGemm(ctx, g, "matmul");
  }

  const int64_t nb = NumElements(batch);
  Expr bi = nb > 1 ? k.NewVar("batch") : Expr(0);
  std::vector<Expr> bidx = Delinearize(batch, bi);
  GemmOperands g;
  g.m = M; g.n = N; g.k = K;
  IndexFn a_at = A.at, b_at = B.at;
  std::vector<Expr> ab = BroadcastIndex(batch, a_batch, bidx), bb = BroadcastIndex(batch, b_batch, bidx);
  g.a = [a_at, ab, a1](Expr m, Expr kk) {
    std::vector<Expr> idx = ab;
    if (!a1) idx.push_back(m);
    idx.push_back(kk);
    return a_at(idx);
  };
  if (b_panels >= 0) {
    g.b_packed = b_panels;
    g.b_packed_shared = true;
    g.b_weight = true;
  } else {
    g.b = [b_at, bb, b1](Expr kk, Expr n) {
      std::vector<Expr> idx = bb;
      idx.push_back(kk);
      if (!b1) idx.push_back(n);
      return b_at(idx);
    };
  }
  g.store = [store, bidx, a1, b1](Expr m, Expr n, Expr acc) {
    std::vector<Expr> idx = bidx;
    if (!a1) idx.push_back(m);
    if (!b1) idx.push_back(n);
    return store(idx, acc);
  };
  // Batched products (e.g. attention's per-head MatMuls) share the GEMM's parallel regions.
  if (nb > 1) {
    g.batch = nb;
    g.batch_var = bi;
  }
  return BuildBlockedGemm(ctx, g, "matmul");
}

}  // namespace keel::codegen
